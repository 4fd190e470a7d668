// The check of one variant on one shape. Three passes over the same buffers:
//
//   1. Correctness, with the stream checked by CAPTURE: the launcher is called while its
//      stream is being captured into a CUDA graph, so nothing it puts on that stream runs
//      yet. Any output written before the graph is launched was written by work on some
//      other stream: the legacy or per-thread default stream, or a stream of the
//      launcher's own, blocking or not. (A call that cannot be captured, such as a
//      synchronous copy, is reported the same way.) Then the graph runs and every output is
//      compared with the float64 reference; guard bands and padding must be untouched.
//   2. A second call on the SAME buffers with NEW input values and fresh poison (a
//      launcher that caches its answer fails here), with the inputs FENCED (the first byte
//      past each input is unmapped: a read past the end faults, and since pass 1 ran clean
//      with that memory mapped, the fault is reported as an out-of-bounds read) and a GATE
//      held on the legacy stream while the harness reads the outputs through a
//      non-blocking stream (work on the legacy or any blocking stream, uncaptured this
//      time, is still waiting behind the gate and shows as unwritten).
//   3. Optional: the same inputs again, which must give the same bits (determinism).
// Library references run pass 1 without capture: they are trusted to use their stream.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "check/compare.h"
#include "runtime/parallel.h"
#include "check/memory.cuh"
#include "declare/op.cuh"

namespace wb {

int Args::i(std::string_view name) const {
  const int64_t v = shape_[name];
  if (v > INT32_MAX || v < INT32_MIN) {
    throw std::invalid_argument("dimension " + std::string(name) + "=" + std::to_string(v) +
                                " does not fit the launcher's int parameter");
  }
  return static_cast<int>(v);
}

void* Args::find(std::string_view name, DType t, bool output) const {
  for (const auto& s : slots_) {
    if (s.spec->name != name) continue;
    if (s.spec->dtype != t) {
      throw std::logic_error("launch adapter asks for tensor '" + std::string(name) + "' as " +
                             std::string(dtype_name(t)) + ", but the op declares it " +
                             std::string(dtype_name(s.spec->dtype)));
    }
    if (output && !s.spec->is_output()) {
      throw std::logic_error("launch adapter asks for input '" + std::string(name) + "' as an output");
    }
    return s.ptr;
  }
  throw std::logic_error("launch adapter asks for tensor '" + std::string(name) + "', which the op does not declare");
}

namespace {

constexpr int64_t kFullCheckLimit = int64_t{1} << 22;  // compare every element up to this many
constexpr int64_t kSampleTarget = int64_t{1} << 18;    // else about this many, in whole rows

// --- the problem: host tensors, device buffers, and calling the launcher ------------------

struct Problem {
  const OpBase& op;
  const Variant& v;
  Shape shape;
  std::vector<HostTensor> host;                         // per tensor: inputs, and starting contents of in-outs
  std::vector<std::unique_ptr<FencedBuffer>> in_buf;    // per tensor (inputs only)
  std::vector<std::unique_ptr<GuardedBuffer>> out_buf;  // per tensor (outputs and in-outs)
  DeviceBuffer<unsigned char> workspace;
  mutable DeviceBuffer<unsigned long long> counter{1};  // for count_unpoisoned, allocated up front

  const std::vector<TensorSpec>& specs() const { return op.common().tensors; }

  Problem(const OpBase& o, const Variant& var, Shape s) : op(o), v(var), shape(std::move(s)) {
    const auto& t = specs();
    host.resize(t.size());
    in_buf.resize(t.size());
    out_buf.resize(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].present_in(shape)) continue;
      const size_t bytes = static_cast<size_t>(t[i].count(shape)) * dtype_size(t[i].dtype);
      if (t[i].role == TensorRole::In)
        in_buf[i] = std::make_unique<FencedBuffer>(bytes);
      else
        out_buf[i] = std::make_unique<GuardedBuffer>(bytes);
    }
    const size_t ws = v.workspace ? v.workspace(shape) : 0;
    if (ws > 0) {
      workspace = DeviceBuffer<unsigned char>(ws);
      CUDA_CHECK(cudaMemset(workspace.data(), 0, ws));  // zeroed once, kept across calls
    }
  }

  Args args() const {
    std::vector<Args::Slot> slots;
    const auto& t = specs();
    for (size_t i = 0; i < t.size(); ++i) {
      void* p = nullptr;
      if (in_buf[i]) p = in_buf[i]->data();
      if (out_buf[i]) p = out_buf[i]->data();
      slots.push_back({&t[i], p});
    }
    return Args(shape, std::move(slots),
                workspace.size() ? static_cast<void*>(const_cast<unsigned char*>(workspace.data())) : nullptr,
                workspace.size());
  }

