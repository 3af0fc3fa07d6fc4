#include "core/units.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

// issue 16: 999.7 ms printed as "1e+03 ms".
TEST(UnitsTest, SecondsRollOverToTheNextUnitInsteadOfAnExponent) {
  EXPECT_EQ(FormatSeconds(0.9997), "1 s");
  EXPECT_EQ(FormatSeconds(999.7e-6), "1 ms");
  EXPECT_EQ(FormatSeconds(999.7e-9), "1 µs");
  EXPECT_EQ(FormatSeconds(0.9994), "999 ms");
  EXPECT_EQ(FormatSeconds(12.34e-3), "12.3 ms");
  EXPECT_EQ(FormatSeconds(4.56e-6), "4.56 µs");
  EXPECT_EQ(FormatSeconds(1.5), "1.5 s");
  EXPECT_EQ(FormatSeconds(3600), "3600 s");
  EXPECT_EQ(FormatSeconds(12345.6), "12346 s");
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(-2e-3), "-2 ms");
}

TEST(UnitsTest, PrefixedValuesRollOverToo) {
  EXPECT_EQ(FormatBytes(999.7e6), "1 GB");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1.234e9), "1.23 GB");
  EXPECT_EQ(FormatSi(999999), "1 M");
  EXPECT_EQ(FormatSi(0.5), "0.5");
  EXPECT_EQ(FormatFlops(4.5e9), "4.5 GFLOP");
}

TEST(UnitsTest, NumbersWithoutExponents) {
  EXPECT_EQ(FormatNumber(12345.6), "12346");
  EXPECT_EQ(FormatNumber(0.73149), "0.7315");
  EXPECT_EQ(FormatNumber(0.00012), "0.00012");
  EXPECT_EQ(FormatNumber(2), "2");
  EXPECT_EQ(FormatNumber(1e20), "1e+20");
}

TEST(UnitsTest, CountsTakeTheSingularForOne) {
  EXPECT_EQ(FormatCount(1, "node"), "1 node");
  EXPECT_EQ(FormatCount(2, "node"), "2 nodes");
  EXPECT_EQ(FormatCount(0, "rank"), "0 ranks");
}

}  // namespace
}  // namespace shardscope
