#include "check/compare.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "runtime/parallel.h"
#include "declare/rng.h"

namespace wb {

Layout Layout::vector(int64_t n, std::string name) { return {{std::move(name)}, {n}}; }

Layout Layout::matrix(int64_t rows, int64_t cols, std::string row, std::string col) {
  return {{std::move(row), std::move(col)}, {rows, cols}};
}

int64_t Layout::count() const { return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>()); }

std::string Layout::coords(int64_t index) const {
  std::vector<int64_t> c(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    c[d] = index % sizes[d];
    index /= sizes[d];
  }
  std::string s = "(";
  for (size_t d = 0; d < c.size(); ++d) s += (d ? ", " : "") + names[d] + " " + std::to_string(c[d]);
  return s + ")";
}

std::string Layout::text() const {
  std::string s;
  for (size_t d = 0; d < sizes.size(); ++d) s += (d ? " " : "") + names[d] + "=" + std::to_string(sizes[d]);
  return s;
}

int64_t Layout::cols() const { return sizes.empty() ? 1 : sizes.back(); }
int64_t Layout::rows() const { return cols() == 0 ? 0 : count() / cols(); }

namespace {

constexpr int kMapRows = 8;
constexpr int kMapCols = 32;

// Severity of a cell, highest wins: unchecked < right < wrong < NaN/Inf < unwritten.
int severity(char c) {
  switch (c) {
    case '.':
      return 1;
    case 'x':
      return 2;
    case 'n':
      return 3;
    case 'u':
      return 4;
    default:
      return 0;
  }
}

struct CellGrid {
  int64_t rows, cols;
  int grid_rows, grid_cols;
  std::vector<char> cells;

  explicit CellGrid(const Layout& l)
      : rows(std::max<int64_t>(l.rows(), 1)),
        cols(std::max<int64_t>(l.cols(), 1)),
        grid_rows(static_cast<int>(std::min<int64_t>(rows, kMapRows))),
        grid_cols(static_cast<int>(std::min<int64_t>(cols, kMapCols))),
        cells(static_cast<size_t>(grid_rows) * grid_cols, ' ') {}

  void mark(int64_t index, char c) {
    const int64_t r = index / cols, col = index % cols;
    char& cell = cells[static_cast<size_t>(r * grid_rows / rows) * grid_cols + col * grid_cols / cols];
    if (severity(c) > severity(cell)) cell = c;
  }

  std::string draw() const {
    std::ostringstream out;
    out << "  tile map (" << rows << " x " << cols << " as " << grid_rows << " x " << grid_cols
        << " cells; '.' right, 'x' wrong, 'u' unwritten, 'n' NaN/Inf, ' ' not sampled):\n";
    for (int r = 0; r < grid_rows; ++r) {
      out << "    |" << std::string(&cells[static_cast<size_t>(r) * grid_cols], grid_cols) << "|\n";
    }
    return out.str();
  }
};

}  // namespace

