#include "config/prompts.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/config/experiments_text.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

using testing::LoadExperimentsText;

std::string Tiny(const std::string& body) {
  return "experiments:\n  - name: p\n    model: tiny-dense\n    hardware: local-cpu\n"
         "    parallelism: {tp_size: 1}\n" +
         body;
}

TEST(PromptsTest, FileLinesInEveryLayout) {
  auto p = ParsePromptsText("# comment\n[1, 2, 3]\n\n4 5 6\n7,8,9\r\n", "p.txt", 10);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, (Prompts{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}));
}

TEST(PromptsTest, FileErrorsNameTheLine) {
  auto bad = ParsePromptsText("1 2\n3 x\n", "p.txt", 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "p.txt:2: expected token ids (integers), got 'x'");
  auto big = ParsePromptsText("1 2\n3 10\n", "p.txt", 10);
  EXPECT_EQ(big.status().message(),
            "p.txt:2: token id 10 is outside the model's vocabulary [0, 10)");
  EXPECT_EQ(ParsePromptsText("[1, 2\n", "p.txt", 10).status().message(),
            "p.txt:1: '[' without a closing ']'");
  EXPECT_EQ(ParsePromptsText("# none\n", "p.txt", 10).status().message(),
            "p.txt: no prompts in the file");
  EXPECT_FALSE(ParsePromptsText("[]\n", "p.txt", 10).ok());
}

TEST(PromptsTest, GivenPromptsSetBatchAndSequence) {
  auto e = LoadExperimentsText(Tiny("    prompts: [[1, 2, 3], [4, 5, 6]]\n"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)[0].workload.batch_size, 2);
  EXPECT_EQ((*e)[0].workload.sequence_length, 3);
  EXPECT_EQ((*e)[0].workload.prompts, (Prompts{{1, 2, 3}, {4, 5, 6}}));
}

TEST(PromptsTest, ConfigErrorsNameTheField) {
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {"    prompts: [[1, 2], [3]]\n",
       "exp.yaml: experiment 'p': field 'prompts': prompt 1 has 1 tokens but prompt 0 has 2: "
       "every request of the fixed batch is prefilled together, so prompts must have the same "
       "length"},
      {"    prompts: [[1, 512]]\n",
       "exp.yaml: experiment 'p': field 'prompts[0][1]': token id 512 is outside the model's "
       "vocabulary [0, 512)"},
      {"    prompts: [[1, 2]]\n    batch_size: 2\n",
       "exp.yaml: experiment 'p': field 'prompts': 1 prompts but batch_size is 2"},
      {"    prompts: [[1, 2]]\n    sequence_length: 3\n",
       "exp.yaml: experiment 'p': field 'prompts': prompts of 2 tokens but sequence_length is 3"},
      {"    prompts: {a: 1}\n",
       "exp.yaml: experiment 'p': field 'prompts': expected a list of token-id lists or the path "
       "of a prompts file"},
      {"    prompts: [1, 2]\n",
       "exp.yaml: experiment 'p': field 'prompts[0]': expected a non-empty list of token ids"},
  };
  for (const Case& c : cases) {
    auto e = LoadExperimentsText(Tiny(c.body));
    ASSERT_FALSE(e.ok()) << c.body;
    EXPECT_EQ(e.status().message(), c.message);
  }
}

TEST(PromptsTest, FileRelativeToTheConfig) {
  testing::ScratchDir scratch("prompts_test");
  const fs::path dir = scratch.path();
  std::ofstream(dir / "p.txt") << "1 2\n3 4\n";
  auto e = LoadExperimentsText(Tiny("    prompts: p.txt\n"), (dir / "exp.yaml").string());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)[0].workload.prompts, (Prompts{{1, 2}, {3, 4}}));
  auto missing = LoadExperimentsText(Tiny("    prompts: none.txt\n"), (dir / "exp.yaml").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read the prompts file"), std::string::npos);
  std::ofstream(dir / "bad.txt") << "1 2\n3 999\n";
  auto bad = LoadExperimentsText(Tiny("    prompts: bad.txt\n"), (dir / "exp.yaml").string());
  EXPECT_NE(bad.status().message().find("bad.txt:2: token id 999"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace shardscope
