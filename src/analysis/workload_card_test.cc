#include "analysis/workload_card.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/run_info.h"
#include "core/yaml_reader.h"

namespace shardscope::analysis {
namespace {

using nlohmann::json;

const std::string kExampleCard =
    std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/workload_cards/llama-3.1-8b-vllm-tp4-a100.yaml";

StatusOr<json> FromText(const std::string& text) {
  ASSIGN_OR_RETURN(YAML::Node node, ParseYaml(text, "card.yaml"));
  return WorkloadCardToMetadata(node, "card.yaml");
}

TEST(WorkloadCardTest, ExampleCardFillsWhatTheMetricsRead) {
  auto meta = ReadWorkloadCard(kExampleCard);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  const json& m = *meta;
  EXPECT_EQ(m["model"]["name"], "llama-3.1-8b");
  EXPECT_EQ(m["model"]["num_kv_heads"], 8);
  EXPECT_EQ(m["workload"]["batch_size"], 64);
  EXPECT_EQ(m["workload"]["sequence_length"], 2048);  // input_len: the prompt
  EXPECT_EQ(m["workload"]["tokens_to_generate"], 128);
  EXPECT_EQ(m["parallelism"]["tp_size"], 4);
  EXPECT_EQ(m["parallelism"]["dp_size"], 1);  // dp_replicate × dp_shard
  EXPECT_EQ(m["parallelism"]["world_size"], 4);
  EXPECT_EQ(m["workload_card"]["hardware_zoo"], "a100-sxm");
  EXPECT_EQ(m["workload_card"]["framework"], "vllm 0.6.3");
  EXPECT_EQ(m["workload_card"]["communication_library"], "NCCL 2.21.5");
  EXPECT_EQ(m["workload_card"]["traces"], json::array({"json"}));
  // Figures from the zoo's a100-sxm.yaml (312 TFLOP/s bf16, 2039 GB/s) and from the card
  // (4 per node; 2400 and 200 Gbit/s = 300 and 25 GB/s; 80 GB).
  RunInfo info = RunInfo::FromMetadata(m);
  EXPECT_EQ(info.dtype, "bf16");
  ASSERT_TRUE(info.peak_flops.has_value());
  EXPECT_DOUBLE_EQ(*info.peak_flops, 312e12);
  ASSERT_TRUE(info.memory_bandwidth.has_value());
  EXPECT_DOUBLE_EQ(*info.memory_bandwidth, 2039e9);
  EXPECT_EQ(info.scale_up_domain, 4);
  EXPECT_DOUBLE_EQ(info.scale_up_bandwidth.value_or(0), 300e9);
  EXPECT_DOUBLE_EQ(info.scale_out_bandwidth.value_or(0), 25e9);
  EXPECT_EQ(info.batch_size, 64);
  EXPECT_DOUBLE_EQ(m["cluster"]["device"]["memory_bytes"].get<double>(), 80e9);
  EXPECT_EQ(m["cluster"]["num_nodes"], 1);
}

TEST(WorkloadCardTest, BandwidthOrderAndArchitectureLayoutsVary) {
  // Scale-up listed first, architecture directly under model, `dp` instead of dp_shard.
  auto meta = FromText(R"(
workload:
  model: {model_family: Llama-3.1-8B, precision: BF16, num_layers: 32, head_dim: 128}
  data: {batch_size: 32, seq_len: 1024}
  hardware:
    network_topo: {bandwidth_gbps: [2400, 200]}
    xpu_spec: {model: NVIDIA_H100, total_count: 16, count_per_node: 4}
Model-executor:
  model_plan_parallelization: {tp: 4, dp: 4, pp: null}
)");
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ((*meta)["model"]["num_layers"], 32);
  EXPECT_EQ((*meta)["workload"]["dtype"], "bf16");
  EXPECT_EQ((*meta)["workload"]["sequence_length"], 1024);
  EXPECT_EQ((*meta)["parallelism"]["dp_size"], 4);
  EXPECT_FALSE((*meta)["parallelism"].contains("pp_size"));  // null: not given
  EXPECT_EQ((*meta)["cluster"]["num_nodes"], 4);
  RunInfo info = RunInfo::FromMetadata(*meta);
  EXPECT_DOUBLE_EQ(info.scale_up_bandwidth.value_or(0), 300e9);
  EXPECT_DOUBLE_EQ(info.scale_out_bandwidth.value_or(0), 25e9);
  EXPECT_NEAR(info.peak_flops.value_or(0), 989.4e12, 1e3);  // h100-sxm.yaml, bf16 dense

  // One figure is scale-out; an unknown device keeps its name and has no peak.
  auto single = FromText(R"(
workload:
  model: {precision: fp32}
  hardware:
    network_topo: {bandwidth_gbps: [100]}
    xpu_spec: {model: mystery_xpu, count_per_node: 2}
)");
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ((*single)["workload_card"]["hardware_zoo"], nullptr);
  EXPECT_EQ((*single)["cluster"]["device"]["name"], "mystery_xpu");
  RunInfo s = RunInfo::FromMetadata(*single);
  EXPECT_DOUBLE_EQ(s.scale_out_bandwidth.value_or(0), 12.5e9);
  EXPECT_FALSE(s.scale_up_bandwidth.has_value());
  EXPECT_FALSE(s.peak_flops.has_value());
  EXPECT_EQ(s.scale_up_domain, 2);
}

TEST(WorkloadCardTest, TpuSliceKeepsItsTorusDomain) {
  auto meta = FromText(R"(
workload:
  model: {precision: bf16}
  hardware:
    xpu_spec: {model: tpu_v6e, total_count: 8, count_per_node: 4}
)");
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ((*meta)["workload_card"]["hardware_zoo"], "tpu-v6e");
  RunInfo info = RunInfo::FromMetadata(*meta);
  EXPECT_EQ(info.scale_up_domain, 8);  // the 2x4 slice of tpu-v6e.yaml, not 4 per host
  EXPECT_DOUBLE_EQ(info.peak_flops.value_or(0), 918e12);
}

TEST(WorkloadCardTest, ErrorsNameTheFileAndField) {
  struct Case {
    const char* yaml;
    const char* expected;
  };
  const Case cases[] = {
      {"workload: {data: {batch_size: many}}",
       "card.yaml: field 'workload.data.batch_size': expected an integer, got 'many'"},
      {"workload: {data: {batch_size: 0}}",
       "card.yaml: field 'workload.data.batch_size': must be at least 1, got 0"},
      {"workload: {model: {precision: mixed}}",
       "card.yaml: field 'workload.model.precision': unknown dtype 'mixed'"},
      {"workload: {hardware: {network_topo: {bandwidth_gbps: [1, 2, 3]}}}",
       "card.yaml: field 'workload.hardware.network_topo.bandwidth_gbps': expected one or two"},
      {"workload: {hardware: {network_topo: {bandwidth_gbps: [200, -5]}}}",
       "card.yaml: field 'workload.hardware.network_topo.bandwidth_gbps': must be positive"},
      {"workload: {hardware: {xpu_spec: {count_per_node: four}}}",
       "card.yaml: field 'workload.hardware.xpu_spec.count_per_node': expected an integer"},
      {"Model-executor: {model_plan_parallelization: {tp: [4]}}",
       "card.yaml: field 'Model-executor.model_plan_parallelization.tp': expected an integer"},
      {"workload: [1, 2]", "card.yaml: field 'workload': expected a map"},
      {"metric_source: {traces: json}", "card.yaml: field 'metric_source.traces': expected a list"},
  };
  for (const Case& c : cases) {
    auto meta = FromText(c.yaml);
    ASSERT_FALSE(meta.ok()) << c.yaml;
    EXPECT_EQ(meta.status().code(), StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_NE(meta.status().message().find(c.expected), std::string::npos)
        << c.yaml << "\n  got: " << meta.status().message();
  }
  auto missing = ReadWorkloadCard("/nonexistent/card.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/card.yaml: cannot read file"),
            std::string::npos);
}

TEST(WorkloadCardTest, HardwareNamesMapToTheZoo) {
  EXPECT_EQ(ZooNameForCardHardware("nvidia_a100"), "a100-sxm");
  EXPECT_EQ(ZooNameForCardHardware("NVIDIA A100-SXM4-40GB"), "a100-sxm");
  EXPECT_EQ(ZooNameForCardHardware("nvidia_h100"), "h100-sxm");
  EXPECT_EQ(ZooNameForCardHardware("H200"), "h200");
  EXPECT_EQ(ZooNameForCardHardware("tpu_v4"), "tpu-v4");
  EXPECT_EQ(ZooNameForCardHardware("TPU v5 lite"), "tpu-v5e");
  EXPECT_EQ(ZooNameForCardHardware("tpu-v6e"), "tpu-v6e");
  EXPECT_EQ(ZooNameForCardHardware("mi300x"), "");
}

TEST(WorkloadCardTest, MergeKeepsTheTracesOwnFigures) {
  const json card = json::parse(R"({
    "workload": {"batch_size": 64, "sequence_length": 2048, "dtype": "bf16"},
    "cluster": {"devices_per_node": 4, "device": {"peak_flops": {"bf16": 3.12e14}}},
    "workload_card": {"file": "card.yaml"}})");
  // Top-level layout: the trace's batch size stays, the rest is filled.
  json top = json::parse(R"({"workload": {"batch_size": 8}, "cluster": {"devices_per_node": 8}})");
  MergeMissingMetadata(&top, card);
  EXPECT_EQ(top["workload"]["batch_size"], 8);
  EXPECT_EQ(top["workload"]["sequence_length"], 2048);
  EXPECT_EQ(top["cluster"]["devices_per_node"], 8);
  EXPECT_EQ(top["workload_card"]["file"], "card.yaml");
  EXPECT_DOUBLE_EQ(RunInfo::FromMetadata(top).peak_flops.value_or(0), 3.12e14);

  // Our store's layout: the card fills "experiment", where RunInfo looks second.
  json store = json::parse(R"({"experiment": {"workload": {"dtype": "fp32"}},
                               "run": {"batch_size": 2}})");
  MergeMissingMetadata(&store, card);
  EXPECT_EQ(store["experiment"]["workload"]["dtype"], "fp32");
  EXPECT_FALSE(store["experiment"]["workload"].contains("batch_size"));  // run.batch_size wins
  EXPECT_FALSE(store.contains("workload"));
  RunInfo info = RunInfo::FromMetadata(store);
  EXPECT_EQ(info.batch_size, 2);
  EXPECT_EQ(info.sequence_length, 2048);
  EXPECT_EQ(info.dtype, "fp32");

  json empty;  // a trace without metadata takes the card as it is
  MergeMissingMetadata(&empty, card);
  EXPECT_EQ(empty, card);
}

}  // namespace
}  // namespace shardscope::analysis
