// Files a program writes for others to read (results, configs, weights, Markdown tables)
// appear whole or not at all. They are written under a temporary name in the same folder
// and renamed into place at the end, so a run that fails, is refused or is cut short never
// leaves an empty or half-written file where a script or a reader expects a result.
//
//   if (auto why = wb::output_path_problem(path)) throw wb::UsageError("--json=" + path + ": " + *why);
//   ... the long work ...
//   wb::write_file_atomically(path, doc.dump() + "\n");
//
// Plain C++ (no CUDA), host-tested in harness/tests/output_file_test.cpp.
#pragma once
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace wb {

// Why `path` cannot be written (created or replaced), or nullopt: it names a folder, its
// folder does not exist or is not a folder, or the folder is not writable. A program checks
// this before any long work, so a typo in an output path is reported at once. "-" (standard
// output) and an existing file that is not a regular one (/dev/null, a pipe) are fine.
std::optional<std::string> output_path_problem(const std::string& path);

// A file written under a temporary name (PATH.tmp.<pid>.<n>, same folder) and renamed to
// PATH by commit(). Destroyed without a commit, it removes the temporary: PATH is then left
// as it was (absent, or the previous complete version). An existing PATH that is not a
// regular file (/dev/null, a pipe) is written in place: it cannot be replaced, only fed.
class OutputFile {
 public:
  // Throws std::runtime_error naming `path` when the temporary cannot be created.
  explicit OutputFile(std::string path, bool binary = false);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ofstream& stream() { return out_; }
  const std::string& path() const { return path_; }
  // Flushes, closes and renames the temporary to the path. Throws std::runtime_error naming
  // the path (disk full, the folder gone), after removing the temporary.
  void commit();

 private:
  std::string path_, temp_;  // temp_ == path_: written in place
  std::ofstream out_;
  bool committed_ = false;
};

// `text` as the whole content of `path`, through an OutputFile.
void write_file_atomically(const std::string& path, std::string_view text, bool binary = false);

// The same for a writer that takes a file name (the results files' wb::results::write):
// `write_to(name)` writes the whole file at `name` and returns "" or why it could not; it is
// given a temporary beside `path`, renamed to `path` when it succeeded and removed when not.
// "-" and an existing path that is not a regular file are passed to it as they are. Returns
// "" or why `path` was not written (then nothing is left behind).
std::string write_whole(const std::string& path, const std::function<std::string(const std::string&)>& write_to);

}  // namespace wb
