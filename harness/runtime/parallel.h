#pragma once
// parallel_count: a sum over [0, n) computed by the machine's cores, for the full scans of
// large outputs (poison, NaN/Inf, "did anything change") that would otherwise dominate a
// test of a billion-element shape. `count(begin, end)` must only read shared data.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace wb {

inline int64_t parallel_count(int64_t n, const std::function<int64_t(int64_t, int64_t)>& count) {
  constexpr int64_t kSerialLimit = int64_t{1} << 22;  // below this, threads cost more than they save
  const int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), 64);
  if (n <= kSerialLimit || threads <= 1) return count(0, n);
  const int64_t step = (n + threads - 1) / threads;
  std::vector<int64_t> part(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = std::min(n, t * step), end = std::min(n, begin + step);
    pool.emplace_back([&, t, begin, end] { part[static_cast<size_t>(t)] = count(begin, end); });
  }
  for (auto& th : pool) th.join();
  int64_t total = 0;
  for (int64_t p : part) total += p;
  return total;
}

// The same split for any value: `fold(begin, end)` per share, the shares joined in order by
// `join` (a float64 sum or max of a billion-element reference, say).
template <class T, class Fold, class Join>
T parallel_fold(int64_t n, T identity, Fold fold, Join join) {
  constexpr int64_t kSerialLimit = int64_t{1} << 22;
  const int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), 64);
  if (n <= kSerialLimit || threads <= 1) return join(identity, fold(int64_t{0}, n));
  const int64_t step = (n + threads - 1) / threads;
  std::vector<T> part(static_cast<size_t>(threads), identity);
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = std::min(n, t * step), end = std::min(n, begin + step);
    pool.emplace_back([&, t, begin, end] { part[static_cast<size_t>(t)] = fold(begin, end); });
  }
  for (auto& th : pool) th.join();
  T total = identity;
  for (const T& p : part) total = join(total, p);
  return total;
}

}  // namespace wb
