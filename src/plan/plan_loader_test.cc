// Loading with validation: a plan that does not fit its model or cluster is
// rejected with the file, the experiment and the field named, on one line.
#include "plan/plan_loader.h"

#include <gtest/gtest.h>

#include "core/yaml_reader.h"

namespace shardscope {
namespace {

StatusOr<std::vector<Experiment>> Load(const std::string& text) {
  auto node = ParseYaml(text, "exp.yaml");
  if (!node.ok()) return node.status();
  return ValidExperimentsFromYaml(*node, "exp.yaml");
}

struct BadCase {
  const char* label;
  const char* body;      // experiment fields after the name
  const char* expected;  // substring of the error
};

TEST(PlanLoaderTest, InvalidPlansNameFileExperimentAndField) {
  const BadCase cases[] = {
      {"tp vs heads",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {tp_size: 3}\n"
       "    batch_size: 1\n    sequence_length: 8\n",
       "field 'parallelism.tp_size': tp 3 does not divide the 32 attention heads"},
      {"world too big",
       "model: llama-3.1-8b\n    hardware: {base: h100-sxm, nodes: 1}\n"
       "    parallelism: {tp_size: 8, pp_size: 2}\n    batch_size: 1\n"
       "    sequence_length: 8\n",
       "field 'parallelism': world size"},
      {"sp vs prompt",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n"
       "    parallelism: {seq_parallel_size: 4}\n    batch_size: 1\n"
       "    sequence_length: 12\n",
       "field 'parallelism.seq_parallel_size': the prompt of 12 tokens does not split into 8"},
      {"ep on dense",
       "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {ep_size: 2}\n"
       "    batch_size: 2\n    sequence_length: 8\n",
       "field 'parallelism.ep_size': expert parallelism needs an MoE model"},
      {"ep vs experts",
       "model: mixtral-8x7b\n    hardware: h100-sxm\n    parallelism: {ep_size: 3}\n"
       "    batch_size: 3\n    sequence_length: 8\n",
       "field 'parallelism.ep_size': ep 3 does not divide the 8 routed experts"},
      {"pp vs layers",
       "model: {base: llama-3.1-8b, num_layers: 2}\n    hardware: h100-sxm\n"
       "    parallelism: {pp_size: 4}\n    batch_size: 4\n    sequence_length: 8\n",
       "field 'parallelism.pp_size': 4 pipeline stages exceed the model's 2 layers"},
      {"bad stage map",
       "model: {base: llama-3.1-8b, num_layers: 3}\n    hardware: h100-sxm\n"
       "    parallelism: {pp_size: 2, layer_to_stage: [0, 1, 0]}\n"
       "    batch_size: 4\n    sequence_length: 8\n",
       "field 'parallelism.layer_to_stage': layer 2 maps to stage 0 after stage 1"},
  };
  for (const BadCase& c : cases) {
    std::string text = std::string("experiments:\n  - name: bad\n    ") + c.body;
    auto exps = Load(text);
    ASSERT_FALSE(exps.ok()) << c.label;
    const std::string& msg = exps.status().message();
    EXPECT_EQ(msg.rfind("exp.yaml: experiment 'bad': ", 0), 0u) << c.label << ": " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.label << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.label << ": one line";
  }
}

constexpr char kTwoBad[] = R"(
experiments:
  - name: s
    model: llama-3.1-8b
    hardware: h100-sxm
    parallelism: {tp_size: [3, 4, 5]}
    batch_size: 1
    sequence_length: 8
)";

TEST(PlanLoaderTest, EveryInvalidPointIsNamedAtOnce) {
  auto exps = Load(kTwoBad);
  ASSERT_FALSE(exps.ok());
  const std::string& msg = exps.status().message();
  EXPECT_EQ(msg.rfind("2 of 3 experiments are invalid:\n  exp.yaml: experiment 's_tp3': ", 0), 0u)
      << msg;
  EXPECT_NE(msg.find("\n  exp.yaml: experiment 's_tp5': "), std::string::npos) << msg;
}

TEST(PlanLoaderTest, InvalidPointsCanBeSkipped) {
  auto node = ParseYaml(kTwoBad, "exp.yaml");
  ASSERT_TRUE(node.ok());
  std::vector<Status> skipped;
  auto exps = ValidExperimentsFromYaml(*node, "exp.yaml", {}, &skipped);
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  ASSERT_EQ(exps->size(), 1u);
  EXPECT_EQ((*exps)[0].name, "s_tp4");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[1].message().find("'s_tp5'"), std::string::npos);
}

TEST(PlanLoaderTest, ValidPlansLoad) {
  auto exps = Load(R"(
experiments:
  - {name: x, model: llama-3.1-8b, hardware: h100-sxm, parallelism: {tp_size: 8}, batch_size: 1, sequence_length: 8}
)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  EXPECT_EQ(exps->size(), 1u);
}

}  // namespace
}  // namespace shardscope
