// ch11_overlap — chapter 11's four ratios, each against its target, in one run:
//
//   pipeline_overlap_efficiency  (time of the slowest step alone) / (pipeline time), at 1 GiB
//                                of pinned host memory each way; ideal 1.00, target >= 0.90
//   graph_replay_speedup         100 small kernels launched one by one / one graph replay; >= 3
//   graph_update_over_replay     capture + cudaGraphExecUpdate + replay / a plain replay; <= 1.10
//   fork_join_speedup            two half-GPU GEMVs one after the other / forked and joined; >= 1.5
//
// The per-op benchmark (ch11_bench) times what the leaderboard ranks; its pipeline rows hold
// the harness's copy of y back to the device for the checks, so the overlap is measured
// here, with the program's own pinned buffers and nothing else on the GPU. Every variant
// linked in is measured (the reference, the ladder, your exercises once written), and each
// pipeline's output is spot-checked before its time is printed.
//
// usage: build/ch11/bin/ch11_overlap [--n=268435456] [--steps=100] [--chain-n=4096]
//                                    [--m=64] [--k=2097152] [--strict] [--trace=FILE]
//   --strict  exit 1 when a ratio of the solution misses its target
//   --trace   after each form is timed, one more call of it recorded (kernels and copies per
//             stream, CUPTI) into a Chrome trace: scripts/timeline.sh draws it
// Exit 77 (skipped) without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ch11.cuh"
#include "runtime/activity_trace.cuh"
#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "runtime/lesson_main.h"
#include "runtime/options.h"
#include "declare/op.cuh"
#include "runtime/launch_helpers.cuh"