  // New input values (and starting contents of in-outs) drawn from `seed`.
  void draw_inputs(uint64_t seed, const InputSet* set) {
    const auto& t = specs();
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_input() || !t[i].present_in(shape)) continue;
      Dist d = t[i].dist;
      if (set) {
        for (const auto& [name, dist] : set->dists) {
          if (name == t[i].name) d = dist;
        }
      }
      host[i] = HostTensor(t[i].name, t[i].dtype, t[i].count(shape));
      fill(host[i], d, shape, seed ^ (0xD1B54A32D192ED03ull * (i + 1)));
      poison_padding(t[i], host[i]);
    }
  }

  // Padding elements of an input hold the poison (for float types; integers keep values).
  void poison_padding(const TensorSpec& t, HostTensor& h) const {
    if (t.view.empty() || !dtype_is_float(t.dtype)) return;
    const TensorView view(t, shape);
    const uint64_t pbits = poison_bits(t.dtype);
    const int size = dtype_size(t.dtype);
    parallel_count(h.count(), [&](int64_t begin, int64_t end) {
      for (int64_t idx = begin; idx < end; ++idx) {
        if (view.is_padding(idx)) std::memcpy(static_cast<char*>(h.raw()) + idx * size, &pbits, size);
      }
      return int64_t{0};
    });
  }

  // Uploads the inputs and the starting contents of in-outs; poisons pure outputs.
  void upload(cudaStream_t stream) {
    const auto& t = specs();
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].present_in(shape)) continue;
      if (in_buf[i]) {
        in_buf[i]->poison_tail(t[i].dtype);
        if (host[i].bytes())
          CUDA_CHECK(cudaMemcpy(in_buf[i]->data(), host[i].raw(), host[i].bytes(), cudaMemcpyHostToDevice));
      } else if (out_buf[i]) {
        out_buf[i]->poison(t[i].dtype, stream);
        if (t[i].role == TensorRole::InOut && host[i].bytes()) {
          CUDA_CHECK(cudaMemcpy(out_buf[i]->data(), host[i].raw(), host[i].bytes(), cudaMemcpyHostToDevice));
        }
      }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  // Zeros in every input buffer (placeholder contents until the drawn inputs are uploaded).
  void zero_inputs() {
    for (const auto& b : in_buf) {
      if (b && b->bytes()) CUDA_CHECK(cudaMemset(b->data(), 0, b->bytes()));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  void set_fence(bool on) {
    for (auto& b : in_buf) {
      if (b) b->set_fence(on);
    }
  }

  // Downloads every output (allocated layout), through `stream` (async, then waits).
  std::vector<HostTensor> download(cudaStream_t stream) const {
    std::vector<HostTensor> got(specs().size());
    for (size_t i = 0; i < specs().size(); ++i) {
      if (!out_buf[i]) continue;
      got[i] = HostTensor(specs()[i].name, specs()[i].dtype, specs()[i].count(shape));
      if (got[i].bytes()) {
        CUDA_CHECK(cudaMemcpyAsync(got[i].raw(), out_buf[i]->data(), got[i].bytes(), cudaMemcpyDeviceToHost, stream));
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return got;
  }
};

std::string what_of(const OpBase& op, const Variant& v, const Shape& s) {
  return op.common().id() + " " + s.text() + " [" + v.name + "]";
}

// Calls the launcher; turns exceptions into outcomes. Pass: it returned normally.
Outcome call(const Problem& p, const Args& a, cudaStream_t stream) {
  try {
    p.op.invoke(p.v.fn, a, stream);
  } catch (const NotImplemented& e) {
    return Outcome::fail(Code::NotImplemented, e.what());
  } catch (const NoEngine& e) {
    return Outcome::fail(Code::NoEngine, e.what());
  } catch (const Rejected& e) {
    return Outcome::fail(e.code, e.what());
  } catch (const CudaError& e) {
    return Outcome::fail(e.sticky ? Code::Fault : Code::LaunchError, std::string("the launcher failed: ") + e.what());
  } catch (const std::exception& e) {
    return Outcome::fail(Code::LaunchError, std::string("the launcher threw: ") + e.what());
  }
  return Outcome::pass();
}

// Waits for `stream`; a fault becomes an outcome (a hang ends the process, code 124).
Outcome finish(cudaStream_t stream, const std::string& what) {
  try {
    sync_with_deadline(stream, what);
    device_sync_with_deadline(what);
  } catch (const CudaError& e) {
    return Outcome::fail(Code::Fault, std::string("the kernel faulted: ") + e.what());
  }
  return Outcome::pass();
}

// Elements of the outputs that differ from what was uploaded (poison, or an in-out's start).
int64_t changed_elements(const Problem& p, const std::vector<HostTensor>& got) {
  int64_t n = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!p.out_buf[i]) continue;
    const bool inout = p.specs()[i].role == TensorRole::InOut;
    n += parallel_count(got[i].count(), [&](int64_t begin, int64_t end) {
      int64_t changed = 0;
      for (int64_t k = begin; k < end; ++k) {
        changed += !(inout ? got[i].bits(k) == p.host[i].bits(k) : got[i].is_poison(k));
      }
      return changed;
    });
  }
  return n;
}

// Elements of the outputs that differ from what was uploaded, as changed_elements counts
// them, without copying the outputs out where it can: pure outputs are counted on the GPU
// (a 2^31-element output is 8 GB to copy, allocate and scan on the host). In-outs compare
// with their starting contents, which only the host holds: those are downloaded.
int64_t changed_now(const Problem& p, cudaStream_t stream) {
  for (const auto& t : p.specs()) {
    if (t.role == TensorRole::InOut) return changed_elements(p, p.download(stream));
  }
  int64_t n = 0;
  for (size_t i = 0; i < p.specs().size(); ++i) {
    if (p.out_buf[i]) {
      n += count_unpoisoned(p.out_buf[i]->data(), p.out_buf[i]->bytes(), p.specs()[i].dtype, p.counter.data(), stream);
    }
  }
  return n;
}

// --- comparing with the reference ---------------------------------------------------------

// Which reference rows to compute: all of them for small problems, else the first, the last
// and random ones until about kSampleTarget output elements are covered.
std::vector<int64_t> rows_to_check(const OpCommon& c, const Shape& s, bool full, Rng& rng) {
  const int64_t rows = c.ref_rows ? c.ref_rows(s) : 1;
  int64_t elements = 0;
  for (const auto& t : c.tensors) {
    if (t.is_output() && t.present_in(s)) elements += t.view_count(s);
  }
  std::vector<int64_t> out;
  if (rows <= 0) return out;
  if (full || elements < kFullCheckLimit || rows <= 2) {
    for (int64_t r = 0; r < rows; ++r) out.push_back(r);
    return out;
  }
  const int64_t per_row = std::max<int64_t>(1, elements / rows);
  const int64_t want = std::min<int64_t>(rows, std::max<int64_t>(2, kSampleTarget / per_row));
  std::set<int64_t> pick = {0, rows - 1};
  while (static_cast<int64_t>(pick.size()) < want) pick.insert(rng.range(0, rows - 1));
  return {pick.begin(), pick.end()};
}

struct Expected {
  std::vector<std::vector<std::pair<int64_t, double>>> per_output;  // sorted by logical index
  bool all_rows = true;
};

// The float64 reference is the costliest part of checking a large GEMM or attention: its
// rows are shared out to the machine's cores, each thread with its own RefCtx (reference
// functions see one row at a time and keep any scratch thread_local).
Expected compute_reference(const OpCommon& c, const Shape& s, const std::vector<HostTensor>& in, bool full, Rng& rng) {
  const auto rows = rows_to_check(c, s, full, rng);
  constexpr size_t kRowsPerThreadMin = 8;
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), rows.size() / kRowsPerThreadMin);
  std::vector<std::unique_ptr<RefCtx>> ctx;
  for (size_t t = 0; t < std::max<size_t>(threads, 1); ++t) ctx.push_back(std::make_unique<RefCtx>(s, in, c.tensors));
  if (threads <= 1) {
    for (int64_t r : rows) c.reference(*ctx[0], r);
  } else {
    std::vector<std::exception_ptr> error(threads);
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          for (size_t k = t; k < rows.size(); k += threads) c.reference(*ctx[t], rows[k]);
        } catch (...) {
          error[t] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : error) {
      if (e) std::rethrow_exception(e);
    }
  }
  Expected e;
  e.per_output = std::move(ctx[0]->expected());
  for (size_t t = 1; t < ctx.size(); ++t) {
    auto& more = ctx[t]->expected();
    if (e.per_output.size() < more.size()) e.per_output.resize(more.size());
    for (size_t o = 0; o < more.size(); ++o) {
      e.per_output[o].insert(e.per_output[o].end(), more[o].begin(), more[o].end());
    }
  }
  for (auto& v : e.per_output) std::sort(v.begin(), v.end());
  e.all_rows = static_cast<int64_t>(rows.size()) == (c.ref_rows ? c.ref_rows(s) : 1);
  return e;
}

