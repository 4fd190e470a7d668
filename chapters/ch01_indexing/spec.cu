// Chapter 1's ops, declared once. The harness makes the tests, the benchmark rows and the
// broken-kernel rejections from these declarations (harness/declare/op.cuh).
//
//   vector_add_program/f32  c = a + b from host arrays (a whole program)  ex0
//   vector_add/f32    c = a + b                      ex1 (one per thread), ex2 (two per thread)
//   rgb_to_grey/f32   planar RGB to grey, pitched    ex3
//   matrix_add/f32    C = A + B, three strides       ex4
#include <cstdio>
#include <utility>
#include <vector>

#include "ch01.cuh"
#include "runtime/allocations.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch01 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch01-indexing.md";

// n past 2^31 - 1 does not fit the launcher's int; the largest n it takes is the large case.
constexpr int64_t kLargestInt = (int64_t{1} << 31) - 1;

wb::OpSpec<VectorAddFn> vector_add() {
  return {
      .name = "vector_add",
      .dtype = "f32",
      .title = "c[i] = a[i] + b[i]",
      .docs = kDocs,
      .tensors = {wb::input("a", {"n"}, DType::F32), wb::input("b", {"n"}, DType::F32),
                  wb::output("c", {"n"}, DType::F32, wb::tol::terms([](const wb::Shape&) { return 2; }))},
      .reference = [](const wb::RefCtx& r, int64_t i) { r.expect("c", i, r.in("a").get(i) + r.in("b").get(i)); },
      .ref_rows = [](const wb::Shape& s) { return s["n"]; },
      // The large case: indices and byte offsets past 2^31.
      .test_shapes = wb::shapes::plus_large(wb::shapes::sizes("n"), wb::Shape{{"n", kLargestInt}}),
      .random_shapes = wb::shapes::random(3, {{"n", int64_t{1} << 22}}),
      .bench_shapes = {wb::Shape{{"n", int64_t{1} << 26}}},
      .full_bench_shapes = {wb::Shape{{"n", int64_t{1} << 24}}, wb::Shape{{"n", int64_t{1} << 28}}},
      .bytes = [](const wb::Shape& s) { return 12.0 * s["n"]; },
      .flops = [](const wb::Shape& s) { return 1.0 * s["n"]; },
      .peak = wb::Peak::FP32,
      .launch = [](VectorAddFn* fn, const wb::Args& a,
                   cudaStream_t st) { fn(a.in<float>("a"), a.in<float>("b"), a.out<float>("c"), a.i("n"), st); },
  };
}

