// The ladder as the harness sees it, in the order a learner meets it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch10 {
namespace {

#ifdef WB_CH10_HOPPER
wb::Shape conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad,
               int64_t residual) {
  return wb::Shape{{"N", n}, {"C", c}, {"H", h},           {"W", w},    {"K", k},
                   {"R", r}, {"S", s}, {"stride", stride}, {"pad", pad}}
      .set_param("residual", double(residual));
}

// v8's tiles one by one: the edges of the op (tails of M, K and C, the padding, strides, 1 x 1 to
// 7 x 7 filters, residual on and off), a long sum (72 steps: the stage ring wraps many times),
// and one C % 8 != 0 shape (the fallback), each small enough for a quick reference.
std::vector<wb::Shape> v8_tile_shapes() {
  return {conv(2, 8, 5, 7, 16, 3, 3, 1, 1, 0),      conv(1, 16, 33, 31, 33, 3, 3, 1, 1, 0),
          conv(2, 32, 15, 17, 65, 3, 3, 1, 1, 1),   conv(1, 24, 20, 20, 128, 3, 3, 1, 1, 0),
          conv(1, 40, 9, 9, 200, 1, 1, 2, 0, 0),    conv(2, 16, 17, 19, 24, 5, 5, 1, 2, 1),
          conv(1, 8, 31, 29, 16, 7, 7, 2, 3, 0),    conv(1, 64, 56, 56, 64, 3, 3, 1, 1, 1),
          conv(1, 256, 28, 28, 256, 3, 3, 2, 1, 0), conv(1, 512, 7, 7, 512, 3, 3, 1, 1, 0),
          conv(1, 3, 7, 5, 2, 3, 3, 2, 1, 0)};
}

// v12's and v13's tiles one by one: v8's shapes, and two with more tiles than an H200 has SMs at either
// tile (blocks that walk two or three tiles, the stage ring running on across them, the tail of
// K in the second), residual on.
std::vector<wb::Shape> v12_tile_shapes() {
  std::vector<wb::Shape> s = v8_tile_shapes();
  s.push_back(conv(8, 64, 56, 56, 64, 3, 3, 1, 1, 1));
  s.push_back(conv(8, 16, 40, 40, 136, 3, 3, 1, 1, 1));
  return s;
}

// v13's forms one by one: v12's shapes, and more where the filters are resident (K <= 64, at most
// 9 steps) and blocks walk several tiles (the ping-pong form's two warpgroups alternating, odd and
// even tile counts): tiles that run from one image into the next, non-square, even and 1 x 1
// filters, padding 0 to 2, short rows, C = 8 and K = 24 or 56, residual on and off.
std::vector<wb::Shape> v13_tile_shapes() {
  std::vector<wb::Shape> s = v12_tile_shapes();
  s.push_back(conv(3, 40, 11, 13, 40, 3, 1, 1, 1, 0));
  s.push_back(conv(2, 64, 20, 36, 24, 2, 2, 1, 0, 1));
  s.push_back(conv(2, 8, 9, 60, 64, 1, 3, 1, 1, 1));
  s.push_back(conv(5, 32, 16, 8, 56, 3, 3, 1, 2, 0));
  s.push_back(conv(3, 64, 16, 16, 64, 1, 1, 1, 0, 1));
  // 2 to 3 tiles a block on 132 SMs (392 and 360 tiles), one 1-step tile after another in the second.
  s.push_back(conv(16, 64, 56, 56, 64, 3, 3, 1, 1, 1));
  s.push_back(conv(20, 16, 48, 48, 24, 1, 1, 1, 0, 0));
  return s;
}
#endif

// One of v10's comparison forms: tested on every shape, left out of the default benchmark.
wb::Variant v10_form(const char* name, Depthwise3x3Fn* fn, const char* note) {
  return wb::variant("depthwise3x3/bf16", name, fn).needs_cc(80).is_slow().with_note(note);
}

// One of v11's comparison forms: tested on every shape, left out of the default benchmark.
wb::Variant v11_form(const char* name, ConvBnReluFn* fn, const char* note) {
  return wb::variant("conv2d_bn_relu/bf16", name, fn).needs_cc(80).is_slow().with_note(note);
}

}  // namespace

