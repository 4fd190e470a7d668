// main() of every chapter's test programs. The tests are not written by hand: for every
// variant linked into the program, one test per shape of its op (and per input set, and a
// few seeded random shapes), named
//     <op>/<dtype>/<variant>.<shape>        vector_add/f32/ex1_vector_add.n1025
// for every argument set the op must refuse, one test that it is refused:
//     <op>/<dtype>/<variant>.refuses_<shape> topk/f32/ex3_topk.refuses_B1_V7_k8
// and for every broken variant (the self-tests) one test that the checks reject it with the
// code it declares:
//     <op>/<dtype>/broken.<variant>
//
// The learner's run does not go through those one-per-shape tests: ctest runs this program
// once per exercise, `chNN_tests --exercise ex1_vector_add`, which checks the exercise's
// small, tail and odd shapes first (smallest first), stops at the first failure, then runs
// the large cases (2^31 elements, long sequences), and prints one line per stage; the
// per-shape tests stay one command away (the line says which). Each verdict is also one JSON
// line in WORKBOOK_OUTCOMES, which the end-of-run summary reads (report/summary.cpp).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/device.cuh"
#include "check/gtest_support.cuh"
#include "declare/op.cuh"

namespace wb {

namespace {
std::string g_case_name;  // the case being run outside GoogleTest (the learner's run)
}  // namespace

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info) return std::string(info->test_suite_name()) + "." + info->name();
  return g_case_name.empty() ? std::string("no-test") : g_case_name;
}

Rng test_rng() { return rng_for(current_test_name()); }

