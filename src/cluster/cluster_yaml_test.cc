#include "cluster/cluster_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shardscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kZoo = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware";

YAML::Node ZooNode(const std::string& name) {
  auto node = LoadYamlFile(kZoo + "/" + name + ".yaml");
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return node.ok() ? *node : YAML::Node();
}

YAML::Node Yaml(const std::string& text) {
  auto node = ParseYaml(text, "test.yaml");
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return node.ok() ? *node : YAML::Node();
}

// The H100 zoo file with `overlay` merged over it, as experiments do.
StatusOr<ClusterSpec> H100With(const std::string& overlay) {
  return ClusterFromYaml(MergeYaml(ZooNode("h100-sxm"), Yaml(overlay)),
                         YamlContext{"exp.yaml", "e1", "cluster"});
}

YamlContext Ctx() { return YamlContext{"t.yaml", "", ""}; }

// A minimal inline cluster, for error tests that should not depend on the zoo.
const char* kMinimal = R"(
name: tiny
device: {kind: gpu, peak_tflops: {bf16: 100}, memory_gb: 10, memory_bandwidth_gb_s: 1000}
)";

TEST(ClusterZooTest, ListsTheZoo) {
  EXPECT_THAT(ListZooClusters(kZoo), ElementsAre("a100-sxm", "h100-sxm", "h200", "h800",
                                                 "local-cpu", "tpu-v4", "tpu-v5e", "tpu-v6e"));
  EXPECT_EQ(DefaultHardwareDir(), kZoo);
  EXPECT_TRUE(ListZooClusters(kZoo + "/no-such-dir").empty());
}

// Every zoo file loads, validates, is named after its file and round-trips.
TEST(ClusterZooTest, EveryFileLoadsAndValidates) {
  for (const std::string& name : ListZooClusters(kZoo)) {
    SCOPED_TRACE(name);
    auto c = LoadZooCluster(name, kZoo);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->name, name);
    EXPECT_TRUE(c->Validate().ok());
    EXPECT_TRUE(c->device.PeakFlops(DType::kBf16).ok());
    auto again = ClusterFromYaml(ClusterToYaml(*c), YamlContext{});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_DOUBLE_EQ(*again->device.PeakFlops(DType::kBf16), *c->device.PeakFlops(DType::kBf16));
    EXPECT_DOUBLE_EQ(again->device.memory_bytes, c->device.memory_bytes);
    EXPECT_DOUBLE_EQ(again->scale_up.bandwidth_per_device, c->scale_up.bandwidth_per_device);
    EXPECT_DOUBLE_EQ(again->scale_out.nic_bandwidth_per_device,
                     c->scale_out.nic_bandwidth_per_device);
    EXPECT_EQ(again->scale_up.domain_size, c->scale_up.domain_size);
    EXPECT_EQ(again->scale_up.torus_dims, c->scale_up.torus_dims);
  }
}

TEST(ClusterZooTest, UnknownZooNameListsTheZoo) {
  auto c = LoadZooCluster("h1000", kZoo);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("unknown cluster 'h1000'"));
  EXPECT_THAT(c.status().message(), HasSubstr("h100-sxm"));
}