struct OutputVerdict {
  Code code = Code::Pass;
  std::string text;     // the detail lines
  std::string summary;  // one line
  Diagnosis* diag = nullptr;
  double max_err = 0, max_ref = 0;
};

// Compares one output. Every element is scanned for poison and NaN/Inf; padding must be
// poison; values are compared on the expected (sampled) elements.
OutputVerdict compare_output(const TensorSpec& t, const Shape& s, const HostTensor& got,
                             const std::vector<std::pair<int64_t, double>>& expect, bool all_rows,
                             std::vector<int64_t>* bad_out, int64_t* counts /* unwritten, nonfinite, wrong, checked */,
                             const HostTensor* start /* in-outs: the contents uploaded before the call */) {
  OutputVerdict v;
  const TensorView ax(t, s);
  const int64_t logical_n = t.view_count(s);
  const Tolerance tol = t.tol.make(s, t.dtype);

  // Padding.
  int64_t padding_writes = 0, first_pad = -1;
  if (!t.view.empty()) {
    // Padding of an output must still hold the poison; of an in-out, the bits uploaded.
    const auto wrote_padding = [&](int64_t idx) {
      return ax.is_padding(idx) &&
             (t.role == TensorRole::Out ? !got.is_poison(idx) : start && got.bits(idx) != start->bits(idx));
    };
    padding_writes = parallel_count(got.count(), [&](int64_t begin, int64_t end) {
      int64_t k = 0;
      for (int64_t idx = begin; idx < end; ++idx) k += wrote_padding(idx);
      return k;
    });
    for (int64_t idx = 0; padding_writes > 0 && first_pad < 0; ++idx) {
      if (wrote_padding(idx)) first_pad = idx;
    }
  }

  Layout layout;
  layout.names = ax.names;
  layout.sizes = ax.vis;
  std::vector<int64_t> only;
  only.reserve(expect.size());
  for (const auto& [i, val] : expect) only.push_back(i);
  CheckOptions opt;
  opt.only = &only;
  opt.max_listed = 6;
  // Most outputs hold no poison, NaN or Inf at all: one typed pass over the stored elements
  // says so far faster than check_elements' scan through its callbacks. (Needs every stored
  // element to be a logical one: no padding, and no in-out starting contents to tell apart.)
  if (logical_n == got.count() && t.role == TensorRole::Out) {
    opt.known_clean = parallel_count(got.count(), [&](int64_t begin, int64_t end) {
                        int64_t bad = 0;
                        for (int64_t i = begin; i < end; ++i) bad += !std::isfinite(got.get(i));
                        return bad;
                      }) == 0;
  }
  const auto ref = [&](int64_t i) {
    auto it = std::lower_bound(expect.begin(), expect.end(), std::pair<int64_t, double>{i, -INFINITY});
    return it != expect.end() && it->first == i ? it->second : NAN;
  };
  const bool is_int = !dtype_is_float(t.dtype);
  // An expected infinity (the max of no elements is -inf) is right when matched exactly:
  // such an element is compared as 0 == 0, so the NaN/Inf scan does not count it.
  const auto got_or_matched_inf = [&](int64_t i) {
    const double g = got.get(ax.alloc_index(i));
    return std::isinf(g) && ref(i) == g ? 0.0 : g;
  };
  const auto ref_or_matched_inf = [&](int64_t i) {
    const double e = ref(i);
    return std::isinf(e) && got.get(ax.alloc_index(i)) == e ? 0.0 : e;
  };
  CheckResult r = check_elements(
      layout, got_or_matched_inf,
      [&](int64_t i) {
        // An in-out element that started as poison (an output-only buffer) and still holds it: unwritten.
        const int64_t at = ax.alloc_index(i);
        const bool started_poison = t.role == TensorRole::Out || (start && start->is_poison(at));
        return started_poison && got.is_poison(at) && !is_int;
      },
      ref_or_matched_inf, tol, opt);
  // Integer outputs: the poison pattern is a valid integer, so "unwritten" is told apart
  // only where the reference differs from it.
  if (is_int && t.role == TensorRole::Out) {
    for (const auto& [i, val] : expect) {
      if (got.is_poison(ax.alloc_index(i)) && val != got.get(ax.alloc_index(i))) ++r.unwritten;
    }
  }
  for (const auto& [i, val] : expect) {
    const double g = got.get(ax.alloc_index(i));
    if (std::isfinite(g) && std::isfinite(val)) {
      v.max_err = std::max(v.max_err, std::fabs(g - val));
      v.max_ref = std::max(v.max_ref, std::fabs(val));
    }
  }
  counts[0] += r.unwritten;
  counts[1] += r.nonfinite;
  counts[2] += r.wrong;
  counts[3] += r.checked;
  if (r.ok && padding_writes == 0) {
    v.summary =
        t.name + ": " + std::to_string(r.checked) + (all_rows ? "" : " sampled") + " elements within " + tol.describe();
    return v;
  }
  if (r.unwritten)
    v.code = Code::Unwritten;
  else if (r.nonfinite)
    v.code = Code::NaN;
  else if (r.wrong)
    v.code = Code::Wrong;
  else
    v.code = Code::WrotePadding;

  std::ostringstream out;
  std::vector<std::string> parts;
  if (r.unwritten) parts.push_back(std::to_string(r.unwritten) + " never written");
  if (r.nonfinite) parts.push_back(std::to_string(r.nonfinite) + " NaN/Inf");
  if (r.wrong) parts.push_back(std::to_string(r.wrong) + " wrong");
  std::string joined;
  for (size_t k = 0; k < parts.size(); ++k) joined += (k ? ", " : "") + parts[k];
  if (!joined.empty()) {
    v.summary = t.name + ": " + joined + " of " + std::to_string(logical_n) + " elements" +
                (r.sampled ? " (" + std::to_string(r.checked) + " compared)" : "");
  } else {
    v.summary = t.name + ": writes into the padding";
  }
  out << "  " << v.summary << "   (indices " << ax.legend(t.name) << ")\n";
  for (const auto& m : r.first) {
    out << "    " << ax.coords(t.name, m.index) << ": " << mismatch_text(m) << "\n";
    bad_out->push_back(m.index);
  }
  if (r.wrong) out << "    tolerance " << tol.describe() << " (" << t.tol.text << ")\n";
  if (padding_writes) {
    out << "    " << padding_writes << " writes into the padding of " << t.name << " (allocated element " << first_pad
        << "): write only the first " << (t.view.empty() ? "" : t.view.back()) << " of each row\n";
  }
  if (!r.tile_map.empty()) {
    std::string map = r.tile_map;
    std::string indented;
    std::istringstream lines(map);
    for (std::string line; std::getline(lines, line);) indented += "  " + line + "\n";
    out << indented;
  }
  v.text = out.str();
  return v;
}

