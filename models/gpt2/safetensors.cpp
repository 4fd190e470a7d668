#include "safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/output_file.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian numbers; this reader assumes a little-endian host");

namespace safetensors {

namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  int size;
};
constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1},       {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},   {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::I16, "I16", 2}, {Dtype::U16, "U16", 2}, {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},       {Dtype::I32, "I32", 4}, {Dtype::U32, "U32", 4}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},         {Dtype::I64, "I64", 8}, {Dtype::U64, "U64", 8},
};

constexpr uint64_t kMaxHeaderBytes = 100'000'000;        // the format's own limit
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53: JSON numbers are doubles here

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw FormatError(path + ": " + what); }
[[noreturn]] void fail_tensor(const std::string& path, const std::string& tensor, const std::string& what) {
  throw FormatError(path + ": tensor '" + tensor + "': " + what);
}

using Json = nlohmann::ordered_json;  // tensors in the order the header lists them

// A JSON number that must be a whole number >= 0.
uint64_t whole_number(const Json& v, const std::string& path, const std::string& tensor, const char* what) {
  if (!v.is_number()) fail_tensor(path, tensor, std::string(what) + " holds a value that is not a number");
  if (v.is_number_unsigned() && v.get<uint64_t>() <= kMaxExactInteger) return v.get<uint64_t>();
  const double d = v.get<double>();
  if (!(d >= 0) || d != std::floor(d) || d > kMaxExactInteger) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    fail_tensor(path, tensor, std::string(what) + " holds " + buf + ", not a whole number >= 0");
  }
  return static_cast<uint64_t>(d);
}

}  // namespace

std::string_view dtype_name(Dtype t) {
  for (const auto& d : kDtypes) {
    if (d.dtype == t) return d.name;
  }
  return "?";
}

int dtype_size(Dtype t) {
  for (const auto& d : kDtypes) {
    if (d.dtype == t) return d.size;
  }
  return 0;
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorSpec::bytes() const {
  int64_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= d;
  return n;
}

// --- MappedFile ---------------------------------------------------------------------------

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {  // mmap refuses a length of 0; an empty file is reported by File::open
    addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr_ == MAP_FAILED) {
      addr_ = nullptr;
      const int err = errno;
      ::close(fd);
      fail(path, std::string("cannot map into memory: ") + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file's pages reachable
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), addr_(other.addr_), size_(other.size_) {
  other.addr_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (addr_ != nullptr) ::munmap(addr_, size_);
    path_ = std::move(other.path_);
    addr_ = other.addr_;
    size_ = other.size_;
    other.addr_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

// --- File ---------------------------------------------------------------------------------

const TensorView* File::find(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

File File::open(const std::string& path) {
  File f(MappedFile{path});
  const std::span<const std::byte> all = f.map_.bytes();

  // 1. The header length: 8 bytes, little-endian.
  if (all.size() < 8) {
    fail(path, "truncated: " + std::to_string(all.size()) +
                   " bytes, shorter than the 8-byte header length every safetensors file starts with");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, all.data(), 8);
  const uint64_t after_len = all.size() - 8;
  if (header_len > after_len) {
    fail(path, "header length " + std::to_string(header_len) + " is past the end of the file (" +
                   std::to_string(after_len) + " bytes follow the length): the file is truncated or not safetensors");
  }
  if (header_len > kMaxHeaderBytes) {
    fail(path, "header length " + std::to_string(header_len) + " is over the format's limit of 100 MB");
  }

  // 2. The header: a JSON object.
  const std::string_view text(reinterpret_cast<const char*>(all.data() + 8), header_len);
  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(path, "the header is not valid JSON (at offset " + std::to_string(e.byte) + ": " + e.what() + ")");
  }
  if (!header.is_object()) fail(path, "the header is JSON but not an object of tensors");

  const std::byte* data = all.data() + 8 + header_len;
  f.data_bytes_ = after_len - header_len;

  // 3. Every entry: dtype, shape, data_offsets, checked against each other and the data size.
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          fail(path, "__metadata__ '" + key + "' is not a string (the format allows strings only)");
        f.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) fail_tensor(path, name, "its entry is not an object {dtype, shape, data_offsets}");
    const auto jdtype = entry.find("dtype");
    const auto jshape = entry.find("shape");
    const auto joffsets = entry.find("data_offsets");
    if (jdtype == entry.end() || !jdtype->is_string()) fail_tensor(path, name, "no \"dtype\" string");
    if (jshape == entry.end() || !jshape->is_array()) fail_tensor(path, name, "no \"shape\" array");
    if (joffsets == entry.end() || !joffsets->is_array() || joffsets->size() != 2) {
      fail_tensor(path, name, "no \"data_offsets\" array of two numbers [begin, end]");
    }

    TensorView t;
    t.name = name;
    const std::string dtype_text = jdtype->get<std::string>();
    const auto dtype = dtype_from_name(dtype_text);
    if (!dtype) {
      fail_tensor(path, name,
                  "unknown dtype '" + dtype_text +
                      "' (the format defines BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, "
                      "I32, U32, F32, F64, I64, U64)");
    }
    t.dtype = *dtype;

    // numel * size, refusing any product that could not fit in the data section.
    uint64_t bytes = static_cast<uint64_t>(dtype_size(t.dtype));
    bool too_big = false, has_zero = false;
    for (const auto& d : *jshape) {
      const uint64_t dim = whole_number(d, path, name, "shape");
      t.shape.push_back(static_cast<int64_t>(dim));
      too_big |= __builtin_mul_overflow(bytes, dim, &bytes) || bytes > kMaxExactInteger;
      has_zero |= dim == 0;
    }
    if (has_zero) bytes = 0, too_big = false;
    const uint64_t begin = whole_number((*joffsets)[0], path, name, "data_offsets");
    const uint64_t end = whole_number((*joffsets)[1], path, name, "data_offsets");
    if (begin > end) {
      fail_tensor(path, name,
                  "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] begins after it ends");
    }
    if (too_big || bytes != end - begin) {
      fail_tensor(path, name,
                  "shape " + shape_string(t.shape) + " of " + std::string(dtype_name(t.dtype)) + " needs " +
                      (too_big ? std::string("more bytes than the file has") : std::to_string(bytes) + " bytes") +
                      ", but data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                      std::to_string(end - begin));
    }
    if (end > f.data_bytes_) {
      fail_tensor(path, name,
                  "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] reach past the end of the data section (" + std::to_string(f.data_bytes_) +
                      " bytes): the file is truncated or the offsets are wrong");
    }
    t.data = std::span<const std::byte>(data + begin, end - begin);
    ranges.push_back({begin, end, f.tensors_.size()});
    f.tensors_.push_back(std::move(t));
  }

  // 4. The ranges tile the data section: no overlap, no hole, nothing left over.
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t covered = 0;  // every byte before this belongs to a tensor
  std::string last;      // the tensor that ends at `covered`
  for (const Range& r : ranges) {
    const std::string& name = f.tensors_[r.index].name;
    if (r.begin < covered) {
      fail_tensor(path, name,
                  "data_offsets [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + "] overlap tensor '" +
                      last + "' (which ends at " + std::to_string(covered) + ")");
    }
    if (r.begin > covered) {
      fail_tensor(path, name,
                  "a hole of " + std::to_string(r.begin - covered) + " bytes before it (bytes " +
                      std::to_string(covered) + " to " + std::to_string(r.begin) +
                      " of the data section belong to no tensor)");
    }
    if (r.end > covered || last.empty()) {
      covered = r.end;
      last = name;
    }
  }
  if (covered != f.data_bytes_) {
    fail(path, std::to_string(f.data_bytes_ - covered) + " bytes at the end of the data section belong to no tensor " +
                   "(the tensors end at " + std::to_string(covered) + " of " + std::to_string(f.data_bytes_) + ")");
  }

  // Data order, so a loader streams through the file front to back.
  std::vector<TensorView> ordered;
  ordered.reserve(ranges.size());
  for (const Range& r : ranges) ordered.push_back(std::move(f.tensors_[r.index]));
  f.tensors_ = std::move(ordered);
  return f;
}

// --- writing ------------------------------------------------------------------------------

namespace {

std::string header_json(const std::vector<TensorSpec>& tensors, const std::map<std::string, std::string>& metadata) {
  // Written by hand, so that the keys keep this order and the numbers stay whole; the JSON
  // library quotes the strings.
  const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      h += (first ? "" : ",") + quoted(k) + ":" + quoted(v);
      first = false;
    }
    h += "}";
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    const uint64_t end = offset + static_cast<uint64_t>(t.bytes());
    std::string shape = "[";
    for (size_t d = 0; d < t.shape.size(); ++d) shape += (d ? "," : "") + std::to_string(t.shape[d]);
    shape += "]";
    h += (h.size() > 1 ? "," : "") + quoted(t.name) + ":{\"dtype\":\"" + std::string(dtype_name(t.dtype)) +
         "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  while ((8 + h.size()) % 8 != 0) h += ' ';  // the data section starts 8-byte aligned
  return h;
}

}  // namespace

