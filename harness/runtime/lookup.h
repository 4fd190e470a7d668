#pragma once
// lookup: the value a small constant table gives a key, for the harness's maps from an enum to
// its name or its constants (dtype names and sizes, roles, peaks, copy kinds). The table is
// written once as (key, value) rows and read by one loop, instead of a switch per map.
// Host-only and constexpr, so a table can be read during static initialisation.
#include <cstddef>
#include <type_traits>
#include <utility>

namespace wb {

// The value of the first row whose key is `key`, or `fallback` when no row has it.
template <class K, class V, std::size_t N>
constexpr V lookup(const std::pair<K, V> (&rows)[N], std::type_identity_t<K> key, std::type_identity_t<V> fallback) {
  for (const auto& [k, v] : rows) {
    if (k == key) return v;
  }
  return fallback;
}

}  // namespace wb