// Generic likely causes, from the pattern of the failure.
std::string generic_cause(const Diagnosis& d) {
  const int64_t n = d.rows * d.cols;
  switch (d.code) {
    case Code::Unwritten:
      if (d.unwritten >= n && n > 0) {
        return "nothing was written: is the grid empty (0 blocks), does every thread return early, or is the "
               "kernel launched at all?";
      }
      if (!d.bad.empty() && d.bad.front() >= n - 1024 && d.cols > 1 && d.rows == 1) {
        return "only the end of the output is missing: the grid is rounded down, so the last partial block "
               "never runs (round up: (n + threads - 1) / threads)";
      }
      if (!d.bad.empty() && d.rows == 1) {
        return "the last elements were never written: the grid is rounded down or the loop stops early "
               "(round up: (n + threads - 1) / threads)";
      }
      if (!d.bad.empty()) {
        const int64_t r0 = d.bad.front() / d.cols, c0 = d.bad.front() % d.cols;
        if (r0 > 0 && c0 == 0)
          return "whole rows at the end were never written: the grid's y extent is rounded down, or rows and columns "
                 "are swapped";
        return "some elements were never written: a grid dimension is rounded down, or the threads of a "
               "partial tile at the edge return before writing";
      }
      return "some elements were never written";
    case Code::NaN:
      return "NaN/Inf in the output: a read past the end of an input (the harness pads inputs with NaN), "
             "uninitialized shared memory, or a division by zero";
    case Code::Wrong:
      if (d.rows > 1 && d.cols > 1 && d.rows != d.cols) {
        return "wrong values: check that rows and columns (and every leading dimension) are used where "
               "they belong: a kernel right only on squares swaps them";
      }
      return "wrong values: compare your index arithmetic with the formula in the interface header";
    case Code::WrotePadding:
      return "the kernel writes past the logical width into the row padding: bound the column index by the "
             "width, not the pitch";
    default:
      return {};
  }
}

