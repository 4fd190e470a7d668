// safetensors: a reader (memory-mapped) and a writer for the weights format of Hugging Face
// checkpoints, written from the format's description:
//
//   bytes 0..7      N, the length of the header, unsigned 64-bit little-endian
//   bytes 8..8+N    the header: a JSON object, UTF-8, maybe padded with trailing spaces
//                     { "wte.weight": {"dtype": "F32", "shape": [50257, 768],
//                                      "data_offsets": [begin, end]},   <- bytes, relative to
//                       ...                                                  the data section
//                       "__metadata__": {"format": "pt", ...} }          <- optional, strings only
//   bytes 8+N..     the data section: every tensor's elements, row-major, little-endian
//
// What the reader refuses, each with a message "FILE: tensor 'NAME': problem":
//   a file shorter than 8 bytes; a header length past the end of the file (or over 100 MB);
//   a header that is not JSON or not an object; an entry without dtype, shape or
//   data_offsets, or with a negative or fractional number; a dtype the format does not
//   define; a byte range whose size is not shape x dtype size; a range past the end of the
//   data section; two ranges that overlap; and holes: bytes of the data section that belong
//   to no tensor (between two tensors or after the last one). The format's own reference
//   implementation refuses holes too, and a hole usually means a truncated or hand-edited file.
// Not checked: duplicate tensor names (the project's JSON parser keeps the last one).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace safetensors {

// Every dtype the format defines (its spelling in the header is the enumerator's name).
enum class Dtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

std::string_view dtype_name(Dtype t);                         // "F32"
int dtype_size(Dtype t);                                      // bytes per element
std::optional<Dtype> dtype_from_name(std::string_view name);  // nullopt when unknown

// Any problem with a file: its message names the file, the tensor when there is one, and
// what is wrong.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A whole file mapped read-only into memory; unmapped by the destructor. Move-only, and the
// mapping never moves, so spans into it stay valid while the owner lives.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws FormatError when it cannot be read
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// One tensor of a file: its bytes point into the mapping.
struct TensorView {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;       // [] is a scalar (one element)
  std::span<const std::byte> data;  // numel() * dtype_size(dtype) bytes, row-major
  int64_t numel() const;
};

// "[768, 2304]"
std::string shape_string(const std::vector<int64_t>& shape);

// A validated, memory-mapped safetensors file.
class File {
 public:
  static File open(const std::string& path);  // maps and validates; throws FormatError

  const std::string& path() const { return map_.path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in data order
  const TensorView* find(std::string_view name) const;                 // nullptr when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t data_bytes() const { return data_bytes_; }  // size of the data section

 private:
  explicit File(MappedFile map) : map_(std::move(map)) {}
  MappedFile map_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
  size_t data_bytes_ = 0;
};

// --- writing ------------------------------------------------------------------------------

struct TensorSpec {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  int64_t bytes() const;  // numel * dtype size
};

// Writes `tensors` in the given order, contiguous, with `metadata` as "__metadata__" (left
// out when empty). `fill(i, out)` writes tensor i's bytes into `out` (exactly bytes() of
// them), one tensor at a time, so a large file never has to sit in memory whole.
// The file appears only when complete (written under a temporary name beside it, then
// renamed: runtime/output_file.h). Refuses an
// existing PATH unless `overwrite`. Throws FormatError on any problem.
void write_streaming(const std::string& path, const std::vector<TensorSpec>& tensors,
                     const std::map<std::string, std::string>& metadata,
                     const std::function<void(size_t i, std::span<std::byte> out)>& fill, bool overwrite = false);

// The same for tensors already in memory (tests, small files).
struct OwnedTensor {
  TensorSpec spec;
  std::vector<std::byte> data;
};
void write(const std::string& path, const std::vector<OwnedTensor>& tensors,
           const std::map<std::string, std::string>& metadata = {}, bool overwrite = false);

// Raw bytes of a vector of trivially copyable values (a little-endian host is assumed).
template <class T>
std::vector<std::byte> to_bytes(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  return std::vector<std::byte>(p, p + v.size() * sizeof(T));
}

}  // namespace safetensors
