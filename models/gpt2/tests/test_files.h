// Helpers of the GPT-2 host tests: a temporary folder, raw (possibly broken) safetensors
// files, and an assertion on error messages.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "safetensors.h"

namespace gpt2::test {

// A fresh folder under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes  [8-byte length][header][data_bytes bytes of a non-zero pattern]. The length is
// header.size() unless `header_len` says otherwise (to write a lying length).
void write_raw(const std::string& path, const std::string& header, size_t data_bytes,
               std::optional<uint64_t> header_len = std::nullopt);
// Writes exactly these bytes.
void write_bytes(const std::string& path, const std::string& bytes);

// Every tensor of a file, copied out, with the file's metadata: to rewrite it altered.
struct Contents {
  std::vector<safetensors::OwnedTensor> tensors;
  std::map<std::string, std::string> metadata;
  safetensors::OwnedTensor* find(const std::string& name);
  void remove(const std::string& name);
};
Contents read_contents(const std::string& path);
void write_contents(const std::string& path, const Contents& c);

// Runs fn; it must throw E whose message contains every one of `parts`.
template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error was thrown; expected one mentioning '" << (parts.empty() ? "" : parts[0]) << "'";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace gpt2::test