std::string docs_pointer(const OpCommon& c) { return c.docs.empty() ? std::string{} : " → " + c.docs; }

// Compares every output of one pass; Pass or the first failure with its full message.
struct PassVerdict {
  Outcome outcome;
  std::vector<double> max_err, max_ref;
};

PassVerdict judge(const Problem& p, const std::vector<HostTensor>& got, const Expected& e) {
  PassVerdict pv;
  const auto& specs = p.specs();
  pv.max_err.assign(specs.size(), 0);
  pv.max_ref.assign(specs.size(), 0);
  std::string text, summary;
  Code code = Code::Pass;
  std::string cause;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!p.out_buf[i]) continue;
    // Guard bands first: a write outside the output is the root cause of everything else.
    const auto g = p.out_buf[i]->check_guards(specs[i].dtype);
    if (g.before || g.after) {
      const int size = dtype_size(specs[i].dtype);
      const int64_t outside = g.before + g.after, n = got[i].count();
      std::string m = "  " + specs[i].name + ": " + std::to_string(outside) +
                      (outside == 1 ? " element" : " elements") + " written OUTSIDE the output";
      if (g.after) {
        const int64_t k = g.first_after / size;  // 0: the element right after the last one
        m += k == 0
                 ? ", the first right after its last element (index " + std::to_string(n) + ")"
                 : ", the first " + std::to_string(k) + " elements after its end (index " + std::to_string(n + k) + ")";
      }
      if (g.before) m += std::string(g.after ? " and" : ",") + " some before its start";
      text += m + "\n";
      if (code == Code::Pass) {
        code = Code::OobWrite;
        summary = specs[i].name + ": writes past the end";
        cause = "a write past the end of " + specs[i].name +
                ": the bounds check is missing or wrong (every thread that writes must test its index "
                "against the size)";
      }
    }
    std::vector<int64_t> bad;
    int64_t counts[4] = {0, 0, 0, 0};
    OutputVerdict v = compare_output(specs[i], p.shape, got[i], e.per_output[i], e.all_rows, &bad, counts,
                                     specs[i].role == TensorRole::InOut ? &p.host[i] : nullptr);
    pv.max_err[i] = v.max_err;
    pv.max_ref[i] = v.max_ref;
    if (v.code == Code::Pass) continue;
    text += v.text;
    if (code == Code::Pass) {
      code = v.code;
      summary = v.summary;
      const TensorView ax(specs[i], p.shape);
      const int64_t cols = ax.vis.empty() ? 1 : ax.vis.back();
      const int64_t total = specs[i].view_count(p.shape);
      Diagnosis d{p.shape,
                  specs[i].name,
                  v.code,
                  cols ? total / cols : 0,
                  cols,
                  bad,
                  counts[0] + counts[1] + counts[2],
                  counts[0],
                  counts[2],
                  counts[1],
                  counts[3]};
      const RefCtx inputs(p.shape, p.host, specs);
      d.inputs = &inputs;
      d.got = [&](int64_t k) { return got[i].get(ax.alloc_index(k)); };
      if (p.op.common().diagnose) cause = p.op.common().diagnose(d);
      if (cause.empty()) cause = generic_cause(d);
    }
  }
  if (code == Code::Pass) {
    pv.outcome = Outcome::pass();
    return pv;
  }
  pv.outcome =
      Outcome::fail(code, summary + "\n" + text +
                              (cause.empty() ? "" : "  likely cause: " + cause + docs_pointer(p.op.common()) + "\n"));
  return pv;
}

// The message a learner reads: their file first, then the op and shape, then the details.
Outcome headed(const Problem& p, Outcome o, const std::string& pass_name) {
  if (o.passed()) return o;
  std::string head = p.v.file.empty() ? "[" + p.v.name + "]" : p.v.file + " [" + p.v.name + "]";
  head += ": " + p.op.common().id() + " " + p.shape.text();
  if (!pass_name.empty()) head += " (" + pass_name + ")";
  o.message = head + "\n  " + o.message;
  return o;
}

