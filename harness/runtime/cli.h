// Command-line options of the benchmarks (the tools read theirs with CLI11: runtime/options.h):
// --name=value or --name value. Anything wrong (unknown flag, not a number, negative size) is
// a UsageError whose message names the argument and says what would be accepted; the tools'
// options throw the same UsageError, and parse_int is shared.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace wb {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string summary);

  void add_flag(const std::string& name, const std::string& help, bool* out);
  // An integer in [min, max]; sizes use min = 1.
  void add_int(const std::string& name, const std::string& help, int64_t* out, int64_t min = 1,
               int64_t max = INT64_MAX);
  void add_string(const std::string& name, const std::string& help, std::string* out);

  // Parses argv. Arguments that start with one of `passthrough_prefixes` (e.g. the
  // "--benchmark_" flags of Google Benchmark) are returned untouched, argv[0] first.
  // Returns false when --help was given (usage() has been printed).
  bool parse(int argc, char** argv, std::vector<std::string>* passthrough = nullptr,
             const std::vector<std::string>& passthrough_prefixes = {});
  std::string usage() const;

 private:
  struct Option {
    std::string name, help, kind;
    std::function<void(const std::string&)> set;
  };
  std::string program_, summary_;
  std::vector<Option> options_;
};

// Parse a whole decimal integer; throws UsageError naming `what` when it is not one.
int64_t parse_int(const std::string& what, const std::string& text, int64_t min, int64_t max);

}  // namespace wb
