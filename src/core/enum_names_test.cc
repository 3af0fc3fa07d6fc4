#include "core/enum_names.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

enum class Color : uint8_t { kRed, kGreen, kBlue, kUnnamed };

constexpr auto kColorNames =
    MakeEnumNames<Color>({{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}});

// A table not in enum order, with a second spelling of one value.
constexpr auto kShuffled =
    MakeEnumNames<Color>({{Color::kBlue, "blue"}, {Color::kRed, "red"}, {Color::kRed, "crimson"}});

TEST(EnumNamesTest, EveryNameParsesBackToItsValue) {
  for (const auto& entry : kColorNames.entries()) {
    EXPECT_EQ(kColorNames.Name(entry.value), entry.name);
    EXPECT_EQ(kColorNames.Parse(entry.name), entry.value);
  }
  static_assert(kColorNames.Name(Color::kGreen) == "green");
  static_assert(kColorNames.Parse("blue") == Color::kBlue);
  static_assert(kColorNames.InEnumOrder());
  static_assert(!kShuffled.InEnumOrder());
}

TEST(EnumNamesTest, UnknownNamesAndValuesAreMissing) {
  EXPECT_EQ(kColorNames.Parse("purple"), std::nullopt);
  EXPECT_EQ(kColorNames.Parse(""), std::nullopt);
  EXPECT_EQ(kColorNames.Parse("Red"), std::nullopt);  // exact match only
  EXPECT_EQ(kColorNames.Name(Color::kUnnamed), "?");
  EXPECT_EQ(kColorNames.Name(Color::kUnnamed, ""), "");
  EXPECT_EQ(kColorNames.Name(static_cast<Color>(200)), "?");
}

TEST(EnumNamesTest, TablesOutOfEnumOrderAndAliases) {
  EXPECT_EQ(kShuffled.Name(Color::kRed), "red");  // the first entry of a value names it
  EXPECT_EQ(kShuffled.Name(Color::kBlue), "blue");
  EXPECT_EQ(kShuffled.Parse("crimson"), Color::kRed);
  EXPECT_EQ(kShuffled.Name(Color::kGreen), "?");
}

TEST(EnumNamesTest, ParseOrErrorNamesTheFieldAndTheChoices) {
  StatusOr<Color> c = kColorNames.ParseOrError("green", "color");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, Color::kGreen);
  StatusOr<Color> bad = kColorNames.ParseOrError("purple", "color");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown color 'purple' (expected red, green or blue)");
}

TEST(EnumNamesTest, ListJoinsTheNamesForMessages) {
  EXPECT_EQ(kColorNames.List(), "red, green or blue");
  EXPECT_EQ(kColorNames.List(" and "), "red, green and blue");
  EXPECT_EQ(MakeEnumNames<Color>({{Color::kRed, "red"}}).List(), "red");
}

}  // namespace
}  // namespace shardscope
