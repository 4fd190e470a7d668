#include "runtime/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace wb {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// /dev/null, a pipe, a terminal: written in place, never replaced by a rename.
bool is_special(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st);
}

// A name in the path's folder that nothing else uses, created empty (O_EXCL) so that two
// programs writing the same path never share a temporary.
std::string create_temporary(const std::string& path) {
  static std::atomic<int> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return name;
    }
    if (errno != EEXIST) {
      throw std::runtime_error(path + ": cannot create a file in " + folder_of(path).string() + ": " +
                               std::strerror(errno));
    }
  }
  throw std::runtime_error(path + ": cannot find a free temporary name beside it");
}

}  // namespace

std::optional<std::string> output_path_problem(const std::string& path) {
  if (path.empty()) return std::string("no file name given");
  if (path == "-" || is_special(path)) return std::nullopt;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "it is a folder; give a file name (for example " + path + "/out.json)";
  const fs::path folder = folder_of(path);
  if (!fs::exists(folder, ec))
    return "the folder " + folder.string() + " does not exist; create it first or write elsewhere";
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  if (::access(folder.c_str(), W_OK) != 0) {
    return "the folder " + folder.string() + " is not writable (" + std::strerror(errno) + ")";
  }
  return std::nullopt;
}

OutputFile::OutputFile(std::string path, bool binary)
    : path_(std::move(path)), temp_(is_special(path_) ? path_ : create_temporary(path_)) {
  out_.open(temp_, std::ios::out | std::ios::trunc | (binary ? std::ios::binary : std::ios::openmode{}));
  if (!out_) {
    std::error_code ec;
    if (temp_ != path_) fs::remove(temp_, ec);
    throw std::runtime_error(path_ + ": cannot write " + temp_);
  }
}

OutputFile::~OutputFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  if (temp_ != path_) fs::remove(temp_, ec);
}

void OutputFile::commit() {
  out_.flush();
  const bool written = static_cast<bool>(out_);
  out_.close();
  std::error_code ec;
  if (!written || out_.fail()) {
    if (temp_ != path_) fs::remove(temp_, ec);
    committed_ = true;
    throw std::runtime_error(path_ + ": writing failed (disk full?); nothing was written");
  }
  committed_ = true;
  if (temp_ == path_) return;
  fs::rename(temp_, path_, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp_, ignored);
    throw std::runtime_error(path_ + ": cannot move the finished file into place: " + ec.message());
  }
}

void write_file_atomically(const std::string& path, std::string_view text, bool binary) {
  OutputFile f(path, binary);
  f.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  f.commit();
}

}  // namespace wb

namespace wb {

std::string write_whole(const std::string& path, const std::function<std::string(const std::string&)>& write_to) {
  if (path == "-" || is_special(path)) return write_to(path);
  if (auto why = output_path_problem(path)) return path + ": " + *why;
  std::string temp;
  try {
    temp = create_temporary(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  std::error_code ec;
  if (std::string problem = write_to(temp); !problem.empty()) {
    fs::remove(temp, ec);
    return problem;
  }
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return path + ": cannot move the finished file into place: " + ec.message();
  }
  return "";
}

}  // namespace wb
