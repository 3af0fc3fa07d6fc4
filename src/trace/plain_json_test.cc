#include "trace/plain_json.h"

#include <gtest/gtest.h>

#include <string>

#include "trace/trace_reader.h"

namespace shardscope::trace {
namespace {

// A cursor over `text`, with the 16 readable bytes past its end it needs.
struct Padded {
  explicit Padded(const std::string& text) : buf(text + std::string(16, ' ')), size(text.size()) {}
  PlainJsonCursor Cursor() const { return PlainJsonCursor(buf.data(), buf.data() + size); }
  std::string buf;
  size_t size;
};

TEST(PlainJsonTest, DecimalIntsAreWhatParseDecimalIntAccepts) {
  int64_t v = 0;
  Padded a("-42,");
  PlainJsonCursor c = a.Cursor();
  ASSERT_TRUE(c.DecimalInt(&v));
  EXPECT_EQ(v, -42);
  EXPECT_TRUE(c.Eat(','));
  for (const char* bad : {"12a", "1.5", "1e3", "-", "1234567890123456789", "\"1\""}) {
    Padded p(bad);
    PlainJsonCursor b = p.Cursor();
    EXPECT_FALSE(b.DecimalInt(&v)) << bad;
  }
  Padded big("123456789012345678}");  // 18 digits: the most it reads
  PlainJsonCursor d = big.Cursor();
  ASSERT_TRUE(d.DecimalInt(&v));
  EXPECT_EQ(v, 123456789012345678);
}

// The multiply-and-shift digit reader against a digit loop, every length.
TEST(PlainJsonTest, DigitsParseLikeALoop) {
  uint32_t seed = 99;
  auto next = [&seed] {
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) & 0x7fff;
  };
  for (int round = 0; round < 20000; ++round) {
    const int n = 1 + round % 15;
    std::string digits;
    uint64_t want = 0;
    for (int i = 0; i < n; ++i) {
      const int d = round % 7 == 0 ? 9 : static_cast<int>(next() % 10);
      digits += static_cast<char>('0' + d);
      want = want * 10 + static_cast<uint64_t>(d);
    }
    Padded p(digits + ",x");
    EXPECT_EQ(PlainJsonCursor::DigitRun(p.buf.data()), n) << digits;
    EXPECT_EQ(PlainJsonCursor::ParseDigits(p.buf.data(), n), want) << digits;
    int64_t v = 0;
    PlainJsonCursor c = p.Cursor();
    ASSERT_TRUE(c.DecimalInt(&v)) << digits;
    EXPECT_EQ(v, static_cast<int64_t>(want)) << digits;
  }
}

// Micros reads what ParseMicrosToNs reads of the same token.
TEST(PlainJsonTest, MicrosEqualParseMicrosToNs) {
  for (const char* t : {"294.000", "9.956", "0.5", "12.34", "7", "1.", "1.2345", "-3.5", "1e3",
                        "00012.5", "999999999999999.999", "9999999999999999.9", "1.5x", "x"}) {
    for (const char* after : {",", "}", " ,", ""}) {
      Padded p(std::string(t) + after);
      PlainJsonCursor c = p.Cursor();
      int64_t got = -1, want = -1;
      const bool ok = c.Micros(&got, ParseMicrosToNs);
      std::string_view token(t);
      const bool token_ok = token.find('x') == std::string_view::npos;
      const bool want_ok = token_ok && ParseMicrosToNs(token, &want);
      EXPECT_EQ(ok, want_ok) << t << after;
      if (ok && want_ok) {
        EXPECT_EQ(got, want) << t << after;
      }
    }
  }
}

TEST(PlainJsonTest, StringsAreAsciiWithoutEscapes) {
  std::string_view s;
  Padded plain(R"("rank 0","x")");
  PlainJsonCursor c = plain.Cursor();
  ASSERT_TRUE(c.String(&s));
  EXPECT_EQ(s, "rank 0");
  for (const char* unsure : {"\"a\\\"b\"", "\"caf\xc3\xa9\"", "\"tab\t\"", "\"open"}) {
    Padded p(unsure);
    PlainJsonCursor u = p.Cursor();
    EXPECT_FALSE(u.String(&s)) << unsure;
  }
}

TEST(PlainJsonTest, KeysMatchOnlyExactly) {
  KeyPattern pid;
  std::memcpy(pid.bytes, "\"pid\":", 6);
  pid.size = 6;
  Padded a(R"("pid":3)");
  PlainJsonCursor c = a.Cursor();
  EXPECT_TRUE(c.MatchKey(pid));
  int64_t v = 0;
  ASSERT_TRUE(c.DecimalInt(&v));
  EXPECT_EQ(v, 3);
  for (const char* other : {R"("pidx":3)", R"("pid" :3)", R"("pi)"}) {
    Padded p(other);
    PlainJsonCursor o = p.Cursor();
    EXPECT_FALSE(o.MatchKey(pid)) << other;
  }
}

TEST(PlainJsonTest, SkipsValidValuesOnly) {
  for (const char* good : {R"({"a":[1,{"b":null}],"c":"d"})", "[ ]", "true", "-1.5e3", R"("")"}) {
    Padded p(good);
    PlainJsonCursor c = p.Cursor();
    EXPECT_TRUE(c.SkipValue() && c.at_end()) << good;
  }
  for (const char* bad : {R"({"a":})", "[1,]", "tru", "01", R"({"a" 1})", "[1 2]"}) {
    Padded p(bad);
    PlainJsonCursor c = p.Cursor();
    EXPECT_FALSE(c.SkipValue() && c.at_end()) << bad;
  }
  std::string deep = std::string(40, '[') + std::string(40, ']');
  Padded p(deep);
  PlainJsonCursor c = p.Cursor();
  EXPECT_FALSE(c.SkipValue());  // too deep to be sure: left to simdjson
}

}  // namespace
}  // namespace shardscope::trace
