#include "config/request_file.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

TEST(RequestFileTest, ReadsOurCsvColumnsInAnyOrder) {
  auto r = ParseRequestFile(
      "# comment\nprompt_tokens,arrival_time_s,output_tokens,extra\n100,1.5,10,x\n\n200,2.0,20,y\n",
      "req.csv", 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_DOUBLE_EQ((*r)[0].arrival, 0);  // relative to the first request
  EXPECT_DOUBLE_EQ((*r)[1].arrival, 0.5);
  EXPECT_EQ((*r)[1].prompt_tokens, 200);
  EXPECT_EQ((*r)[1].output_tokens, 20);
}

// The public Azure LLM inference trace layout (2023 and 2024 releases).
TEST(RequestFileTest, ReadsTheAzureTraceColumns) {
  auto r = ParseRequestFile(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\n"
      "2023-11-16 18:15:50.9951690,396,109\n"
      "2023-11-17 00:00:00,10,1\n",
      "AzureLLMInferenceTrace_conv.csv", 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_NEAR((*r)[1].arrival, 50.9951690 - 46.6805900, 1e-6);
  // 18:15:46.68059 → midnight: 5 h 44 min 13.31941 s.
  EXPECT_NEAR((*r)[2].arrival, 5 * 3600 + 44 * 60 + 13.31941, 1e-6);
  EXPECT_EQ((*r)[0].prompt_tokens, 374);
  EXPECT_EQ((*r)[0].output_tokens, 44);
}

// issue 33: a request whose first sampled token is EOS has 0 output tokens;
// every serving benchmark has some. It is read, not refused.
TEST(RequestFileTest, AcceptsZeroOutputTokens) {
  auto r = ParseRequestFile("arrival_time_s,prompt_tokens,output_tokens\n0,100,0\n1,50,3\n",
                            "req.csv", 128);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].output_tokens, 0);
  auto j = ParseRequestFile("{\"arrival_time_s\": 0, \"prompt_tokens\": 8, \"output_tokens\": 0}\n",
                            "req.jsonl", 0);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)[0].output_tokens, 0);
}

TEST(RequestFileTest, ReadsJsonl) {
  auto r = ParseRequestFile(
      "{\"arrival_time_s\": 0.25, \"prompt_tokens\": 8, \"output_tokens\": 4}\n"
      "{\"arrival_time_s\": 1, \"prompt_tokens\": 16, \"output_tokens\": 2}\n",
      "req.jsonl", 0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_DOUBLE_EQ((*r)[1].arrival, 0.75);
  EXPECT_EQ((*r)[1].prompt_tokens, 16);
}

TEST(RequestFileTest, ErrorsNameTheFileLineAndField) {
  struct Case {
    const char* text;
    const char* expected;
  } cases[] = {
      {"arrival_time_s,prompt_tokens\n0,5\n", "req: line 1: missing column 'output_tokens'"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,5,1\n-1,5,1\n",
       "req: line 3: field 'arrival_time_s': negative time"},
      {"arrival_time_s,prompt_tokens,output_tokens\n2,5,1\n1,5,1\n",
       "req: line 3: field 'arrival_time_s': time 1 is before the previous line's 2"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,five,1\n",
       "req: line 2: field 'prompt_tokens': expected a number, got 'five'"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,5\n",
       "req: line 2: field 'output_tokens' is missing"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,5,-1\n",
       "req: line 2: field 'output_tokens': needs 0 tokens or more, got -1"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,0,3\n",
       "req: line 2: field 'prompt_tokens': needs at least 1 token"},
      {"arrival_time_s,prompt_tokens,output_tokens\n0,100,29\n",
       "req: line 2: field 'prompt_tokens': 100 prompt + 29 output tokens exceed the model's "
       "context "
       "of 128 tokens"},
      {"{\"arrival_time_s\": 0, \"prompt_tokens\": 3}\n",
       "req: line 1: missing field 'output_tokens'"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n",
       "req: line 2: field 'TIMESTAMP': expected seconds or a date-time"},
      {"", "req: empty request file"},
  };
  for (const Case& c : cases) {
    auto r = ParseRequestFile(c.text, "req", 128);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos)
        << r.status().message() << "\n  expected: " << c.expected;
  }
}

// Fuzzing finding (issue 35): a token count beyond int64 was cast from double (undefined
// behaviour, a garbage count); fuzz/regressions/request_file_fuzzer/tokens_beyond_int64.csv.
TEST(RequestFileTest, TokenCountBeyondInt64IsAnError) {
  for (const char* count : {"44777777777777777777777777777777777777777", "1e30", "-1e300"}) {
    SCOPED_TRACE(count);
    auto r = ParseRequestFile(
        std::string("arrival_time_s,prompt_tokens,output_tokens\n0,128,") + count + "\n", "big.csv",
        0);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("big.csv: line 2: field 'output_tokens': expected a whole "
                                        "number of tokens, got '"),
              std::string::npos)
        << r.status().message();
  }
}

// issue 35: a repeated header column silently kept the first.
TEST(RequestFileTest, DuplicateColumnIsAnError) {
  auto r = ParseRequestFile(
      "arrival_time_s,prompt_tokens,output_tokens,prompt_tokens\n0,128,8,64\n", "dup.csv", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "dup.csv: line 1: duplicate column 'prompt_tokens' (columns 2 and 4)");
}

TEST(RequestFileTest, DateTimes) {
  auto t = ParseDateTimeSeconds("1970-01-02 00:00:01.5");
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(*t, 86401.5);
  auto leap = ParseDateTimeSeconds("2024-03-01T00:00:00");
  auto before = ParseDateTimeSeconds("2024-02-28 00:00:00");
  ASSERT_TRUE(leap.ok() && before.ok());
  EXPECT_DOUBLE_EQ(*leap - *before, 2 * 86400.0);  // 2024 is a leap year
  EXPECT_FALSE(ParseDateTimeSeconds("2024-13-01 00:00:00").ok());
  EXPECT_FALSE(ParseDateTimeSeconds("12:00").ok());
}

}  // namespace
}  // namespace shardscope
