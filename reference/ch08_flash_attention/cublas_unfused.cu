// Chapter 8 references as the harness sees them: cuDNN's fused attention first (the "x ref"
// of the BF16 benchmark rows), then the unfused cuBLAS pipeline (cublas_attention.cuh), the
// baseline that shows what fusion buys: three kernels, and the whole score matrix of every
// head written to and read back from memory.
#include <array>
#include <string>

#include "cublas_attention.cuh"
#include "reference.cuh"
#include "declare/op.cuh"

namespace ch08::reference {

WB_VARIANTS(ch08_reference, wb::Role::Reference) {
  const auto dims = [](const wb::Shape& s) {
    return std::array<int, 4>{static_cast<int>(s["B"]), static_cast<int>(s["H"]), static_cast<int>(s["Sq"]),
                              static_cast<int>(s["Sk"])};
  };
  const auto f32_scratch = [dims](const wb::Shape& s) {
    const auto [B, H, Sq, Sk] = dims(s);
    return unfused::scores_bytes(B, H, Sq, Sk);
  };
  const auto bf16_scratch = [dims](const wb::Shape& s) {
    const auto [B, H, Sq, Sk] = dims(s);
    return unfused::scratch_bytes_bf16(B, H, Sq, Sk);
  };
  const std::string graph = cudnn_version_text() +
                            "; one graph: matmul, scale, causal mask (gen_index, compare, select), "
                            "softmax as reductions and pointwise ops, matmul";
  const char* unfused_note = "cuBLAS strided-batched GEMM (FP32 scores), masked softmax kernel, GEMM";
  const auto gqa_scratch = [](const wb::Shape& s) {
    return unfused::scratch_bytes_bf16(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), static_cast<int>(s["Sq"]),
                                       static_cast<int>(s["Sk"]));
  };
  const auto decode_scratch = [](const wb::Shape& s) {
    return unfused::scratch_bytes_bf16(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), 1,
                                       static_cast<int>(s["Lmax"]));
  };
  return {
      wb::variant("attention/bf16", "cudnn_sdpa", &cudnn_attention_bf16).is_library().with_note(graph),
      wb::variant("attention/bf16", "cublas_unfused", &unfused::attention_bf16)
          .is_library()
          .with_workspace(bf16_scratch)
          .with_note(unfused_note),
      wb::variant("attention/f32", "cublas_unfused", &unfused::attention_f32)
          .is_library()
          .with_workspace(f32_scratch)
          .with_note(unfused_note),
      wb::variant("attention_probs/f32", "cublas_gemm_softmax", &unfused::probs_f32)
          .is_library()
          .with_note("cuBLAS strided-batched SGEMM into p, then a masked softmax kernel in place"),
      // Part 2. cuDNN is not asked for these: the graph of cudnn_sdpa.cu has no sequence
      // lengths (decode, ragged), and its kv heads would have to be broadcast over the query
      // heads (grouped heads); see docs/ch08-flash-attention.md, "References for part 2".
      wb::variant("attention_gqa/bf16", "cublas_unfused", &unfused::attention_gqa_bf16)
          .is_library()
          .with_workspace(gqa_scratch)
          .with_note("cuBLAS, the G query heads of a kv head as one (G Sq) x D matrix; masked softmax; GEMM"),
      wb::variant("attention_decode/bf16", "cublas_decode", &unfused::decode_bf16)
          .is_library()
          .with_workspace(decode_scratch)
          .with_note("cuBLAS over the whole cache (G queries x L_max keys per kv head), softmax masked by seq_lens"),
  };
}

}  // namespace ch08::reference