namespace {

constexpr const char* kRacePassInner = "WORKBOOK_RACE_PASS_INNER";  // set in the sanitizer's child
constexpr int kHazardExit = 86;

uint64_t test_seed() { return test_rng().next(); }

int64_t shape_size(const OpBase& op, Shape s) {
  if (op.common().derive) op.common().derive(s);
  int64_t n = 0;
  for (const auto& t : op.common().tensors) {
    if (t.present_in(s)) n += t.count(s);
  }
  return n;
}

// A case is "large" when its spec tags it so (2^31 elements, indices past int) or when its
// tensors hold 2^26 elements or more: the learner's run checks those only after every small
// case passed, on a line of their own.
constexpr int64_t kLargeElements = int64_t{1} << 26;
// The race pass runs shapes up to this many elements (racecheck makes kernels ~100x slower).
constexpr int64_t kRaceElements = int64_t{1} << 18;

// One case of one variant, as a test (per-shape programs) or as a step of the learner's run.
struct CaseDef {
  enum class Kind { Shape, Refusal, Random } kind = Kind::Shape;
  std::string suite, name;           // the GoogleTest names: vector_add/f32/ex1_vector_add . n1025
  Shape shape;                       // Kind::Shape
  const InputSet* set = nullptr;     // Kind::Shape with an input set
  const Refusal* refusal = nullptr;  // Kind::Refusal
  int random_index = -1;             // Kind::Random
  int64_t size = 0;
  bool large = false;
  bool race = false;  // one of the op's race shapes (OpSpec::race_shapes)
  std::string full_name() const { return suite + "." + name; }
};

std::vector<CaseDef> cases_of(const OpBase& op, const Variant& v) {
  const OpCommon& c = op.common();
  const std::string suite = c.id() + "/" + v.name;
  std::vector<CaseDef> out;
  std::vector<Shape> shapes = v.shapes.empty() ? c.test_shapes : v.shapes;  // a variant may name its own
  std::stable_sort(shapes.begin(), shapes.end(),
                   [&](const Shape& a, const Shape& b) { return shape_size(op, a) < shape_size(op, b); });
  const auto add_shape = [&](const Shape& s, const InputSet* set) {
    CaseDef d;
    d.suite = suite;
    d.name = set ? set->name + "_" + s.label() : s.label();
    d.shape = s;
    d.set = set;
    d.size = shape_size(op, s);
    d.large = s.tag() == "large" || d.size >= kLargeElements;
    out.push_back(std::move(d));
  };
  for (const Shape& s : shapes) add_shape(s, nullptr);
  // The race pass's shapes are cases too (checked like any other), named race_<shape>.
  if (v.role != Role::Broken) {
    for (const Shape& s : c.race_shapes) {
      add_shape(s, nullptr);
      out.back().name = "race_" + s.label();
      out.back().race = true;
    }
  }
  for (const InputSet& set : c.input_sets) {
    for (const Shape& s : set.shapes) add_shape(s, &set);
  }
  for (const Refusal& r : c.refused) {
    CaseDef d;
    d.kind = CaseDef::Kind::Refusal;
    d.suite = suite;
    d.name = "refuses_" + r.shape.label();
    d.refusal = &r;
    d.shape = r.shape;
    out.push_back(std::move(d));
  }
  if (c.random_shapes) {
    Rng probe(1);
    const size_t count = c.random_shapes(probe).size();
    for (size_t k = 0; k < count; ++k) {
      CaseDef d;
      d.kind = CaseDef::Kind::Random;
      d.suite = suite;
      d.name = "seeded_random_" + std::to_string(k + 1);
      d.random_index = static_cast<int>(k);
      out.push_back(std::move(d));
    }
  }
  return out;
}

// A stub throws not_implemented before it looks at its arguments, but a stub may come with
// its argument checks already written: a refusal "passes" on it. So a learner's refusal case
// first calls the variant once on the op's smallest shape; a stub is reported as such.
std::optional<Outcome> stub_probe(const OpBase& op, const Variant& v) {
  if (v.role != Role::Student) return std::nullopt;
  std::vector<Shape> shapes = v.shapes.empty() ? op.common().test_shapes : v.shapes;
  if (shapes.empty()) return std::nullopt;
  const Shape smallest = *std::min_element(shapes.begin(), shapes.end(), [&](const Shape& a, const Shape& b) {
    return shape_size(op, a) < shape_size(op, b);
  });
  Outcome o;
  if (gpu_missing_reason()) {
    o = dry_run_without_gpu(op, v, smallest);
  } else if (cannot_run_here(op, v, smallest)) {
    return std::nullopt;
  } else {
    CaseOptions opt;
    opt.seed = test_seed();
    o = check_case(op, v, smallest, opt);
  }
  if (o.code == Code::NotImplemented) return o;
  return std::nullopt;
}

// Cases of 2^28 elements and more (a large case past 2^31 holds tens of GB of host and GPU
// memory) run as many at a time on a machine as its memory allows, whatever number of test
// programs share it. The machine's budget is three quarters of the smaller of its host and
// GPU memory, in slots of 1 GiB; a case claims one slot per GiB of its tensors (held once on
// the host and once on the GPU), half as much again for what its launcher allocates, and 8
// at least (a case tagged large may keep its bulk in a launcher's scratch: exercise 1 of
// chapter 8 holds 8.6 GB of scores that are no tensor of the op).
// A slot is a lock file (kernel-workbook-large-case.lock.N in TMPDIR or /tmp). A case takes
// all its slots or none: one case at a time gathers them (holding the queue's lock file, so
// a large claim is not starved by small ones), and the others wait while their small cases go
// on. Smaller cases need no slot.
constexpr int64_t kHeavyElements = int64_t{1} << 28;

double host_gib() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page / (1 << 30) : 0.0;
}

int large_case_slots() {
  size_t free = 0, total = 0;
  const double gpu = cudaMemGetInfo(&free, &total) == cudaSuccess ? total / double(1 << 30) : host_gib();
  return std::clamp(static_cast<int>(0.75 * std::min(host_gib(), gpu)), 1, 1024);
}

int slots_of(const OpBase& op, Shape s) {
  if (op.common().derive) op.common().derive(s);
  double bytes = 0;
  for (const auto& t : op.common().tensors) {
    if (t.present_in(s)) bytes += static_cast<double>(t.count(s)) * dtype_size(t.dtype);
  }
  return std::max(8, static_cast<int>(std::ceil(1.5 * bytes / (1 << 30))));
}

