#include "declare/spec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "runtime/lookup.h"
#include "runtime/parallel.h"

namespace wb {

namespace {
constexpr std::pair<Role, const char*> kRoleNames[] = {
    {Role::Reference, "reference"}, {Role::Solution, "solution"}, {Role::Student, "student"}, {Role::Broken, "broken"}};
}  // namespace

const char* role_name(Role r) { return lookup(kRoleNames, r, "?"); }

// --- Shape ---------------------------------------------------------------------------------

namespace {

// Gives `name` the value `value` in a list of (name, value): in place when the name is there,
// otherwise appended.
template <class V>
void set_named(std::vector<std::pair<std::string, V>>& list, const std::string& name, V value) {
  for (auto& [n, v] : list) {
    if (n == name) {
      v = value;
      return;
    }
  }
  list.emplace_back(name, value);
}

}  // namespace

Shape::Shape(std::initializer_list<std::pair<std::string, int64_t>> dims) : dims_(dims) {}

int64_t Shape::operator[](std::string_view name) const {
  for (const auto& [n, v] : dims_) {
    if (n == name) return v;
  }
  throw std::out_of_range("shape " + text() + " has no dimension '" + std::string(name) + "'");
}

bool Shape::has(std::string_view name) const {
  return std::any_of(dims_.begin(), dims_.end(), [&](const auto& d) { return d.first == name; });
}

Shape& Shape::set(const std::string& name, int64_t value) {
  set_named(dims_, name, value);
  return *this;
}

double Shape::param(std::string_view name) const {
  for (const auto& [n, v] : params_) {
    if (n == name) return v;
  }
  throw std::out_of_range("shape " + text() + " has no parameter '" + std::string(name) + "'");
}

double Shape::param_or(std::string_view name, double fallback) const {
  for (const auto& [n, v] : params_) {
    if (n == name) return v;
  }
  return fallback;
}

Shape& Shape::set_param(const std::string& name, double value) {
  set_named(params_, name, value);
  return *this;
}

int64_t Shape::product(const std::vector<std::string>& names) const {
  int64_t p = 1;
  for (const auto& n : names) p *= (*this)[n];
  return p;
}

namespace {
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::string Shape::label() const {
  std::string s;
  for (const auto& [n, v] : dims_) s += (s.empty() ? "" : "_") + n + std::to_string(v);
  for (const auto& [n, v] : params_) {
    std::string t = number_text(v);
    std::replace(t.begin(), t.end(), '-', 'm');
    s += (s.empty() ? "" : "_") + n + t;
  }
  return s.empty() ? "scalar" : s;
}

std::string Shape::text() const {
  std::string s;
  for (const auto& [n, v] : dims_) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(v);
  for (const auto& [n, v] : params_) s += (s.empty() ? "" : " ") + n + "=" + number_text(v);
  return s;
}

// --- HostTensor ------------------------------------------------------------------------------

namespace {
// The poison pattern of each dtype. E4M3's is its NaN (it has one per sign): a failed
// conversion can write it too.
constexpr std::pair<DType, uint64_t> kPoisonBits[] = {
    {DType::F32, 0x7FA5A5A5u}, {DType::F16, 0x7DA5u},     {DType::BF16, 0x7FA5u},
    {DType::I8, 0xA5u},        {DType::I32, 0xA5A5A5A5u}, {DType::I64, 0xA5A5A5A5A5A5A5A5ull},
    {DType::E4M3, 0x7Fu},
};
}  // namespace

uint64_t poison_bits(DType t) { return lookup(kPoisonBits, t, 0); }

uint64_t fingerprint(const HostTensor& t, size_t samples) {
  const auto* bytes = static_cast<const unsigned char*>(t.raw());
  const size_t n = t.bytes();
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  const size_t step = std::max<size_t>(1, n / samples);
  for (size_t i = 0; i < n; i += step) h = (h ^ bytes[i]) * 0x100000001b3ull;
  for (size_t i = n > 64 ? n - 64 : 0; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

HostTensor::HostTensor(std::string name, DType dtype, int64_t count)
    : name_(std::move(name)),
      dtype_(dtype),
      count_(count),
      size_(static_cast<size_t>(dtype_size(dtype))),
      poison_(poison_bits(dtype)),
      data_(static_cast<size_t>(count) * dtype_size(dtype)) {
  unsigned char* p = data_.data();
  parallel_count(static_cast<int64_t>(data_.size()), [p](int64_t begin, int64_t end) {
    std::memset(p + begin, 0, static_cast<size_t>(end - begin));
    return int64_t{0};
  });
}

namespace {
template <class I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
}  // namespace

void HostTensor::set(int64_t i, double v) {
  unsigned char* p = data_.data() + static_cast<size_t>(i) * size_;
  switch (dtype_) {
    case DType::F32: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::F16: {
      const Half h = float_to_half(static_cast<float>(v));
      std::memcpy(p, &h.bits, 2);
      return;
    }
    case DType::BF16: {
      const BFloat16 b = float_to_bf16(static_cast<float>(v));
      std::memcpy(p, &b.bits, 2);
      return;
    }
    case DType::I8: {
      const int8_t x = saturate<int8_t>(v);
      std::memcpy(p, &x, 1);
      return;
    }
    case DType::I32: {
      const int32_t x = saturate<int32_t>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case DType::I64: {
      const int64_t x = saturate<int64_t>(v);
      std::memcpy(p, &x, 8);
      return;
    }
    case DType::E4M3:
      *p = double_to_e4m3(v);
      return;
  }
}

void HostTensor::fill_poison() {
  for (size_t at = 0; at < data_.size(); at += size_) std::memcpy(data_.data() + at, &poison_, size_);
}

// --- Dist ------------------------------------------------------------------------------------

Dist& Dist::with_neg_inf(double fraction) {
  neg_inf_fraction = fraction;
  text = describe() + " with " + number_text(fraction * 100) + "% -inf";
  return *this;
}

std::string Dist::describe() const {
  if (!text.empty()) return text;
  switch (kind) {
    case Kind::Uniform:
      return "uniform(" + number_text(a) + ", " + number_text(b) + ")";
    case Kind::Normal:
      return "normal(" + number_text(a) + ", " + number_text(b) + ")";
    case Kind::Ints:
      return "integers in [" + number_text(a) + ", " + number_text(b) + "]";
    case Kind::Extremes:
      return "+-largest finite values";
    case Kind::Ties:
      return number_text(b) + " distinct values (ties)";
    case Kind::Custom:
      return "custom";
  }
  return "?";
}

namespace dist {
Dist make(Dist::Kind k, double a, double b) {
  Dist d;
  d.kind = k;
  d.a = a;
  d.b = b;
  return d;
}
Dist uniform(double lo, double hi) { return make(Dist::Kind::Uniform, lo, hi); }
Dist normal(double mean, double stddev) { return make(Dist::Kind::Normal, mean, stddev); }
Dist ints(int64_t lo, int64_t hi) { return make(Dist::Kind::Ints, double(lo), double(hi)); }
Dist extremes() { return make(Dist::Kind::Extremes, 0, 0); }
Dist ties(int levels, double lo, double hi) {
  Dist d = make(Dist::Kind::Ties, lo, hi);
  d.text = std::to_string(levels) + " distinct values in [" + number_text(lo) + ", " + number_text(hi) + "] (ties)";
  d.custom = [levels, lo, hi](HostTensor& t, const Shape&, Rng& rng) {
    for (int64_t i = 0; i < t.count(); ++i) {
      const int64_t k = rng.range(0, levels - 1);
      t.set(i, levels == 1 ? lo : lo + (hi - lo) * double(k) / double(levels - 1));
    }
  };
  return d;
}
Dist custom(std::string text, std::function<void(HostTensor&, const Shape&, Rng&)> fill) {
  Dist d = make(Dist::Kind::Custom, 0, 0);
  d.text = std::move(text);
  d.custom = std::move(fill);
  return d;
}
}  // namespace dist

namespace {

double largest_finite(DType t) {
  switch (t) {
    case DType::F32:
      return std::numeric_limits<float>::max();
    case DType::F16:
      return 65504.0;
    case DType::BF16:
      return bf16_to_float({0x7F7F});
    case DType::I8:
      return 127;
    case DType::I32:
      return std::numeric_limits<int32_t>::max();
    case DType::I64:
      return 9.2e18;
    case DType::E4M3:
      return 448.0;
  }
  return 1;
}

// One element of a built-in distribution.
double draw(const Dist& d, DType t, Rng& rng) {
  switch (d.kind) {
    case Dist::Kind::Uniform:
      return rng.uniform(d.a, d.b);
    case Dist::Kind::Normal: {
      // Box-Muller; u1 in (0, 1].
      const double u1 = 1.0 - rng.uniform(0.0, 1.0), u2 = rng.uniform(0.0, 1.0);
      return d.a + d.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    case Dist::Kind::Ints:
      return static_cast<double>(rng.range(static_cast<int64_t>(d.a), static_cast<int64_t>(d.b)));
    case Dist::Kind::Extremes: {
      const bool negative = rng.range(0, 1) == 1;
      if (t == DType::I8) return negative ? -128 : 127;
      return negative ? -largest_finite(t) : largest_finite(t);
    }
    default:
      return 0;
  }
}

void fill_range(HostTensor& t, const Dist& d, int64_t begin, int64_t end, Rng& rng) {
  for (int64_t i = begin; i < end; ++i) {
    double v = draw(d, t.dtype(), rng);
    if (d.neg_inf_fraction > 0 && rng.uniform(0.0, 1.0) < d.neg_inf_fraction) v = -INFINITY;
    t.set(i, v);
  }
}

}  // namespace

void fill(HostTensor& t, const Dist& d, const Shape& s, uint64_t seed) {
  if (d.kind == Dist::Kind::Custom || d.kind == Dist::Kind::Ties) {
    Rng rng(seed);
    d.custom(t, s, rng);
    if (d.neg_inf_fraction > 0) {
      for (int64_t i = 0; i < t.count(); ++i) {
        if (rng.uniform(0.0, 1.0) < d.neg_inf_fraction) t.set(i, -INFINITY);
      }
    }
    return;
  }
  // Chunks of 2^20 elements, each with its own generator: the same values whatever the
  // number of threads.
  const int64_t chunk = int64_t{1} << 20;
  const int64_t chunks = (t.count() + chunk - 1) / chunk;
  auto work = [&](int64_t first, int64_t step) {
    for (int64_t c = first; c < chunks; c += step) {
      Rng rng(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(c + 1)));
      fill_range(t, d, c * chunk, std::min(t.count(), (c + 1) * chunk), rng);
    }
  };
  const int threads = static_cast<int>(std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency())));
  if (threads <= 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) pool.emplace_back(work, k, threads);
  for (auto& th : pool) th.join();
}

// --- Tol ---------------------------------------------------------------------------------------

namespace tol {
Tol exact() {
  return {[](const Shape&, DType) { return Tolerance{0, 0}; }, "exact"};
}
Tol sum_of(std::vector<std::string> dims, double scale) {
  std::string text = "a sum over";
  for (const auto& d : dims) text += " " + d;
  return {[dims, scale](const Shape& s, DType t) { return tolerance_for(t, s.product(dims), scale); }, text};
}
Tol terms(std::function<int64_t(const Shape&)> n, double scale) {
  return {[n, scale](const Shape& s, DType t) { return tolerance_for(t, n(s), scale); }, "by terms"};
}
Tol abs_rel(double atol, double rtol) {
  return {[atol, rtol](const Shape&, DType) { return Tolerance{atol, rtol}; }, "fixed"};
}
Tol widened(Tol base, double atol, double rtol, std::string why) {
  auto make = base.make;
  return {[make, atol, rtol](const Shape& s, DType t) {
            Tolerance x = make(s, t);
            x.atol += atol;
            x.rtol += rtol;
            return x;
          },
          base.text + " + " + why};
}
}  // namespace tol

namespace {

// What every tensor declares: its name, dimensions, dtype and role.
TensorSpec tensor(std::string name, std::vector<std::string> dims, DType t, TensorRole role) {
  TensorSpec s;
  s.name = std::move(name);
  s.dims = std::move(dims);
  s.dtype = t;
  s.role = role;
  return s;
}

}  // namespace

TensorSpec input(std::string name, std::vector<std::string> dims, DType t, Dist d) {
  TensorSpec s = tensor(std::move(name), std::move(dims), t, TensorRole::In);
  s.dist = std::move(d);
  return s;
}

TensorSpec output(std::string name, std::vector<std::string> dims, DType t, Tol tol) {
  TensorSpec s = tensor(std::move(name), std::move(dims), t, TensorRole::Out);
  s.tol = std::move(tol);
  return s;
}

TensorSpec viewed(TensorSpec t, std::vector<std::string> view) {
  t.view = std::move(view);
  return t;
}

// --- TensorView ------------------------------------------------------------------------------

TensorView::TensorView(const TensorSpec& t, const Shape& s) {
  for (size_t k = 0; k < t.dims.size(); ++k) {
    const std::string& logical = t.view.empty() ? t.dims[k] : t.view[k];
    ext.push_back(s[t.dims[k]]);
    vis.push_back(s[logical]);
    names.push_back(logical);
  }
}

int64_t TensorView::alloc_index(int64_t logical) const {
  int64_t out = 0, stride = 1;
  for (size_t k = ext.size(); k-- > 0;) {
    out += (logical % vis[k]) * stride;
    logical /= vis[k];
    stride *= ext[k];
  }
  return out;
}

bool TensorView::is_padding(int64_t alloc) const {
  for (size_t k = ext.size(); k-- > 0;) {
    if (alloc % ext[k] >= vis[k]) return true;
    alloc /= ext[k];
  }
  return false;
}

std::string TensorView::coords(const std::string& tensor, int64_t logical) const {
  std::vector<int64_t> c(vis.size());
  for (size_t k = vis.size(); k-- > 0;) {
    c[k] = logical % vis[k];
    logical /= vis[k];
  }
  std::string out = tensor;
  for (auto v : c) out += "[" + std::to_string(v) + "]";
  return out;
}

std::string TensorView::legend(const std::string& tensor) const {
  std::string out = tensor;
  for (const auto& n : names) out += "[" + n + "]";
  return out;
}

// --- RefCtx ------------------------------------------------------------------------------------

RefCtx::RefCtx(const Shape& s, const std::vector<HostTensor>& in, const std::vector<TensorSpec>& specs)
    : shape_(s), in_(in), specs_(specs), expected_(specs.size()) {}

const HostTensor& RefCtx::in(std::string_view name) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name && specs_[i].is_input()) return in_[i];
  }
  throw std::out_of_range("the reference asked for input '" + std::string(name) + "', which the op does not declare");
}

