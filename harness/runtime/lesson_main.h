// The frame of a chapter's lesson program (ch10_lessons, ch11_overlap): the main() after its
// command line has been read.
//
//   int main(int argc, char** argv) {
//     const Options o = parse(argc, argv);  // bad input: status 2, before the GPU is looked for
//     return wb::run_lesson("ch10_lessons", [&] { ...; return ok ? 0 : 1; });
//   }
//
// Without a usable GPU it prints "<tool>: skipped: <why>" and returns 77 (ctest's skip code).
// Otherwise it prints "<tool> on <GPU> (compute capability X.Y)" and a blank line, then runs
// `body` and returns its status; an exception from the body is printed as "<tool>: <what>" on
// stderr, with status 1.
#pragma once
#include <cstdio>
#include <exception>
#include <functional>

#include "runtime/device.cuh"

namespace wb {

inline int run_lesson(const char* tool, const std::function<int()>& body) {
  if (auto why = gpu_missing_reason()) {
    std::printf("%s: skipped: %s\n", tool, why->c_str());
    return 77;
  }
  try {
    const DeviceInfo dev = query_device();
    std::printf("%s on %s (compute capability %d.%d)\n\n", tool, dev.name.c_str(), dev.major, dev.minor);
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace wb
