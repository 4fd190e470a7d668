// An op is data. A chapter declares each op once, as an OpSpec: its tensors (dtype,
// distribution, tolerance), a float64 reference, its shapes, its bytes and FLOPs, and a
// launch adapter that calls a launcher with the harness's buffers. Each library (the
// learner's exercises, the solution ladder, the library reference, the broken kernels of the
// self-tests) lists its launchers as Variants. From the two, the harness makes:
//   * the tests: every (op, variant, shape), named  vector_add/f32/ex1_vector_add.n1025
//   * the rejection tests: every broken variant must fail with the code it declares
//   * the benchmark rows and their JSON (harness/measure/bench_main.cpp)
// What is under test is what is linked: a test program links the learner's library, or the
// solutions' and the reference's, and every variant it finds there is tested.
//
//   // chapters/ch01_indexing/spec.cu
//   WB_OPS(ch01) {
//     wb::add_op(wb::OpSpec<VectorAddFn>{
//         .name = "vector_add", .dtype = "f32",
//         .tensors = {wb::input("a", {"n"}, wb::DType::F32), ...,
//                     wb::output("c", {"n"}, wb::DType::F32, wb::tol::terms(...))},
//         .reference = [](const wb::RefCtx& r, int64_t i) { r.expect("c", i, r.in("a").get(i) + ...); },
//         .ref_rows = [](const wb::Shape& s) { return s["n"]; },
//         .launch = [](VectorAddFn* fn, wb::Args& a, cudaStream_t s) { fn(a.in<float>("a"), ...); },
//         ...});
//   }
//   // chapters/ch01_indexing/variants.cu
//   WB_VARIANTS(ch01_student) { return {wb::variant("vector_add/f32", "ex1_vector_add", &student::vector_add)}; }
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "runtime/launch.cuh"
#include "measure/roofline.h"
#include "declare/spec.h"
#include "tune/tune.h"

namespace wb {

// dtype_for((const T*)nullptr): the dtype of a device element type. Pointers never convert
// into one another, so a type not listed here has no dtype (a compile error).
constexpr DType dtype_for(const float*) { return DType::F32; }
constexpr DType dtype_for(const __half*) { return DType::F16; }
constexpr DType dtype_for(const __nv_bfloat16*) { return DType::BF16; }
constexpr DType dtype_for(const int8_t*) { return DType::I8; }
constexpr DType dtype_for(const int32_t*) { return DType::I32; }
constexpr DType dtype_for(const int64_t*) { return DType::I64; }
constexpr DType dtype_for(const __nv_fp8_e4m3*) { return DType::E4M3; }

// The dtype of a device element type.
template <class T>
constexpr DType dtype_of() {
  return dtype_for(static_cast<const T*>(nullptr));
}

// The buffers and sizes of one call, as a launch adapter sees them.
class Args {
 public:
  struct Slot {
    const TensorSpec* spec;
    void* ptr;  // null when the tensor is absent in this shape
  };
  Args(const Shape& shape, std::vector<Slot> slots, void* workspace, size_t workspace_bytes)
      : shape_(shape), slots_(std::move(slots)), workspace_(workspace), workspace_bytes_(workspace_bytes) {}

  template <class T>
  const T* in(std::string_view name) const {
    return static_cast<const T*>(find(name, dtype_of<T>(), false));
  }
  template <class T>
  T* out(std::string_view name) const {
    return static_cast<T*>(find(name, dtype_of<T>(), true));
  }
  int64_t dim(std::string_view name) const { return shape_[name]; }
  int i(std::string_view name) const;  // a dimension as int (throws if it does not fit)
  double param(std::string_view name) const { return shape_.param(name); }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  const Shape& shape() const { return shape_; }

