// The tools' command lines (gpt2, the autotuners, devicequery, ...), on CLI11: --name=value
// or --name value, --help generated from the options. What this adds to CLI11 is the book's
// way of saying no: every mistake becomes a wb::UsageError (runtime/cli.h) whose message
// names the argument, what was given and what would be accepted, and the program prints it
// as "TOOL: message" and exits with status 2, before it looks for a GPU.
//
//   CLI::App app("Prints the GPU and its limits.", "devicequery");
//   wb::cli::conventions(app);
//   app.add_option("--device", device, "which GPU (default 0)")->transform(wb::cli::whole_number(0, 1024));
//   if (const auto status = wb::cli::parse_or_exit(app, argc, argv)) return *status;  // --help, or refused
//
// Plain C++ (no CUDA), host-tested in harness/tests/options_test.cpp.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cli.h"

namespace wb::cli {

// The book's settings: a repeated option keeps its last value (as a script that appends a
// flag expects), no Windows-style /options, the help's option column wide enough.
void conventions(CLI::App& app);

// Validators to attach with ->transform(...): they check the text and write it back in the
// form CLI11 then converts, so that "010" is ten, not octal eight.
//   whole_number(1)       "'abc' is not a whole number", "0 is out of range; give a number from 1 up"
//   positive_number()     "'x' is not a positive number" (a real number > 0)
//   one_of({"f32", ...})  "'f64' is not one of f32, bf16, f16"
//   not_empty()           "needs a value"
CLI::Validator whole_number(int64_t min, int64_t max = INT64_MAX);
CLI::Validator positive_number();
CLI::Validator one_of(std::vector<std::string> choices);
CLI::Validator not_empty();

// Parses argv into the app's options. Returns false when --help was asked for (the help has
// been printed on stdout). Throws wb::UsageError for anything wrong: an unknown option (with
// the nearest known one, when there is one), an argument that is not an option, a missing
// value, a value its validator refuses, a value given to a switch. Arguments that start with
// one of `passthrough_prefixes` (Google Benchmark's "--benchmark_" flags) are appended to
// `passthrough` instead (the benchmarks' ArgParser, runtime/cli.h).
bool parse(CLI::App& app, int argc, const char* const* argv, std::vector<std::string>* passthrough = nullptr,
           const std::vector<std::string>& passthrough_prefixes = {});

// Prints "TOOL: message" and a pointer to --help on stderr; returns 2, the exit status of a
// usage error.
int refuse(const CLI::App& app, const std::string& message);

// parse() and refuse() for a tool's main(): nothing when the program goes on, or the exit
// status to return at once: 0 after --help, 2 after a usage error (printed as refuse() does).
std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv);

}  // namespace wb::cli
