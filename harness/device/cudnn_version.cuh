// The cuDNN versions a run used, for the line a benchmark prints beside a cuDNN reference.
//
// The cuDNN library found at run time may be newer than the headers a program was built
// against (the backend API keeps working across 9.x). Chapters 6 and 8 name both versions
// when they report their cuDNN reference.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <string>

namespace wb {

// For example "cuDNN 9.14.0 (runtime), built against 9.19.0".
inline std::string cudnn_version_text() {
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch from 9.0 on
  auto text = [](size_t x) {
    return std::to_string(x / 10000) + "." + std::to_string(x / 100 % 100) + "." + std::to_string(x % 100);
  };
  return "cuDNN " + text(v) + " (runtime), built against " + text(CUDNN_VERSION);
}

}  // namespace wb
