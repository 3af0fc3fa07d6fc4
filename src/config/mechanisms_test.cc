#include "config/mechanisms.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/experiment_loader.h"
#include "testing/config/experiments_text.h"
#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

StatusOr<std::vector<Experiment>> Load(const std::string& experiment) {
  return testing::LoadExperimentsText(R"(
defaults: {model: deepseek-v3, hardware: h800, batch_size: 144, sequence_length: 8,
           parallelism: {ep_size: 144}}
experiments:
  - name: x
    )" + experiment + "\n");
}

std::string ErrorOf(const std::string& experiment) {
  auto e = Load(experiment);
  return e.ok() ? "" : e.status().message();
}

TEST(MechanismsTest, TokensPerStepHandComputed) {
  SpeculativeSpec s;
  EXPECT_EQ(s.TokensPerStep(), 1.0);  // disabled
  s.method = SpeculativeMethod::kMtp;
  s.draft_tokens = 3;
  s.acceptance = {0.8, 0.5, 0.25};
  // 1 + 0.8 + 0.8·0.5 + 0.8·0.5·0.25 = 1 + 0.8 + 0.4 + 0.1 = 2.3
  EXPECT_DOUBLE_EQ(s.TokensPerStep(), 2.3);
}

TEST(MechanismsTest, ReadsSpeculativeTwoBatchOverlapAndRedundantExperts) {
  auto exps = Load(R"(parallelism: {ep_size: 144, redundant_experts: 32}
    speculative: {method: mtp, draft_tokens: 1, acceptance_rate: 0.85}
    two_batch_overlap: true)");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  const Experiment& e = (*exps)[0];
  EXPECT_EQ(e.parallel.redundant_experts, 32);
  EXPECT_TRUE(e.two_batch_overlap);
  EXPECT_EQ(e.speculative.method, SpeculativeMethod::kMtp);
  EXPECT_EQ(e.speculative.acceptance, std::vector<double>{0.85});
  EXPECT_DOUBLE_EQ(e.speculative.TokensPerStep(), 1.85);
  const auto none = Load("description: plain");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)[0].speculative.enabled());
  EXPECT_FALSE((*none)[0].two_batch_overlap);
}

