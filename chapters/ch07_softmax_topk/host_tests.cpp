// The chapter's float64 reference on hand-made rows: the order (larger logit first, equal
// logits by lower index, -inf last) and the defined answer for a row of -inf only. The
// kernels are judged against this reference, so its rules are pinned here, on any machine.
#include <gtest/gtest.h>

#include <cmath>

#include "declare/op.cuh"

namespace {

constexpr double kInf = INFINITY;

// Runs the reference of `op` on rows x (B rows of V) and returns its expected values of
// `output`, in logical order.
std::vector<double> expected(const std::string& op, int64_t B, int64_t V, int64_t k, const std::vector<double>& x,
                             const std::string& output) {
  const wb::OpBase* o = wb::find_op(op);
  EXPECT_NE(o, nullptr) << op;
  wb::Shape s{{"B", B}, {"V", V}};
  if (k > 0) s.set("k", k);
  std::vector<wb::HostTensor> in;
  for (const auto& t : o->common().tensors) in.emplace_back(t.name, t.dtype, t.count(s));
  for (size_t i = 0; i < x.size(); ++i) in[0].set(static_cast<int64_t>(i), x[i]);
  const wb::RefCtx r(s, in, o->common().tensors);
  for (int64_t b = 0; b < B; ++b) o->common().reference(r, b);
  for (size_t i = 0; i < o->common().tensors.size(); ++i) {
    if (o->common().tensors[i].name != output) continue;
    std::vector<double> out;
    for (const auto& [index, value] : r.expected()[i]) out.push_back(value);
    return out;
  }
  ADD_FAILURE() << "no output " << output;
  return {};
}

const std::vector<double> kRows = {1,     3,     3,     -kInf, 3,     0,       // ties at 3: indices 1, 2, 4
                                   -kInf, -kInf, -kInf, -kInf, -kInf, -kInf};  // all masked

TEST(Ch07Reference, TopKOrdersByLogitThenLowerIndexAndMaskedRowsByIndex) {
  EXPECT_EQ(expected("topk/f32", 2, 6, 4, kRows, "indices"), (std::vector<double>{1, 2, 4, 0, 0, 1, 2, 3}));
  EXPECT_EQ(expected("topk/f32", 2, 6, 4, kRows, "values"),
            (std::vector<double>{3, 3, 3, 1, -kInf, -kInf, -kInf, -kInf}));
}

TEST(Ch07Reference, SoftmaxTopKGivesProbabilitiesAndZeroForAMaskedRow) {
  const auto v = expected("softmax_topk/f32", 2, 6, 5, kRows, "values");
  const double sum = 3 + std::exp(-2.0) + std::exp(-3.0);  // three 3s, a 1 and a 0 below the max 3
  ASSERT_EQ(v.size(), 10u);
  EXPECT_NEAR(v[0], 1 / sum, 1e-15);
  EXPECT_NEAR(v[3], std::exp(-2.0) / sum, 1e-15);
  EXPECT_NEAR(v[4], std::exp(-3.0) / sum, 1e-15);
  for (int j = 5; j < 10; ++j) EXPECT_EQ(v[j], 0.0) << j;
  EXPECT_EQ(expected("softmax_topk/f32", 2, 6, 5, kRows, "indices"),
            (std::vector<double>{1, 2, 4, 0, 5, 0, 1, 2, 3, 4}));
}

TEST(Ch07Reference, SoftmaxOfAMaskedEntryIsZeroAndRowsSumToOne) {
  const auto p = expected("softmax/f32", 2, 6, 0, kRows, "probs");
  ASSERT_EQ(p.size(), 12u);
  double row0 = 0;
  for (int v = 0; v < 6; ++v) row0 += p[v];
  EXPECT_NEAR(row0, 1.0, 1e-15);
  EXPECT_EQ(p[3], 0.0);
  for (int v = 6; v < 12; ++v) EXPECT_EQ(p[v], 0.0) << v;
}

}  // namespace