// The yardstick: a library launcher on the same inputs; the kernel's largest error may be at
// most factor x the library's, plus one rounding step of the output type at the largest value.
// Not on a case tagged "large": those are there for 32-bit index arithmetic, the library would
// need a second set of buffers as large as the first (past 2^31 elements, 10 GB and more), and
// the absolute bound of each output still holds.
Outcome yardstick_check(const Problem& p, const Expected& e, const PassVerdict& mine, cudaStream_t stream) {
  const OpCommon& c = p.op.common();
  if (c.yardstick_factor <= 0 || p.op.yardstick() == nullptr || p.v.fn == p.op.yardstick()) return Outcome::pass();
  if (p.shape.tag() == "large") return Outcome::pass();
  Variant y = p.v;
  y.fn = p.op.yardstick();
  y.name = "yardstick";
  y.workspace = nullptr;
  y.prepare = nullptr;
  Problem q(p.op, y, p.shape);
  q.host = p.host;
  q.upload(stream);
  if (auto o = call(q, q.args(), stream); !o.passed())
    return Outcome::pass();  // no yardstick here: skip the comparison
  if (auto o = finish(stream, "yardstick"); !o.passed()) return Outcome::pass();
  const auto got = q.download(stream);
  for (size_t i = 0; i < p.specs().size(); ++i) {
    if (!p.out_buf[i] || !dtype_is_float(p.specs()[i].dtype)) continue;
    if (e.per_output[i].size() < 256) continue;
    double yerr = 0;
    const TensorView ax(p.specs()[i], p.shape);
    for (const auto& [idx, val] : e.per_output[i]) {
      const double g = got[i].get(ax.alloc_index(idx));
      if (std::isfinite(g)) yerr = std::max(yerr, std::fabs(g - val));
    }
    const Tolerance tol = p.specs()[i].tol.make(p.shape, p.specs()[i].dtype);
    const TensorSpec& spec = p.specs()[i];
    const double floor = spec.yardstick_floor ? spec.yardstick_floor(p.shape)
                                              : unit_roundoff(spec.dtype) * 2 * mine.max_ref[i] + tol.atol;
    const double allowed = c.yardstick_factor * yerr + floor;
    if (mine.max_err[i] > allowed) {
      return Outcome::fail(Code::Wrong, p.specs()[i].name + ": largest error " + format_value(mine.max_err[i]) +
                                            " is more than " + format_value(c.yardstick_factor) +
                                            "x the library's own (" + format_value(yerr) + ") plus " +
                                            format_value(floor) + ": allowed " + format_value(allowed) +
                                            "\n  likely cause: accumulating in a narrower type than FP32, or rounding "
                                            "an intermediate result" +
                                            docs_pointer(c) + "\n");
    }
  }
  return Outcome::pass();
}

}  // namespace

std::optional<std::string> cannot_run_here(const OpBase& op, const Variant& v, const Shape& given) {
  if (auto reason = gpu_missing_reason()) return *reason;
  Shape s = given;  // the sizes of the tensors may name derived dimensions (strides, padded widths)
  if (op.common().derive) op.common().derive(s);
  const DeviceInfo dev = query_device();
  const int cc = dev.major * 10 + dev.minor;
  if (v.sm90a && cc != 90) {
    return v.name + " is built for sm_90a (Hopper: wgmma, TMA) and runs on compute capability 9.0 only; this GPU (" +
           dev.name + ") is " + dev.compute_capability();
  }
  if (cc < v.min_cc) {
    return v.name + " needs compute capability " + std::to_string(v.min_cc / 10) + "." + std::to_string(v.min_cc % 10) +
           " or newer; this GPU (" + dev.name + ") is " + dev.compute_capability();
  }
  // Memory: the tensors (inputs twice: the fenced granules), outputs, guard bands.
  double need = 0;
  for (const auto& t : op.common().tensors) {
    if (t.present_in(s)) need += double(t.count(s)) * dtype_size(t.dtype);
  }
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && need * 1.1 + (256 << 20) > double(free_b)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "needs %.1f GB of GPU memory; this GPU has %.1f GB free", need / 1e9, free_b / 1e9);
    return std::string(buf);
  }
  if (op.common().unsupported) {
    if (auto why = op.common().unsupported(s)) return *why;
  }
  return std::nullopt;
}

Outcome dry_run_without_gpu(const OpBase& op, const Variant& v, Shape shape) {
  if (op.common().derive) op.common().derive(shape);
  const Args a = placeholder_args(op, v, shape);
  try {
    op.invoke(v.fn, a, nullptr);
  } catch (const NotImplemented& e) {
    return Outcome::fail(Code::NotImplemented, e.what());
  } catch (...) {
  }
  return Outcome::fail(Code::CompiledNotRun, "compiled, not run: no GPU");
}

