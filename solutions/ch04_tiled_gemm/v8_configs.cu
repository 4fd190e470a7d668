// v8's configurations compiled into this build: every valid entry of kSgemmCandidates
// (solutions/ch04_tiled_gemm/tune/sgemm_config.h), each an instantiation of v8_kernel. They live
// in their own translation unit so that editing the ladder does not recompile them, and
// the build compiles them in parallel with the rest.
#include <utility>

#include "ladder.cuh"
#include "v8_double_buffering.cuh"

namespace ch04 {
namespace solution {
namespace {

template <size_t I>
void add_if_valid(std::vector<V8Entry>& out) {
  constexpr SgemmConfig c = kSgemmCandidates[I];
  if constexpr (sgemm_config_problem(c) == nullptr) {
    out.push_back(
        {c, &v8_launch<c.bm, c.bn, c.bk, c.wm, c.wn, c.tm, c.tn, c.threads, c.pf>,
         reinterpret_cast<const void*>(&v8_kernel<c.bm, c.bn, c.bk, c.wm, c.wn, c.tm, c.tn, c.threads, c.pf>)});
  }
}

template <size_t... I>
std::vector<V8Entry> make_registry(std::index_sequence<I...>) {
  std::vector<V8Entry> out;
  (add_if_valid<I>(out), ...);
  return out;
}

}  // namespace

const std::vector<V8Entry>& v8_registry() {
  static const std::vector<V8Entry> registry =
      make_registry(std::make_index_sequence<sizeof(kSgemmCandidates) / sizeof(kSgemmCandidates[0])>());
  return registry;
}

}  // namespace solution
}  // namespace ch04