std::string format_value(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

std::string mismatch_text(const Mismatch& m) {
  switch (m.fault) {
    case Fault::Unwritten:
      return "never written (still holds the poison)";
    case Fault::NonFinite:
      return "got " + format_value(m.got);
    case Fault::Wrong:
      return "expected " + format_value(m.expected) + ", got " + format_value(m.got);
  }
  return "";
}

CheckResult check_elements(const Layout& layout, const std::function<double(int64_t)>& got,
                           const std::function<bool(int64_t)>& poisoned, const std::function<double(int64_t)>& ref,
                           const Tolerance& tol, const CheckOptions& opt) {
  CheckResult r;
  r.layout = layout;
  r.tol = tol;
  const int64_t n = layout.count();
  CellGrid grid(layout);
  std::vector<Mismatch> problems;
  auto note = [&](int64_t i, double expected, double value, Fault f) {
    if (static_cast<int>(problems.size()) < opt.max_listed * 4) problems.push_back({i, expected, value, f});
  };

  // Every element is scanned for poison and NaN/Inf: cheap, and the commonest bugs. All
  // cores count first; the element-by-element notes below run only when there is a problem.
  const int64_t problem_count = opt.known_clean ? 0 : parallel_count(n, [&](int64_t begin, int64_t end) {
    int64_t k = 0;
    for (int64_t i = begin; i < end; ++i) k += poisoned(i) || !std::isfinite(got(i));
    return k;
  });
  for (int64_t i = 0; i < (problem_count > 0 ? n : 0); ++i) {
    if (poisoned(i)) {
      ++r.unwritten;
      grid.mark(i, 'u');
      note(i, NAN, NAN, Fault::Unwritten);
    } else if (!std::isfinite(got(i))) {
      ++r.nonfinite;
      grid.mark(i, 'n');
      note(i, NAN, got(i), Fault::NonFinite);
    }
  }

  // Values are compared on every element of small outputs, and on a sample of large ones
  // (always including the first and last rows, where tile-edge bugs live).
  auto compare = [&](int64_t i) {
    ++r.checked;
    const double v = got(i);
    if (poisoned(i) || !std::isfinite(v)) return;  // already counted above
    const double e = ref(i);
    if (tol.allows(e, v)) {
      grid.mark(i, '.');
    } else {
      ++r.wrong;
      grid.mark(i, 'x');
      note(i, e, v, Fault::Wrong);
    }
  };
  if (opt.only != nullptr) {
    for (int64_t i : *opt.only) compare(i);
    r.sampled = static_cast<int64_t>(opt.only->size()) < n;
  } else if (n <= opt.full_check_limit) {
    for (int64_t i = 0; i < n; ++i) compare(i);
  } else {
    r.sampled = true;
    const int64_t cols = layout.cols();
    const int64_t edge = std::min<int64_t>(cols, opt.samples / 4);
    for (int64_t i = 0; i < edge; ++i) compare(i);      // first row
    for (int64_t i = n - edge; i < n; ++i) compare(i);  // last row
    Rng rng(opt.sample_seed);
    for (int64_t s = 0; s < opt.samples; ++s) compare(rng.range(0, n - 1));
  }

  std::sort(problems.begin(), problems.end(), [](auto& a, auto& b) { return a.index < b.index; });
  problems.erase(std::unique(problems.begin(), problems.end(), [](auto& a, auto& b) { return a.index == b.index; }),
                 problems.end());
  if (static_cast<int>(problems.size()) > opt.max_listed) problems.resize(opt.max_listed);
  r.first = std::move(problems);
  r.ok = r.wrong == 0 && r.unwritten == 0 && r.nonfinite == 0;
  if (!r.ok) r.tile_map = grid.draw();
  return r;
}

std::string CheckResult::summary() const {
  if (ok) {
    return "all " + std::to_string(checked) + (sampled ? " sampled" : "") + " elements within " + tol.describe();
  }
  std::ostringstream s;
  s << "on " << layout.text() << ": ";
  std::vector<std::string> parts;
  if (unwritten) parts.push_back(std::to_string(unwritten) + " unwritten (poison left in place)");
  if (nonfinite) parts.push_back(std::to_string(nonfinite) + " NaN/Inf");
  if (wrong) {
    parts.push_back(std::to_string(wrong) + " wrong of " + std::to_string(checked) +
                    (sampled ? " sampled" : " checked"));
  }
  for (size_t i = 0; i < parts.size(); ++i) s << (i ? ", " : "") << parts[i];
  s << " (of " << layout.count() << " elements)";
  return s.str();
}

std::string CheckResult::report() const {
  std::ostringstream s;
  s << summary() << "\n";
  if (ok) return s.str();
  s << "  tolerance " << tol.describe() << "\n";
  for (const auto& m : first) {
    s << "  " << layout.coords(m.index) << ": " << mismatch_text(m) << "\n";
  }
  s << tile_map;
  return s.str();
}

}  // namespace wb