class LargeCaseLock {
 public:
  explicit LargeCaseLock(int want) {
    const char* dir = std::getenv("TMPDIR");
    const std::string base = std::string(dir && *dir ? dir : "/tmp") + "/kernel-workbook-large-case.lock.";
    const int slots = large_case_slots();
    want = std::clamp(want, 1, slots);
    const int queue = ::open((base + "queue").c_str(), O_RDWR | O_CREAT, 0666);
    if (queue < 0) return;    // no lock file can be made here: run without one
    ::flock(queue, LOCK_EX);  // waits for the case gathering its slots before this one
    for (;;) {
      for (int i = 0; i < slots && static_cast<int>(fds_.size()) < want; ++i) {
        const int fd = ::open((base + std::to_string(i)).c_str(), O_RDWR | O_CREAT, 0666);
        if (fd < 0) break;
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
          fds_.push_back(fd);
        else
          ::close(fd);
      }
      if (static_cast<int>(fds_.size()) >= want) break;
      for (int fd : fds_) ::close(fd);  // not enough free: give them back, look again in a fifth of a second
      fds_.clear();
      ::usleep(200 * 1000);
    }
    ::close(queue);  // the next case may gather its own
  }
  ~LargeCaseLock() {
    for (int fd : fds_) ::close(fd);  // closing releases the locks
  }
  LargeCaseLock(const LargeCaseLock&) = delete;
  LargeCaseLock& operator=(const LargeCaseLock&) = delete;

 private:
  std::vector<int> fds_;
};

// Runs one case: the checks of check/check.cu, or "compiled, not run" without a GPU.
Outcome run_case(const OpBase& op, const Variant& v, const CaseDef& d, Shape* ran) {
  if (d.kind == CaseDef::Kind::Refusal) {
    *ran = d.shape;
    if (auto stub = stub_probe(op, v)) return *stub;
    return check_refusal(op, v, *d.refusal);
  }
  Shape s = d.shape;
  if (d.kind == CaseDef::Kind::Random) {
    auto rng = test_rng();
    const auto drawn = op.common().random_shapes(rng);
    s = drawn.at(static_cast<size_t>(d.random_index));
  }
  *ran = s;
  if (gpu_missing_reason()) return dry_run_without_gpu(op, v, s);
  std::optional<LargeCaseLock> slot;
  if (s.tag() == "large" || shape_size(op, s) >= kHeavyElements) slot.emplace(slots_of(op, s));
  if (auto why = cannot_run_here(op, v, s)) return Outcome::fail(Code::Skipped, *why);
  CaseOptions opt;
  opt.seed = test_seed();
  opt.inputs = d.set;
  // Under the sanitizer one pass is enough; so it is for a large case, which is there for
  // index arithmetic past 2^31 (the second call, the fence and determinism are checked on
  // every small shape, and at 2^31 elements each pass costs seconds of inputs and copies).
  opt.first_pass_only = std::getenv(kRacePassInner) != nullptr || d.large;
  return check_case(op, v, s, opt);
}

