#include "trace/read_stat.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "trace/read_stats.h"

namespace shardscope::trace {
namespace {

TEST(ReadStatTest, TableIsInEnumOrderWithUniqueSnakeCaseNames) {
  ASSERT_EQ(AllStats().size(), kNumStats);
  std::set<std::string_view> names;
  for (size_t i = 0; i < kNumStats; ++i) {
    const StatInfo& info = AllStats()[i];
    EXPECT_EQ(static_cast<size_t>(info.stat), i);
    EXPECT_EQ(&InfoOf(info.stat), &info);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.text.empty()) << info.name;
    EXPECT_EQ(info.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"),
              std::string_view::npos)
        << info.name;
  }
}

// docs/trace_format.md's "Read statistics" table names every stat with its
// severity and text.
TEST(ReadStatTest, EveryStatIsDocumented) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/docs/trace_format.md");
  ASSERT_TRUE(in) << "docs/trace_format.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const StatInfo& info : AllStats()) {
    std::string text(info.text);
    for (size_t p = 0; (p = text.find('|', p)) != std::string::npos; p += 2) text.insert(p, "\\");
    const std::string row = "| `" + std::string(info.name) + "` | " +
                            std::string(SeverityName(info.severity)) + " | " + text + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/trace_format.md lacks the row " << row;
  }
}

TEST(ReadStatTest, SeveritiesHaveTheirNames) {
  EXPECT_EQ(SeverityName(Severity::kSkipped), "skipped");
  EXPECT_EQ(SeverityName(Severity::kIgnored), "ignored");
  EXPECT_EQ(SeverityName(Severity::kNote), "note");
}

TEST(ReadStatTest, CountsByStatAndByTextUnderTheirSeverity) {
  ReadStats s;
  s.Count(Stat::kBadArgValue, "step");
  s.CountN(Stat::kPhNotAnalysed, 3, "i");
  s.Count(Stat::kNcclUnknownDatatype, "ncclFloat128", "Send");
  s.Count(Stat::kMissingTs);
  EXPECT_EQ(s.count(Stat::kBadArgValue), 1);
  EXPECT_EQ(s.count(Stat::kPhNotAnalysed), 3);
  EXPECT_EQ(s.skipped.at("bad value of args.step"), 1);
  EXPECT_EQ(s.skipped.at("missing ts"), 1);
  EXPECT_EQ(s.ignored.at("ph 'i'"), 3);
  EXPECT_EQ(s.notes.at("unknown NCCL datatype \"ncclFloat128\": Send kept as comm time only"), 1);
  EXPECT_EQ(s.skipped_total(), 2);
  EXPECT_TRUE(s.examples.empty());  // Count keeps no example
}

TEST(ReadStatTest, SkipKeepsTheFirstFiveExamplesWithTheirPlace) {
  ReadStats s;
  s.Skip(Stat::kMissingPh, {EventPlace::kByte, 10});
  s.Skip(Stat::kNotAnObject, {EventPlace::kEvent, 3});
  s.Skip(Stat::kNcclLineNotObject, {EventPlace::kLine, 7});
  s.Skip(SkipReason{Stat::kBadArgValue, "layer"}, {EventPlace::kByte, 99});
  for (int i = 0; i < 4; ++i) s.Skip(Stat::kNegativeDur, {EventPlace::kByte, 100 + i});
  EXPECT_EQ(s.skipped_total(), 8);
  EXPECT_EQ(s.count(Stat::kNegativeDur), 4);
  ASSERT_EQ(s.examples.size(), ReadStats::kMaxExamples);
  EXPECT_EQ(s.examples[0], "byte 10: missing ph");
  EXPECT_EQ(s.examples[1], "event #3: event is not a JSON object");
  EXPECT_EQ(s.examples[2], "line 7: line that is not a JSON object (truncated?)");
  EXPECT_EQ(s.examples[3], "byte 99: bad value of args.layer");
  EXPECT_EQ(s.examples[4], "byte 100: negative dur");
}

TEST(ReadStatTest, MergeAddsTheTypedCounts) {
  ReadStats a, b;
  a.Skip(Stat::kMissingPid, {EventPlace::kByte, 1});
  b.Skip(Stat::kMissingPid, {EventPlace::kByte, 2});
  b.Count(Stat::kUnknownDim);
  MergeReadStats(b, &a);
  EXPECT_EQ(a.count(Stat::kMissingPid), 2);
  EXPECT_EQ(a.count(Stat::kUnknownDim), 1);
  EXPECT_EQ(a.skipped.at("missing pid"), 2);
  EXPECT_EQ(a.examples, (std::vector<std::string>{"byte 1: missing pid", "byte 2: missing pid"}));
}

}  // namespace
}  // namespace shardscope::trace