TEST(MechanismsTest, BadFieldsAreNamed) {
  EXPECT_NE(ErrorOf("speculative: {method: eagle, draft_tokens: 1, acceptance_rate: 0.5}")
                .find("field 'speculative.method': unknown speculative method 'eagle'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("speculative: {method: mtp, draft_tokens: 1, acceptance_rate: 0.5, "
                    "draft_model: llama-3.2-1b}")
                .find("field 'speculative.draft_model': is for method: draft only"),
            std::string::npos);
  EXPECT_NE(ErrorOf("speculative: {method: mtp, draft_tokens: 2, acceptance: [0.5]}")
                .find("field 'speculative.acceptance': needs one probability per draft token"),
            std::string::npos);
  EXPECT_NE(ErrorOf("speculative: {method: mtp, draft_tokens: 1, acceptance_rate: 1.5}")
                .find("field 'speculative.acceptance_rate': 1.5 is not a probability"),
            std::string::npos);
  EXPECT_NE(ErrorOf("speculative: {method: mtp, draft_tokens: 1}").find("give either acceptance"),
            std::string::npos);
  EXPECT_NE(ErrorOf("model: {base: deepseek-v3, num_mtp_layers: 0}\n    speculative: {method: "
                    "mtp, draft_tokens: 1, acceptance_rate: 0.5}")
                .find("has no multi-token-prediction module"),
            std::string::npos);
  EXPECT_NE(ErrorOf("parallelism: {ep_size: 144, redundant_experts: 32, expert_placement: {0: 0}}")
                .find("field 'parallelism.redundant_experts': redundant experts are placed by "
                      "EPLB"),
            std::string::npos);
  EXPECT_NE(ErrorOf("parallelism: {ep_size: 144, redundant_experts: -1}")
                .find("field 'parallelism.redundant_experts'"),
            std::string::npos);
}

// A Llama-3.1-8B target at tp 2 with the given `speculative:` map.
std::string DraftError(const std::string& speculative, const std::string& extra = "") {
  return ErrorOf(
      "model: llama-3.1-8b\n    parallelism: {tp_size: 2, ep_size: 1}\n    hardware: h100-sxm\n"
      "    speculative: " +
      speculative + extra);
}

TEST(MechanismsTest, ReadsADraftModelFromTheZoo) {
  auto exps = Load(R"(model: llama-3.1-8b
    hardware: h100-sxm
    parallelism: {tp_size: 2, ep_size: 1}
    speculative: {method: draft, draft_model: llama-3.2-1b, draft_tokens: 3, acceptance_rate: 0.7})");
  ASSERT_TRUE(exps.ok()) << exps.status().message();
  const SpeculativeSpec& s = (*exps)[0].speculative;
  EXPECT_TRUE(s.draft());
  EXPECT_FALSE(s.mtp());
  EXPECT_EQ(s.draft_model.name, "llama-3.2-1b");
  EXPECT_EQ(s.draft_model.num_layers, 16);
  EXPECT_EQ(s.draft_tp, 0);  // the target's by default
  EXPECT_EQ(s.DraftTp(2), 2);
  EXPECT_DOUBLE_EQ(s.TokensPerStep(), 1 + 0.7 + 0.49 + 0.343);
  const nlohmann::json j = SpeculativeToJson(s);
  EXPECT_EQ(j["method"], "draft");
  EXPECT_EQ(j["draft_model"], "llama-3.2-1b");
  EXPECT_FALSE(j.contains("draft_tensor_parallel"));
  auto one = Load(R"(model: llama-3.1-8b
    hardware: h100-sxm
    parallelism: {tp_size: 2, ep_size: 1}
    speculative: {method: draft, draft_model: {base: llama-3.2-1b, num_layers: 2},
                  draft_tensor_parallel: 1, draft_tokens: 1, acceptance: [0.5]})");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ((*one)[0].speculative.draft_tp, 1);
  EXPECT_EQ((*one)[0].speculative.draft_model.num_layers, 2);  // an override of the zoo's
}

TEST(MechanismsTest, BadDraftModelFieldsAreNamed) {
  const std::string k1 = ", draft_tokens: 1, acceptance_rate: 0.5}";
  EXPECT_NE(DraftError("{method: draft" + k1)
                .find("field 'speculative.draft_model': is required with method: draft"),
            std::string::npos);
  EXPECT_NE(DraftError("{method: draft, draft_model: llama-0b" + k1)
                .find("field 'speculative.draft_model': unknown model 'llama-0b'"),
            std::string::npos);
  EXPECT_NE(DraftError("{method: draft, draft_model: tiny-dense" + k1)
                .find("field 'speculative.draft_model': draft model 'tiny-dense' has a vocabulary "
                      "of 512 tokens, target model 'llama-3.1-8b' of 128256"),
            std::string::npos);
  EXPECT_NE(DraftError("{method: draft, draft_model: {base: mixtral-8x7b, vocab_size: 128256}" + k1)
                .find("field 'speculative.draft_model': draft model 'mixtral-8x7b' is a mixture of "
                      "experts"),
            std::string::npos);
  EXPECT_NE(DraftError("{method: draft, draft_model: llama-3.2-1b, draft_tensor_parallel: 4" + k1)
                .find("field 'speculative.draft_tensor_parallel': is 4; it must be 1 or the "
                      "target's tensor-parallel size (2)"),
            std::string::npos);
  EXPECT_NE(
      DraftError(
          "{method: draft, draft_model: {base: llama-3.2-1b, num_heads: 9, num_kv_heads: 1}" + k1)
          .find("field 'speculative.draft_tensor_parallel': 2 does not split draft model"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(
          "model: llama-3.1-8b\n    hardware: h100-sxm\n    parallelism: {pp_size: 2, ep_size: 1}\n"
          "    speculative: {method: draft, draft_model: llama-3.2-1b" +
          k1)
          .find("field 'speculative.method': a draft model with pipeline parallelism (pp 2) "
                "is not modelled"),
      std::string::npos);
  EXPECT_NE(DraftError("{method: draft, draft_model: {base: llama-3.2-1b, max_position_embeddings: "
                       "4}" +
                       k1)
                .find("field 'speculative.draft_model': sequence_length + tokens_to_generate"),
            std::string::npos);
}

TEST(MechanismsTest, ExpertLoadFileRelativeToTheExperimentsFile) {
  namespace fs = std::filesystem;
  testing::ScratchDir scratch("eplb_load");
  const fs::path dir = scratch.path();
  auto write = [&](const std::string& load) {
    std::ofstream(dir / "load.csv", std::ios::trunc) << load;
    std::ofstream(dir / "exp.yaml", std::ios::trunc) << R"(
experiments:
  - name: x
    model: {base: deepseek-v2-lite, num_layers: 3}
    hardware: h100-sxm
    batch_size: 8
    sequence_length: 8
    parallelism: {ep_size: 4, redundant_experts: 4, expert_load: load.csv}
)";
    return LoadExperiments((dir / "exp.yaml").string());
  };
  std::string row;  // deepseek-v2-lite: 64 routed experts, first layer dense
  for (int i = 0; i < 64; ++i) row += (i ? "," : "") + std::to_string(64 - i);
  auto one = write("# measured\n" + row + "\n");
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ((*one)[0].parallel.expert_load.size(), 1u);
  EXPECT_EQ((*one)[0].parallel.expert_load[0][0], 64);
  auto per_layer = write(row + "\n\n" + row + "\n");  // 2 MoE layers
  ASSERT_TRUE(per_layer.ok()) << per_layer.status().message();
  EXPECT_EQ((*per_layer)[0].parallel.expert_load.size(), 2u);
  auto short_row = write("1 2 3\n");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.status().message().find(
                "field 'parallelism.expert_load': " + (dir / "load.csv").string() +
                ": line 1: 3 loads, expected one per routed expert (64)"),
            std::string::npos)
      << short_row.status().message();
  auto bad = write(row + ",x\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'x' is not a non-negative number"), std::string::npos);
  auto three = write(row + "\n" + row + "\n" + row + "\n");
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("3 lines of loads; expected one"), std::string::npos);
}

}  // namespace
}  // namespace shardscope