// One JSON line in WORKBOOK_OUTCOMES (a folder), when it is set.
void append_record(const nlohmann::ordered_json& j) {
  const char* dir = std::getenv("WORKBOOK_OUTCOMES");
  if (dir == nullptr || *dir == '\0') return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(std::string(dir) + "/" + std::to_string(::getpid()) + ".jsonl", std::ios::app);
  out << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

// One line per finished test for the run's summary (report/summary.cpp).
void record(const OpBase& op, const Variant& v, const std::string& shape, int64_t size, const Outcome& o) {
  ::testing::Test::RecordProperty("outcome", std::string(code_name(o.code)));
  const nlohmann::ordered_json j = {{"test", current_test_name()},
                                    {"op", op.common().id()},
                                    {"variant", v.name},
                                    {"role", role_name(v.role)},
                                    {"file", v.file},
                                    {"shape", shape},
                                    {"size", size},
                                    {"code", std::string(code_name(o.code))},
                                    {"message", o.message}};
  append_record(j);
}

void report(const Outcome& o) {
  if (code_is_skip(o.code)) GTEST_SKIP() << o.message;
  if (!o.passed()) {
    ADD_FAILURE() << "\n" << o.message << "\n  outcome: " << code_name(o.code) << " · " << seed_hint() << "\n";
  }
}

class CaseTest : public ::testing::Test {
 public:
  CaseTest(const OpBase& op, const Variant& v, CaseDef d) : op_(op), v_(v), d_(std::move(d)) {}

  void TestBody() override {
    Shape ran;
    const Outcome o = run_case(op_, v_, d_, &ran);
    record(op_, v_, ran.text(), d_.kind == CaseDef::Kind::Refusal ? 0 : shape_size(op_, ran), o);
    if (d_.kind == CaseDef::Kind::Refusal && o.passed()) std::printf("%s\n", o.message.c_str());
    report(o);
  }

 private:
  const OpBase& op_;
  const Variant& v_;
  CaseDef d_;
};

// --- the learner's run: one exercise, small cases first, then the large ones -----------------

std::string find_sanitizer();
std::pair<int, std::string> run_under_racecheck(const std::string& sanitizer, const std::string& test);

std::string first_line_of(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  while (!line.empty() && line.front() == ' ') line.erase(line.begin());
  return line.size() > 160 ? line.substr(0, 157) + "..." : line;
}

std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

std::string self_path() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "the test program";
  self[n] = '\0';
  std::string p = self;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) != nullptr) {
    const std::string here = std::string(cwd) + "/";
    if (p.rfind(here, 0) == 0) p = p.substr(here.size());
  }
  return p;
}

// The exercises a program holds: the learner's variants grouped by file (ex1_vector_add).
std::map<std::string, std::vector<const Variant*>> exercises() {
  std::map<std::string, std::vector<const Variant*>> out;
  for (const Variant& v : all_variants()) {
    if (v.role == Role::Student) out[v.file.empty() ? v.name : file_stem(v.file)].push_back(&v);
  }
  return out;
}

struct Stage {
  int passed = 0, skipped = 0;
  std::optional<std::pair<CaseDef, Outcome>> failed;
  std::string failed_shape;
};

Stage run_stage(const std::vector<std::pair<const Variant*, CaseDef>>& cases) {
  Stage st;
  for (const auto& [v, d] : cases) {
    const OpBase& op = *find_op(v->op);
    g_case_name = d.full_name();
    Shape ran;
    const Outcome o = run_case(op, *v, d, &ran);
    g_case_name.clear();
    if (o.passed()) {
      ++st.passed;
    } else if (o.code == Code::Skipped || o.code == Code::NoEngine) {
      ++st.skipped;
    } else {
      st.failed = std::make_pair(d, o);
      st.failed_shape = ran.text();
      break;
    }
  }
  return st;
}