namespace {

using ch11::ChainFn;
using ch11::ForkJoinFn;
using ch11::PipelineFn;

struct Options {
  int64_t n = int64_t{1} << 28;
  int steps = 100, chain_n = 4096, m = 64, k = 1 << 21;
  bool strict = false;
  std::string trace;  // --trace: where the per-stream timeline of one call of each form goes
};

// With --trace, one more call of each form after its timing, recorded as a section of the
// trace (runtime/activity_trace.cuh; without --trace, or when it cannot record, the sections
// run nothing).
wb::ActivityTrace g_trace;
bool g_tracing = false;

// The options, checked before the GPU is looked for (CLI11: runtime/options.h); a mistake
// exits with status 2 and a message naming it.
Options parse(int argc, char** argv) {
  Options o;
  int64_t steps = o.steps, chain_n = o.chain_n, m = o.m, k = o.k;
  CLI::App app(
      "Chapter 11's four ratios, each against its target: the pipeline's overlap efficiency, a graph "
      "replay against eager launches, an update against a replay, fork/join against the serial form.",
      "ch11_overlap");
  wb::cli::conventions(app);
  app.add_option("--n", o.n, "pipeline elements (default 268435456: 1 GiB of floats each way)")
      ->transform(wb::cli::whole_number(1, int64_t{1} << 34));
  app.add_option("--steps", steps, "kernels in the graph's chain (default 100)")
      ->transform(wb::cli::whole_number(1, 1 << 20));
  app.add_option("--chain-n", chain_n, "elements per chained kernel (default 4096)")
      ->transform(wb::cli::whole_number(1, INT32_MAX));
  app.add_option("--m", m, "rows of each fork/join GEMV (default 64)")->transform(wb::cli::whole_number(1, INT32_MAX));
  app.add_option("--k", k, "columns of each fork/join GEMV (default 2097152)")
      ->transform(wb::cli::whole_number(1, INT32_MAX));
  app.add_flag("--strict", o.strict, "exit 1 when a ratio of the solution misses its target");
  app.add_option("--trace", o.trace,
                 "write a Chrome trace (JSON) of one untimed call of each form: kernels and copies per stream "
                 "(scripts/timeline.sh draws it)");
  try {
    if (!wb::cli::parse(app, argc, argv)) std::exit(0);
  } catch (const wb::UsageError& e) {
    std::exit(wb::cli::refuse(app, e.what()));
  }
  o.steps = static_cast<int>(steps), o.chain_n = static_cast<int>(chain_n), o.m = static_cast<int>(m),
  o.k = static_cast<int>(k);
  return o;
}

std::vector<const wb::Variant*> variants_of(const std::string& op) {
  std::vector<const wb::Variant*> out;
  for (const auto& v : wb::all_variants()) {
    if (v.op == op && v.role != wb::Role::Broken) out.push_back(&v);
  }
  return out;
}
const wb::Variant* named(const std::string& op, const std::string& name) {
  for (const wb::Variant* v : variants_of(op)) {
    if (v->name == name) return v;
  }
  return nullptr;
}
template <class Fn>
Fn* fn_of(const wb::Variant& v) {
  return reinterpret_cast<Fn*>(const_cast<void*>(v.fn));
}

// Median over `trials` of the mean time of `reps` back-to-back calls, in milliseconds.
double time_ms(cudaStream_t s, int trials, int reps, const std::function<void(int)>& call) {
  call(0);  // warm-up: first-call setup (streams, events, graphs) is not timed
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> t;
  wb::Event start, stop;
  for (int i = 0; i < trials; ++i) {
    start.record(s);
    for (int r = 0; r < reps; ++r) call(r + 1);
    stop.record(s);
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    t.push_back(stop.ms_since(start) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

const char* verdict(bool met) { return met ? "met" : "MISSED"; }

__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = a * x[i] + b;
  }
}

struct Ratios {
  double efficiency = NAN, replay = NAN, update = NAN, fork = NAN;
};

// --- the pipeline ---------------------------------------------------------------------------

void pipeline_section(const Options& o, cudaStream_t s, Ratios& r) {
  const int64_t n = o.n;
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  const float a = 1.5f, b = -0.25f;
  float *hx = nullptr, *hy = nullptr;
  CUDA_CHECK(cudaMallocHost(&hx, bytes));
  CUDA_CHECK(cudaMallocHost(&hy, bytes));
  for (int64_t i = 0; i < n; ++i) hx[i] = static_cast<float>(i % 1021) * 0.01f - 5.0f;
  wb::DeviceBuffer<float> dx(static_cast<size_t>(n)), dy(static_cast<size_t>(n));

  std::printf("pipeline: y = a x + b, n = %lld floats (%.2f GiB each way), pinned host memory\n",
              static_cast<long long>(n), bytes / 1073741824.0);
  const double h2d =
      time_ms(s, 5, 1, [&](int) { CUDA_CHECK(cudaMemcpyAsync(dx.data(), hx, bytes, cudaMemcpyHostToDevice, s)); });
  const double kernel = time_ms(s, 5, 1, [&](int) {
    axpb_kernel<<<static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 65536)), 256, 0, s>>>(dx.data(), dy.data(),
                                                                                                 n, a, b);
    CUDA_CHECK(cudaGetLastError());
  });
  const double d2h =
      time_ms(s, 5, 1, [&](int) { CUDA_CHECK(cudaMemcpyAsync(hy, dy.data(), bytes, cudaMemcpyDeviceToHost, s)); });
  // Both copies at once, on two streams (the copy engines and the link both ways): what the
  // hardware gives a pipeline whose copies overlap; no kernel, no chunks.
  wb::Stream other;
  wb::Event forked, joined;
  const double both = time_ms(s, 5, 1, [&](int) {
    forked.record(s);
    CUDA_CHECK(cudaStreamWaitEvent(other.get(), forked.get()));
    CUDA_CHECK(cudaMemcpyAsync(dx.data(), hx, bytes, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(hy, dy.data(), bytes, cudaMemcpyDeviceToHost, other.get()));
    joined.record(other.get());
    CUDA_CHECK(cudaStreamWaitEvent(s, joined.get()));
  });
  const double slowest = std::max({h2d, kernel, d2h});
  std::printf("  each step alone:  copy in %.3f ms (%.1f GB/s)  kernel %.3f ms  copy out %.3f ms (%.1f GB/s)\n", h2d,
              bytes / h2d / 1e6, kernel, d2h, bytes / d2h / 1e6);
  std::printf("  both copies at once (two streams, no kernel): %.3f ms (%.1f GB/s each way)\n", both,
              bytes / both / 1e6);
  {
    // The same copies from and to pageable memory (std::vector): the driver stages them
    // through a pinned buffer of its own, and the copy engines wait for the CPU's memcpy.
    std::vector<float> px(static_cast<size_t>(n), 1.0f), py(static_cast<size_t>(n));
    const double h2d_pageable = time_ms(
        s, 3, 1, [&](int) { CUDA_CHECK(cudaMemcpyAsync(dx.data(), px.data(), bytes, cudaMemcpyHostToDevice, s)); });
    const double d2h_pageable = time_ms(
        s, 3, 1, [&](int) { CUDA_CHECK(cudaMemcpyAsync(py.data(), dy.data(), bytes, cudaMemcpyDeviceToHost, s)); });
    std::printf("  from pageable memory instead: copy in %.3f ms (%.1f GB/s)  copy out %.3f ms (%.1f GB/s)\n",
                h2d_pageable, bytes / h2d_pageable / 1e6, d2h_pageable, bytes / d2h_pageable / 1e6);
  }
  std::printf(
      "  ideal pipeline = the slowest step alone: %.3f ms   (serial sum %.3f ms; the copies at once allow "
      "%.2f of the ideal)\n",
      slowest, h2d + kernel + d2h, slowest / std::max(both, kernel));
  std::printf("  %-22s %10s %12s\n", "variant", "ms", "efficiency");
  for (const wb::Variant* v : variants_of("pipeline/f32")) {
    PipelineFn* fn = fn_of<PipelineFn>(*v);
    std::string label = std::string(wb::role_name(v->role)) + " " + v->name;
    try {
      std::memset(hy, 0xFF, bytes);
      const double t = time_ms(s, 5, 1, [&](int) { fn(hx, hy, dx.data(), dy.data(), n, a, b, s); });
      int64_t bad = 0;
      for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 4099)) bad += std::fabs(hy[i] - (a * hx[i] + b)) > 1e-5f;
      bad += std::fabs(hy[n - 1] - (a * hx[n - 1] + b)) > 1e-5f;
      if (bad) {
        std::printf("  %-22s  WRONG: %lld sampled elements differ; not timed\n", label.c_str(),
                    static_cast<long long>(bad));
        continue;
      }
      std::printf("  %-22s %10.3f %9.2f    (ideal 1.00)\n", label.c_str(), t, slowest / t);
      g_trace.section("pipeline: " + v->name, s, [&] { fn(hx, hy, dx.data(), dy.data(), n, a, b, s); });
      if (v->name == "v3_n_streams") r.efficiency = slowest / t;
    } catch (const wb::NotImplemented&) {
      std::printf("  %-22s  not written yet\n", label.c_str());
    }
  }
  CUDA_CHECK(cudaFreeHost(hx));
  CUDA_CHECK(cudaFreeHost(hy));
}

