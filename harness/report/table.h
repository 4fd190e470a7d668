// Plain-text tables for the terminal: columns sized to their contents, numbers right-aligned.
#pragma once
#include <string>
#include <vector>

namespace wb {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void add_rule() { rows_.emplace_back(); }  // an empty row prints as a rule
  std::string str() const;                   // aligned columns, rules between groups: for a terminal
  std::string markdown() const;              // a Markdown table (rules left out, '|' escaped): for docs

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "%.*f" as a std::string; "-" for a negative or non-finite value (meaning: not measured).
std::string fixed(double v, int decimals);

}  // namespace wb