void write_streaming(const std::string& path, const std::vector<TensorSpec>& tensors,
                     const std::map<std::string, std::string>& metadata,
                     const std::function<void(size_t i, std::span<std::byte> out)>& fill, bool overwrite) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") fail(path, "cannot write a tensor named '" + t.name + "'");
    if (std::find(names.begin(), names.end(), t.name) != names.end()) {
      fail_tensor(path, t.name, "given twice");
    }
    names.push_back(t.name);
    for (int64_t d : t.shape) {
      if (d < 0) fail_tensor(path, t.name, "negative dimension in shape " + shape_string(t.shape));
    }
  }
  std::error_code ec;
  if (!overwrite && fs::exists(path, ec)) fail(path, "already exists (not overwritten)");

  const std::string header = header_json(tensors, metadata);
  std::optional<wb::OutputFile> file;  // PATH.tmp.*, renamed to PATH when complete
  try {
    file.emplace(path, true);
  } catch (const std::exception& e) {
    fail(path, std::string("cannot write: ") + e.what());
  }
  std::ofstream& out = file->stream();
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < tensors.size(); ++i) {
    buffer.assign(static_cast<size_t>(tensors[i].bytes()), std::byte{0});
    fill(i, buffer);  // throws: the temporary is removed with `file`
    out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(buffer.size()));
  }
  try {
    file->commit();
  } catch (const std::exception& e) {
    throw FormatError(e.what());
  }
}

void write(const std::string& path, const std::vector<OwnedTensor>& tensors,
           const std::map<std::string, std::string>& metadata, bool overwrite) {
  std::vector<TensorSpec> specs;
  for (const auto& t : tensors) {
    if (static_cast<int64_t>(t.data.size()) != t.spec.bytes()) {
      fail_tensor(path, t.spec.name,
                  "shape " + shape_string(t.spec.shape) + " of " + std::string(dtype_name(t.spec.dtype)) + " needs " +
                      std::to_string(t.spec.bytes()) + " bytes, " + std::to_string(t.data.size()) + " given");
    }
    specs.push_back(t.spec);
  }
  write_streaming(
      path, specs, metadata,
      [&](size_t i, std::span<std::byte> out) { std::memcpy(out.data(), tensors[i].data.data(), out.size()); },
      overwrite);
}

}  // namespace safetensors