WB_VARIANTS(ch10_solution, wb::Role::Solution) {
  using namespace solution;
  wb::VariantList v = {
      wb::variant("conv2d/f32", "v1_direct", &v1_direct).is_slow(),
      wb::variant("conv2d/f32", "v2_smem_direct", &v2_smem_direct),
      wb::variant("conv2d_bn_relu/bf16", "v3_implicit_gemm_wmma", &v3_implicit_gemm_wmma).needs_cc(80),
      wb::variant("conv2d_bn_relu/bf16", "v4_implicit_gemm_mma", &v4_implicit_gemm_mma).needs_cc(80),
      wb::variant("depthwise3x3/bf16", "v5_depthwise", &v5_depthwise),
      wb::variant("conv2d_bn_relu/bf16", "v6_implicit_gemm_pipelined", &v6_implicit_gemm_pipelined).needs_cc(80),
      wb::variant("depthwise3x3/bf16", "v7_depthwise_strip", &v7_depthwise_strip),
      wb::variant("depthwise3x3/bf16", "v9_depthwise_ring", &v9_depthwise_ring).needs_cc(80),
      wb::variant("depthwise3x3/bf16", "v10_depthwise_tiles", &v10_depthwise_tiles).needs_cc(80),
      v10_form("v10_depthwise_tiles_c8", &v10_depthwise_tiles_c8, "v10 with 8 channels (16 bytes) a thread forced"),
      v10_form("v10_depthwise_tiles_pow2", &v10_depthwise_tiles_pow2,
               "v10 with slabs of at most 64 channels (32 or 16 on the 96- and 144-channel layers)"),
      v10_form("v10_depthwise_tiles_3buf", &v10_depthwise_tiles_3buf,
               "v10 with three buffers: two tiles in flight a block (8-row tiles from 64 channels)"),
      v10_form("v10_depthwise_tiles_fit", &v10_depthwise_tiles_fit,
               "v10 with 8 x 8 tiles on the 144-channel slab (they divide 56 x 56)"),
      wb::variant("conv2d_bn_relu/bf16", "v11_implicit_gemm_cluster_splitk", &v11_implicit_gemm_cluster_splitk)
          .needs_cc(80)
          .with_note("v6's tiles split over 2-block clusters (distributed shared memory) where a model says it "
                     "pays, one block a tile at 2 an SM where tiles are few; v6 elsewhere and below sm_90"),
      v11_form("v11_implicit_gemm_cluster_splitk_persistent", &v11_implicit_gemm_cluster_splitk_persistent,
               "v11's persistent kernel on every shape: (128, 64) tiles walked by resident blocks, the next "
               "tile's copies in flight during the epilogue (v11 below 3 steps)"),
      v11_form("v11_implicit_gemm_cluster_splitk_split2", &v11_implicit_gemm_cluster_splitk_split2,
               "v11's split of 2 on every shape with at least 8 K steps (the split kernels on every shape "
               "class; v6 below)"),
  };
#ifdef WB_CH10_HOPPER
  // The Hopper bonus: in the list only when the sm_90a library is built (chapters/ch10_conv/extra.cmake).
  // A step, then the step with each of its tiles forced (slow forms on the step's tile shapes): the
  // kernel of every tile meets every edge, whatever the step's model would pick on this GPU.
  const auto hopper_step = [&](const char* step, const char* name, ConvBnReluFn* fn, const char* note,
                               std::span<const ForcedTile> tiles, const std::vector<wb::Shape>& shapes) {
    v.push_back(wb::variant("conv2d_bn_relu/bf16", name, fn).hopper_only().with_note(note));
    for (const ForcedTile& t : tiles) {
      v.push_back(wb::variant("conv2d_bn_relu/bf16", std::string(name) + "_" + t.tile, t.fn)
                      .hopper_only()
                      .is_slow()
                      .on(shapes)
                      .with_note(std::string(step) + " with its (" + t.tile + ") tile forced on every shape"));
    }
  };
  hopper_step("v8", "v8_implicit_gemm_wgmma", &v8_implicit_gemm_wgmma,
              "wgmma + TMA filters + cp.async im2col in the 128 B swizzle, producer and consumer warpgroups; v6 "
              "when C % 8 != 0",
              v8_forced_tiles(), v8_tile_shapes());
  hopper_step("v12", "v12_implicit_gemm_wgmma_persistent", &v12_implicit_gemm_wgmma_persistent,
              "v8 persistent: one block an SM, two producer and two consumer warpgroups on 128-pixel tiles, the "
              "next tile's loads under the epilogue; v8 for the rest",
              v12_forced_tiles(), v12_tile_shapes());
  hopper_step("v13", "v13_implicit_gemm_im2col_tma", &v13_implicit_gemm_im2col_tma,
              "v12 with A's im2col rows by TMA in im2col mode: one copy a step, one issuing thread; the filters "
              "resident where a block keeps one filter tile; v12 for the rest",
              v13_forced_tiles(), v13_tile_shapes());
  hopper_step("v14", "v14_implicit_gemm_mma_tma", &v14_implicit_gemm_mma_tma,
              "v13's producer (A by TMA in im2col mode, filters by TMA or resident) feeding ldmatrix + mma.sync "
              "consumer warps, the epilogue on their registers; v11 for the rest",
              v14_forced_tiles(), v12_tile_shapes());
  v.push_back(wb::variant("depthwise3x3/bf16", "v10_depthwise_tiles_tma", &v10_depthwise_tiles_tma)
                  .hopper_only()
                  .is_slow()
                  .with_note("v10 with each tile's input brought by one TMA box (zeros outside the image)"));
#endif
  return v;
}

}  // namespace ch10