// Exit status: 0 every case passed, 1 anything else (failed, not written yet, not run).
int run_exercise(const std::string& name, const std::string& chapter) {
  const auto all = exercises();
  const auto it = all.find(name);
  if (it == all.end()) {
    std::string known;
    for (const auto& [n, vs] : all) known += " " + n;
    std::fprintf(stderr, "kernel-workbook: --exercise %s: no such exercise here; the exercises are:%s\n", name.c_str(),
                 known.c_str());
    return 2;
  }
  const std::string file = it->second.front()->file;
  std::vector<std::pair<const Variant*, CaseDef>> small, large, refusals;
  for (const Variant* v : it->second) {
    for (CaseDef& d : cases_of(*find_op(v->op), *v)) {
      if (d.kind == CaseDef::Kind::Refusal)
        refusals.emplace_back(v, std::move(d));
      else if (d.large)
        large.emplace_back(v, std::move(d));
      else
        small.emplace_back(v, std::move(d));
    }
  }
  // Fixed shapes smallest first, across the exercise's ops and dtypes; the seeded random
  // shapes after them (their size is known only once drawn); refusals last (a stub is found
  // by the first small case already).
  std::stable_sort(small.begin(), small.end(), [](const auto& a, const auto& b) {
    const bool ra = a.second.kind == CaseDef::Kind::Random, rb = b.second.kind == CaseDef::Kind::Random;
    return ra != rb ? rb : a.second.size < b.second.size;
  });
  std::stable_sort(large.begin(), large.end(),
                   [](const auto& a, const auto& b) { return a.second.size < b.second.size; });
  small.insert(small.end(), refusals.begin(), refusals.end());

  nlohmann::ordered_json j = {{"exercise", name}, {"chapter", chapter}, {"file", file}};
  const auto finish = [&](const char* verdict, const std::string& code, const std::string& line,
                          const std::string& detail) {
    j["verdict"] = verdict;
    j["code"] = code;
    j["line"] = line;
    j["detail"] = detail;
    append_record(j);
  };
  const auto detail_command = [&](const CaseDef& d) {
    return "WORKBOOK_SEED=" + std::to_string(run_seed()) + " " + self_path() + " --gtest_filter='" + d.full_name() +
           "'";
  };
  const auto say_failure = [&](const Stage& st, const char* stage) {
    const auto& [d, o] = *st.failed;
    const std::string code(code_name(o.code));
    if (o.code == Code::NotImplemented && st.passed == 0) {
      std::printf("%s: not written yet: open %s\n", name.c_str(), file.c_str());
      finish("not_written", code, "open " + file, "");
      return 1;
    }
    if (o.code == Code::CompiledNotRun) {
      std::printf("%s: compiled, not run: no GPU here to check it\n", name.c_str());
      finish("not_run", code, "no GPU here to run it", "");
      return 1;
    }
    const std::string line = std::string(stage) + d.suite.substr(0, d.suite.rfind('/')) + " " + st.failed_shape + " [" +
                             code + "]: " + first_line_of(o.message);
    std::printf("%s: FAILED %s\n  in full: %s\n", name.c_str(), line.c_str(), detail_command(d).c_str());
    finish("failed", code, line, detail_command(d));
    return 1;
  };

  // WORKBOOK_CHECK_TIMES=1: the stages' seconds on stderr too (with check_case's phases).
  const bool times = std::getenv("WORKBOOK_CHECK_TIMES") != nullptr;
  auto stage_start = std::chrono::steady_clock::now();
  const auto stage_time = [&](const char* stage) {
    const auto now = std::chrono::steady_clock::now();
    if (times)
      std::fprintf(stderr, "[wb-times] exercise %s: %s=%.3f\n", name.c_str(), stage,
                   std::chrono::duration<double>(now - stage_start).count());
    stage_start = now;
  };
  const Stage first = run_stage(small);
  stage_time("small");
  if (first.failed) return say_failure(first, "on ");
  std::string passed = std::to_string(first.passed) + " cases";
  if (first.skipped) passed += ", " + std::to_string(first.skipped) + " skipped on this GPU";

  // The race pass: a missing barrier often leaves the output right by luck, run after run.
  // compute-sanitizer's racecheck runs this program again on the exercise's race shapes
  // (OpSpec::race_shapes: every block loops at least twice; else the two largest small
  // shapes), one pass each; a hazard fails the exercise.
  std::vector<std::string> race;
  for (const auto& [v, d] : small) {
    if (d.race) race.push_back(d.full_name());
  }
  for (auto it2 = small.rbegin(); race.empty() && it2 != small.rend(); ++it2) {  // no race shapes declared
    if (it2->second.kind == CaseDef::Kind::Shape && it2->second.size <= kRaceElements)
      race.push_back(it2->second.full_name());
  }
  if (race.size() == 1) {
    for (auto it2 = small.rbegin(); it2 != small.rend(); ++it2) {
      if (it2->second.kind == CaseDef::Kind::Shape && !it2->second.race && it2->second.size <= kRaceElements &&
          it2->second.full_name() != race.front()) {
        race.push_back(it2->second.full_name());
        break;
      }
    }
  }
  if (!race.empty()) {
    const std::string sanitizer = find_sanitizer();
    if (sanitizer.empty()) {
      passed += "; race pass not run: compute-sanitizer not found (CUDA toolkit's bin folder on PATH)";
    } else {
      std::string filter;
      for (const auto& r : race) filter += (filter.empty() ? "" : ":") + r;
      const auto [status, output] = run_under_racecheck(sanitizer, filter);
      stage_time("race");
      if (status == kHazardExit) {
        std::string hazard;
        for (size_t at = 0; at < output.size();) {
          const size_t nl = output.find('\n', at);
          const std::string line = output.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
          if (hazard.empty() && line.find("Race reported") != std::string::npos)
            hazard = line;
          else if (hazard.empty() && line.find("hazard") != std::string::npos)
            hazard = line;
          if (nl == std::string::npos) break;
          at = nl + 1;
        }
        const std::string line = "the race pass (racecheck on " + filter + ") [race]: " + first_line_of(hazard);
        const std::string detail = "scripts/sanitize.sh " + chapter + " --tools racecheck --filter '" + filter + "'";
        std::printf("%s: FAILED %s\n  in full: %s\n", name.c_str(), line.c_str(), detail.c_str());
        finish("failed", "race", line, detail);
        return 1;
      }
      if (status != 0) {
        passed += "; race pass could not finish (racecheck exit " + std::to_string(status) + ")";
      } else {
        passed += ", race pass clean";
      }
    }
  }
  if (large.empty()) {
    std::printf("%s: passed (%s)\n", name.c_str(), passed.c_str());
    finish("passed", "pass", passed, "");
    return 0;
  }
  std::printf("%s: passed (%s); now the %zu large case%s ...\n", name.c_str(), passed.c_str(), large.size(),
              large.size() == 1 ? "" : "s");
  std::fflush(stdout);
  const Stage big = run_stage(large);
  stage_time("large");
  if (big.failed) return say_failure(big, "a large case: ");
  std::string big_text = std::to_string(big.passed) + " large";
  if (big.skipped) big_text += ", " + std::to_string(big.skipped) + " large skipped on this GPU";
  std::printf("%s: large cases passed (%s)\n", name.c_str(), big_text.c_str());
  finish("passed", "pass", passed + ", " + big_text, "");
  return 0;
}

}  // namespace

