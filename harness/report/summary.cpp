// The end of a test run, in one screen. ctest runs it after the last test (CTestCustom.cmake's
// post-test command, cmake/LearnerCTest.cmake), reading the records the tests wrote:
//   * the learner's run (records with an "exercise"): one line per exercise — passed, FAILED
//     with the first failing shape and the command that shows it in full, not written yet
//     with the file to open, or compiled and not run — and what to do next;
//   * the per-shape programs (solutions, references, self-tests): what was not checked and
//     why (no GPU), and each failing kernel once, its smallest failing shape in full.
//
//   workbook_summary --dir DIR [--title ch01] [--strict]
//     DIR holds one folder of records per test label (or the records themselves).
//     --strict: exit 1 when any case failed or was not run (for scripts); ctest's post-test
//               command runs without it, as ctest's own status already says so.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Verdict {
  std::string exercise, chapter, file, verdict, code, line, detail;
};

struct Record {
  std::string test, op, variant, file, shape, code, message;
  double size = 0;
};

// Read from the records' JSON lines; a missing field throws (the record is not counted).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Verdict, exercise, chapter, file, verdict, code, line, detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Record, test, op, variant, file, shape, code, message, size)

std::string first_line(const std::string& s, size_t skip_lines = 0) {
  size_t at = 0;
  for (size_t k = 0; k < skip_lines; ++k) {
    const size_t nl = s.find('\n', at);
    if (nl == std::string::npos) return {};
    at = nl + 1;
  }
  const size_t nl = s.find('\n', at);
  std::string line = s.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
  while (!line.empty() && line.front() == ' ') line.erase(line.begin());
  return line;
}