 private:
  void* find(std::string_view name, DType t, bool output) const;
  const Shape& shape_;
  std::vector<Slot> slots_;
  void* workspace_;
  size_t workspace_bytes_;
};

// One launcher of one library for one op.
struct Variant {
  std::string op;    // the op's id, "vector_add/f32"
  std::string name;  // "ex1_vector_add", "v3_vectorized", "cublas_geam"
  Role role = Role::Student;
  const void* fn = nullptr;
  std::type_index type = typeid(void);
  std::string file;      // where the learner writes it (named first in failure messages)
  int min_cc = 0;        // compute capability needed, major*10+minor
  bool sm90a = false;    // built for sm_90a only: runs on compute capability 9.0 alone
  bool library = false;  // a library call: trusted to use its stream, not captured
  bool slow = false;     // left out of the default benchmark (a teaching step, far off the roof)
  std::string note;
  std::function<size_t(const Shape&)> workspace;           // scratch bytes it needs
  std::function<void(const Args&, cudaStream_t)> prepare;  // untimed work after inputs change
  std::vector<Code> expect;                                // Role::Broken: the check must fail with one of these codes
  std::vector<Shape> shapes;                               // shapes to test it on (default: the op's test shapes)
  std::string mistake;                                     // Role::Broken: the mistake, in words
  const tune::Space* space = nullptr;                      // tunable: its launcher reads a tune::Config (harness/tune)

  Variant& in_file(std::string f) {
    file = std::move(f);
    return *this;
  }
  Variant& needs_cc(int cc) {
    min_cc = cc;
    return *this;
  }
  Variant& hopper_only() {
    sm90a = true;
    min_cc = 90;
    return *this;
  }
  Variant& is_library() {
    library = true;
    return *this;
  }
  Variant& is_slow() {
    slow = true;
    return *this;
  }
  Variant& with_note(std::string n) {
    note = std::move(n);
    return *this;
  }
  Variant& with_workspace(std::function<size_t(const Shape&)> w) {
    workspace = std::move(w);
    return *this;
  }
  Variant& with_prepare(std::function<void(const Args&, cudaStream_t)> p) {
    prepare = std::move(p);
    return *this;
  }
  Variant& rejected_as(std::vector<Code> codes, std::string what) {
    role = Role::Broken;
    expect = std::move(codes);
    mistake = std::move(what);
    return *this;
  }
  Variant& on(std::vector<Shape> s) {
    shapes = std::move(s);
    return *this;
  }
  Variant& tuned_by(const tune::Space& s) {
    space = &s;
    return *this;
  }
};

template <class Fn>
Variant variant(std::string op, std::string name, Fn* fn) {
  Variant v;
  v.op = std::move(op);
  v.name = std::move(name);
  v.fn = reinterpret_cast<const void*>(fn);
  v.type = typeid(Fn);
  return v;
}

// A named set of input distributions that replaces the defaults on some shapes
// ("large_mean": x ~ normal(1000, 1)).
struct InputSet {
  std::string name;
  std::vector<std::pair<std::string, Dist>> dists;
  std::vector<Shape> shapes;
};

// What a failure looks like to a chapter's diagnosis hook.
struct Diagnosis {
  const Shape& shape;
  std::string output;  // which output failed
  Code code;
  int64_t rows, cols;        // the output's logical view folded to 2-D
  std::vector<int64_t> bad;  // logical indices of the first problems (sorted)
  int64_t bad_count = 0;
  int64_t unwritten = 0, wrong = 0, nonfinite = 0, checked = 0;
  // The failing pass itself, for a hook that tests a guess ("the output equals A^T * B"):
  std::function<double(int64_t)> got;  // the value written at a logical index of `output`
  const RefCtx* inputs = nullptr;      // that pass's inputs (in(), has(), shape), as the reference saw them
};

// Arguments every launcher of an op must refuse (k > vocabulary ...): by throwing
// std::invalid_argument with a message that says what is wrong, before launching anything.
struct Refusal {
  Shape shape;
  std::string why;  // "k > V": for the test's message
};

struct Checks {
  bool second_call = true;   // again on the same buffers with new inputs (caching)
  bool stream = true;        // work outside the given stream (capture + gate)
  bool fence_inputs = true;  // inputs flush against unmapped memory in the second call
  int deterministic = 0;     // extra runs on the same inputs that must write the same bits
};

// The part of an op that does not depend on the launcher's type.
struct OpCommon {
  std::string name, dtype, title;
  std::string docs;  // "docs/ch01-indexing.md"
  std::vector<TensorSpec> tensors;
  std::function<void(Shape&)> derive;             // derived dims (ld = C + pad)
  std::function<int64_t(const Shape&)> ref_rows;  // default: 1
  std::function<void(const RefCtx&, int64_t)> reference;
  std::vector<Shape> test_shapes;
  std::function<std::vector<Shape>(Rng&)> random_shapes;
  std::vector<InputSet> input_sets;
  std::vector<Shape> race_shapes;  // see OpSpec::race_shapes
  std::vector<Shape> bench_shapes, full_bench_shapes;
  std::function<double(const Shape&)> bytes, flops;
  Peak peak = Peak::FP32;
  Checks checks;
  std::function<std::string(const Diagnosis&)> diagnose;
  double yardstick_factor = 0;                                          // > 0: compare errors with the yardstick
  std::function<std::optional<std::string>(const Shape&)> unsupported;  // shapes a variant may refuse
  std::vector<Refusal> refused;                                         // arguments every variant must refuse

