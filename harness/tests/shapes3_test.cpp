// Host tests of the GEMM shape catalogue: it must hold the shapes that expose edge bugs
// (non-multiples of every tile size in m, n and k; k = 1; a long k; thin and flat
// matrices), and its random shapes must come back the same from the same seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "declare/rng.h"
#include "declare/shapes.h"

namespace wb {
namespace {

bool has(const std::vector<Extent3>& v, auto pred) { return std::any_of(v.begin(), v.end(), pred); }

TEST(GemmShapes, CatalogueExposesEdgeBugsInEveryDimension) {
  const auto s = gemm_shapes(2048);
  EXPECT_TRUE(has(s, [](auto e) { return e.m == 1 && e.n == 1 && e.k == 1; }));
  EXPECT_TRUE(has(s, [](auto e) { return e.k == 1 && e.m > 64 && e.n > 64; })) << "k = 1";
  EXPECT_TRUE(has(s, [](auto e) { return e.k > 4096 && e.k % 2 == 1; })) << "a long, odd k";
  EXPECT_TRUE(has(s, [](auto e) { return e.m == 1 && e.n > 128; })) << "a single row";
  EXPECT_TRUE(has(s, [](auto e) { return e.n == 1 && e.m > 128; })) << "a single column";
  EXPECT_TRUE(has(s, [](auto e) { return e.m > 32 * e.n; })) << "tall";
  EXPECT_TRUE(has(s, [](auto e) { return e.n > 32 * e.m; })) << "wide";
  EXPECT_TRUE(has(s, [](auto e) { return e.m == 2048 && e.n == 2048 && e.k == 2048; })) << "large";
  // For each tile size a kernel might use, some shape is one past a multiple of it in
  // each dimension, so a kernel right only on tile multiples meets a shape it gets wrong.
  for (int64_t tile : {8, 16, 32, 64, 128, 256}) {
    EXPECT_TRUE(has(s, [&](auto e) { return e.m > tile && e.m % tile == 1; })) << "m, tile " << tile;
    EXPECT_TRUE(has(s, [&](auto e) { return e.n > tile && e.n % tile == 1; })) << "n, tile " << tile;
    EXPECT_TRUE(has(s, [&](auto e) { return e.k > tile && e.k % tile == 1; })) << "k, tile " << tile;
  }
  // No dimension is zero (the chapters test zero sizes separately) and no shape is square
  // in m and n only: most are rectangles, so swapped m and n cannot pass.
  EXPECT_FALSE(has(s, [](auto e) { return e.m == 0 || e.n == 0 || e.k == 0; }));
  EXPECT_GT(std::count_if(s.begin(), s.end(), [](auto e) { return e.m != e.n; }), static_cast<long>(s.size() / 2));
}

TEST(GemmShapes, LabelsAndPrinting) {
  EXPECT_EQ(label_3d({1025, 512, 63}), "M1025_N512_K63");
  std::ostringstream os;
  PrintTo(Extent3{3, 5, 7}, &os);
  EXPECT_EQ(os.str(), "3x5x7");
}

TEST(GemmShapes, RandomShapesAreReproducibleAndInRange) {
  Rng a(11), b(11), c(12);
  const auto x = random_gemm_shapes(a, 20, 9, 5, 300);
  const auto y = random_gemm_shapes(b, 20, 9, 5, 300);
  const auto z = random_gemm_shapes(c, 20, 9, 5, 300);
  ASSERT_EQ(x.size(), 20u);
  bool same = true, differs = false;
  for (size_t i = 0; i < x.size(); ++i) {
    same = same && x[i].m == y[i].m && x[i].n == y[i].n && x[i].k == y[i].k;
    differs = differs || x[i].m != z[i].m || x[i].n != z[i].n || x[i].k != z[i].k;
    EXPECT_GE(x[i].m, 1);
    EXPECT_LE(x[i].m, 9);
    EXPECT_GE(x[i].n, 1);
    EXPECT_LE(x[i].n, 5);
    EXPECT_GE(x[i].k, 1);
    EXPECT_LE(x[i].k, 300);
  }
  EXPECT_TRUE(same) << "same seed, same shapes";
  EXPECT_TRUE(differs) << "another seed, other shapes";
}

}  // namespace
}  // namespace wb
