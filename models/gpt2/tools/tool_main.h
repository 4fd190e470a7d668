// What the GPT-2 tools' main functions share: running the body with the tools' two refusals.
#pragma once
#include <cstdio>
#include <exception>

#include "runtime/options.h"

namespace gpt2 {

// Runs a tool's `body` (its exit status): a wb::UsageError, a bad command line, refused as
// wb::cli::refuse does it (usage, exit 2); any other exception printed as "tool: what" on
// stderr (exit 1).
template <class Body>
int run_tool(const CLI::App& app, const char* tool, Body body) {
  try {
    return body();
  } catch (const wb::UsageError& e) {
    return wb::cli::refuse(app, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace gpt2