// WORKBOOK_CHECK_TIMES=1: every case prints, to stderr, where its time went (one line of
// phase=seconds), to find the slow part of a large case.
class PhaseTimes {
 public:
  explicit PhaseTimes(std::string what) : what_(std::move(what)), on_(std::getenv("WORKBOOK_CHECK_TIMES") != nullptr) {}
  ~PhaseTimes() {
    if (on_) std::fprintf(stderr, "[wb-times] %s:%s\n", what_.c_str(), line_.c_str());
  }
  void mark(const char* phase) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    char b[64];
    std::snprintf(b, sizeof b, " %s=%.3f", phase, std::chrono::duration<double>(now - last_).count());
    line_ += b;
    last_ = now;
  }

 private:
  std::string what_, line_;
  bool on_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

Outcome check_case(const OpBase& op, const Variant& v, Shape shape, const CaseOptions& opt) {
  const OpCommon& c = op.common();
  if (c.derive) c.derive(shape);
  const std::string what = what_of(op, v, shape);
  PhaseTimes times(what);
  Rng rng(opt.seed);
  Problem p(op, v, shape);
  Stream stream, reader;
  times.mark("allocate");

  // --- pass 1: correctness; the stream checked by capture -------------------------------
  const bool capture = c.checks.stream && !v.library;
  // A captured call runs nothing until its graph is launched, so the inputs can be drawn after
  // it: a stub's "not implemented" then costs no input drawing, however large the shape. Not
  // with a prepare step (it reads the inputs) or an in-out tensor (its starting contents are
  // what the capture check compares against).
  bool inout = false;
  for (const auto& t : c.tensors) inout = inout || t.role == TensorRole::InOut;
  const bool inputs_after_capture = capture && !v.prepare && !inout;
  const uint64_t seed1 = rng.next();
  if (!inputs_after_capture) p.draw_inputs(seed1, opt.inputs);
  p.upload(stream);                           // without drawn inputs: the outputs poisoned, nothing else
  if (inputs_after_capture) p.zero_inputs();  // what work escaping the capture would read: no wild indices
  if (v.prepare) {
    try {
      v.prepare(p.args(), stream);
    } catch (const std::exception& e) {
      return headed(p, Outcome::fail(Code::LaunchError, std::string("prepare failed: ") + e.what()), "");
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  if (capture) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Outcome o = call(p, p.args(), stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    cudaGetLastError();  // a capture error must not leak into the next check
    if (o.code == Code::NotImplemented) return headed(p, o, "");
    std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> owned(graph, &cudaGraphDestroy);
    // A launch that fails by itself (a bad grid, say) also ends the capture: report its own error.
    const bool own_error = !o.passed() && o.message.find("StreamCapture") == std::string::npos;
    if (own_error && o.code != Code::Fault) {
      if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "");
      return headed(p, o, "");
    }
    if (end != cudaSuccess || (!o.passed() && o.message.find("StreamCapture") != std::string::npos)) {
      if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "");
      return headed(
          p,
          Outcome::fail(
              Code::OutsideStream,
              "the launcher made a call that does not belong on its stream (" +
                  std::string(cudaGetErrorName(end != cudaSuccess ? end : cudaErrorStreamCaptureUnsupported)) +
                  "): a synchronous copy or memset, a device-wide synchronize, an allocation, "
                  "or a launch on another stream.\n  " +
                  o.message +
                  "\n  likely cause: launch every kernel and copy on the stream you are given, "
                  "with the *Async forms of copies and memsets"),
          "");
    }
    if (!o.passed()) {
      if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "");
      return headed(p, o, "");
    }
    if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "");
    if (const int64_t n = changed_now(p, reader); n > 0) {
      return headed(p,
                    Outcome::fail(Code::OutsideStream,
                                  std::to_string(n) +
                                      " output elements were written before the work on the given "
                                      "stream was allowed to run: some of the launcher's work runs on another stream "
                                      "(the default stream, cudaStreamPerThread, or a stream of its own).\n"
                                      "  likely cause: a <<<grid, block>>> launch without the stream argument, or a "
                                      "stream the launcher creates; launch everything on the stream it is given"),
                    "");
    }
    if (inputs_after_capture) {
      p.draw_inputs(seed1, opt.inputs);
      p.upload(stream);
    }
    if (graph != nullptr) {
      cudaGraphExec_t exec = nullptr;
      CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      const cudaError_t launched = cudaGraphLaunch(exec, stream);
      Outcome f = launched == cudaSuccess
                      ? finish(stream, what)
                      : Outcome::fail(Code::LaunchError,
                                      std::string("the captured work could not run: ") + cudaGetErrorName(launched));
      cudaGraphExecDestroy(exec);
      if (!f.passed()) return headed(p, f, "");
    }
  } else {
    Outcome o = call(p, p.args(), stream);
    if (!o.passed()) {
      if (o.code != Code::NotImplemented && o.code != Code::NoEngine) finish(stream, what);
      return headed(p, o, "");
    }
    if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "");
  }
  times.mark("pass1");
  const auto got1 = p.download(reader);
  times.mark("download");
  Rng ref_rng(opt.seed ^ 0xABCDEF);
  const Expected e1 = compute_reference(c, p.shape, p.host, opt.full_check, ref_rng);
  times.mark("reference");
  const PassVerdict v1 = judge(p, got1, e1);
  times.mark("compare");
  if (!v1.outcome.passed()) return headed(p, v1.outcome, "");
  if (auto y = yardstick_check(p, e1, v1, stream); !y.passed()) return headed(p, y, "");
  times.mark("yardstick");

  // --- pass 2: same buffers, new inputs, inputs fenced, the legacy stream gated ----------
  if (c.checks.second_call && !opt.first_pass_only) {
    p.draw_inputs(rng.next(), opt.inputs);
    p.upload(stream);
    if (v.prepare) {
      v.prepare(p.args(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    if (c.checks.fence_inputs) p.set_fence(true);
    int64_t seen = 0;  // elements written while the given stream was the only one free to run
    {
      LegacyGate gate;
      gate.hold();
      Outcome o = call(p, p.args(), stream);
      Outcome f = o.passed() ? [&] {
        try {
          sync_with_deadline(stream, what);
        } catch (const CudaError& err) {
          return Outcome::fail(Code::Fault, err.what());
        }
        return Outcome::pass();
      }() : o;
      if (f.passed()) seen = changed_now(p, reader);  // while the gate still holds the legacy stream
      gate.release();
      if (f.passed()) f = finish(stream, what);
      if (!f.passed()) {
        if (f.code == Code::Fault && c.checks.fence_inputs) {
          return headed(
              p,
              Outcome::fail(
                  Code::OobRead,
                  "the kernel faulted reading past the end of an input: pass 1 ran cleanly with "
                  "the memory after each input mapped; this call, with the first byte past each "
                  "input unmapped, faulted (" +
                      f.message +
                      ").\n"
                      "  likely cause: a load before the bounds check, e.g. `float x = a[i]; if (i < n) ...`; "
                      "load only inside `if (i < n)`" +
                      docs_pointer(c)),
              "second call, inputs fenced");
        }
        return headed(p, f, "second call");
      }
    }
    if (c.checks.fence_inputs) p.set_fence(false);
    times.mark("pass2");
    const auto got2 = p.download(reader);
    if (seen < changed_elements(p, got2)) {
      return headed(p,
                    Outcome::fail(Code::OutsideStream,
                                  "when the given stream had finished, part of the output was still unwritten; it "
                                  "was written later, by work on the default stream or a blocking stream.\n"
                                  "  likely cause: a launch without the stream argument (<<<grid, block>>>), on "
                                  "cudaStreamPerThread, or on a stream the launcher creates; launch everything on "
                                  "the stream it is given"),
                    "second call");
    }
    Rng ref_rng2(opt.seed ^ 0x12345);
    const Expected e2 = compute_reference(c, p.shape, p.host, opt.full_check, ref_rng2);
    const PassVerdict v2 = judge(p, got2, e2);
    times.mark("pass2_check");
    if (!v2.outcome.passed()) {
      bool same = true;
      for (size_t i = 0; i < got1.size() && same; ++i) {
        if (got1[i].bytes() != got2[i].bytes())
          same = false;
        else if (got1[i].bytes())
          same = std::memcmp(got1[i].raw(), got2[i].raw(), got1[i].bytes()) == 0;
      }
      // A launcher that skips the second call leaves the fresh poison (or an in-out's new start).
      if (same || changed_elements(p, got2) == 0) {
        return headed(p,
                      Outcome::fail(Code::Cached,
                                    "called again on the same buffers with new input values, the launcher left "
                                    "exactly the previous call's output, or wrote nothing at all: it reuses an "
                                    "earlier result.\n"
                                    "  likely cause: the launcher skips work it thinks it has done before (keyed on "
                                    "pointers or sizes); compute from the inputs on every call\n" +
                                        v2.outcome.message),
                      "second call, new inputs");
      }
      return headed(p, v2.outcome, "second call, new inputs");
    }

    // --- pass 3: determinism ----------------------------------------------------------------
    for (int k = 0; k < c.checks.deterministic; ++k) {
      p.upload(stream);
      if (v.prepare) v.prepare(p.args(), stream);
      if (auto o = call(p, p.args(), stream); !o.passed()) return headed(p, o, "determinism run");
      if (auto f = finish(stream, what); !f.passed()) return headed(p, f, "determinism run");
      const auto got3 = p.download(reader);
      for (size_t i = 0; i < got3.size(); ++i) {
        if (got3[i].bytes() && std::memcmp(got3[i].raw(), got2[i].raw(), got2[i].bytes()) != 0) {
          int64_t diff = 0, first = -1;
          for (int64_t q = 0; q < got3[i].count(); ++q) {
            if (got3[i].bits(q) != got2[i].bits(q) && diff++ == 0) first = q;
          }
          return headed(p,
                        Outcome::fail(Code::Nondeterministic,
                                      p.specs()[i].name + ": two runs on the same inputs wrote different bits in " +
                                          std::to_string(diff) + " elements (first at allocated element " +
                                          std::to_string(first) +
                                          ").\n  likely cause: a race (a missing "
                                          "__syncthreads() between writing shared memory and reading it), or "
                                          "atomics whose order changes the rounding" +
                                          docs_pointer(c)),
                        "determinism run");
        }
      }
    }
  }
  std::string summary;
  for (size_t i = 0; i < p.specs().size(); ++i) {
    if (p.out_buf[i]) summary += (summary.empty() ? "" : "; ") + p.specs()[i].name;
  }
  return Outcome::pass("checked " + summary + (e1.all_rows ? "" : " (sampled rows)"));
}

}  // namespace wb
