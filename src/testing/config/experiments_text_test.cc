#include "testing/config/experiments_text.h"

#include <gtest/gtest.h>

namespace shardscope::testing {
namespace {

TEST(ExperimentsTextTest, LoadsTheDocumentsExperiments) {
  auto exps = LoadExperimentsText(R"(
defaults: {hardware: h100-sxm, model: llama-3.1-8b, batch_size: 2, sequence_length: 64,
           parallelism: {strategy: tensor, tp_size: 1}}
experiments:
  - name: a
  - name: b
    batch_size: 4
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 2u);
  EXPECT_EQ((*exps)[0].name, "a");
  EXPECT_EQ((*exps)[1].workload.batch_size, 4);
}

TEST(ExperimentsTextTest, ErrorsNameTheGivenPath) {
  auto bad = LoadExperimentsText("experiments: [", "my.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("my.yaml", 0), 0u) << bad.status().message();
  auto empty = LoadExperimentsText("experiments: []\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("exp.yaml"), std::string::npos)
      << empty.status().message();
}

}  // namespace
}  // namespace shardscope::testing