// Exercise 0 gets host arrays: the harness copies the inputs out of its device buffers, calls
// the learner's program, checks that it freed what it allocated, and puts the result back
// into the output buffer, where the usual checks read it. "Freed what it allocated" counts
// this process's own allocations while the program runs (wb::AllocationCount, CUPTI's
// callbacks on cudaMalloc, cudaFree and their kin): the GPU's free memory would mix in every
// other process's, hiding a leak or inventing one, and would miss a leak under 2 MB.
wb::OpSpec<VectorAddProgramFn> vector_add_program() {
  auto spec = vector_add();
  return {
      .name = "vector_add_program",
      .dtype = "f32",
      .title = "c = a + b, a whole program: allocate, copy in, launch, copy out, free",
      .docs = kDocs,
      .tensors = spec.tensors,
      .reference = spec.reference,
      .ref_rows = spec.ref_rows,
      .test_shapes = {wb::Shape{{"n", 1}}, wb::Shape{{"n", 1025}}, wb::Shape{{"n", (int64_t{1} << 22) + 3}}},
      .launch =
          [](VectorAddProgramFn* fn, const wb::Args& a, cudaStream_t st) {
            const int n = a.i("n");
            if (wb::gpu_missing_reason()) {  // the program cannot run; a stub still says so
              std::vector<float> one(1, 1.0f);
              fn(one.data(), one.data(), one.data(), 1);
              return;
            }
            std::vector<float> ha(n), hb(n), hc(n, NAN);
            const size_t bytes = sizeof(float) * size_t(n);
            CUDA_CHECK(cudaStreamSynchronize(st));
            CUDA_CHECK(cudaMemcpy(ha.data(), a.in<float>("a"), bytes, cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(hb.data(), a.in<float>("b"), bytes, cudaMemcpyDeviceToHost));
            wb::AllocationCount count;
            const bool counting = count.start();
            try {
              fn(ha.data(), hb.data(), hc.data(), n);
            } catch (...) {
              count.stop();
              throw;
            }
            CUDA_CHECK(cudaDeviceSynchronize());
            if (counting) {
              const auto left = count.stop();
              if (left.count > 0) {
                throw std::runtime_error("device memory is still allocated after the program returned (" +
                                         std::to_string(left.count) +
                                         (left.count == 1 ? " allocation, " : " allocations, ") +
                                         std::to_string(left.bytes) + " bytes): every cudaMalloc needs its cudaFree");
              }
            } else {
              static const bool told = [&] {
                std::fprintf(stderr, "kernel-workbook: the device-memory leak check of exercise 0 is off: %s\n",
                             count.why().c_str());
                return true;
              }();
              (void)told;
            }
            CUDA_CHECK(cudaMemcpy(a.out<float>("c"), hc.data(), bytes, cudaMemcpyHostToDevice));
          },
      .checks = {.stream = false},  // the program uses its own stream and copies: nothing to capture
  };
}

// The shapes of an op on pitched rows: the 2D catalogue with rows padded by 0 and by `pad`,
// then the large case.
std::vector<wb::Shape> pitched_shapes(const char* rows, const char* cols, int64_t pad, wb::Shape large) {
  return wb::shapes::plus_large(wb::shapes::each_with(wb::shapes::rows_by_cols(rows, cols), "pad", {0, pad}),
                                std::move(large));
}

// RGB planes of height x pitch floats; the first `width` of each row are pixels.
wb::OpSpec<RgbToGreyFn> rgb_to_grey() {
  return {
      .name = "rgb_to_grey",
      .dtype = "f32",
      .title = "grey = 0.299 R + 0.587 G + 0.114 B",
      .docs = kDocs,
      .tensors = {wb::viewed(wb::input("rgb", {"planes", "height", "pitch"}, DType::F32, wb::dist::uniform(0, 1)),
                             {"planes", "height", "width"}),
                  wb::viewed(wb::output("grey", {"height", "pitch"}, DType::F32,
                                        wb::tol::terms([](const wb::Shape&) { return 3; })),
                             {"height", "width"})},
      .derive = [](wb::Shape& s) { s.set("pitch", s["width"] + s["pad"]).set("planes", 3); },
      .reference =
          [](const wb::RefCtx& r, int64_t y) {
            const auto& rgb = r.in("rgb");
            const int64_t w = r["width"], pitch = r["pitch"], plane = r["height"] * pitch;
            for (int64_t x = 0; x < w; ++x) {
              const int64_t at = y * pitch + x;
              r.expect("grey", y * w + x,
                       double(kRedWeight) * rgb.get(at) + double(kGreenWeight) * rgb.get(plane + at) +
                           double(kBlueWeight) * rgb.get(2 * plane + at));
            }
          },
      .ref_rows = [](const wb::Shape& s) { return s["height"]; },
      // The large case: three planes past 2^31 floats in all, plane offsets overflow an int.
      .test_shapes = pitched_shapes("height", "width", 5, wb::Shape{{"height", 16385}, {"width", 43691}, {"pad", 0}}),
      .random_shapes = wb::shapes::random_with(3, {{"height", 1500}, {"width", 1500}}, "pad", 0, 7),
      .bench_shapes = {wb::Shape{{"height", 2160}, {"width", 3840}, {"pad", 0}}},
      .full_bench_shapes = {wb::Shape{{"height", 4321}, {"width", 7681}, {"pad", 0}}},
      .bytes = [](const wb::Shape& s) { return 16.0 * s["height"] * s["width"]; },
      .flops = [](const wb::Shape& s) { return 5.0 * s["height"] * s["width"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](RgbToGreyFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("rgb"), a.out<float>("grey"), a.i("height"), a.i("width"), a.i("pitch"), st);
          },
  };
}

// A, B and C each with its own leading dimension: lda = cols + pad, ldb = cols + 2 pad,
// ldc = cols + 3 pad, so a kernel that uses the wrong stride is wrong whenever pad > 0.
wb::OpSpec<MatrixAddFn> matrix_add() {
  return {
      .name = "matrix_add",
      .dtype = "f32",
      .title = "C = A + B",
      .docs = kDocs,
      .tensors = {wb::viewed(wb::input("A", {"rows", "lda"}, DType::F32), {"rows", "cols"}),
                  wb::viewed(wb::input("B", {"rows", "ldb"}, DType::F32), {"rows", "cols"}),
                  wb::viewed(
                      wb::output("C", {"rows", "ldc"}, DType::F32, wb::tol::terms([](const wb::Shape&) { return 2; })),
                      {"rows", "cols"})},
      .derive =
          [](wb::Shape& s) {
            const int64_t cols = s["cols"], pad = s["pad"];
            s.set("lda", cols + pad).set("ldb", cols + 2 * pad).set("ldc", cols + 3 * pad);
          },
      .reference =
          [](const wb::RefCtx& r, int64_t row) {
            const int64_t cols = r["cols"], lda = r["lda"], ldb = r["ldb"];
            for (int64_t c = 0; c < cols; ++c) {
              r.expect("C", row * cols + c, r.in("A").get(row * lda + c) + r.in("B").get(row * ldb + c));
            }
          },
      .ref_rows = [](const wb::Shape& s) { return s["rows"]; },
      // The large case: rows * cols > 2^31.
      .test_shapes = pitched_shapes("rows", "cols", 3, wb::Shape{{"rows", 46341}, {"cols", 46341}, {"pad", 0}}),
      .random_shapes = wb::shapes::random_with(3, {{"rows", 1500}, {"cols", 1500}}, "pad", 0, 5),
      .bench_shapes = {wb::Shape{{"rows", 4096}, {"cols", 4096}, {"pad", 0}}},
      .full_bench_shapes = {wb::Shape{{"rows", 2047}, {"cols", 16385}, {"pad", 0}},
                            wb::Shape{{"rows", 16385}, {"cols", 2047}, {"pad", 0}}},
      .bytes = [](const wb::Shape& s) { return 12.0 * s["rows"] * s["cols"]; },
      .flops = [](const wb::Shape& s) { return 1.0 * s["rows"] * s["cols"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](MatrixAddFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("A"), a.i("lda"), a.in<float>("B"), a.i("ldb"), a.out<float>("C"), a.i("ldc"), a.i("rows"),
               a.i("cols"), st);
          },
  };
}

}  // namespace

WB_OPS(ch01) { wb::add_ops(vector_add_program(), vector_add(), rgb_to_grey(), matrix_add()); }

}  // namespace ch01