namespace {

// The race pass for broken kernels. A missing __syncthreads() between warps often gives the
// right answer on a given GPU, run after run: the functional checks cannot see it, and the
// learner's race pass (the chNN-student.races test: compute-sanitizer's racecheck) is the
// mechanism that does. A broken variant that declares Code::Race and passes every functional
// check is run again, by this same program, under racecheck; it must report a hazard.
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
  const std::string command = "WORKBOOK_OUTCOMES= WORKBOOK_SEED=" + std::to_string(run_seed()) + " " +
                              std::string(kRacePassInner) + "=1 '" + sanitizer +
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
      ADD_FAILURE() << v_.name << " (" << v_.mistake << ") was rejected on " << s.text() << " as " << code_name(o.code)
                    << ", but should be rejected as " << expected << ":\n"
                    << o.message;
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
                  << "(exit status " << status << "): neither the checks nor the race pass catch it.\n"
                  << tail;
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

// Which cases a whole-program run registers: all of them; only the large ones (`--large-cases`,
// e.g. to check the index arithmetic past 2^31 of every variant without the hour of small
// cases); or all but the large ones (`--small-cases`: every shape class and self-test in
// minutes, the large cases left to a run of their own).
enum class Sizes { All, LargeOnly, SmallOnly };

void register_all(Sizes sizes) {
  const bool large_only = sizes == Sizes::LargeOnly;
  for (const Variant& v : all_variants()) {
    const OpBase& op = *find_op(v.op);
    const OpCommon& c = op.common();
    if (v.role == Role::Broken) {
      if (large_only) continue;
      ::testing::RegisterTest((c.id() + "/broken").c_str(), v.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [&op, &v]() -> ::testing::Test* { return new BrokenTest(op, v); });
      continue;
    }
    for (CaseDef& d : cases_of(op, v)) {
      if (large_only && !d.large) continue;
      if (sizes == Sizes::SmallOnly && d.large) continue;
      const std::string suite = d.suite, name = d.name;
      ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [&op, &v, d]() -> ::testing::Test* { return new CaseTest(op, v, d); });
    }
  }
}