// --- the graph ------------------------------------------------------------------------------

void graph_section(const Options& o, cudaStream_t s, Ratios& r) {
  const int n = o.chain_n, steps = o.steps;
  wb::DeviceBuffer<float> x(n), w(steps), y(n);
  wb::fill_uniform(x.data(), n, 1, -1.0f, 1.0f, s);
  wb::fill_uniform(w.data(), steps, 2, 0.5f, 1.0f, s);
  std::printf("\ngraph: a chain of %d small kernels over %d floats\n", steps, n);
  const wb::Variant* eager = named("chain/f32", "eager");
  if (!eager) throw std::runtime_error("the reference chain (eager) is not linked");
  ChainFn* eager_fn = fn_of<ChainFn>(*eager);
  const double t_eager = time_ms(s, 5, 50, [&](int) { eager_fn(x.data(), w.data(), y.data(), n, steps, 0.5f, s); });

  // The same launches captured once, instantiated once, replayed.
  wb::Stream capture;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  eager_fn(x.data(), w.data(), y.data(), n, steps, 0.5f, capture);
  CUDA_CHECK(cudaStreamEndCapture(capture, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double t_replay = time_ms(s, 5, 50, [&](int) { CUDA_CHECK(cudaGraphLaunch(exec, s)); });
  g_trace.section("graph: launched one by one", s, [&] { eager_fn(x.data(), w.data(), y.data(), n, steps, 0.5f, s); });
  g_trace.section("graph: one replay", s, [&] { CUDA_CHECK(cudaGraphLaunch(exec, s)); });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::printf("  launched one by one (reference)   %9.1f us per chain\n", t_eager * 1e3);
  std::printf("  one graph replay                   %9.1f us per chain   %.2fx faster\n", t_replay * 1e3,
              t_eager / t_replay);
  r.replay = t_eager / t_replay;

  // Each call with another c, so that every call must update the graph.
  for (const wb::Variant* v : variants_of("chain/f32")) {
    if (v == eager) continue;
    ChainFn* fn = fn_of<ChainFn>(*v);
    const std::string label = std::string(wb::role_name(v->role)) + " " + v->name;
    try {
      const double t =
          time_ms(s, 5, 50, [&](int i) { fn(x.data(), w.data(), y.data(), n, steps, i % 2 ? 0.5f : 0.25f, s); });
      std::printf("  %-34s %9.1f us per chain   %.2fx a plain replay (capture + update + replay)\n", label.c_str(),
                  t * 1e3, t / t_replay);
      if (v->name == "v4_graph") r.update = t / t_replay;
    } catch (const wb::NotImplemented&) {
      std::printf("  %-34s not written yet\n", label.c_str());
    }
  }
}

// --- fork/join ------------------------------------------------------------------------------

void fork_join_section(const Options& o, cudaStream_t s, Ratios& r) {
  const int m = o.m, k = o.k;
  const size_t mk = static_cast<size_t>(m) * k;
  wb::DeviceBuffer<float> A1(mk), A2(mk), x1(k), x2(k), y1(m), y2(m);
  wb::fill_uniform(A1.data(), mk, 3, -1.0f, 1.0f, s);
  wb::fill_uniform(A2.data(), mk, 4, -1.0f, 1.0f, s);
  wb::fill_uniform(x1.data(), k, 5, -1.0f, 1.0f, s);
  wb::fill_uniform(x2.data(), k, 6, -1.0f, 1.0f, s);
  const int sms = wb::sm_count();
  std::printf("\nfork/join: two GEMVs of %d x %d (%d blocks each, %d SMs)\n", m, k, m, sms);
  const wb::Variant* serial = named("fork_join/f32", "serial");
  if (!serial) throw std::runtime_error("the reference fork/join (serial) is not linked");
  double t_serial = 0;
  // The serial form first: every other row is a ratio against it.
  std::vector<const wb::Variant*> order{serial};
  for (const wb::Variant* v : variants_of("fork_join/f32")) {
    if (v != serial) order.push_back(v);
  }
  for (const wb::Variant* v : order) {
    ForkJoinFn* fn = fn_of<ForkJoinFn>(*v);
    const std::string label = std::string(wb::role_name(v->role)) + " " + v->name;
    try {
      const double t =
          time_ms(s, 5, 3, [&](int) { fn(A1.data(), x1.data(), y1.data(), A2.data(), x2.data(), y2.data(), m, k, s); });
      if (v == serial) t_serial = t;
      g_trace.section("fork/join: " + v->name, s,
                      [&] { fn(A1.data(), x1.data(), y1.data(), A2.data(), x2.data(), y2.data(), m, k, s); });
      std::printf("  %-34s %9.3f ms", label.c_str(), t);
      if (v != serial && t_serial > 0) std::printf("   %.2fx the serial form", t_serial / t);
      std::printf("\n");
      if (v->name == "v2_two_streams" && t_serial > 0) r.fork = t_serial / t;
    } catch (const wb::NotImplemented&) {
      std::printf("  %-34s not written yet\n", label.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  return wb::run_lesson("ch11_overlap", [&] {
    if (!o.trace.empty()) {
      g_tracing = g_trace.start();
      if (!g_tracing) std::printf("ch11_overlap: no trace: %s\n", g_trace.why().c_str());
    }
    wb::Stream s;
    Ratios r;
    pipeline_section(o, s, r);
    graph_section(o, s, r);
    fork_join_section(o, s, r);
    const bool eff = r.efficiency >= 0.90, rep = r.replay >= 3.0, upd = r.update <= 1.10, fj = r.fork >= 1.5;
    std::printf("\nratios of the solution (targets):\n");
    std::printf("  pipeline_overlap_efficiency  %6.2f   ideal 1.00, target >= 0.90   %s   (v3_n_streams)\n",
                r.efficiency, verdict(eff));
    std::printf("  graph_replay_speedup         %6.2fx  target >= 3.0                %s\n", r.replay, verdict(rep));
    std::printf("  graph_update_over_replay     %6.2f   target <= 1.10               %s   (v4_graph)\n", r.update,
                verdict(upd));
    std::printf("  fork_join_speedup            %6.2fx  target >= 1.5                %s   (v2_two_streams)\n", r.fork,
                verdict(fj));
    if (g_tracing) {
      g_trace.write(o.trace);
      std::printf("\ntrace of one call of each form: %s\n", o.trace.c_str());
    }
    return o.strict && !(eff && rep && upd && fj) ? 1 : 0;
  });
}
