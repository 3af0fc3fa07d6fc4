#include "core/checked_int.h"

#include <gtest/gtest.h>

#include <limits>

namespace shardscope {
namespace {

// issue 35: "prompt_tokens: 1e30" was reported as "got -9223372036854775808" (an
// out-of-range cast is undefined); every reader converts through these two.
TEST(CheckedIntTest, WholeToInt64RefusesWhatInt64CannotHold) {
  EXPECT_EQ(WholeToInt64(0.0), 0);
  EXPECT_EQ(WholeToInt64(-5.0), -5);
  EXPECT_EQ(WholeToInt64(1e18), 1000000000000000000);
  EXPECT_EQ(WholeToInt64(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(WholeToInt64(9223372036854775808.0), std::nullopt);  // 2^63
  EXPECT_EQ(WholeToInt64(1e30), std::nullopt);
  EXPECT_EQ(WholeToInt64(-1e300), std::nullopt);
  EXPECT_EQ(WholeToInt64(2.5), std::nullopt);
  EXPECT_EQ(WholeToInt64(std::numeric_limits<double>::infinity()), std::nullopt);
  EXPECT_EQ(WholeToInt64(std::numeric_limits<double>::quiet_NaN()), std::nullopt);
}

TEST(CheckedIntTest, JsonToInt64ChecksFloatsAndHugeUnsigned) {
  EXPECT_EQ(JsonToInt64(nlohmann::json(7)), 7);
  EXPECT_EQ(JsonToInt64(nlohmann::json(-7)), -7);
  EXPECT_EQ(JsonToInt64(nlohmann::json(8.0)), 8);
  EXPECT_EQ(JsonToInt64(nlohmann::json(1e300)), std::nullopt);
  EXPECT_EQ(JsonToInt64(nlohmann::json(0.5)), std::nullopt);
  EXPECT_EQ(JsonToInt64(nlohmann::json::parse("18446744073709551615")), std::nullopt);
  EXPECT_EQ(JsonToInt64(nlohmann::json::parse("9223372036854775807")),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(JsonToInt64(nlohmann::json("8")), std::nullopt);
  EXPECT_EQ(JsonToInt64(nlohmann::json()), std::nullopt);
}

}  // namespace
}  // namespace shardscope