// The learner's run: one line per exercise, then what to do next. Returns whether all passed.
bool print_learner(const std::vector<Verdict>& verdicts, const std::string& title) {
  std::vector<Verdict> v = verdicts;
  std::sort(v.begin(), v.end(), [](const Verdict& a, const Verdict& b) { return a.exercise < b.exercise; });
  int passed = 0, failed = 0, missing = 0, not_run = 0;
  for (const auto& x : v) {
    if (x.verdict == "passed")
      ++passed;
    else if (x.verdict == "not_written")
      ++missing;
    else if (x.verdict == "not_run")
      ++not_run;
    else
      ++failed;
  }
  std::string chapter = title.empty() ? v.front().chapter : title;
  std::printf("%s\n", std::string(78, '=').c_str());
  std::printf("%s, your kernels: %d passed, %d failed, %d not written yet",
              chapter.empty() ? "kernel-workbook" : chapter.c_str(), passed, failed, missing);
  if (not_run) std::printf(", %d compiled but NOT RUN (no GPU)", not_run);
  std::printf("\n");
  size_t width = 0;
  for (const auto& x : v) width = std::max(width, x.exercise.size());
  const Verdict* next = nullptr;
  for (const auto& x : v) {
    const char* what = x.verdict == "passed"        ? "passed"
                       : x.verdict == "not_written" ? "not written yet"
                       : x.verdict == "not_run"     ? "compiled, not run"
                                                    : "FAILED";
    std::printf("  %-*s  %-17s %s\n", static_cast<int>(width), x.exercise.c_str(), what, x.line.c_str());
    if (!x.detail.empty())
      std::printf("  %-*s  %-17s in full: %s\n", static_cast<int>(width), "", "", x.detail.c_str());
    if (!next && x.verdict == "failed") next = &x;
  }
  if (!next) {
    for (const auto& x : v) {
      if (x.verdict == "not_written") {
        next = &x;
        break;
      }
    }
  }
  if (not_run > 0) {
    std::printf(
        "NOT CHECKED: no GPU here, so written kernels were compiled but not run: whether they are right\n"
        "  is unknown. Run the same command on a machine with an NVIDIA GPU (docs/ch00-setup.md, \"No NVIDIA "
        "GPU?\").\n");
  }
  const std::string again = chapter.empty() ? "ctest" : "ctest --preset " + chapter;
  if (next && next->verdict == "failed") {
    std::printf("next: fix %s (the command above shows that case in full), then: %s\n", next->file.c_str(),
                again.c_str());
  } else if (next) {
    std::printf("next: write %s (delete its WB_NOT_IMPLEMENTED line), then: %s\n", next->file.c_str(), again.c_str());
  } else if (not_run == 0) {
    std::printf(
        "next: every exercise passes. Time them beside the solutions: build/%s/bin/%s_bench "
        "(cmake --build --preset %s --target %s_bench)\n",
        chapter.c_str(), chapter.c_str(), chapter.c_str(), chapter.c_str());
  }
  std::printf("%s\n", std::string(78, '=').c_str());
  return failed == 0 && missing == 0 && not_run == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, title;
  bool strict = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--dir=", 0) == 0)
      dir = a.substr(6);
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a.rfind("--title=", 0) == 0)
      title = a.substr(8);
    else if (a == "--title" && i + 1 < argc)
      title = argv[++i];
    else if (a == "--strict")
      strict = true;
    else {
      std::fprintf(stderr, "workbook_summary: unknown argument '%s' (use --dir DIR [--title T] [--strict])\n",
                   a.c_str());
      return 2;
    }
  }
  std::vector<Record> records;
  std::vector<Verdict> verdicts;
  std::error_code ec;
  if (!dir.empty() && std::filesystem::is_directory(dir, ec)) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".jsonl") continue;
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        try {
          const nlohmann::json j = nlohmann::json::parse(line);
          if (j.contains("exercise")) {
            verdicts.push_back(j.get<Verdict>());
          } else {
            records.push_back(j.get<Record>());
          }
        } catch (const std::exception&) {
          // A record cut short (a test that crashed while writing it): not counted.
        }
      }
    }
  }
  bool all_passed = true;
  if (!verdicts.empty()) all_passed = print_learner(verdicts, title);
  if (records.empty()) return strict && !all_passed ? 1 : 0;
  const std::string rule(78, '=');
  std::printf("%s\n", rule.c_str());
  int passed = 0, not_run = 0, skipped = 0, failed = 0, missing = 0;
  std::map<std::string, std::vector<const Record*>> failures;  // by file/variant/op
  for (const auto& r : records) {
    if (r.code == "pass")
      ++passed;
    else if (r.code == "compiled_not_run")
      ++not_run;
    else if (r.code == "skipped" || r.code == "no_engine")
      ++skipped;
    else if (r.code == "not_implemented")
      ++missing;
    else {
      ++failed;
      failures[(r.file.empty() ? r.variant : r.file) + " [" + r.variant + "] " + r.op].push_back(&r);
    }
  }
  std::printf("kernel-workbook%s: %zu cases: %d passed, %d failed, %d not written yet, %d skipped, %d NOT CHECKED\n",
              title.empty() ? "" : (" " + title).c_str(), records.size(), passed, failed, missing, skipped, not_run);
  if (not_run > 0) {
    std::printf("%s\n", std::string(78, '-').c_str());
    std::printf(
        "NOT CHECKED: %d cases of written kernels were compiled but NOT RUN: there is no GPU here.\n"
        "  The build checked that they compile; whether they are right and how fast they are is\n"
        "  unknown. Run the same command on a machine with an NVIDIA GPU (a lab or cluster machine,\n"
        "  or a cloud GPU instance): see \"No NVIDIA GPU?\" in docs/ch00-setup.md.\n",
        not_run);
  }
  if (missing > 0) {
    std::map<std::string, int> files;
    for (const auto& r : records) {
      if (r.code == "not_implemented") ++files[r.file.empty() ? r.variant : r.file];
    }
    std::printf("%s\nnot written yet (the stub still says so):\n", std::string(78, '-').c_str());
    for (const auto& [f, n] : files) std::printf("  %s (%d cases)\n", f.c_str(), n);
  }
  for (auto& [who, list] : failures) {
    std::sort(list.begin(), list.end(), [](const Record* a, const Record* b) { return a->size < b->size; });
    std::printf("%s\nFAILED: %s — %zu case%s\n", std::string(78, '-').c_str(), who.c_str(), list.size(),
                list.size() == 1 ? "" : "s");
    std::printf("  the smallest failing shape, in full (%s):\n%s\n", list.front()->test.c_str(),
                list.front()->message.c_str());
    if (list.size() > 1) std::printf("  the others, smallest first:\n");
    for (size_t k = 1; k < list.size(); ++k) {
      std::printf("    %-34s [%s] %s\n", list[k]->shape.c_str(), list[k]->code.c_str(),
                  first_line(list[k]->message, 1).c_str());
    }
  }
  std::printf("%s\n", rule.c_str());
  if (!strict) return 0;
  return (failed > 0 || not_run > 0 || missing > 0) ? 1 : 0;
}
