// The host-side vocabulary of an op spec: named shapes, tensors with a dtype and a
// distribution, tolerances, and the context a float64 reference computes in.
// Plain C++ (no CUDA), so shapes, labels, distributions and references are host-tested.
//
// A chapter declares each op once with these pieces (see harness/declare/op.cuh for OpSpec,
// and chapters/ch01_indexing/spec.cu for a whole example); the harness derives the tests,
// the benchmark rows, the JSON and the broken-kernel rejections from the declaration.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "declare/dtype.h"
#include "declare/shapes.h"
#include "declare/rng.h"
#include "check/tolerance.h"

namespace wb {

// Who wrote a variant: the library (the reference), the solution ladder, the learner, or a
// broken kernel of the self-tests. One type for the tests, the benchmark and the tools.
enum class Role { Reference, Solution, Student, Broken };
const char* role_name(Role r);  // "reference", "solution", "student", "broken"

// ---------------------------------------------------------------------------------------
// Shape: named dimensions (N, C, rows, ld ...) in declaration order, plus named scalars
// (alpha, beta) and a class tag ("tiny", "prime", "large", "random") for the reader.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::pair<std::string, int64_t>> dims);

  int64_t operator[](std::string_view name) const;  // throws std::out_of_range naming the dim
  bool has(std::string_view name) const;
  Shape& set(const std::string& name, int64_t value);
  double param(std::string_view name) const;  // throws when absent
  double param_or(std::string_view name, double fallback) const;
  Shape& set_param(const std::string& name, double value);
  Shape& tag(std::string t) {
    tag_ = std::move(t);
    return *this;
  }
  const std::string& tag() const { return tag_; }

  // Product of the named dimensions (1 for none).
  int64_t product(const std::vector<std::string>& names) const;
  // "N1025_C769" (test names; params too: "alpha1.5" with '.' kept, '-' as 'm').
  std::string label() const;
  // "N=1025 C=769" (messages).
  std::string text() const;
  const std::vector<std::pair<std::string, int64_t>>& dims() const { return dims_; }
  const std::vector<std::pair<std::string, double>>& params() const { return params_; }

 private:
  std::vector<std::pair<std::string, int64_t>> dims_;
  std::vector<std::pair<std::string, double>> params_;
  std::string tag_;
};

// ---------------------------------------------------------------------------------------
// HostTensor: one input or output on the host, in its element type (bits as stored on the
// GPU), read and written as double. Inputs are rounded to the dtype when set, so the
// float64 reference sees exactly what the kernel sees.
class HostTensor {
 public:
  HostTensor() = default;
  // `count` elements, zeroed (a large tensor by all cores: its pages are touched in parallel).
  HostTensor(std::string name, DType dtype, int64_t count);

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }
  size_t bytes() const { return data_.size(); }
  void* raw() { return data_.data(); }
  const void* raw() const { return data_.data(); }

  double get(int64_t i) const {  // the stored value, exactly, as double
    const unsigned char* p = data_.data() + static_cast<size_t>(i) * size_;
    switch (dtype_) {
      case DType::F32:
        return load<float>(p);
      case DType::F16:
        return half_to_float(load<Half>(p));
      case DType::BF16:
        return bf16_to_float(load<BFloat16>(p));
      case DType::I8:
        return load<int8_t>(p);
      case DType::I32:
        return load<int32_t>(p);
      case DType::I64:
        return static_cast<double>(load<int64_t>(p));
      case DType::E4M3:
        return e4m3_to_float(*p);
    }
    return 0;
  }
  void set(int64_t i, double v);                                  // rounds to the dtype (nearest even; ints saturate)
  bool is_poison(int64_t i) const { return bits(i) == poison_; }  // holds the harness's poison pattern
  void fill_poison();
  uint64_t bits(int64_t i) const {  // raw bits, for bit-exact comparisons
    const unsigned char* p = data_.data() + static_cast<size_t>(i) * size_;
    switch (size_) {  // fixed-size copies compile to one load; a variable size is a call
      case 1:
        return *p;
      case 2:
        return load<uint16_t>(p);
      case 4:
        return load<uint32_t>(p);
      default:
        return load<uint64_t>(p);
    }
  }

 private:
  // The T stored at p, by a copy of sizeof(T) bytes (a constant: one load, no call).
  template <class T>
  static T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // Bytes left uninitialised by the vector itself: the constructor zeroes them, in parallel
  // for a large tensor (a single-threaded zeroing of 8 GB was most of a 2^31-element test).
  template <class T>
  struct NoInit : std::allocator<T> {
    template <class U>
    struct rebind {
      using other = NoInit<U>;
    };
    NoInit() = default;
    template <class U>
    NoInit(const NoInit<U>&) {}
    template <class U>
    void construct(U* p) {
      ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a) {
      ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
  };

  std::string name_;
  DType dtype_ = DType::F32;
  int64_t count_ = 0;
  size_t size_ = 4;      // bytes per element
  uint64_t poison_ = 0;  // poison_bits(dtype_)
  std::vector<unsigned char, NoInit<unsigned char>> data_;
};

