// Chapter 11's ops, declared once. The harness makes the tests, the benchmark rows and the
// broken-kernel rejections from these declarations (harness/declare/op.cuh).
//
//   staged_axpb/f32  y = a x + b, pageable host arrays through pinned staging   ex1 (a program)
//   pipeline/f32     y = a x + b, pinned host arrays, copies and kernels over streams   ex2
//   fork_join/f32    y1 = A1 x1 and y2 = A2 x2 on two streams, joined            ex3
//   chain/f32        `steps` small kernels y = y w[s] + c, as one CUDA graph     ex4
//
// How each is checked beyond the values (the outcome code in brackets):
//   ex1  the staging's host memory is pinned and was copied through [pageable]; nothing waits
//        on the legacy default stream while the program runs [outside_stream]; host_y is
//        complete when the program returns [wrong, unwritten]; the staging is freed [launch_error].
//   ex2, ex3  called under stream capture: work on another stream that is not joined back,
//        or that does not wait for the given stream, ends the capture or runs before it
//        [outside_stream, or the poison it read: nan, wrong]; the second call holds the legacy
//        stream [outside_stream].
//   ex4  the launcher builds a graph of its own (the harness's capture would nest), so its
//        stream is checked by the second call's gate [outside_stream]; shapes that differ
//        only in c follow each other, so a replay that was not updated is [wrong].
#include <algorithm>
#include <cstring>
#include <vector>

#include "ch11.cuh"
#include "host_io.cuh"
#include "check/memory.cuh"
#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch11 {

// --- the pinned memory of the pipeline (host_io.cuh) ----------------------------------------

namespace {

struct PipelineHost {
  const void* x = nullptr;  // the problem it belongs to: its input buffer and size
  int64_t n = -1;
  float* pinned_x = nullptr;
  float* pinned_y = nullptr;
  wb::DeviceBuffer<float> dev_x, dev_y;
  ~PipelineHost() {
    if (pinned_x) cudaFreeHost(pinned_x);
    if (pinned_y) cudaFreeHost(pinned_y);
  }
};

// One problem at a time (the tests and the benchmark check or time one case at a time).
// Never destroyed at exit: the CUDA context may be gone by then.
PipelineHost*& pipeline_slot() {
  static PipelineHost* slot = nullptr;
  return slot;
}

PipelineHost& pipeline_host(const wb::Args& a, bool allocate) {
  PipelineHost*& slot = pipeline_slot();
  const void* x = a.in<float>("x");
  const int64_t n = a.dim("n");
  if (slot && slot->x == x && slot->n == n) return *slot;
  if (!allocate) {
    throw std::logic_error("pipeline/f32: the variant has no staging step; make it with ch11::pipeline_variant()");
  }
  delete slot;
  slot = nullptr;
  auto h = std::make_unique<PipelineHost>();
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  CUDA_CHECK(cudaMallocHost(&h->pinned_x, bytes));
  CUDA_CHECK(cudaMallocHost(&h->pinned_y, bytes));
  h->dev_x = wb::DeviceBuffer<float>(static_cast<size_t>(n));
  h->dev_y = wb::DeviceBuffer<float>(static_cast<size_t>(n));
  h->x = x;
  h->n = n;
  slot = h.release();
  return *slot;
}

}  // namespace

