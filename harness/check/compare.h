// Comparing a kernel's output with a float64 reference, and saying what is wrong in
// words a learner can act on: which coordinates, expected vs got, which tiles.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "declare/dtype.h"
#include "check/tolerance.h"

namespace wb {

// Names and sizes of an output's dimensions, slowest first (row-major).
struct Layout {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;

  static Layout vector(int64_t n, std::string name = "i");
  static Layout matrix(int64_t rows, int64_t cols, std::string row = "row", std::string col = "col");

  int64_t count() const;
  std::string coords(int64_t index) const;  // "(row 2, col 1024)"
  std::string text() const;                 // "row=3 col=1025"
  int64_t rows() const;                     // everything but the last dimension, folded
  int64_t cols() const;                     // the last dimension
};

// What the harness writes into an output before the kernel runs. Float poisons are NaNs
// with a payload no arithmetic produces, so an element left unwritten can never pass and
// is reported as "unwritten" rather than as a wrong value.
// poison_pattern((const T*)nullptr): the pattern, as an unsigned integer of T's size. Pointers
// never convert into one another, so a type not listed here has no poison (a compile error).
constexpr uint32_t poison_pattern(const float*) { return 0x7FA5A5A5u; }
constexpr uint16_t poison_pattern(const Half*) { return 0x7DA5u; }
constexpr uint16_t poison_pattern(const BFloat16*) { return 0x7FA5u; }
constexpr uint32_t poison_pattern(const int32_t*) { return 0xA5A5A5A5u; }
constexpr uint8_t poison_pattern(const int8_t*) { return 0xA5u; }

template <class T>
struct Poison {
  static constexpr auto bits = poison_pattern(static_cast<const T*>(nullptr));
};

template <class T>
bool is_poison(const T& v) {
  std::remove_const_t<decltype(Poison<T>::bits)> b;
  static_assert(sizeof b == sizeof v);
  std::memcpy(&b, &v, sizeof b);
  return b == Poison<T>::bits;
}

inline double to_double(float v) { return v; }
inline double to_double(Half v) { return half_to_float(v); }
inline double to_double(BFloat16 v) { return bf16_to_float(v); }
inline double to_double(int32_t v) { return v; }
inline double to_double(int8_t v) { return v; }

enum class Fault { Wrong, Unwritten, NonFinite };

struct Mismatch {
  int64_t index;
  double expected;
  double got;
  Fault fault;
};

// A value as the failure messages print it (%.7g).
std::string format_value(double v);
// What is wrong with one element: "never written (still holds the poison)", "got nan",
// "expected 1.5, got 2".
std::string mismatch_text(const Mismatch& m);

struct CheckResult {
  bool ok = true;
  Layout layout;
  Tolerance tol;
  int64_t checked = 0;          // elements compared with the reference
  int64_t wrong = 0;            // of those, outside the tolerance
  int64_t unwritten = 0;        // poison still in place (every element is scanned)
  int64_t nonfinite = 0;        // NaN or Inf written by the kernel (every element is scanned)
  bool sampled = false;         // values compared on a sample, not every element
  std::vector<Mismatch> first;  // the first few problems, in index order
  std::string tile_map;
  std::string report() const;   // the full failure message
  std::string summary() const;  // one line
};

struct CheckOptions {
  int64_t full_check_limit = int64_t{1} << 22;  // compare every element up to this many
  int64_t samples = int64_t{1} << 18;           // otherwise this many, plus the edges
  int max_listed = 8;
  uint64_t sample_seed = 1;
  // When set: compare exactly these indices (sorted), and no others.
  const std::vector<int64_t>* only = nullptr;
  // The caller has scanned every element already and found no poison, NaN or Inf: the scan
  // element by element through the callbacks (the slow part of a billion-element check) is skipped.
  bool known_clean = false;
};

// The element-type-free core: `got(i)` returns element i as double, `poisoned(i)` says
// whether it still holds the poison, `ref(i)` computes the float64 reference.
CheckResult check_elements(const Layout& layout, const std::function<double(int64_t)>& got,
                           const std::function<bool(int64_t)>& poisoned, const std::function<double(int64_t)>& ref,
                           const Tolerance& tol, const CheckOptions& opt = {});

template <class T>
CheckResult check_output(const std::vector<T>& got, const Layout& layout, const std::function<double(int64_t)>& ref,
                         const Tolerance& tol, const CheckOptions& opt = {}) {
  return check_elements(
      layout, [&](int64_t i) { return to_double(got[i]); }, [&](int64_t i) { return is_poison(got[i]); }, ref, tol,
      opt);
}

}  // namespace wb
