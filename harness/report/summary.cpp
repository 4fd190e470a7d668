// The end of a test run, in one screen: what was not checked and why (no GPU), and each
// failing kernel once — its smallest failing shape in full, the other shapes one line each.
// ctest runs it last (a fixture cleanup), reading the records each test wrote.
//
//   workbook_summary --dir DIR [--title ch01] [--strict]
//     --strict: exit 1 when any case failed or was not run (the learner's presets), so the
//               banner is shown and the run is never reported as all passed.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Record {
  std::string test, op, variant, file, shape, code, message;
  double size = 0;
};

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

}  // namespace

int main(int argc, char** argv) {
  std::string dir, title;
  bool strict = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--dir=", 0) == 0) dir = a.substr(6);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a.rfind("--title=", 0) == 0) title = a.substr(8);
    else if (a == "--title" && i + 1 < argc) title = argv[++i];
    else if (a == "--strict") strict = true;
    else {
      std::fprintf(stderr, "workbook_summary: unknown argument '%s' (use --dir DIR [--title T] [--strict])\n", a.c_str());
      return 2;
    }
  }
  std::vector<Record> records;
  std::error_code ec;
  if (!dir.empty() && std::filesystem::is_directory(dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        try {
          const nlohmann::json j = nlohmann::json::parse(line);
          Record r;
          r.test = j.at("test").get<std::string>();
          r.op = j.at("op").get<std::string>();
          r.variant = j.at("variant").get<std::string>();
          r.file = j.at("file").get<std::string>();
          r.shape = j.at("shape").get<std::string>();
          r.code = j.at("code").get<std::string>();
          r.message = j.at("message").get<std::string>();
          r.size = j.at("size").get<double>();
          records.push_back(std::move(r));
        } catch (const std::exception&) {
          // A record cut short (a test that crashed while writing it): not counted.
        }
      }
    }
  }
  const std::string rule(78, '=');
  std::printf("%s\n", rule.c_str());
  if (records.empty()) {
    std::printf("kernel-workbook%s: no test recorded an outcome (did the tests run?)\n",
                title.empty() ? "" : (" " + title).c_str());
    std::printf("%s\n", rule.c_str());
    return strict ? 1 : 0;
  }
  int passed = 0, not_run = 0, skipped = 0, failed = 0, missing = 0;
  std::map<std::string, std::vector<const Record*>> failures;  // by file/variant/op
  for (const auto& r : records) {
    if (r.code == "pass") ++passed;
    else if (r.code == "compiled_not_run") ++not_run;
    else if (r.code == "skipped" || r.code == "no_engine") ++skipped;
    else if (r.code == "not_implemented") ++missing;
    else {
      ++failed;
      failures[(r.file.empty() ? r.variant : r.file) + " [" + r.variant + "] " + r.op].push_back(&r);
    }
  }
  std::printf("kernel-workbook%s: %zu cases: %d passed, %d failed, %d not written yet, %d skipped, %d NOT CHECKED\n",
              title.empty() ? "" : (" " + title).c_str(), records.size(), passed, failed, missing, skipped, not_run);
  if (not_run > 0) {
    std::printf("%s\n", std::string(78, '-').c_str());
    std::printf("NOT CHECKED: %d cases of written kernels were compiled but NOT RUN: there is no GPU here.\n"
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
