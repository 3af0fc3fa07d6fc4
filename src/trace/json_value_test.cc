#include "trace/json_value.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <limits>
#include <optional>
#include <string>

namespace shardscope::trace {
namespace {

namespace od = simdjson::ondemand;

// The integer GetJsonInt reads from the JSON text `json` (one value).
// The value is wrapped in an array: On-Demand gives no od::value for a scalar document.
std::optional<int64_t> IntOf(const std::string& json) {
  od::parser parser;
  simdjson::padded_string padded("[" + json + "]");
  od::document doc;
  od::array arr;
  od::value v;
  if (parser.iterate(padded).get(doc) || doc.get_array().get(arr) || arr.at(0).get(v)) {
    return std::nullopt;
  }
  int64_t out = -12345;
  if (!GetJsonInt(v, &out)) {
    EXPECT_EQ(out, -12345) << json << ": *out changed on failure";
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> StringOf(const std::string& json, bool no_escapes = false) {
  od::parser parser;
  simdjson::padded_string padded("[" + json + "]");
  od::document doc;
  od::array arr;
  od::value v;
  if (parser.iterate(padded).get(doc) || doc.get_array().get(arr) || arr.at(0).get(v)) {
    return std::nullopt;
  }
  std::string_view out;
  if (!GetJsonString(v, &out, no_escapes)) return std::nullopt;
  return std::string(out);
}

TEST(JsonValueTest, IntegralNumbersAreIntegers) {
  EXPECT_EQ(IntOf("0"), 0);
  EXPECT_EQ(IntOf("-42"), -42);
  EXPECT_EQ(IntOf("1000"), 1000);
  EXPECT_EQ(IntOf("1000.0"), 1000);
  EXPECT_EQ(IntOf("1.0e3"), 1000);
  EXPECT_EQ(IntOf("1e3"), 1000);
  EXPECT_EQ(IntOf("-2.5e1"), -25);
  EXPECT_EQ(IntOf("9223372036854775807"), INT64_MAX);  // 19 digits: past the fast path
  EXPECT_EQ(IntOf("123456789012345678"), 123456789012345678);
}

TEST(JsonValueTest, EverythingElseIsNotAnInteger) {
  EXPECT_EQ(IntOf("1000.5"), std::nullopt);  // never rounded
  EXPECT_EQ(IntOf("0.1"), std::nullopt);
  EXPECT_EQ(IntOf("1e19"), std::nullopt);  // past int64
  EXPECT_EQ(IntOf("\"1000\""), std::nullopt);
  EXPECT_EQ(IntOf("true"), std::nullopt);
  EXPECT_EQ(IntOf("null"), std::nullopt);
  EXPECT_EQ(IntOf("[1]"), std::nullopt);
}

TEST(JsonValueTest, FastPathAndDoubleRule) {
  int64_t v = 0;
  EXPECT_TRUE(ParseDecimalInt("-17 \n", &v));
  EXPECT_EQ(v, -17);
  EXPECT_FALSE(ParseDecimalInt("-", &v));
  EXPECT_FALSE(ParseDecimalInt("", &v));
  EXPECT_FALSE(ParseDecimalInt("1.0", &v));
  EXPECT_FALSE(ParseDecimalInt("1234567890123456789", &v));  // 19 digits: left to simdjson
  EXPECT_TRUE(IntegralDoubleToInt(-3.0, &v));
  EXPECT_EQ(v, -3);
  EXPECT_FALSE(IntegralDoubleToInt(2.5, &v));
  EXPECT_FALSE(IntegralDoubleToInt(1e19, &v));
  EXPECT_FALSE(IntegralDoubleToInt(std::numeric_limits<double>::quiet_NaN(), &v));
  EXPECT_FALSE(IntegralDoubleToInt(std::numeric_limits<double>::infinity(), &v));
}

TEST(JsonValueTest, Strings) {
  EXPECT_EQ(StringOf(R"("plain")"), "plain");
  EXPECT_EQ(StringOf(R"("a\"b")"), "a\"b");                         // unescaped by simdjson
  EXPECT_EQ(StringOf(R"("a\"b")", /*no_escapes=*/true), "a\\\"b");  // the caller's promise
  EXPECT_EQ(StringOf("12"), std::nullopt);
}

// GetJsonText's text of the JSON value `json`.
std::optional<std::string> TextOf(const std::string& json) {
  od::parser parser;
  simdjson::padded_string padded("[" + json + "]");
  od::document doc;
  od::array arr;
  od::value v;
  std::string out;
  if (parser.iterate(padded).get(doc) || doc.get_array().get(arr) || arr.at(0).get(v) ||
      !GetJsonText(v, &out)) {
    return std::nullopt;
  }
  return out;
}

std::optional<int64_t> IntOfText(std::string_view text) {
  int64_t out = -12345;
  if (!ParseJsonIntText(text, &out)) {
    EXPECT_EQ(out, -12345) << text << ": *out changed on failure";
    return std::nullopt;
  }
  return out;
}

TEST(JsonValueTest, NumbersFollowTheJsonGrammar) {
  for (const char* good : {"0", "-0", "12", "-1.5", "1e3", "1E+3", "2.5e-7", "0.0"}) {
    EXPECT_TRUE(IsJsonNumber(good)) << good;
  }
  for (const char* bad : {"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x1", "1.5.2", "nan"}) {
    EXPECT_FALSE(IsJsonNumber(bad)) << bad;
  }
}

// Numbers written as text (ids as strings, the NCCL profiler's bare values) read
// as GetJsonInt reads the same number.
TEST(JsonValueTest, IntegerTextsFollowTheIntegerRule) {
  for (const char* t : {"1000", "1000.0", "1.0e3", "1e3", "-7", "9223372036854775807"}) {
    EXPECT_EQ(IntOfText(t), IntOf(t)) << t;
    EXPECT_TRUE(IntOfText(t).has_value()) << t;
  }
  EXPECT_EQ(IntOfText("007"), 7);  // leading zeros: what std::from_chars reads
  for (const char* t : {"", "1000.5", "1e19", "abc", "12 ", " 12", "+1", "0x10", "nan"}) {
    EXPECT_EQ(IntOfText(t), std::nullopt) << t;
  }
}

TEST(JsonValueTest, AnyValueAsText) {
  EXPECT_EQ(TextOf(R"("a\"b")"), "a\"b");
  EXPECT_EQ(TextOf("12.50 "), "12.50");  // as written, without trailing space
  EXPECT_EQ(TextOf("true"), "true");
  EXPECT_EQ(TextOf("null"), "null");
  EXPECT_EQ(TextOf(R"({"a": [1, 2]})"), R"({"a": [1, 2]})");
  EXPECT_EQ(TextOf("[1,{}]"), "[1,{}]");
}

}  // namespace
}  // namespace shardscope::trace
