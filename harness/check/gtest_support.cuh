// GoogleTest glue for GPU tests: skip with the reason when there is no (suitable) GPU,
// and turn an Outcome into a failure message that tells the learner what to do.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "runtime/device.cuh"
#include "runtime/launch.cuh"
#include "declare/rng.h"

namespace wb {

// Full name of the running test ("Ch01VectorAdd/student_n1025"), for per-test streams.
std::string current_test_name();
// The random stream of the running test: the run seed mixed with the test's name.
Rng test_rng();

}  // namespace wb

// Skips (never passes) the test when no GPU is usable, naming the reason.
#define WB_REQUIRE_GPU()                                      \
  do {                                                        \
    if (const auto wb_reason_ = ::wb::gpu_missing_reason()) { \
      GTEST_SKIP() << *wb_reason_;                            \
    }                                                         \
  } while (0)

// Skips the test on GPUs older than compute capability major.minor.
#define WB_REQUIRE_SM(major_, minor_, feature_)                                                           \
  do {                                                                                                    \
    WB_REQUIRE_GPU();                                                                                     \
    const ::wb::DeviceInfo wb_dev_ = ::wb::query_device();                                                \
    if (wb_dev_.major * 10 + wb_dev_.minor < (major_)*10 + (minor_)) {                                    \
      GTEST_SKIP() << feature_ << " needs compute capability " << (major_) << "." << (minor_)             \
                   << " or newer; this GPU (" << wb_dev_.name << ") is " << wb_dev_.compute_capability(); \
    }                                                                                                     \
  } while (0)

// Fails the test unless the outcome passed, with the outcome's message and the seed.
#define WB_EXPECT_PASS(outcome_expr)                                                                             \
  do {                                                                                                           \
    const ::wb::Outcome wb_outcome_ = (outcome_expr);                                                            \
    EXPECT_TRUE(wb_outcome_.passed()) << "[" << ::wb::kind_name(wb_outcome_.kind) << "] " << wb_outcome_.message \
                                      << "\n  " << ::wb::seed_hint();                                            \
  } while (0)
