#include "runtime/cupti_library.h"

#include <dlfcn.h>

#include <array>

namespace wb {

namespace {

struct Library {
  void* handle = nullptr;
  std::string problem;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    std::string tried;
    // The dynamic loader's search first, then the toolkit this was built with.
    const std::array<std::string, 4> names = {"libcupti.so", std::string(WB_CUDA_LIBRARY_DIR) + "/libcupti.so",
                                              std::string(WB_CUDA_ROOT) + "/extras/CUPTI/lib64/libcupti.so",
                                              std::string(WB_CUDA_ROOT) + "/lib64/libcupti.so"};
    for (const auto& name : names) {
      l.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (l.handle) return l;
      tried += (tried.empty() ? "" : ", ") + name;
    }
    l.problem = "CUPTI (libcupti.so, part of the CUDA toolkit) was not found (tried " + tried + ")";
    return l;
  }();
  return lib;
}

}  // namespace

void* cupti_entry(const char* name, std::string* problem) {
  const Library& l = library();
  if (!l.handle) {
    *problem = l.problem;
    return nullptr;
  }
  void* p = dlsym(l.handle, name);
  if (!p) *problem = std::string("libcupti.so lacks ") + name;
  return p;
}

}  // namespace wb
