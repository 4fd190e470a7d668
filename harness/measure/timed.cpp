// A spec's problem prepared for fair timing. Two sets of input values ("banks") are drawn
// on the host and kept on the device; before every timed launch one of them, chosen at
// random, is copied into the launch's input buffers and the outputs are poisoned (outside
// the timed events). After every timed launch the poison left in its outputs is counted on
// the GPU (a launch that skipped work, or left some running elsewhere, still shows poison);
// after the samples, the output of the last timed launch is compared with the float64
// reference for the bank it was given: a launcher that reuses an earlier answer shows up as
// stale instead of fast.
#include <algorithm>
#include <memory>
#include <random>

#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "check/memory.cuh"
#include "measure/timed.cuh"

namespace wb {

namespace {

struct TimedState {
  const OpBase& op;
  const Variant& v;
  Shape shape;
  std::vector<DeviceBuffer<unsigned char>> buf;                 // per tensor: the launch's buffers
  std::vector<std::vector<DeviceBuffer<unsigned char>>> banks;  // [bank][tensor]: input values
  std::vector<std::vector<HostTensor>> host;                    // [bank][tensor]: for the reference
  DeviceBuffer<unsigned char> workspace;
  DeviceBuffer<unsigned long long> counter{1};  // for count_unpoisoned
  Rng pick;
  int last = 0;

  TimedState(const OpBase& o, const Variant& var, Shape s, uint64_t seed)
      : op(o), v(var), shape(std::move(s)), pick(seed ^ std::random_device{}()) {}

  Args args() {
    std::vector<Args::Slot> slots;
    const auto& t = op.common().tensors;
    for (size_t i = 0; i < t.size(); ++i) slots.push_back({&t[i], buf[i].size() ? buf[i].data() : nullptr});
    return Args(shape, std::move(slots), workspace.size() ? workspace.data() : nullptr, workspace.size());
  }
};

}  // namespace

bench::Timed prepare_timed(const OpBase& op, const Variant& v, Shape shape, uint64_t seed, int banks) {
  const OpCommon& c = op.common();
  if (c.derive) c.derive(shape);
  auto st = std::make_shared<TimedState>(op, v, shape, seed);
  const auto& t = c.tensors;
  st->buf.resize(t.size());
  st->banks.resize(banks);
  st->host.resize(banks);
  std::random_device rd;
  for (int b = 0; b < banks; ++b) {
    st->banks[b].resize(t.size());
    st->host[b].resize(t.size());
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].present_in(shape)) continue;
    const size_t bytes = static_cast<size_t>(t[i].count(shape)) * dtype_size(t[i].dtype);
    st->buf[i] = DeviceBuffer<unsigned char>(bytes);
    if (!t[i].is_input()) continue;
    for (int b = 0; b < banks; ++b) {
      HostTensor h(t[i].name, t[i].dtype, t[i].count(shape));
      fill(h, t[i].dist, shape, seed ^ (uint64_t{rd()} << 32 | rd()));
      st->banks[b][i] = DeviceBuffer<unsigned char>(bytes);
      if (bytes) CUDA_CHECK(cudaMemcpy(st->banks[b][i].data(), h.raw(), bytes, cudaMemcpyHostToDevice));
      st->host[b][i] = std::move(h);
    }
  }
  const size_t ws = v.workspace ? v.workspace(shape) : 0;
  if (ws) {
    st->workspace = DeviceBuffer<unsigned char>(ws);
    CUDA_CHECK(cudaMemset(st->workspace.data(), 0, ws));
    CUDA_CHECK(cudaDeviceSynchronize());  // the legacy stream's memset, done before a non-blocking stream's launch
  }

  bench::Timed timed;
  timed.launch = [st](cudaStream_t s) { st->op.invoke(st->v.fn, st->args(), s); };
  timed.next_inputs = [st](cudaStream_t s) {
    const auto& t = st->op.common().tensors;
    st->last = static_cast<int>(st->pick.range(0, static_cast<int64_t>(st->banks.size()) - 1));
    for (size_t i = 0; i < t.size(); ++i) {
      if (!st->buf[i].size()) continue;
      if (t[i].is_input()) {
        CUDA_CHECK(cudaMemcpyAsync(st->buf[i].data(), st->banks[st->last][i].data(), st->buf[i].size(),
                                   cudaMemcpyDeviceToDevice, s));
      } else {
        fill_poison(st->buf[i].data(), st->buf[i].size(), t[i].dtype, s);
      }
    }
    if (st->v.prepare) st->v.prepare(st->args(), s);
  };
  // Output elements a launch must write: the logical ones of each output that starts poisoned
  // (not an in-out tensor, whose start is real data). One-byte types are left out: a valid
  // value may equal their poison.
  timed.unwritten = [st](cudaStream_t s) -> int64_t {
    const auto& t = st->op.common().tensors;
    int64_t gap = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].role != TensorRole::Out || !st->buf[i].size() || dtype_size(t[i].dtype) < 2) continue;
      const int64_t written = count_unpoisoned(st->buf[i].data(), st->buf[i].size(), t[i].dtype, st->counter.data(), s);
      gap += std::max<int64_t>(0, t[i].view_count(st->shape) - written);
    }
    return gap;
  };
  timed.check_last = [st]() -> Outcome {
    const auto& t = st->op.common().tensors;
    const OpCommon& c = st->op.common();
    RefCtx ctx(st->shape, st->host[st->last], t);
    // A sample of rows: the first, the last and a few in between.
    const int64_t rows = c.ref_rows ? c.ref_rows(st->shape) : 1;
    std::vector<int64_t> pick_rows = {0};
    if (rows > 1) pick_rows.push_back(rows - 1);
    Rng r(7);
    for (int k = 0; k < 16 && rows > 2; ++k) pick_rows.push_back(r.range(1, rows - 2));
    for (int64_t row : pick_rows) c.reference(ctx, row);
    int64_t wrong = 0, checked = 0;
    std::string first;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_output() || !st->buf[i].size()) continue;
      HostTensor got(t[i].name, t[i].dtype, t[i].count(st->shape));
      CUDA_CHECK(cudaMemcpy(got.raw(), st->buf[i].data(), got.bytes(), cudaMemcpyDeviceToHost));
      const Tolerance tol = t[i].tol.make(st->shape, t[i].dtype);
      const TensorView view(t[i], st->shape);  // outputs here are allocated as declared
      for (const auto& [idx, val] : ctx.expected()[i]) {
        const int64_t at = view.alloc_index(idx);
        ++checked;
        if (!tol.allows(val, got.get(at)) && wrong++ == 0) {
          first = t[i].name + " element " + std::to_string(idx) + ": expected " + std::to_string(val) + ", got " +
                  std::to_string(got.get(at));
        }
      }
    }
    if (wrong == 0) return Outcome::pass();
    return Outcome::fail(Code::StaleAfterTiming, std::to_string(wrong) + " of " + std::to_string(checked) +
                                                     " sampled elements wrong after the last timed launch (" + first +
                                                     ")");
  };
  return timed;
}

}  // namespace wb
