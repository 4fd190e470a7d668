// The heart of step v4, reused by v5 (one pass) and v6 (long rows): one thread's share of a
// range of elements, read with vector loads, F loads in flight at a time.
//
// The range x[0, len) is split into `parts` equal-strided shares; this thread belongs to
// part `part` (a block index). With V = one 4-element vector (a float4, or four BF16 in a
// uint2) and kBlock threads per block, one trip of the loop reads a chunk of kBlock * F
// consecutive vectors per block:
//
//   vectors:  | part 0, trip 0 | part 1, trip 0 | ... | part P-1, trip 0 | part 0, trip 1 | ...
//   a chunk:  [ u=0: threads 0..kBlock-1 ][ u=1: threads 0..kBlock-1 ] ... [ u=F-1 ]
//
// so each of the F loads of a warp is a contiguous, coalesced 512-byte (FP32) or 256-byte
// (BF16) access, and a thread issues all F loads before it uses the first: F vectors per
// thread in flight. Only the last chunk of the range checks bounds.
//
// Pointers need not be aligned (a row of a matrix with cols % 4 != 0 is not): the 0..3
// elements before the first aligned vector and the 0..3 after the last whole vector are
// added one by one by the first threads of part 0.
#pragma once
#include "reduce_common.cuh"

namespace ch03::solution {

template <class T, class Op, int F, int kBlock>
__device__ __forceinline__ float coarsened_partial(const T* __restrict__ x, int len, int part, int parts) {
  static_assert(F >= 1 && F <= 32, "F vector loads in flight per thread");
  static_assert(kBlock >= 8, "the loose elements need 6 threads in part 0");
  using V = typename Vec4<T>::type;
  const Op op;

  // x[0, head): before the first V-aligned address; x[tail, len): after the last whole V.
  const int misaligned = static_cast<int>(reinterpret_cast<uintptr_t>(x) % sizeof(V) / sizeof(T));
  const int head = min(len, misaligned == 0 ? 0 : 4 - misaligned);
  const V* xv = reinterpret_cast<const V*>(x + head);
  const int vectors = (len - head) / 4;
  const int tail = head + vectors * 4;

  const float id = Op::identity();
  float4 acc = make_float4(id, id, id, id);  // four independent chains of op
  constexpr int kChunk = kBlock * F;         // vectors per block per trip
#pragma unroll 1
  for (int base = part * kChunk; base < vectors; base += parts * kChunk) {
    const V* chunk = xv + base + threadIdx.x;
    if (base + kChunk <= vectors) {
      V v[F];  // (F) loads in flight
#pragma unroll
      for (int u = 0; u < F; ++u) v[u] = __ldg(chunk + u * kBlock);
#pragma unroll
      for (int u = 0; u < F; ++u) acc = combine4(op, acc, widen(v[u]));
    } else {  // the last, partial chunk of the range
#pragma unroll
      for (int u = 0; u < F; ++u) {
        if (base + u * kBlock + static_cast<int>(threadIdx.x) < vectors)
          acc = combine4(op, acc, widen(__ldg(chunk + u * kBlock)));
      }
    }
  }
  float r = op(op(acc.x, acc.y), op(acc.z, acc.w));

  // The loose elements, at most 3 + 3: one each for threads 0..loose-1 of part 0.
  const int loose = head + (len - tail);
  if (part == 0 && static_cast<int>(threadIdx.x) < loose) {
    const int t = threadIdx.x;
    r = op(r, to_float(x[t < head ? t : tail + (t - head)]));
  }
  return r;
}

}  // namespace ch03::solution
