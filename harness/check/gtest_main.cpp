// main() of every test program: prints the run's seed, so any failure can be repeated.
#include <gtest/gtest.h>

#include <cstdio>

#include "check/gtest_support.cuh"

namespace wb {

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "/" + info->name() : std::string("no-test");
}

Rng test_rng() { return rng_for(current_test_name()); }

}  // namespace wb

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    wb::run_seed();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel-workbook: %s\n", e.what());
    return 2;
  }
  if (!GTEST_FLAG_GET(list_tests)) std::printf("kernel-workbook: %s\n", wb::seed_hint().c_str());
  return RUN_ALL_TESTS();
}