// The data-sheet figures arrive in SI base units, bandwidths per direction.
TEST(ClusterZooTest, H100InSiUnits) {
  auto c = LoadZooCluster("h100-sxm", kZoo);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->device.kind, DeviceKind::kGpu);
  EXPECT_DOUBLE_EQ(*c->device.PeakFlops(DType::kBf16), 989.4e12);
  EXPECT_DOUBLE_EQ(*c->device.PeakFlops(DType::kFp8), 1978.9e12);
  // Usable: nvidia-smi's 81,559 MiB; the datasheet's 80 GB beside it.
  EXPECT_DOUBLE_EQ(c->device.memory_bytes, 81559.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c->device.datasheet_memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(c->device.memory_bandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(c->device.l2_cache_bytes, 50e6);
  EXPECT_DOUBLE_EQ(c->device.launch_overhead, 4e-6);
  EXPECT_EQ(c->num_devices(), 128);
  EXPECT_EQ(c->scale_up.kind, ScaleUpKind::kSwitched);
  EXPECT_EQ(c->scale_up.domain_size, 8);
  EXPECT_DOUBLE_EQ(c->scale_up.bandwidth_per_device, 450e9);      // 900 GB/s bidirectional
  EXPECT_DOUBLE_EQ(c->scale_out.nic_bandwidth_per_device, 50e9);  // 400 Gbit/s
  EXPECT_EQ(c->scale_out.topology, "rail-optimized-fat-tree");
  EXPECT_DOUBLE_EQ(c->LinkBandwidthBetween(0, 7), 450e9);
  EXPECT_DOUBLE_EQ(c->LinkBandwidthBetween(7, 8), 50e9);
}

TEST(ClusterZooTest, OtherZooFigures) {
  auto h200 = LoadZooCluster("h200", kZoo);
  ASSERT_TRUE(h200.ok());
  EXPECT_DOUBLE_EQ(h200->device.memory_bytes, 143771.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h200->device.datasheet_memory_bytes, 141e9);
  EXPECT_DOUBLE_EQ(h200->device.memory_bandwidth, 4.8e12);

  // A100 has no fp8: the bf16 peak stands in.
  auto a100 = LoadZooCluster("a100-sxm", kZoo);
  ASSERT_TRUE(a100.ok());
  EXPECT_DOUBLE_EQ(*a100->device.PeakFlops(DType::kFp8), 312e12);
  EXPECT_DOUBLE_EQ(a100->device.memory_bytes, 81920.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(a100->device.datasheet_memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(a100->scale_up.bandwidth_per_device, 300e9);
  EXPECT_DOUBLE_EQ(a100->scale_out.nic_bandwidth_per_device, 25e9);

  // Seed 002's v4 2x2x1 slice: one host, a 4-chip mesh, 2 links per chip.
  auto v4 = LoadZooCluster("tpu-v4", kZoo);
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->device.kind, DeviceKind::kTpu);
  EXPECT_EQ(v4->num_devices(), 4);
  EXPECT_EQ(v4->scale_up.kind, ScaleUpKind::kTorus);
  EXPECT_EQ(v4->scale_up.domain_size, 4);
  EXPECT_THAT(v4->scale_up.torus_dims, ElementsAre(2, 2, 1));
  EXPECT_DOUBLE_EQ(v4->scale_up.link_bandwidth, 45e9);
  EXPECT_DOUBLE_EQ(v4->scale_up.bandwidth_per_device, 90e9);
  EXPECT_DOUBLE_EQ(v4->device.memory_bytes, 32.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(v4->device.datasheet_memory_bytes, 0);        // the datasheet's figure is the only one
  EXPECT_FALSE(v4->device.PeakFlops(DType::kFp32).ok());  // not published

  auto v5e = LoadZooCluster("tpu-v5e", kZoo);
  ASSERT_TRUE(v5e.ok());
  EXPECT_DOUBLE_EQ(*v5e->device.PeakFlops(DType::kInt8), 393e12);
  EXPECT_DOUBLE_EQ(v5e->device.memory_bandwidth, 819e9);

  auto v6e = LoadZooCluster("tpu-v6e", kZoo);
  ASSERT_TRUE(v6e.ok());
  EXPECT_DOUBLE_EQ(*v6e->device.PeakFlops(DType::kBf16), 918e12);
  EXPECT_EQ(v6e->num_devices(), 8);

  // The CPU host: fp32 only, ranks talk over shared memory.
  auto cpu = LoadZooCluster("local-cpu", kZoo);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->device.kind, DeviceKind::kCpu);
  EXPECT_DOUBLE_EQ(*cpu->device.PeakFlops(DType::kBf16), 105e9);  // measured, docs/hardware.md
  EXPECT_EQ(cpu->scale_up.kind, ScaleUpKind::kNone);
  EXPECT_FALSE(cpu->SameScaleUpDomain(0, 1));
  EXPECT_DOUBLE_EQ(cpu->LinkBandwidthBetween(0, 1), 5e9);
}

// A measured figure merged over the zoo file changes that figure and nothing else.
TEST(ClusterOverrideTest, MergedFigureReplacesOnlyItself) {
  auto base = LoadZooCluster("h100-sxm", kZoo);
  auto over = H100With("device: {memory_bandwidth_gb_s: 3000}");
  ASSERT_TRUE(base.ok());
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_DOUBLE_EQ(over->device.memory_bandwidth, 3e12);
  ClusterSpec expected = *base;
  expected.device.memory_bandwidth = 3e12;
  EXPECT_EQ(YAML::Dump(ClusterToYaml(*over)), YAML::Dump(ClusterToYaml(expected)));
}

TEST(ClusterOverrideTest, PartialMapsAtEveryLevel) {
  auto c = H100With(R"(
nodes: 2
device: {peak_tflops: {bf16: 700}}
scale_out: {nic_gbit_s: 200}
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_devices(), 16);
  EXPECT_DOUBLE_EQ(*c->device.PeakFlops(DType::kBf16), 700e12);
  EXPECT_DOUBLE_EQ(*c->device.PeakFlops(DType::kFp8), 1978.9e12);  // untouched sibling
  EXPECT_DOUBLE_EQ(c->scale_out.nic_bandwidth_per_device, 25e9);
  EXPECT_DOUBLE_EQ(c->scale_out.latency, 2.7e-6);
}

// A bigger TPU slice re-derives the domain size and per-chip bandwidth from the torus.
TEST(ClusterOverrideTest, LargerTpuSliceRederivesDomain) {
  auto c = ClusterFromYaml(
      MergeYaml(ZooNode("tpu-v4"),
                Yaml("nodes: 16\nscale_up: {torus_dims: [4, 4, 4], wraparound: true}")),
      YamlContext{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->scale_up.domain_size, 64);
  EXPECT_EQ(c->num_domains(), 1);
  EXPECT_DOUBLE_EQ(c->scale_up.bandwidth_per_device, 6 * 45e9);
  EXPECT_EQ(c->ScaleUpHops(0, 63), 3);  // (0,0,0) -> (3,3,3) with wraparound
}

// Errors name the file, the experiment and the dotted field.
TEST(ClusterYamlErrorTest, UnknownField) {
  auto c = H100With("device: {memroy_gb: 90}");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("exp.yaml: experiment 'e1': field 'cluster.device.memroy_gb': unknown "
                        "field"));
}

TEST(ClusterYamlErrorTest, NegativeMemory) {
  auto c = H100With("device: {memory_gb: -80}");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("field 'cluster.device.memory_gb': must be positive"));
}

TEST(ClusterYamlErrorTest, NegativeDatasheetMemory) {
  auto c = H100With("device: {datasheet_memory_gb: -1}");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("field 'cluster.device.datasheet_memory_gb': must be zero or positive"));
}

