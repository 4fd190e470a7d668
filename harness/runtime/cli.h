// Command-line options of the benchmarks, on CLI11: --name=value or --name value. Anything
// wrong (unknown option, not a number, negative size) is a UsageError whose message names the
// argument and says what would be accepted. The tools build their CLI11 apps directly
// (runtime/options.h, which also parses for ArgParser and says what is wrong).
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace wb {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string summary);
  ~ArgParser();

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
  std::string program_;
  std::unique_ptr<CLI::App> app_;
};

// Parse a whole decimal integer; throws UsageError naming `what` when it is not one.
int64_t parse_int(const std::string& what, const std::string& text, int64_t min, int64_t max);

}  // namespace wb