// The poison pattern of a dtype (a NaN no arithmetic makes, for float types).
uint64_t poison_bits(DType t);

// A fingerprint of a tensor's bytes (FNV-1a over about `samples` evenly spaced bytes and the
// last 64, seeded with the size): for a cache keyed by a tensor's address, which must tell new
// values at the same address apart.
uint64_t fingerprint(const HostTensor& t, size_t samples);

// ---------------------------------------------------------------------------------------
// Dist: how an input is filled. Values are drawn per element from the test's generator
// and rounded to the input's dtype; never all zero, never one constant (unless asked).
struct Dist {
  enum class Kind { Uniform, Normal, Ints, Extremes, Ties, Custom };
  Kind kind = Kind::Uniform;
  double a = -1, b = 1;         // uniform [a, b); normal mean a, std b; ints [a, b]; ties: b levels
  double neg_inf_fraction = 0;  // this share of elements becomes -inf (masks)
  std::function<void(HostTensor&, const class Shape&, Rng&)> custom;
  std::string text;  // "normal(1000, 1)" for messages

  Dist& with_neg_inf(double fraction);
  std::string describe() const;
};

namespace dist {
Dist uniform(double lo, double hi);
Dist normal(double mean, double stddev);
Dist ints(int64_t lo, int64_t hi);            // integers, inclusive
Dist extremes();                              // +-largest finite value of the dtype (+-127/-128 for int8)
Dist ties(int levels, double lo, double hi);  // only `levels` distinct values: many equal elements
Dist custom(std::string text, std::function<void(HostTensor&, const Shape&, Rng&)> fill);
}  // namespace dist

// Fills `t` from `d`; large tensors are filled in parallel chunks, each from its own
// generator derived from `seed`, so the result depends only on the seed.
void fill(HostTensor& t, const Dist& d, const Shape& s, uint64_t seed);

// ---------------------------------------------------------------------------------------
// Tol: the tolerance of one output, made from the shape and the output's dtype.
struct Tol {
  std::function<Tolerance(const Shape&, DType)> make;
  std::string text;
};

namespace tol {
Tol exact();                                                    // bit-for-bit value equality
Tol sum_of(std::vector<std::string> dims, double scale = 1.0);  // a sum over these dims (tolerance_for)
Tol terms(std::function<int64_t(const Shape&)> n, double scale = 1.0);
Tol abs_rel(double atol, double rtol);
// `base` plus a fixed allowance, for an error the base model does not cover (e.g. a fast tanh
// inside an activation); `why` is shown with the tolerance.
Tol widened(Tol base, double atol, double rtol, std::string why);
}  // namespace tol

// ---------------------------------------------------------------------------------------
// A tensor of an op. `dims` are the allocated extents (row-major, slowest first); `view`,
// when given, names the logical extents of each axis (the first view[i] of dims[i] are
// data, the rest padding: padding of inputs holds poison, padding of outputs must be left
// untouched). `present` makes a tensor optional (a null pointer when false).
enum class TensorRole { In, Out, InOut };

struct TensorSpec {
  std::string name;
  std::vector<std::string> dims;
  DType dtype = DType::F32;
  TensorRole role = TensorRole::In;
  Dist dist = dist::uniform(-1, 1);  // inputs, and the starting contents of in-out tensors
  Tol tol = tol::exact();            // outputs
  std::vector<std::string> view;     // empty: no padding
  std::function<bool(const Shape&)> present;
  // The yardstick check (an op with a library yardstick): this output's largest error may be
  // at most the op's factor x the library's own largest error, plus this floor, per shape (it
  // may grow with a sum over more terms). Unset (the default): one rounding step of the dtype
  // at the largest reference value plus the tolerance's atol.
  std::function<double(const Shape&)> yardstick_floor;

  bool is_input() const { return role != TensorRole::Out; }
  bool is_output() const { return role != TensorRole::In; }
  int64_t count(const Shape& s) const { return s.product(dims); }
  int64_t view_count(const Shape& s) const { return s.product(view.empty() ? dims : view); }
  bool present_in(const Shape& s) const { return !present || present(s); }
};

TensorSpec input(std::string name, std::vector<std::string> dims, DType t, Dist d = dist::uniform(-1, 1));