// The program's own options; GoogleTest's (--gtest_*) are taken by InitGoogleTest first.
constexpr const char* kUsage =
    "options:\n"
    "  --exercise NAME     the learner's run of one exercise (what ctest runs): small cases first,\n"
    "                      stop at the first failure, then the large cases; one line per stage\n"
    "  --list-exercises    the exercises this program checks, one per line\n"
    "  --chapter ID        (with --exercise) the chapter's id, for the run's summary\n"
    "  --large-cases       only the large cases (2^26 elements or more, or tagged large) of every kernel\n"
    "  --small-cases       every case but the large ones, and the self-tests\n"
    "  --gtest_filter=...  one test per shape, e.g. --gtest_filter='vector_add/f32/ex1_vector_add.*'\n"
    "  --gtest_list_tests, --gtest_brief=1, --gtest_repeat=N, --help: GoogleTest's own\n"
    "environment: WORKBOOK_SEED=N (repeat a run's inputs), WORKBOOK_OUTCOMES=DIR (records)\n";

}  // namespace
}  // namespace wb

int main(int argc, char** argv) {
  wb::mark_main_started();
  ::testing::InitGoogleTest(&argc, argv);
  std::string exercise, chapter;
  bool list = false;
  wb::Sizes sizes = wb::Sizes::All;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* flag, std::string& out) {
      const std::string f = flag;
      if (a == f && i + 1 < argc) {
        out = argv[++i];
        return true;
      }
      if (a.rfind(f + "=", 0) == 0) {
        out = a.substr(f.size() + 1);
        return true;
      }
      return false;
    };
    if (value("--exercise", exercise) || value("--chapter", chapter)) continue;
    if (a == "--list-exercises") {
      list = true;
      continue;
    }
    if (a == "--large-cases" || a == "--small-cases") {
      const wb::Sizes asked = a == "--large-cases" ? wb::Sizes::LargeOnly : wb::Sizes::SmallOnly;
      if (sizes != wb::Sizes::All && sizes != asked) {
        std::fprintf(stderr, "%s: --large-cases and --small-cases exclude each other; give one of them\n", argv[0]);
        return 2;
      }
      sizes = asked;
      continue;
    }
    std::fprintf(stderr, "%s: unknown argument '%s'\n%s", argv[0], a.c_str(), wb::kUsage);
    return 2;
  }
  try {
    wb::run_seed();
    if (list) {
      for (const auto& [name, vs] : wb::exercises()) std::printf("%s\n", name.c_str());
      return 0;
    }
    if (!exercise.empty() && sizes != wb::Sizes::All) {
      std::fprintf(stderr,
                   "%s: --large-cases and --small-cases list or run the per-shape tests; --exercise runs an "
                   "exercise's small cases, then its large ones. Give one of the two.\n",
                   argv[0]);
      return 2;
    }
    if (!exercise.empty()) return wb::run_exercise(exercise, chapter);
    wb::register_all(sizes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel-workbook: %s\n", e.what());
    return 2;
  }
  if (!GTEST_FLAG_GET(list_tests)) {
    std::printf("kernel-workbook: %s\n", wb::seed_hint().c_str());
    if (auto reason = wb::gpu_missing_reason())
      std::printf("kernel-workbook: %s: kernels are compiled, not run\n", reason->c_str());
  }
  return RUN_ALL_TESTS();
}
