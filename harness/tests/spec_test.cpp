// Host tests of the op-spec vocabulary: shapes, tensors, distributions, outcome codes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "check/outcome.h"
#include "declare/spec.h"

namespace wb {
namespace {

TEST(Shape, LabelsAndTextNameEveryDimensionAndParameter) {
  Shape s{{"N", 1025}, {"C", 769}};
  s.set_param("beta", -0.75);
  EXPECT_EQ(s.label(), "N1025_C769_betam0.75");
  EXPECT_EQ(s.text(), "N=1025 C=769 beta=-0.75");
  EXPECT_EQ(s["C"], 769);
  EXPECT_EQ(s.product({"N", "C"}), 1025 * 769);
  EXPECT_THROW(s["D"], std::out_of_range);
}

TEST(HostTensor, RoundsToItsDtypeAndKnowsItsPoison) {
  HostTensor b("x", DType::BF16, 2);
  b.set(0, 1.0 + 1.0 / 512);  // halfway between two BF16 values: rounds to even (1.0)
  EXPECT_EQ(b.get(0), 1.0);
  HostTensor i("q", DType::I8, 1);
  i.set(0, 300);
  EXPECT_EQ(i.get(0), 127);  // saturates
  b.fill_poison();
  EXPECT_TRUE(b.is_poison(1));
  EXPECT_TRUE(std::isnan(b.get(1)));
  HostTensor f8("q8", DType::E4M3, 3);
  f8.set(0, 1000.0);  // E4M3 has no infinity: saturates at 448
  EXPECT_EQ(f8.get(0), 448.0);
  f8.set(1, 1.0 + 1.0 / 16);  // halfway between 1 and 1.125: rounds to even (1.0)
  EXPECT_EQ(f8.get(1), 1.0);
  f8.set(2, -0.01);  // a subnormal: a multiple of 2^-9
  EXPECT_EQ(f8.get(2), -5.0 / 512);
  f8.fill_poison();
  EXPECT_TRUE(std::isnan(f8.get(0)));
}

TEST(HostTensor, StartsAllZeroEvenWhenZeroedByManyThreads) {
  // Past the size where all cores share the zeroing (the storage itself is left uninitialised).
  const int64_t n = (int64_t{1} << 22) + 3;
  for (DType t : {DType::I8, DType::BF16, DType::F32, DType::I64, DType::E4M3}) {
    {
      HostTensor used("u", t, n);  // memory the next tensor may be given back: poisoned, then freed
      used.fill_poison();
    }
    HostTensor h("z", t, n);
    ASSERT_EQ(h.bytes(), static_cast<size_t>(n) * dtype_size(t));
    const auto* p = static_cast<const unsigned char*>(h.raw());
    int64_t nonzero = 0;
    for (size_t k = 0; k < h.bytes(); ++k) nonzero += p[k] != 0;
    EXPECT_EQ(nonzero, 0) << dtype_name(t);
    EXPECT_EQ(h.bits(n - 1), 0u);
    EXPECT_FALSE(h.is_poison(0));
    HostTensor copy = h;  // copies keep their contents
    copy.fill_poison();
    EXPECT_TRUE(copy.is_poison(n - 1)) << dtype_name(t);
    EXPECT_EQ(copy.bits(n - 1), poison_bits(t)) << dtype_name(t);
    EXPECT_EQ(h.bits(n - 1), 0u);
  }
}

TEST(Fill, DependsOnlyOnTheSeedAndNeverGivesAConstant) {
  const Shape s{{"n", 3 << 20}};
  HostTensor a("a", DType::F32, s["n"]), b("b", DType::F32, s["n"]);
  fill(a, dist::normal(1000, 1), s, 42);
  fill(b, dist::normal(1000, 1), s, 42);
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < a.count(); ++i) sum += a.get(i);
  const double mean = sum / a.count();
  for (int64_t i = 0; i < a.count(); ++i) sq += (a.get(i) - mean) * (a.get(i) - mean);
  EXPECT_NEAR(mean, 1000, 0.01);
  EXPECT_NEAR(std::sqrt(sq / a.count()), 1.0, 0.01);
}

TEST(Fill, ExtremesOfInt8AreTheEnds) {
  const Shape s{{"n", 1000}};
  HostTensor t("t", DType::I8, 1000);
  fill(t, dist::extremes(), s, 7);
  for (int64_t i = 0; i < t.count(); ++i) EXPECT_TRUE(t.get(i) == 127 || t.get(i) == -128);
}

TEST(TensorView, MapsLogicalIndicesIntoPitchedRowsAndFindsThePadding) {
  TensorSpec t = output("y", {"N", "ld"}, DType::F32, tol::exact());
  t.view = {"N", "C"};
  const TensorView v(t, Shape{{"N", 3}, {"C", 5}, {"ld", 8}});
  EXPECT_EQ(v.alloc_index(0), 0);
  EXPECT_EQ(v.alloc_index(5), 8);    // row 1, column 0
  EXPECT_EQ(v.alloc_index(14), 20);  // row 2, column 4
  EXPECT_FALSE(v.is_padding(4));
  EXPECT_TRUE(v.is_padding(5));
  EXPECT_EQ(v.coords("y", 14), "y[2][4]");
  EXPECT_EQ(v.legend("y"), "y[N][C]");
}

TEST(OutcomeCodes, RoundTripThroughTheirNames) {
  for (Code c : {Code::Pass, Code::NotImplemented, Code::OutsideStream, Code::OobRead, Code::Cached,
                 Code::StaleAfterTiming, Code::Nondeterministic, Code::WrotePadding}) {
    EXPECT_EQ(code_from_name(code_name(c)), c);
  }
  EXPECT_FALSE(code_from_name("no such code"));
  EXPECT_TRUE(code_is_skip(Code::CompiledNotRun));
  EXPECT_TRUE(code_is_failure(Code::Cached));
}

TEST(ShapeCatalogues, CrossWithAnExtraDimension) {
  const auto s = shapes::each_with(shapes::rows_by_cols("rows", "cols"), "pad", {0, 3});
  EXPECT_EQ(s.size(), 2 * shapes_2d(2048).size());
  EXPECT_EQ(s[1]["pad"], 3);
}

TEST(ShapeCatalogues, EndWithTheLargeCaseAndDrawAnExtraDimensionLast) {
  const auto s = shapes::plus_large(shapes::sizes("n"), Shape{{"n", 5}});
  EXPECT_EQ(s.size(), shapes::sizes("n").size() + 1);
  EXPECT_EQ(s.back()["n"], 5);
  EXPECT_EQ(s.back().tag(), "large");

  // The same draws, in the same order, as random() followed by one draw per shape.
  Rng a(11), b(11);
  const auto with = shapes::random_with(3, {{"rows", 100}, {"cols", 50}}, "pad", 0, 7)(a);
  auto plain = shapes::random(3, {{"rows", 100}, {"cols", 50}})(b);
  for (auto& x : plain) x.set("pad", b.range(0, 7));
  ASSERT_EQ(with.size(), plain.size());
  for (size_t i = 0; i < with.size(); ++i) {
    EXPECT_EQ(with[i].label(), plain[i].label());
    EXPECT_EQ(with[i].tag(), "random");
  }
}

TEST(ShapeCatalogues, MakeOneShapePerRowOfATable) {
  const auto s = shapes::concat(shapes::table({"rows", "cols"}, {{1, 2}, {3, 4}}), {Shape{{"rows", 5}, {"cols", 6}}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].label(), Shape({{"rows", 1}, {"cols", 2}}).label());
  EXPECT_EQ(s[1]["cols"], 4);
  EXPECT_EQ(s[2]["rows"], 5);
  EXPECT_THROW(shapes::table({"rows", "cols"}, {{1, 2, 3}}), std::invalid_argument);
}

TEST(Fingerprint, TellsNewValuesAtTheSameAddressApart) {
  HostTensor t("x", DType::F32, 10000);
  const uint64_t before = fingerprint(t, 1024);
  EXPECT_EQ(fingerprint(t, 1024), before);
  t.set(9999, 1.0);  // among the last 64 bytes
  EXPECT_NE(fingerprint(t, 1024), before);
}

}  // namespace
}  // namespace wb