  std::string id() const { return dtype.empty() ? name : name + "/" + dtype; }
};

class OpBase {
 public:
  explicit OpBase(OpCommon c) : c_(std::move(c)) {}
  virtual ~OpBase() = default;
  const OpCommon& common() const { return c_; }
  virtual std::type_index fn_type() const = 0;
  // Calls the launcher `fn` (of this op's type) with `a` on `stream`.
  virtual void invoke(const void* fn, const Args& a, cudaStream_t stream) const = 0;
  // The yardstick launcher (a library call on the same inputs), or null.
  virtual const void* yardstick() const = 0;

 private:
  OpCommon c_;
};

template <class Fn>
struct OpSpec {
  std::string name;   // "vector_add"
  std::string dtype;  // "f32": one spec per dtype form of an op
  std::string title;
  std::string docs;
  std::vector<TensorSpec> tensors;
  std::function<void(Shape&)> derive;
  std::function<void(const RefCtx&, int64_t)> reference;
  std::function<int64_t(const Shape&)> ref_rows;
  std::vector<Shape> test_shapes;
  std::function<std::vector<Shape>(Rng&)> random_shapes;
  std::vector<InputSet> input_sets;
  // The race pass's shapes (compute-sanitizer racecheck on the learner's kernels): large
  // enough that a kernel whose grid is at most the GPU's resident limit (SMs x resident
  // blocks per SM: 132 x 32 on an H100, 148 x 32 on a B200) still loops at least twice in
  // EVERY block, over whatever it loops on (rows, tiles, chunks), so that a persistent or
  // grid-stride kernel without a barrier at the end of each iteration shows its hazard; and
  // small enough to check under racecheck (~100x slower) in about 20 s per exercise. Empty:
  // the op holds no shared memory worth racing (the race pass then uses the smallest test
  // shape). A broken kernel that declares Code::Race runs on them with .on(race_shapes).
  std::vector<Shape> race_shapes;
  std::vector<Shape> bench_shapes, full_bench_shapes;
  std::function<double(const Shape&)> bytes, flops;
  Peak peak = Peak::FP32;
  std::function<void(Fn*, const Args&, cudaStream_t)> launch;
  Checks checks;
  std::function<std::string(const Diagnosis&)> diagnose;
  Fn* yardstick = nullptr;        // a library launcher whose own error bounds the kernel's
  double yardstick_factor = 4.0;  // kernel error <= factor * yardstick error + one rounding step
  std::function<std::optional<std::string>(const Shape&)> unsupported;
  std::vector<Refusal> refused;  // arguments every launcher must refuse (see Refusal)
};

template <class Fn>
class Op final : public OpBase {
 public:
  explicit Op(OpSpec<Fn> s)
      : OpBase(OpCommon{s.name,         s.dtype,
                        s.title,        s.docs,
                        s.tensors,      s.derive,
                        s.ref_rows,     s.reference,
                        s.test_shapes,  s.random_shapes,
                        s.input_sets,   s.race_shapes,
                        s.bench_shapes, s.full_bench_shapes,
                        s.bytes,        s.flops,
                        s.peak,         s.checks,
                        s.diagnose,     s.yardstick ? s.yardstick_factor : 0.0,
                        s.unsupported,  s.refused}),
        launch_(std::move(s.launch)),
        yardstick_(s.yardstick) {}
  std::type_index fn_type() const override { return typeid(Fn); }
  void invoke(const void* fn, const Args& a, cudaStream_t stream) const override {
    launch_(reinterpret_cast<Fn*>(const_cast<void*>(fn)), a, stream);
  }
  const void* yardstick() const override { return reinterpret_cast<const void*>(yardstick_); }