// A tensor's extents in one shape: allocated (`ext`) and logical (`vis`, the view), and the
// mapping between a logical flat index (what a reference writes) and the allocated one.
struct TensorView {
  std::vector<int64_t> ext, vis;
  std::vector<std::string> names;  // the logical axes' dimension names
  TensorView(const TensorSpec& t, const Shape& s);
  int64_t alloc_index(int64_t logical) const;
  bool is_padding(int64_t alloc) const;                                  // outside the view on some axis
  std::string coords(const std::string& tensor, int64_t logical) const;  // "y[3][1024]"
  std::string legend(const std::string& tensor) const;                   // "y[N][C]"
};
TensorSpec output(std::string name, std::vector<std::string> dims, DType t, Tol tol);
// `t` with the logical extents `view` (TensorSpec::view): a pitched input or output, as in
// viewed(input("A", {"rows", "lda"}, DType::F32), {"rows", "cols"}).
TensorSpec viewed(TensorSpec t, std::vector<std::string> view);

// ---------------------------------------------------------------------------------------
// What a float64 reference sees: the shape, the inputs (as rounded to their dtypes, in
// their allocated layout: index them with the same strides the kernel gets), and where to
// put expected values: `expect(output, i, value)` with i the LOGICAL flat index of the
// output (row-major over its view). A reference is called once per reference row and must
// set every output element of that row; large problems are checked on a sample of rows.
class RefCtx {
 public:
  RefCtx(const Shape& s, const std::vector<HostTensor>& in, const std::vector<TensorSpec>& specs);
  const Shape& shape() const { return shape_; }
  int64_t operator[](std::string_view dim) const { return shape_[dim]; }
  double param(std::string_view name) const { return shape_.param(name); }
  const HostTensor& in(std::string_view name) const;  // throws naming the tensor
  bool has(std::string_view name) const;              // present in this shape
  void expect(std::string_view output, int64_t index, double value) const;

  // Filled by expect(): per output, (logical index, value) pairs.
  std::vector<std::vector<std::pair<int64_t, double>>>& expected() const { return expected_; }
  const std::vector<TensorSpec>& specs() const { return specs_; }

 private:
  const Shape& shape_;
  const std::vector<HostTensor>& in_;
  const std::vector<TensorSpec>& specs_;
  mutable std::vector<std::vector<std::pair<int64_t, double>>> expected_;
};

// ---------------------------------------------------------------------------------------
// Shape catalogues (host/shapes.h) as named shapes, and ways to combine them.
namespace shapes {
// Tiny, primes, one off every tile size, and `large` (host/shapes.h sizes_1d).
std::vector<Shape> sizes(const std::string& n, int64_t large = int64_t{1} << 24);
// Tiny, thin, primes, tall, wide, square, large (host/shapes.h shapes_2d).
std::vector<Shape> rows_by_cols(const std::string& rows, const std::string& cols, int64_t large = 2048);
// GEMM sizes (host/shapes.h gemm_shapes).
std::vector<Shape> gemm(const std::string& m, const std::string& n, const std::string& k, int64_t large = 2048);
// Every shape once per value of a new dimension (pad 0 and pad 3 ...).
std::vector<Shape> each_with(const std::vector<Shape>& base, const std::string& dim,
                             const std::vector<int64_t>& values);
std::vector<Shape> each_with_param(const std::vector<Shape>& base, const std::string& name,
                                   const std::vector<double>& values);
// `count` random shapes with each named dim in [1, max].
std::function<std::vector<Shape>(Rng&)> random(int count, std::vector<std::pair<std::string, int64_t>> max);
// The same, then one more dim (a padding, say) drawn in [lo, hi] for each shape in turn.
std::function<std::vector<Shape>(Rng&)> random_with(int count, std::vector<std::pair<std::string, int64_t>> max,
                                                    std::string dim, int64_t lo, int64_t hi);
// `base`, then `large` tagged "large" (the case past 2^31 elements that most lists end with).
std::vector<Shape> plus_large(std::vector<Shape> base, Shape large);
// One shape per row of a table of hand-picked sizes, the row's values in the order of `dims`:
// table({"rows", "cols"}, {{1, 1}, {1025, 3}}).
std::vector<Shape> table(const std::vector<std::string>& dims, std::initializer_list<std::vector<int64_t>> rows);
// `a`, then `b`.
std::vector<Shape> concat(std::vector<Shape> a, const std::vector<Shape>& b);
// Marks shapes (for the reader: "large" shapes may be skipped for memory).
std::vector<Shape> tagged(std::vector<Shape> s, const std::string& tag);
}  // namespace shapes

}  // namespace wb