bool RefCtx::has(std::string_view name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return s.present_in(shape_);
  }
  return false;
}

void RefCtx::expect(std::string_view output, int64_t index, double value) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == output && specs_[i].is_output()) {
      expected_[i].emplace_back(index, value);
      return;
    }
  }
  throw std::out_of_range("the reference wrote output '" + std::string(output) + "', which the op does not declare");
}

}  // namespace wb

namespace wb::shapes {

namespace {

// One shape per element of `list`: make(element).
template <class List, class Make>
std::vector<Shape> one_per(const List& list, Make make) {
  std::vector<Shape> out;
  for (const auto& e : list) out.push_back(make(e));
  return out;
}

// Every shape of `base` with each of `values`: set(copy of the shape, value), base-major.
template <class V, class Set>
std::vector<Shape> each_of(const std::vector<Shape>& base, const std::vector<V>& values, Set set) {
  std::vector<Shape> out;
  for (const auto& s : base) {
    for (const V& v : values) {
      Shape t = s;
      out.push_back(set(t, v));
    }
  }
  return out;
}

}  // namespace

std::vector<Shape> sizes(const std::string& n, int64_t large) {
  return one_per(sizes_1d(large), [&](int64_t v) { return Shape{{n, v}}; });
}

std::vector<Shape> rows_by_cols(const std::string& rows, const std::string& cols, int64_t large) {
  return one_per(shapes_2d(large), [&](const auto& e) { return Shape{{rows, e.rows}, {cols, e.cols}}; });
}

std::vector<Shape> gemm(const std::string& m, const std::string& n, const std::string& k, int64_t large) {
  return one_per(gemm_shapes(large), [&](const auto& e) { return Shape{{m, e.m}, {n, e.n}, {k, e.k}}; });
}

std::vector<Shape> each_with(const std::vector<Shape>& base, const std::string& dim,
                             const std::vector<int64_t>& values) {
  return each_of(base, values, [&](Shape& t, int64_t v) -> Shape& { return t.set(dim, v); });
}

std::vector<Shape> each_with_param(const std::vector<Shape>& base, const std::string& name,
                                   const std::vector<double>& values) {
  return each_of(base, values, [&](Shape& t, double v) -> Shape& { return t.set_param(name, v); });
}

std::function<std::vector<Shape>(Rng&)> random(int count, std::vector<std::pair<std::string, int64_t>> max) {
  return [count, max](Rng& rng) {
    std::vector<Shape> out;
    for (int i = 0; i < count; ++i) {
      Shape s;
      for (const auto& [name, hi] : max) s.set(name, rng.range(1, hi));
      out.push_back(s.tag("random"));
    }
    return out;
  };
}

std::function<std::vector<Shape>(Rng&)> random_with(int count, std::vector<std::pair<std::string, int64_t>> max,
                                                    std::string dim, int64_t lo, int64_t hi) {
  return [draw = random(count, std::move(max)), dim = std::move(dim), lo, hi](Rng& rng) {
    auto out = draw(rng);
    for (auto& s : out) s.set(dim, rng.range(lo, hi));
    return out;
  };
}

std::vector<Shape> plus_large(std::vector<Shape> base, Shape large) {
  base.push_back(large.tag("large"));
  return base;
}

std::vector<Shape> table(const std::vector<std::string>& dims, std::initializer_list<std::vector<int64_t>> rows) {
  return one_per(rows, [&](const std::vector<int64_t>& row) {
    if (row.size() != dims.size()) {
      throw std::invalid_argument("shapes::table: a row of " + std::to_string(row.size()) + " values for " +
                                  std::to_string(dims.size()) + " dimensions");
    }
    Shape s;
    for (size_t i = 0; i < dims.size(); ++i) s.set(dims[i], row[i]);
    return s;
  });
}

std::vector<Shape> concat(std::vector<Shape> a, const std::vector<Shape>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<Shape> tagged(std::vector<Shape> s, const std::string& tag) {
  for (auto& x : s) x.tag(tag);
  return s;
}

}  // namespace wb::shapes
