#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace wb {
namespace {

// Terminal columns of a cell: fmt pads by code points, so a cell's width is counted the same way.
size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+') && s != "-";
}

}  // namespace

std::string Table::str() const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) w[c] = width(header_[c]);
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      out += looks_numeric(cell) ? fmt::format("{:>{}}", cell, w[c]) : fmt::format("{:<{}}", cell, w[c]);
      if (c + 1 < w.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  size_t total = 0;
  for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c ? 2 : 0);
  const std::string rule = std::string(total, '-') + "\n";
  std::string out = line(header_) + rule;
  for (const auto& r : rows_) out += r.empty() ? rule : line(r);
  return out;
}

std::string Table::markdown() const {
  auto line = [](const std::vector<std::string>& r, size_t n) {
    std::string out = "|";
    for (size_t c = 0; c < n; ++c) {
      std::string cell = c < r.size() ? r[c] : "";
      for (size_t at = cell.find('|'); at != std::string::npos; at = cell.find('|', at + 2)) cell.replace(at, 1, "\\|");
      out += " " + cell + " |";
    }
    return out + "\n";
  };
  std::string out = line(header_, header_.size()) + "|";
  for (size_t c = 0; c < header_.size(); ++c) out += " --- |";
  out += "\n";
  for (const auto& r : rows_) {
    if (!r.empty()) out += line(r, header_.size());
  }
  return out;
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v) || v < 0) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace wb
