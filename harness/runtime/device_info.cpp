// The host-only part of runtime/device.cuh (reports use it without CUDA).
#include "runtime/device.cuh"

namespace wb {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace wb
