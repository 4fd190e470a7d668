// Exercise 1 — a copy with a stride: out[i] = in[i * stride].
//
// Write the one-thread-per-element kernel, then run the benchmark and watch the GB/s as the
// stride grows from 1 to 16. The bytes you *use* stay the same (n floats in, n floats out);
// what changes is how many 32-byte sectors the memory system must move to deliver them.
//
// What the tests check, and the outcome code a failure gets:
//   * out[i] equal to in[i * stride], bit for bit: a copy rounds nothing [wrong]; every out[i]
//     written [unwritten], nothing past out[n - 1] [oob_write].
//   * n from 1 to 2^20 + 3, each at stride 1, 2, 7 and 32, and random ones; then the large case,
//     n = 68,157,440 at stride 32 (the strided index passes 2^31: 64-bit offsets).
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it `in` ends right after
//     in[(n - 1) * stride], where unmapped memory begins: a load past it faults [oob_read].
//
// Test:  ctest --preset ch02 -R ex1_strided_copy
// Time:  build/ch02/bin/ch02_bench --impl=student,reference --op=strided_copy
// Guide: docs/ch02-coalescing.md, section "Exercise 1".
#include "ch02.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch02 {
namespace {

__global__ void strided_copy_kernel(const float* in, float* out, int n, int stride) {
  // TODO: one element per thread. Which i is this thread's, and which thread may not write?
  // (i * stride can pass 2^31 for large n: do the product in size_t.)
}

}  // namespace

void student::strided_copy(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch02_coalescing/ex1_strided_copy.cu");  // delete this line when you start

  const int threads = 256;
  const int blocks = 1;  // TODO: enough blocks to cover n
  strided_copy_kernel<<<blocks, threads, 0, stream>>>(in, out, n, stride);
  WB_CHECK_LAUNCH();
}

}  // namespace ch02