// The measured FP8 GEMM efficiency: the zoo's H100 figure, an override, the
// default 1 where a device gives none, and a value outside (0, 1] named.
TEST(ClusterYamlTest, Fp8GemmEfficiency) {
  auto h100 = H100With("");
  ASSERT_TRUE(h100.ok()) << h100.status().ToString();
  EXPECT_DOUBLE_EQ(h100->device.fp8_gemm_efficiency, 0.85);
  auto measured = H100With("device: {fp8_gemm_efficiency: 0.7}");
  ASSERT_TRUE(measured.ok());
  EXPECT_DOUBLE_EQ(measured->device.fp8_gemm_efficiency, 0.7);
  auto again = ClusterFromYaml(ClusterToYaml(*measured), Ctx());
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(again->device.fp8_gemm_efficiency, 0.7);
  auto tiny = ClusterFromYaml(Yaml(kMinimal), Ctx());
  ASSERT_TRUE(tiny.ok());
  EXPECT_DOUBLE_EQ(tiny->device.fp8_gemm_efficiency, 1.0);
  for (const char* bad :
       {"device: {fp8_gemm_efficiency: 1.2}", "device: {fp8_gemm_efficiency: 0}"}) {
    auto c = H100With(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(c.status().message(),
                HasSubstr("field 'cluster.device.fp8_gemm_efficiency': must be in (0, 1]"));
  }
}

// An override of the usable capacity leaves the datasheet figure as it was.
TEST(ClusterOverrideTest, UsableMemoryOverride) {
  auto c = H100With("device: {memory_gb: 64}");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->device.memory_bytes, 64e9);
  EXPECT_DOUBLE_EQ(c->device.datasheet_memory_bytes, 80e9);
}

