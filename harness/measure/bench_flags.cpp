#include "measure/bench_flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <regex>

#include "runtime/cli.h"

namespace wb::bench {

namespace {

enum class Kind { Bool, Int, Seconds, Text, Choice, Regex, Pairs };

struct Flag {
  const char* name;
  Kind kind;
  const char* values;  // Choice: the accepted values, '|'-separated; otherwise what the value is
  const char* help;
};

// Google Benchmark 1.7's flags, as benchmark::Initialize parses them.
constexpr Flag kFlags[] = {
    {"benchmark_filter", Kind::Regex, "REGEX",
     "run the cases whose name matches this regular expression (a leading '-' "
     "negates it); names are op/dtype/shape/impl, e.g. vector_add/f32/n16777216/v3_vectorized"},
    {"benchmark_list_tests", Kind::Bool, "true|false",
     "list the selected cases (and write them, not run, to the results file)"},
    {"benchmark_repetitions", Kind::Int, "N",
     "repetitions of each case (the workbook's default: 5); the table gives their "
     "median and spread"},
    {"benchmark_min_time", Kind::Seconds, "SECONDS",
     "seconds of GPU time per repetition (the workbook's default: 0.01)"},
    {"benchmark_min_warmup_time", Kind::Seconds, "SECONDS", "seconds of untimed launches before the repetitions"},
    {"benchmark_enable_random_interleaving", Kind::Bool, "true|false",
     "run the repetitions of all cases in a random order"},
    {"benchmark_report_aggregates_only", Kind::Bool, "true|false", "report only the statistics of the repetitions"},
    {"benchmark_display_aggregates_only", Kind::Bool, "true|false",
     "display only the statistics (files keep every repetition)"},
    {"benchmark_format", Kind::Choice, "console|json|csv",
     "what is printed: console (the roofline table), json (the "
     "results file), csv (Google Benchmark's)"},
    {"benchmark_out", Kind::Text, "FILE",
     "also write to this file (the results file, unless --benchmark_out_format says otherwise)"},
    {"benchmark_out_format", Kind::Choice, "json|console|csv", "the format of --benchmark_out"},
    {"benchmark_color", Kind::Choice, "auto|true|false|yes|no|1|0",
     "colours in Google Benchmark's console format "
     "(--benchmark_out_format=console)"},
    {"benchmark_counters_tabular", Kind::Bool, "true|false",
     "counters as columns in Google Benchmark's console format"},
    {"benchmark_perf_counters", Kind::Text, "NAMES", "CPU performance counters to read (libpfm names)"},
    {"benchmark_context", Kind::Pairs, "KEY=VALUE,...", "added to the context of the results file"},
    {"benchmark_time_unit", Kind::Choice, "ns|us|ms|s",
     "the unit of Google Benchmark's times (the workbook's default: us)"},
    {"v", Kind::Int, "N", "Google Benchmark's verbosity"},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_choice(const std::string& value, const std::string& values) {
  size_t start = 0;
  while (start <= values.size()) {
    const size_t end = values.find('|', start);
    if (values.substr(start, end == std::string::npos ? std::string::npos : end - start) == value) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::string known_names() {
  std::string s;
  for (const Flag& f : kFlags) s += std::string(s.empty() ? "" : ", ") + "--" + f.name;
  return s;
}

void check_value(const Flag& f, const std::string& name, const std::string& value, bool has_value) {
  const std::string what = "--" + name;
  switch (f.kind) {
    case Kind::Bool: {
      const std::string v = lower(value);
      if (has_value && !(v == "true" || v == "false" || v == "yes" || v == "no" || v == "on" || v == "off" ||
                         v == "1" || v == "0")) {
        throw UsageError(what + ": '" + value + "' is not true or false");
      }
      return;
    }
    case Kind::Int:
      parse_int(what, value, name == "v" ? 0 : 1, 1 << 30);
      return;
    case Kind::Seconds: {
      char* end = nullptr;
      errno = 0;
      const double d = std::strtod(value.c_str(), &end);
      if (value.empty() || errno != 0 || *end != '\0' || !(d >= 0) || d > 1e6) {
        throw UsageError(what + ": '" + value + "' is not a number of seconds (0 or more, e.g. 0.05)");
      }
      return;
    }
    case Kind::Text:
      if (value.empty()) throw UsageError(what + " needs a value: " + what + "=...");
      return;
    case Kind::Choice:
      if (!is_choice(value, f.values)) {
        throw UsageError(what + ": '" + value + "' is not one of " + std::string(f.values));
      }
      return;
    case Kind::Regex:
      try {
        std::regex re(value.size() > 0 && value[0] == '-' ? value.substr(1) : value, std::regex::extended);
      } catch (const std::regex_error& e) {
        throw UsageError(what + ": '" + value + "' is not a regular expression (" + e.what() + ")");
      }
      return;
    case Kind::Pairs: {
      size_t start = 0;
      while (start <= value.size()) {
        const size_t end = value.find(',', start);
        const std::string pair = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (pair.find('=') == std::string::npos || pair.front() == '=') {
          throw UsageError(what + ": '" + pair + "' is not key=value");
        }
        if (end == std::string::npos) break;
        start = end + 1;
      }
      return;
    }
  }
}

}  // namespace

BenchmarkFlags check_benchmark_flags(const std::vector<std::string>& args) {
  BenchmarkFlags out;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Flag* flag = nullptr;
    for (const Flag& f : kFlags) {
      if (arg.rfind("--", 0) == 0 && name == f.name) flag = &f;
    }
    if (flag == nullptr) {
      throw UsageError("unknown option '" + arg + "'; Google Benchmark's flags are " + known_names());
    }
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? arg.substr(eq + 1) : "";
    if (!has_value && flag->kind != Kind::Bool) {
      throw UsageError("--" + name + " needs a value: --" + name + "=... (Google Benchmark's flags take '=')");
    }
    check_value(*flag, name, value, has_value);
    const std::string v = lower(value);
    if (name == "benchmark_list_tests") out.list = !has_value || !(v == "false" || v == "no" || v == "off" || v == "0");
    if (name == "benchmark_format") out.format = value;
    if (name == "benchmark_out") out.out = value;
    if (name == "benchmark_out_format") out.out_format = value;
    if (name == "benchmark_filter") out.filter = value;
    if (name == "benchmark_repetitions") out.repetitions = static_cast<int>(parse_int("--" + name, value, 1, 1 << 30));
    if (name == "benchmark_min_time") out.min_time = std::strtod(value.c_str(), nullptr);
    if (name == "benchmark_time_unit") out.time_unit_given = true;
    out.args.push_back(arg);
  }
  return out;
}

std::string benchmark_flags_help() {
  std::string s = "Google Benchmark's flags (always --name=value):\n";
  for (const Flag& f : kFlags) {
    s += std::string("  --") + f.name + "=" + f.values + "\n      " + f.help + "\n";
  }
  return s;
}

}  // namespace wb::bench
