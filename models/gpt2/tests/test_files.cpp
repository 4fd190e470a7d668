#include "test_files.h"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace gpt2::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpt2-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_raw(const std::string& path, const std::string& header, size_t data_bytes,
               std::optional<uint64_t> header_len) {
  const uint64_t n = header_len.value_or(header.size());
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  bytes += header;
  for (size_t i = 0; i < data_bytes; ++i) bytes += static_cast<char>(0x3D + 7 * i);  // not zeros
  write_bytes(path, bytes);
}

safetensors::OwnedTensor* Contents::find(const std::string& name) {
  for (auto& t : tensors) {
    if (t.spec.name == name) return &t;
  }
  throw std::runtime_error("test file has no tensor " + name);
}

void Contents::remove(const std::string& name) {
  find(name);
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.spec.name == name; }),
                tensors.end());
}

Contents read_contents(const std::string& path) {
  const auto f = safetensors::File::open(path);
  Contents c;
  for (const auto& t : f.tensors()) c.tensors.push_back({{t.name, t.dtype, t.shape}, {t.data.begin(), t.data.end()}});
  c.metadata = f.metadata();
  return c;
}

void write_contents(const std::string& path, const Contents& c) {
  safetensors::write(path, c.tensors, c.metadata, true);
}

}  // namespace gpt2::test