TEST(ClusterYamlErrorTest, TorusDimsNotMatchingDomain) {
  auto c = ClusterFromYaml(MergeYaml(ZooNode("tpu-v4"), Yaml("scale_up: {domain_size: 8}")),
                           YamlContext{"v4.yaml", "", ""});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("v4.yaml: cluster 'tpu-v4'"));
  EXPECT_THAT(c.status().message(), HasSubstr("field 'scale_up.torus_dims'"));
  EXPECT_THAT(c.status().message(), HasSubstr("product of [2, 2, 1] is 4"));
}

// Cross-field checks inside an experiment name the field under the experiment's path.
TEST(ClusterYamlErrorTest, ValidationInsideExperiment) {
  auto c = H100With("scale_up: {domain_size: 3}");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("exp.yaml: experiment 'e1': cluster 'h100-sxm': field "
                        "'cluster.scale_up.domain_size': 3 does not divide the 128 devices"));
}

TEST(ClusterYamlErrorTest, UnknownKinds) {
  auto device = H100With("device: {kind: fpga}");
  ASSERT_FALSE(device.ok());
  EXPECT_THAT(device.status().message(),
              HasSubstr("field 'cluster.device.kind': unknown device kind 'fpga'"));
  auto up = H100With("scale_up: {kind: hypercube}");
  ASSERT_FALSE(up.ok());
  EXPECT_THAT(up.status().message(),
              HasSubstr("field 'cluster.scale_up.kind': unknown scale-up kind 'hypercube'"));
}

TEST(ClusterYamlErrorTest, BadValues) {
  struct Case {
    const char* overlay;
    const char* message;
  };
  const Case cases[] = {
      {"device: {peak_tflops: {fp9: 1}}", "field 'device.peak_tflops.fp9': unknown dtype 'fp9'"},
      {"device: {peak_tflops: {bf16: 0}}", "field 'device.peak_tflops.bf16': must be positive"},
      {"device: {memory_bandwidth_gb_s: lots}",
       "field 'device.memory_bandwidth_gb_s': expected a "
       "number"},
      {"device: {l2_cache_mb: -1}", "field 'device.l2_cache_mb': must be zero or positive"},
      {"nodes: 0", "field 'nodes': must be at least 1"},
      {"scale_up: {torus_dims: [2, 0]}", "field 'scale_up.torus_dims[1]': must be at least 1"},
      {"scale_up: {wraparound: maybe}", "field 'scale_up.wraparound': expected true or false"},
      {"scale_out: {nic_gbit_s: -400}", "field 'scale_out.nic_gbit_s': must be positive"},
      {"scale_out: {topology: ring}", "field 'scale_out.topology': unknown topology 'ring'"},
      {"extra: 1", "field 'extra': unknown field"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.overlay);
    auto c = ClusterFromYaml(MergeYaml(Yaml(kMinimal), Yaml(k.overlay)), Ctx());
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr(k.message));
  }
}

TEST(ClusterYamlTest, CollectivesBlockInSiUnits) {
  auto c = H100With("collectives: {simple: {scale_out_step_us: 20}, pipeline_fill_mb: 2}");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const CommTuning& t = c->collectives;
  EXPECT_TRUE(t.modelled);
  EXPECT_TRUE(t.nvls);
  EXPECT_DOUBLE_EQ(t.Of(CommProtocol::kSimple).scale_out_step, 20e-6);      // the override
  EXPECT_DOUBLE_EQ(t.Of(CommProtocol::kSimple).ring_base_latency, 8.4e-6);  // the zoo's
  EXPECT_DOUBLE_EQ(t.Of(CommProtocol::kLL).scale_up_step, 0.6e-6);
  EXPECT_DOUBLE_EQ(t.pipeline_fill_bytes, 2e6);
  EXPECT_DOUBLE_EQ(t.low_latency.latency, 33e-6);
  // DeepEP's normal kernels hold 20 of the 132 SMs; the low-latency ones none.
  EXPECT_DOUBLE_EQ(t.normal.sm_share, 0.1515);
  EXPECT_DOUBLE_EQ(t.low_latency.sm_share, 0);
  // Without the block the links are ideal.
  auto cpu = LoadZooCluster("local-cpu", kZoo);
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->collectives.modelled);
}