void stage_pipeline_inputs(const wb::Args& a, cudaStream_t stream) {
  if (wb::gpu_missing_reason()) return;
  PipelineHost& h = pipeline_host(a, true);
  const int64_t n = h.n, held = std::min(n, kHeldBack);
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  wb::fill_poison(h.dev_x.data(), bytes, wb::DType::F32, stream);
  wb::fill_poison(h.dev_y.data(), bytes, wb::DType::F32, stream);
  CUDA_CHECK(cudaMemcpyAsync(h.pinned_y, h.dev_y.data(), bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(h.pinned_x, h.dev_x.data(), sizeof(float) * held, cudaMemcpyDeviceToHost, stream));
  if (n > held) {
    CUDA_CHECK(cudaMemcpyAsync(h.pinned_x + held, a.in<float>("x") + held, sizeof(float) * (n - held),
                               cudaMemcpyDeviceToHost, stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch11-streams.md";

// --- y = a x + b: exercises 1 and 2 ---------------------------------------------------------

wb::Shape axpb_shape(int64_t n) { return wb::Shape{{"n", n}}.set_param("a", 1.5).set_param("b", -0.25); }

std::vector<wb::Shape> axpb_shapes(std::initializer_list<int64_t> sizes) {
  std::vector<wb::Shape> s;
  for (int64_t n : sizes) s.push_back(axpb_shape(n));
  return s;
}

// What the two y = a x + b ops share: the tensors, the float64 reference, the traffic and the
// work. Each adds its shapes and its launch.
template <class Fn>
wb::OpSpec<Fn> axpb_op(const char* name, const char* title) {
  return {
      .name = name,
      .dtype = "f32",
      .title = title,
      .docs = kDocs,
      .tensors = {wb::input("x", {"n"}, DType::F32),
                  wb::output("y", {"n"}, DType::F32, wb::tol::terms([](const wb::Shape&) { return 2; }))},
      .reference = [](const wb::RefCtx& r,
                      int64_t i) { r.expect("y", i, r.param("a") * r.in("x").get(i) + r.param("b")); },
      .ref_rows = [](const wb::Shape& s) { return s["n"]; },
      // Host memory traffic: x in and y out. (The pipeline's benchmark row also holds one copy
      // of y back to the device for the checks; the overlap figures come from ch11_overlap.)
      .bytes = [](const wb::Shape& s) { return 8.0 * s["n"]; },
      .flops = [](const wb::Shape& s) { return 2.0 * s["n"]; },
      .peak = wb::Peak::FP32,
  };
}

uint32_t float_poison() { return static_cast<uint32_t>(wb::poison_bits(DType::F32)); }

void fill_poison_host(float* p, size_t count) {
  const uint32_t bits = float_poison();
  for (size_t i = 0; i < count; ++i) std::memcpy(p + i, &bits, sizeof bits);
}

cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes at{};
  if (p == nullptr || cudaPointerGetAttributes(&at, p) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is an answer here, not an error
    return cudaMemoryTypeUnregistered;
  }
  return at.type;
}

// Destroys the learner's staging when the check stops early, so a failed case leaks nothing.
class StagingOwner {
 public:
  StagingOwner(const StagedProgram& p, Staging& s) : p_(p), s_(s) {}
  ~StagingOwner() {
    if (!done_) {
      try {
        p_.destroy(s_);
      } catch (...) {
      }
    }
  }
  void destroy() {
    done_ = true;
    p_.destroy(s_);
  }

 private:
  const StagedProgram& p_;
  Staging& s_;
  bool done_ = false;
};

void check_staging(const Staging& s, size_t count) {
  if (s.count != count) {
    throw std::runtime_error("staging_create(" + std::to_string(count) +
                             ") returned count = " + std::to_string(s.count) + ": record the size you allocated");
  }
  const cudaMemoryType host = memory_type(s.pinned);
  if (host != cudaMemoryTypeHost) {
    throw wb::Rejected(wb::Code::Pageable,
                       std::string("staging.pinned is ") +
                           (host == cudaMemoryTypeUnregistered ? "pageable host memory (malloc, new, std::vector)"
                                                               : "not host memory") +
                           ", by cudaPointerGetAttributes: a copy from pageable memory is staged by the driver and "
                           "never overlaps anything.\n  likely cause: allocate it with cudaMallocHost (or "
                           "cudaHostAlloc), free it with cudaFreeHost");
  }
  if (memory_type(s.device) != cudaMemoryTypeDevice) {
    throw std::runtime_error("staging.device is not device memory: allocate it with cudaMalloc");
  }
}

// Runs the round trip with the legacy default stream held by the harness: a program that
// waits on it (cudaMemcpy, cudaDeviceSynchronize, a launch without a stream followed by a
// wait) stalls behind the gate until it times out, and is told so.
void run_gated(const StagedProgram& p, const std::vector<float>& hx, std::vector<float>& hy, int64_t n, float a,
               float b, const Staging& s, cudaStream_t st) {
  // One ungated round trip of one element first: the runtime loads a program's kernels at
  // their first launch, and that load waits for the whole device, the held legacy stream
  // included; under the gate it would stall a correct program.
  std::vector<float> one_x(1, 1.0f), one_y(1);
  p.run(one_x.data(), one_y.data(), 1, a, b, s, st);
  CUDA_CHECK(cudaStreamSynchronize(st));
  fill_poison_host(s.pinned, s.count);  // the staging check below looks at the gated run alone
  wb::LegacyGate gate;
  gate.hold();
  p.run(hx.data(), hy.data(), n, a, b, s, st);
  gate.release();
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  if (gate.timed_out()) {
    throw wb::Rejected(wb::Code::OutsideStream,
                       "the program waited on the legacy default stream, which the harness held for 2 s: a "
                       "synchronous cudaMemcpy, a cudaDeviceSynchronize, or a kernel launched without the stream.\n"
                       "  likely cause: use cudaMemcpyAsync(..., stream), launch with <<<grid, block, 0, stream>>>, "
                       "and wait with cudaStreamSynchronize(stream)");
  }
}

void run_staged_program(StagedProgram* p, const wb::Args& a, cudaStream_t st) {
  const int64_t n = a.dim("n");
  const float ca = static_cast<float>(a.param("a")), cb = static_cast<float>(a.param("b"));
  if (wb::gpu_missing_reason()) {  // the program cannot run; a stub still says so
    Staging s = p->create(1);
    p->destroy(s);
    return;
  }
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  std::vector<float> hx(static_cast<size_t>(n)), hy(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpyAsync(hx.data(), a.in<float>("x"), bytes, cudaMemcpyDeviceToHost, st));
  CUDA_CHECK(cudaStreamSynchronize(st));
  fill_poison_host(hy.data(), hy.size());

  const size_t count = staging_count(n);
  Staging s = p->create(count);
  StagingOwner owner(*p, s);
  check_staging(s, count);
  fill_poison_host(s.pinned, count);
  run_gated(*p, hx, hy, n, ca, cb, s, st);
  CUDA_CHECK(cudaStreamSynchronize(st));
  const uint32_t poison = float_poison();
  bool used = false;
  for (size_t i = 0; i < count && !used; ++i) {
    uint32_t bits;
    std::memcpy(&bits, s.pinned + i, sizeof bits);
    used = bits != poison;
  }
  if (!used) {
    throw wb::Rejected(wb::Code::Pageable,
                       "the program never wrote its pinned staging: its copies went straight from and to the "
                       "pageable host arrays, which the driver stages itself, one synchronous piece at a time.\n"
                       "  likely cause: copy each chunk into staging.pinned first, and cudaMemcpyAsync from there");
  }
  // What host_y holds NOW is the program's answer: the checks read it from the output.
  CUDA_CHECK(cudaMemcpyAsync(a.out<float>("y"), hy.data(), bytes, cudaMemcpyHostToDevice, st));
  CUDA_CHECK(cudaStreamSynchronize(st));

  float* const pinned = s.pinned;
  float* const device = s.device;
  owner.destroy();
  if (memory_type(pinned) != cudaMemoryTypeUnregistered || memory_type(device) != cudaMemoryTypeUnregistered) {
    throw std::runtime_error("staging_destroy left memory allocated (" +
                             std::string(memory_type(pinned) != cudaMemoryTypeUnregistered ? "the pinned buffer" : "") +
                             (memory_type(device) != cudaMemoryTypeUnregistered ? " the device buffer" : "") +
                             "): every cudaMallocHost needs its cudaFreeHost, every cudaMalloc its cudaFree");
  }
}

wb::OpSpec<StagedProgram> staged_axpb() {
  auto op = axpb_op<StagedProgram>("staged_axpb",
                                   "y = a x + b from pageable host arrays, through pinned staging (a whole program)");
  // One element, one partial chunk, one element past a whole chunk, many chunks and a tail.
  op.test_shapes = axpb_shapes({1, 1000, (int64_t{1} << 18) + 1, (int64_t{1} << 22) + 3});
  op.launch = run_staged_program;
  // A host program allocates and frees (which waits for the whole device): it is called once
  // per shape, without capture and without the second call's gate; its own gate is above.
  op.checks = {.second_call = false, .stream = false};
  return op;
}

wb::OpSpec<PipelineFn> pipeline() {
  auto op =
      axpb_op<PipelineFn>("pipeline", "y = a x + b between pinned host arrays: copy in, kernel, copy out, overlapped");
  // The large case: 1 GiB each way.
  op.test_shapes = wb::shapes::plus_large(axpb_shapes({1, 1000, 65537, (int64_t{1} << 22) + 3, (int64_t{1} << 24) + 7}),
                                          axpb_shape(int64_t{1} << 28));
  op.random_shapes = [](wb::Rng& rng) {
    auto s = wb::shapes::random(3, {{"n", int64_t{1} << 22}})(rng);
    for (auto& x : s) x.set_param("a", -0.75).set_param("b", 2.0);
    return s;
  };
  op.bench_shapes = {axpb_shape(int64_t{1} << 28)};
  op.full_bench_shapes = {axpb_shape(int64_t{1} << 24), axpb_shape(int64_t{1} << 26)};
  op.launch = [](PipelineFn* fn, const wb::Args& a, cudaStream_t st) {
    const int64_t n = a.dim("n");
    const float ca = static_cast<float>(a.param("a")), cb = static_cast<float>(a.param("b"));
    if (wb::gpu_missing_reason()) {  // placeholders: a stub still says "not implemented"
      fn(a.in<float>("x"), a.out<float>("y"), a.out<float>("y"), a.out<float>("y"), n, ca, cb, st);
      return;
    }
    PipelineHost& h = pipeline_host(a, false);
    // The first elements of x reach the pinned x on the given stream, right before the
    // call: a pipeline that does not wait for the stream reads their poison.
    CUDA_CHECK(cudaMemcpyAsync(h.pinned_x, a.in<float>("x"), sizeof(float) * std::min(n, kHeldBack),
                               cudaMemcpyDeviceToHost, st));
    fn(h.pinned_x, h.pinned_y, h.dev_x.data(), h.dev_y.data(), n, ca, cb, st);
    // Read after the stream: a pipeline not joined back is read too early.
    CUDA_CHECK(cudaMemcpyAsync(a.out<float>("y"), h.pinned_y, sizeof(float) * n, cudaMemcpyHostToDevice, st));
  };
  return op;
}

// --- two GEMVs: exercise 3 ------------------------------------------------------------------

wb::OpSpec<ForkJoinFn> fork_join() {
  const auto row_sum = wb::tol::sum_of({"k"});
  return {
      .name = "fork_join",
      .dtype = "f32",
      .title = "y1 = A1 x1 and y2 = A2 x2 on two streams, joined",
      .docs = kDocs,
      .tensors = {wb::input("A1", {"m", "k"}, DType::F32), wb::input("x1", {"k"}, DType::F32),
                  wb::input("A2", {"m", "k"}, DType::F32), wb::input("x2", {"k"}, DType::F32),
                  wb::output("y1", {"m"}, DType::F32, row_sum), wb::output("y2", {"m"}, DType::F32, row_sum)},
      .reference =
          [](const wb::RefCtx& r, int64_t row) {
            const int64_t k = r["k"];
            for (const char* side : {"1", "2"}) {
              const auto& A = r.in(std::string("A") + side);
              const auto& x = r.in(std::string("x") + side);
              double acc = 0;
              for (int64_t j = 0; j < k; ++j) acc += A.get(row * k + j) * x.get(j);
              r.expect(std::string("y") + side, row, acc);
            }
          },
      .ref_rows = [](const wb::Shape& s) { return s["m"]; },
      .test_shapes = {wb::Shape{{"m", 1}, {"k", 1}}, wb::Shape{{"m", 7}, {"k", 1000}},
                      wb::Shape{{"m", 64}, {"k", 4097}}, wb::Shape{{"m", 1025}, {"k", 129}},
                      wb::Shape{{"m", 300}, {"k", 70001}}},
      .random_shapes = wb::shapes::random(3, {{"m", 2000}, {"k", 5000}}),
      // Each GEMV alone: 64 rows, a block each, on a GPU of 100+ SMs: half of it idles.
      .bench_shapes = {wb::Shape{{"m", 64}, {"k", int64_t{1} << 21}}},
      .bytes = [](const wb::Shape& s) { return 4.0 * (2.0 * s["m"] * s["k"] + 2.0 * s["k"] + 2.0 * s["m"]); },
      .flops = [](const wb::Shape& s) { return 4.0 * s["m"] * s["k"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](ForkJoinFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("A1"), a.in<float>("x1"), a.out<float>("y1"), a.in<float>("A2"), a.in<float>("x2"),
               a.out<float>("y2"), a.i("m"), a.i("k"), st);
          },
  };
}

// --- a chain of small kernels: exercise 4 ---------------------------------------------------

wb::Shape chain_shape(int64_t n, int64_t steps, double c) {
  return wb::Shape{{"n", n}, {"steps", steps}}.set_param("c", c);
}

wb::OpSpec<ChainFn> chain() {
  return {
      .name = "chain",
      .dtype = "f32",
      .title = "y = (...((x w0 + c) w1 + c)...) w[steps-1] + c, one small kernel per step, as a graph",
      .docs = kDocs,
      .tensors = {wb::input("x", {"n"}, DType::F32), wb::input("w", {"steps"}, DType::F32, wb::dist::uniform(0.5, 1.0)),
                  wb::output("y", {"n"}, DType::F32,
                             wb::tol::terms([](const wb::Shape& s) { return s["steps"] + 1; }, 4.0))},
      .reference =
          [](const wb::RefCtx& r, int64_t i) {
            const auto& w = r.in("w");
            const double c = r.param("c");
            double v = r.in("x").get(i);
            for (int64_t s = 0; s < r["steps"]; ++s) v = v * w.get(s) + c;
            r.expect("y", i, v);
          },
      .ref_rows = [](const wb::Shape& s) { return s["n"]; },
      // Pairs that differ only in c (a graph replayed without an update keeps the old c), and
      // a change of n between them (a change of grid: the update may be refused).
      .test_shapes = {chain_shape(1, 1, 0.5), chain_shape(1000, 3, 0.25), chain_shape(1000, 3, -0.5),
                      chain_shape(4097, 100, 0.125), chain_shape(4097, 100, 0.375), chain_shape(1025, 100, 0.375),
                      chain_shape((int64_t{1} << 20) + 1, 10, -0.25)},
      .bench_shapes = {chain_shape(4096, 100, 0.5)},
      .bytes = [](const wb::Shape& s) { return 8.0 * s["n"] * s["steps"]; },
      .flops = [](const wb::Shape& s) { return 2.0 * s["n"] * s["steps"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](ChainFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("x"), a.in<float>("w"), a.out<float>("y"), a.i("n"), a.i("steps"),
               static_cast<float>(a.param("c")), st);
          },
      // The launcher captures and instantiates a graph of its own, which the harness's capture
      // of the call would nest inside; the second call's gate still sees work on the legacy stream.
      .checks = {.stream = false},
  };
}

}  // namespace

WB_OPS(ch11) { wb::add_ops(staged_axpb(), pipeline(), fork_join(), chain()); }

}  // namespace ch11
