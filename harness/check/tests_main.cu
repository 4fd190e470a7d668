// main() of every chapter's test programs. The tests are not written by hand: for every
// variant linked into the program, one test per shape of its op (and per input set, and a
// few seeded random shapes), named
//     <op>/<dtype>/<variant>.<shape>        vector_add/f32/ex1_vector_add.n1025
// for every argument set the op must refuse, one test that it is refused:
//     <op>/<dtype>/<variant>.refuses_<shape> topk/f32/ex3_topk.refuses_B1_V7_k8
// and for every broken variant (the self-tests) one test that the checks reject it with the
// code it declares:
//     <op>/<dtype>/broken.<variant>
// Each test records its outcome code as a test property ("outcome") and, when
// WORKBOOK_OUTCOMES names a folder, as one JSON line there, which the run's summary reads.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/device.cuh"
#include "check/gtest_support.cuh"
#include "declare/op.cuh"

namespace wb {

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("no-test");
}

Rng test_rng() { return rng_for(current_test_name()); }

namespace {

uint64_t test_seed() { return test_rng().next(); }

int64_t shape_size(const OpBase& op, Shape s) {
  if (op.common().derive) op.common().derive(s);
  int64_t n = 0;
  for (const auto& t : op.common().tensors) {
    if (t.present_in(s)) n += t.count(s);
  }
  return n;
}

// One line per finished test for the run's summary (scripts and ctest's summary test).
void record(const OpBase& op, const Variant& v, const std::string& shape, int64_t size, const Outcome& o) {
  ::testing::Test::RecordProperty("outcome", std::string(code_name(o.code)));
  std::printf("[wb-outcome] %s %s\n", std::string(code_name(o.code)).c_str(), current_test_name().c_str());
  const char* dir = std::getenv("WORKBOOK_OUTCOMES");
  if (dir == nullptr || *dir == '\0') return;
  const nlohmann::ordered_json j = {{"test", current_test_name()},
                                    {"op", op.common().id()},
                                    {"variant", v.name},
                                    {"role", role_name(v.role)},
                                    {"file", v.file},
                                    {"shape", shape},
                                    {"size", size},
                                    {"code", std::string(code_name(o.code))},
                                    {"message", o.message}};
  std::ofstream out(std::string(dir) + "/" + std::to_string(::getpid()) + ".jsonl", std::ios::app);
  out << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void report(const Outcome& o) {
  if (code_is_skip(o.code)) GTEST_SKIP() << o.message;
  if (!o.passed()) {
    ADD_FAILURE() << "\n" << o.message << "\n  outcome: " << code_name(o.code) << " · " << seed_hint() << "\n";
  }
}

class CaseTest : public ::testing::Test {
 public:
  CaseTest(const OpBase& op, const Variant& v, Shape shape, const InputSet* set, int random_index)
      : op_(op), v_(v), shape_(std::move(shape)), set_(set), random_index_(random_index) {}

  void TestBody() override {
    Shape s = shape_;
    if (random_index_ >= 0) {
      auto rng = test_rng();
      const auto drawn = op_.common().random_shapes(rng);
      s = drawn.at(static_cast<size_t>(random_index_));
    }
    Outcome o;
    if (gpu_missing_reason()) {
      o = dry_run_without_gpu(op_, v_, s);
    } else if (auto why = cannot_run_here(op_, v_, s)) {
      o = Outcome::fail(Code::Skipped, *why);
    } else {
      CaseOptions opt;
      opt.seed = test_seed();
      opt.inputs = set_;
      o = check_case(op_, v_, s, opt);
    }
    record(op_, v_, s.text(), shape_size(op_, s), o);
    report(o);
  }

 private:
  const OpBase& op_;
  const Variant& v_;
  Shape shape_;
  const InputSet* set_;
  int random_index_;
};

// Arguments the op must refuse (OpSpec::refused): refused with a message, nothing launched.
class RefusalTest : public ::testing::Test {
 public:
  RefusalTest(const OpBase& op, const Variant& v, const Refusal& r) : op_(op), v_(v), r_(r) {}
  void TestBody() override {
    const Outcome o = check_refusal(op_, v_, r_);
    record(op_, v_, r_.shape.text(), 0, o);
    if (o.passed()) std::printf("%s\n", o.message.c_str());
    report(o);
  }

 private:
  const OpBase& op_;
  const Variant& v_;
  const Refusal& r_;
};

// The race pass for broken kernels. A missing __syncthreads() between warps often gives the
// right answer on a given GPU, run after run: the functional checks cannot see it, and the
// learner's race pass (the chNN-student.races test: compute-sanitizer's racecheck) is the
// mechanism that does. A broken variant that declares Code::Race and passes every functional
// check is run again, by this same program, under racecheck; it must report a hazard.
constexpr const char* kRacePassInner = "WORKBOOK_RACE_PASS_INNER";
constexpr int kHazardExit = 86;

std::string find_sanitizer() {
  std::vector<std::string> places;
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    for (size_t at = 0; at <= all.size();) {
      const size_t end = std::min(all.find(':', at), all.size());
      if (end > at) places.push_back(all.substr(at, end - at));
      at = end + 1;
    }
  }
  if (const char* home = std::getenv("CUDA_HOME")) places.push_back(std::string(home) + "/bin");
  places.push_back("/usr/local/cuda/bin");
  for (const auto& dir : places) {
    const std::string exe = dir + "/compute-sanitizer";
    if (access(exe.c_str(), X_OK) == 0) return exe;
  }
  return "";
}

// Runs `test` (suite.name) of this program under racecheck; returns its exit status and output.
std::pair<int, std::string> run_under_racecheck(const std::string& sanitizer, const std::string& test) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {-1, "cannot find this program's path (/proc/self/exe)"};
  self[n] = '\0';
  const std::string command = std::string(kRacePassInner) + "=1 '" + sanitizer +
                              "' --tool racecheck --racecheck-report hazard --error-exitcode " +
                              std::to_string(kHazardExit) + " '" + self + "' --gtest_filter='" + test + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "could not start " + sanitizer};
  std::string output;
  char buf[4096];
  while (size_t got = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// A broken kernel must be rejected, with one of the codes it declares, on some shape.
class BrokenTest : public ::testing::Test {
 public:
  BrokenTest(const OpBase& op, const Variant& v) : op_(op), v_(v) {}

  void TestBody() override {
    // Arguments the op must refuse are tried first: that check needs no GPU.
    if (std::find(v_.expect.begin(), v_.expect.end(), Code::AcceptedBadArgs) != v_.expect.end()) {
      for (const Refusal& r : op_.common().refused) {
        const Outcome o = check_refusal(op_, v_, r);
        if (o.code != Code::AcceptedBadArgs) continue;
        ::testing::Test::RecordProperty("outcome", std::string(code_name(o.code)));
        std::printf("rejected as accepted_bad_args on %s, as it should be (%s)\n", r.shape.text().c_str(),
                    v_.mistake.c_str());
        return;
      }
      if (v_.expect.size() == 1) {
        ADD_FAILURE() << v_.name << " (" << v_.mistake << ") was refused-checked on every argument set the op must "
                      << "refuse and passed each: the refusal check has gone soft.";
        return;
      }
    }
    if (auto reason = gpu_missing_reason()) GTEST_SKIP() << *reason;
    if (std::getenv(kRacePassInner) != nullptr) return run_for_the_race_pass();
    std::vector<std::pair<Shape, const InputSet*>> tries;
    for (const auto& s : v_.shapes.empty() ? op_.common().test_shapes : v_.shapes) tries.emplace_back(s, nullptr);
    for (const auto& set : op_.common().input_sets) {
      for (const auto& s : set.shapes) tries.emplace_back(s, &set);
    }
    std::stable_sort(tries.begin(), tries.end(),
                     [&](const auto& a, const auto& b) { return shape_size(op_, a.first) < shape_size(op_, b.first); });
    std::string expected;
    for (Code c : v_.expect) expected += (expected.empty() ? "" : " or ") + std::string(code_name(c));
    for (const auto& [s, set] : tries) {
      if (cannot_run_here(op_, v_, s)) continue;
      CaseOptions opt;
      opt.seed = test_seed();
      opt.inputs = set;
      const Outcome o = check_case(op_, v_, s, opt);
      if (o.passed() || code_is_skip(o.code)) continue;
      ::testing::Test::RecordProperty("outcome", std::string(code_name(o.code)));
      if (std::find(v_.expect.begin(), v_.expect.end(), o.code) != v_.expect.end()) {
        std::printf("rejected as %s on %s%s, as it should be (%s)\n", std::string(code_name(o.code)).c_str(),
                    s.text().c_str(), set ? (" with " + set->name + " inputs").c_str() : "", v_.mistake.c_str());
        return;
      }
      ADD_FAILURE() << v_.name << " (" << v_.mistake << ") was rejected on " << s.text() << " as "
                    << code_name(o.code) << ", but should be rejected as " << expected << ":\n" << o.message;
      return;
    }
    if (std::find(v_.expect.begin(), v_.expect.end(), Code::Race) != v_.expect.end()) return race_pass();
    ADD_FAILURE() << v_.name << " (" << v_.mistake << ") passed every shape: the checks have gone soft; it must be "
                  << "rejected as " << expected << ". " << seed_hint();
  }

 private:
  // Outer side: this test again, in a process of its own under racecheck.
  void race_pass() {
    ::testing::Test::RecordProperty("outcome", "race");
    const std::string sanitizer = find_sanitizer();
    if (sanitizer.empty()) {
      GTEST_SKIP() << v_.name << " (" << v_.mistake << ") passed the functional checks; its race is caught by the "
                   << "race pass, compute-sanitizer's racecheck, which is not installed here (not on PATH, nor in "
                   << "$CUDA_HOME/bin or /usr/local/cuda/bin)";
    }
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const auto [status, output] =
        run_under_racecheck(sanitizer, std::string(info->test_suite_name()) + "." + info->name());
    if (status == kHazardExit) {
      std::printf("rejected as race by the race pass (compute-sanitizer racecheck), as it should be (%s)\n",
                  v_.mistake.c_str());
      return;
    }
    const std::string tail = output.size() > 3000 ? output.substr(output.size() - 3000) : output;
    ADD_FAILURE() << v_.name << " (" << v_.mistake << ") passed every shape, and racecheck reported no hazard "
                  << "(exit status " << status << "): neither the checks nor the race pass catch it.\n" << tail;
  }

  // Inner side, under the sanitizer: the smallest shape the op runs, once through the checks.
  void run_for_the_race_pass() {
    std::vector<Shape> shapes = v_.shapes.empty() ? op_.common().test_shapes : v_.shapes;
    std::stable_sort(shapes.begin(), shapes.end(),
                     [&](const Shape& a, const Shape& b) { return shape_size(op_, a) < shape_size(op_, b); });
    for (const Shape& s : shapes) {
      if (cannot_run_here(op_, v_, s)) continue;
      CaseOptions opt;
      opt.seed = test_seed();
      check_case(op_, v_, s, opt);
      return;
    }
  }

  const OpBase& op_;
  const Variant& v_;
};

void register_all() {
  for (const Variant& v : all_variants()) {
    const OpBase& op = *find_op(v.op);
    const OpCommon& c = op.common();
    if (v.role == Role::Broken) {
      ::testing::RegisterTest((c.id() + "/broken").c_str(), v.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [&op, &v]() -> ::testing::Test* { return new BrokenTest(op, v); });
      continue;
    }
    const std::string suite = c.id() + "/" + v.name;
    std::vector<Shape> shapes = v.shapes.empty() ? c.test_shapes : v.shapes;  // a variant may name its own
    std::stable_sort(shapes.begin(), shapes.end(),
                     [&](const Shape& a, const Shape& b) { return shape_size(op, a) < shape_size(op, b); });
    for (const Shape& s : shapes) {
      ::testing::RegisterTest(suite.c_str(), s.label().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [&op, &v, s]() -> ::testing::Test* { return new CaseTest(op, v, s, nullptr, -1); });
    }
    for (const InputSet& set : c.input_sets) {
      for (const Shape& s : set.shapes) {
        ::testing::RegisterTest(suite.c_str(), (set.name + "_" + s.label()).c_str(), nullptr, nullptr, __FILE__,
                                __LINE__,
                                [&op, &v, s, &set]() -> ::testing::Test* { return new CaseTest(op, v, s, &set, -1); });
      }
    }
    for (const Refusal& r : c.refused) {
      ::testing::RegisterTest(suite.c_str(), ("refuses_" + r.shape.label()).c_str(), nullptr, nullptr, __FILE__,
                              __LINE__, [&op, &v, &r]() -> ::testing::Test* { return new RefusalTest(op, v, r); });
    }
    if (c.random_shapes) {
      Rng probe(1);
      const size_t count = c.random_shapes(probe).size();
      for (size_t k = 0; k < count; ++k) {
        ::testing::RegisterTest(suite.c_str(), ("seeded_random_" + std::to_string(k + 1)).c_str(), nullptr, nullptr,
                                __FILE__, __LINE__, [&op, &v, k]() -> ::testing::Test* {
                                  return new CaseTest(op, v, Shape{}, nullptr, static_cast<int>(k));
                                });
      }
    }
  }
}

}  // namespace
}  // namespace wb

int main(int argc, char** argv) {
  wb::mark_main_started();
  ::testing::InitGoogleTest(&argc, argv);
  try {
    wb::run_seed();
    wb::register_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel-workbook: %s\n", e.what());
    return 2;
  }
  if (!GTEST_FLAG_GET(list_tests)) {
    std::printf("kernel-workbook: %s\n", wb::seed_hint().c_str());
    if (auto reason = wb::gpu_missing_reason()) std::printf("kernel-workbook: %s: kernels are compiled, not run\n", reason->c_str());
  }
  return RUN_ALL_TESTS();
}