TEST(ClusterYamlErrorTest, BadCollectivesValues) {
  struct Case {
    const char* overlay;
    const char* message;
  };
  const Case cases[] = {
      {"collectives: {ll: {scale_up_efficiency: 1.5}}",
       "field 'cluster.collectives.ll.scale_up_efficiency': must be in (0, 1]"},
      {"collectives: {simple: {ring_base_latency_us: -1}}",
       "field 'cluster.collectives.simple.ring_base_latency_us': must be zero or positive"},
      {"collectives: {nvls_efficiency: 0}", "field 'cluster.collectives.nvls_efficiency'"},
      {"collectives: {all_to_all: {normal: {latency: 3}}}",
       "field 'cluster.collectives.all_to_all.normal.latency': unknown field"},
      {"collectives: {lL: {}}", "field 'cluster.collectives.lL': unknown field"},
      {"collectives: {all_to_all: {normal: {sm_share: 1}}}",
       "field 'cluster.collectives.all_to_all.normal.sm_share': must be at least 0 and below 1"},
      {"collectives: {all_to_all: {low_latency: {sm_share: -0.1}}}",
       "field 'cluster.collectives.all_to_all.low_latency.sm_share': must be zero or positive"},
      {"scale_up: {kind: none}", "field 'cluster.collectives.nvls': needs scale_up.kind switched"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.overlay);
    auto c = H100With(k.overlay);
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr(k.message));
  }
  // A block must name all three protocols.
  auto partial =
      ClusterFromYaml(MergeYaml(Yaml(kMinimal), Yaml("collectives: {ll: {}, simple: {}}")), Ctx());
  ASSERT_FALSE(partial.ok());
  EXPECT_THAT(partial.status().message(),
              HasSubstr("field 'collectives.ll128': is required but missing"));
}

TEST(ClusterYamlErrorTest, RequiredFields) {
  auto no_name = ClusterFromYaml(Yaml("device: {kind: gpu}"), Ctx());
  EXPECT_THAT(no_name.status().message(), HasSubstr("field 'name': is required but missing"));
  auto no_device = ClusterFromYaml(Yaml("name: x"), Ctx());
  EXPECT_THAT(no_device.status().message(), HasSubstr("field 'device': is required but missing"));
  auto no_memory = ClusterFromYaml(
      Yaml("name: x\ndevice: {kind: gpu, peak_tflops: {bf16: 1}, memory_bandwidth_gb_s: 1}"),
      Ctx());
  EXPECT_THAT(no_memory.status().message(),
              HasSubstr("field 'device.memory_gb': is required but missing"));
  auto not_a_map = ClusterFromYaml(Yaml("[1, 2]"), Ctx());
  EXPECT_THAT(not_a_map.status().message(), HasSubstr("expected a map"));
}

// Two nodes without a NIC figure cannot talk: the validator says which key to add.
TEST(ClusterYamlErrorTest, MultiNodeNeedsNic) {
  auto c = ClusterFromYaml(MergeYaml(Yaml(kMinimal), Yaml("nodes: 2")), Ctx());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("field 'scale_out.nic_gbit_s': must be positive"));
}

TEST(ClusterYamlTest, MinimalDefaults) {
  auto c = ClusterFromYaml(Yaml(kMinimal), YamlContext{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->device.name, "tiny");
  EXPECT_EQ(c->num_devices(), 1);
  EXPECT_EQ(c->scale_up.kind, ScaleUpKind::kNone);
  EXPECT_EQ(c->scale_up.domain_size, 1);
  // A switched domain defaults to one node.
  auto s = ClusterFromYaml(
      MergeYaml(Yaml(kMinimal),
                Yaml("devices_per_node: 4\nscale_up: {kind: nvlink, bandwidth_gb_s: 100}")),
      YamlContext{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->scale_up.domain_size, 4);
}

TEST(ClusterYamlTest, MissingFileIsNotFound) {
  auto c = LoadClusterFile(kZoo + "/nope.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("nope.yaml"));
}

}  // namespace
}  // namespace shardscope
