// Google Benchmark renamed a run's error fields in 1.8 (error_occurred/error_message became
// skipped/skip_message): these read and set them on either, so the workbook builds against
// Debian 12's 1.7 and the 1.8/1.9 of newer distributions alike.
#pragma once
#include <benchmark/benchmark.h>

#include <string>

namespace wb::report {

// benchmark::internal::SkippedWithError of 1.8+ (NotSkipped, SkippedWithMessage, SkippedWithError),
// by value: the name does not exist in 1.7, and a branch of `if constexpr` must still compile.
inline constexpr int kSkippedWithError = 2;

// 1.8 also reads --benchmark_min_time with a unit ("0.01s", or "100x" for iterations) and
// warns on a bare number, which 1.7 wants.
template <class Run>
inline constexpr bool kTakesUnit = !requires(Run r) {
  r.error_occurred;
};
inline constexpr bool kMinTimeTakesUnit = kTakesUnit<benchmark::BenchmarkReporter::Run>;

template <class Run>
bool run_failed(const Run& r) {
  if constexpr (requires { r.error_occurred; }) {
    return r.error_occurred;
  } else {
    return static_cast<int>(r.skipped) == kSkippedWithError;
  }
}

template <class Run>
std::string run_failure(const Run& r) {
  if constexpr (requires { r.error_message; }) {
    return r.error_message;
  } else {
    return r.skip_message;
  }
}

template <class Run>
void mark_failed(Run& r, std::string message) {
  if constexpr (requires { r.error_occurred; }) {
    r.error_occurred = true;
    r.error_message = std::move(message);
  } else {
    r.skipped = static_cast<decltype(r.skipped)>(kSkippedWithError);
    r.skip_message = std::move(message);
  }
}

}  // namespace wb::report
