// Checks that the harness keeps the run's seed from a submission's code.
//
// `leaderboard_seed_probe <seed>` with WORKBOOK_SEED=<seed>: fails if a static constructor (as
// a submission could have) or main() can see the seed, through getenv() or
// /proc/self/environ, or if the harness does not use it.
//
// `leaderboard_seed_probe --secret` with WORKBOOK_SEED_MODE=secret (how the leaderboard runs
// a submission): fails if a static constructor gets a seed from the harness before main(),
// or if the mode stays readable in the environment.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "declare/rng.h"

namespace {
// Initialised at the default priority, like any global object of a submission.
const bool g_seen_before_main = std::getenv("WORKBOOK_SEED") != nullptr;
const bool g_mode_seen_before_main = std::getenv("WORKBOOK_SEED_MODE") != nullptr;
const bool g_seed_given_before_main = [] {
  try {
    wb::run_seed();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}();

int secret_mode() {
  int failures = 0;
  auto fail = [&](const char* what) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  };
  if (g_seed_given_before_main) fail("a static constructor got the run's seed in secret mode");
  if (g_mode_seen_before_main) fail("a static constructor could getenv(\"WORKBOOK_SEED_MODE\")");
  wb::mark_main_started();
  try {
    wb::run_seed();
  } catch (const std::exception&) {
    fail("after main started, the harness gave no seed");
  }
  if (failures == 0) std::printf("ok: in secret mode no seed exists before main\n");
  return failures == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--secret") return secret_mode();
  if (argc != 2) {
    std::fprintf(stderr, "usage: leaderboard_seed_probe <the seed in WORKBOOK_SEED>\n");
    return 2;
  }
  const std::string seed = argv[1];
  int failures = 0;
  auto fail = [&](const char* what) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  };
  if (g_seen_before_main) fail("a static constructor could getenv(\"WORKBOOK_SEED\")");
  if (std::getenv("WORKBOOK_SEED") != nullptr) fail("main() could getenv(\"WORKBOOK_SEED\")");
  std::ifstream environ_file("/proc/self/environ", std::ios::binary);
  const std::string block((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
  if (block.find(seed) != std::string::npos) fail("/proc/self/environ still shows the seed");
  if (std::to_string(wb::run_seed()) != seed) fail("the harness did not use WORKBOOK_SEED");
  if (failures == 0) std::printf("ok: the seed is used by the harness and hidden from the rest of the process\n");
  return failures == 0 ? 0 : 1;
}
