// Google Benchmark's flags on a chapter benchmark's command line, checked before Google
// Benchmark (or a GPU) sees them: Google Benchmark itself passes a flag with a bad value on
// as unrecognised, and answers a bad --benchmark_format with its help text and exit status 0.
// Here an unknown --benchmark_ flag or a bad value is a UsageError naming the flag and what it
// takes. Plain C++, host-tested (harness/tests/bench_report_test.cpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace wb::bench {

struct BenchmarkFlags {
  std::vector<std::string> args;  // the flags as given, in order: what Google Benchmark parses
  // What the program needs to know of them (the last value of a flag given twice):
  bool list = false;
  std::string format = "console", out, out_format = "json", filter;
  std::optional<int> repetitions;
  std::optional<double> min_time;
  bool time_unit_given = false;
};

// Checks each --benchmark_* flag (and --v=N) of `args`. Throws UsageError.
BenchmarkFlags check_benchmark_flags(const std::vector<std::string>& args);

// One line per flag, for --help.
std::string benchmark_flags_help();

}  // namespace wb::bench