 private:
  std::function<void(Fn*, const Args&, cudaStream_t)> launch_;
  Fn* yardstick_;
};

// --- registry: filled by WB_OPS / WB_VARIANTS blocks in whatever is linked ---------------

void add_op(std::unique_ptr<OpBase> op);
template <class Fn>
void add_op(OpSpec<Fn> spec) {
  add_op(std::make_unique<Op<Fn>>(std::move(spec)));
}
// Several at once, in the order given: WB_OPS(ch11) { wb::add_ops(pipeline(), chain()); }
template <class... Fn>
void add_ops(OpSpec<Fn>... specs) {
  (add_op(std::move(specs)), ...);
}

using VariantList = std::vector<Variant>;
void defer_ops(void (*fn)());
void defer_variants(Role role, VariantList (*fn)());
// Every op and variant linked into this program (registration runs on first use).
const std::vector<std::unique_ptr<OpBase>>& all_ops();
const std::vector<Variant>& all_variants();
const OpBase* find_op(const std::string& id);

// A chapter's spec.cu:        WB_OPS(ch01) { wb::add_op(...); }
// A library's variants.cu:    WB_VARIANTS(ch01_student, wb::Role::Student) { return {...}; }
#define WB_OPS(tag)                                                                                    \
  static void wb_ops_##tag();                                                                          \
  [[maybe_unused]] static const bool wb_ops_registered_##tag = (::wb::defer_ops(&wb_ops_##tag), true); \
  static void wb_ops_##tag()

#define WB_VARIANTS(tag, role)                                      \
  static ::wb::VariantList wb_variants_##tag();                     \
  [[maybe_unused]] static const bool wb_variants_registered_##tag = \
      (::wb::defer_variants(role, &wb_variants_##tag), true);       \
  static ::wb::VariantList wb_variants_##tag()

// --- checking -------------------------------------------------------------------------------

struct CaseOptions {
  uint64_t seed = 1;                 // inputs of this case
  const InputSet* inputs = nullptr;  // replaces the default distributions
  bool full_check = false;           // compare every element even of large outputs
  bool first_pass_only = false;      // the benchmark's gate: pass 1 (the stream captured, the
                                     // output compared); the tests run the other passes
};

// The whole check of one variant on one shape (see harness/check/check.cu for the passes).
Outcome check_case(const OpBase& op, const Variant& v, Shape shape, const CaseOptions& opt);
// Why this GPU cannot run `v` on `shape` (too old, not sm_90a, too little memory), or nullopt.
std::optional<std::string> cannot_run_here(const OpBase& op, const Variant& v, const Shape& shape);
// Arguments for a call that must not touch memory: every tensor and the workspace at an
// address nothing is mapped at (refuse.cpp).
Args placeholder_args(const OpBase& op, const Variant& v, const Shape& shape);
// Without a GPU: calls the launcher once with placeholder pointers, so a stub still reports
// not_implemented and anything else is "compiled, not run".
Outcome dry_run_without_gpu(const OpBase& op, const Variant& v, Shape shape);
// That `v` refuses `r.shape`: it throws std::invalid_argument with a message, and (with a
// GPU) launches nothing, which stream capture records. Else Code::AcceptedBadArgs.
Outcome check_refusal(const OpBase& op, const Variant& v, const Refusal& r);

}  // namespace wb
