#include "cluster/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shardscope {
namespace {

using ::testing::HasSubstr;

// Two nodes of four GPUs on a switch, 10 GB/s NICs: small enough to reason about.
ClusterSpec SwitchedCluster() {
  ClusterSpec c;
  c.name = "test-gpu";
  c.device.name = "Test GPU";
  c.device.peak_flops = {{DType::kFp32, 1e12}, {DType::kBf16, 8e12}, {DType::kFp16, 8e12}};
  c.device.memory_bytes = 16e9;
  c.device.memory_bandwidth = 1e12;
  c.num_nodes = 2;
  c.devices_per_node = 4;
  c.scale_up.kind = ScaleUpKind::kSwitched;
  c.scale_up.domain_size = 4;
  c.scale_up.bandwidth_per_device = 100e9;
  c.scale_up.latency = 1e-6;
  c.scale_out.nic_bandwidth_per_device = 10e9;
  c.scale_out.latency = 5e-6;
  return c;
}

// One 4x4 torus slice of chips over four hosts.
ClusterSpec TorusCluster(bool wraparound) {
  ClusterSpec c = SwitchedCluster();
  c.name = "test-tpu";
  c.device.kind = DeviceKind::kTpu;
  c.num_nodes = 4;
  c.devices_per_node = 4;
  c.scale_up.kind = ScaleUpKind::kTorus;
  c.scale_up.domain_size = 16;
  c.scale_up.torus_dims = {4, 4};
  c.scale_up.wraparound = wraparound;
  c.scale_up.link_bandwidth = 50e9;
  c.scale_up.bandwidth_per_device = 200e9;
  return c;
}

TEST(DeviceSpecTest, PeakFlopsListedDtype) {
  ClusterSpec c = SwitchedCluster();
  auto bf16 = c.device.PeakFlops(DType::kBf16);
  ASSERT_TRUE(bf16.ok()) << bf16.status().ToString();
  EXPECT_DOUBLE_EQ(*bf16, 8e12);
}

// A dtype the device lacks runs at the nearest wider type's peak (fp8 on A100 -> bf16).
TEST(DeviceSpecTest, PeakFlopsFallsBackToWiderDtype) {
  ClusterSpec c = SwitchedCluster();
  EXPECT_DOUBLE_EQ(*c.device.PeakFlops(DType::kFp8), 8e12);
  EXPECT_DOUBLE_EQ(*c.device.PeakFlops(DType::kInt8), 8e12);
  EXPECT_DOUBLE_EQ(*c.device.PeakFlops(DType::kTf32), 1e12);  // tf32 -> fp32

  c.device.peak_flops = {{DType::kFp32, 1e12}};  // a CPU: everything runs in fp32
  EXPECT_DOUBLE_EQ(*c.device.PeakFlops(DType::kBf16), 1e12);
  EXPECT_DOUBLE_EQ(*c.device.PeakFlops(DType::kFp8), 1e12);
}

TEST(DeviceSpecTest, PeakFlopsErrorNamesDeviceAndDtype) {
  DeviceSpec tpu;
  tpu.name = "Some TPU";
  tpu.peak_flops = {{DType::kBf16, 275e12}, {DType::kInt8, 275e12}};
  auto fp32 = tpu.PeakFlops(DType::kFp32);
  ASSERT_FALSE(fp32.ok());
  EXPECT_THAT(fp32.status().message(), HasSubstr("Some TPU"));
  EXPECT_THAT(fp32.status().message(), HasSubstr("fp32"));
  EXPECT_THAT(fp32.status().message(), HasSubstr("bf16, int8"));
}

TEST(DeviceSpecTest, FallbackOrderStartsWithTheDtype) {
  EXPECT_EQ(PeakFlopsFallback(DType::kFp8),
            (std::vector<DType>{DType::kFp8, DType::kBf16, DType::kFp16, DType::kFp32}));
  EXPECT_EQ(PeakFlopsFallback(DType::kFp32), (std::vector<DType>{DType::kFp32}));
}

// Token ids and bytes only move: no peak, and an error that says so (not a fallback to fp32).
TEST(DeviceSpecTest, DataPlaneDTypesHaveNoPeak) {
  ClusterSpec c = SwitchedCluster();
  c.device.peak_flops = {{DType::kFp32, 1e12}};
  for (DType d : {DType::kInt32, DType::kInt64, DType::kUint8}) {
    EXPECT_TRUE(PeakFlopsFallback(d).empty());
    auto peak = c.device.PeakFlops(d);
    ASSERT_FALSE(peak.ok());
    EXPECT_THAT(peak.status().message(), HasSubstr("is not a compute dtype"));
    EXPECT_THAT(peak.status().message(), HasSubstr(DTypeName(d)));
  }
}

TEST(ClusterSpecTest, ValidClustersPass) {
  EXPECT_TRUE(SwitchedCluster().Validate().ok()) << SwitchedCluster().Validate().ToString();
  EXPECT_TRUE(TorusCluster(true).Validate().ok()) << TorusCluster(true).Validate().ToString();
}

// Each broken figure is reported under its YAML field name.
TEST(ClusterSpecTest, ValidateNamesTheField) {
  struct Case {
    void (*breaks)(ClusterSpec*);
    const char* field;
  };
  const Case cases[] = {
      {[](ClusterSpec* c) { c->device.memory_bytes = -1; }, "device.memory_gb"},
      {[](ClusterSpec* c) { c->device.memory_bandwidth = 0; }, "device.memory_bandwidth_gb_s"},
      {[](ClusterSpec* c) { c->device.peak_flops[DType::kFp8] = 0; }, "device.peak_tflops.fp8"},
      {[](ClusterSpec* c) { c->device.peak_flops.clear(); }, "device.peak_tflops"},
      {[](ClusterSpec* c) { c->device.launch_overhead = -1e-6; }, "device.launch_overhead_us"},
      {[](ClusterSpec* c) { c->num_nodes = 0; }, "nodes"},
      {[](ClusterSpec* c) { c->scale_up.bandwidth_per_device = 0; }, "scale_up.bandwidth_gb_s"},
      {[](ClusterSpec* c) { c->scale_up.domain_size = 3; }, "scale_up.domain_size"},
      {[](ClusterSpec* c) { c->scale_out.nic_bandwidth_per_device = 0; }, "scale_out.nic_gbit_s"},
      {[](ClusterSpec* c) { c->scale_out.topology = "hypercube"; }, "scale_out.topology"},
      {[](ClusterSpec* c) {
         c->scale_up.torus_dims = {2, 2};
       },
       "scale_up.torus_dims"},
  };
  for (const Case& k : cases) {
    ClusterSpec c = SwitchedCluster();
    k.breaks(&c);
    Status s = c.Validate();
    EXPECT_FALSE(s.ok()) << k.field;
    EXPECT_THAT(s.message(), HasSubstr(fmt::format("field '{}'", k.field)));
    EXPECT_THAT(s.message(), HasSubstr("cluster 'test-gpu'"));
  }
}

TEST(ClusterSpecTest, TorusDimsMustMultiplyToDomainSize) {
  ClusterSpec c = TorusCluster(true);
  c.scale_up.torus_dims = {4, 2};
  Status s = c.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("field 'scale_up.torus_dims'"));
  EXPECT_THAT(s.message(), HasSubstr("product of [4, 2] is 8, but scale_up.domain_size is 16"));
}

TEST(ClusterSpecTest, KindNoneNeedsDomainOfOne) {
  ClusterSpec c = SwitchedCluster();
  c.scale_up.kind = ScaleUpKind::kNone;
  EXPECT_THAT(c.Validate().message(), HasSubstr("scale_up.domain_size"));
  c.scale_up.domain_size = 1;
  EXPECT_TRUE(c.Validate().ok());
}

// A single domain never uses its NIC, so the NIC figure may be absent.
TEST(ClusterSpecTest, SingleDomainNeedsNoNic) {
  ClusterSpec c = SwitchedCluster();
  c.num_nodes = 1;
  c.scale_out.nic_bandwidth_per_device = 0;
  EXPECT_TRUE(c.Validate().ok());
}

TEST(ClusterSpecTest, NodesAndDomains) {
  ClusterSpec c = SwitchedCluster();
  EXPECT_EQ(c.num_devices(), 8);
  EXPECT_EQ(c.num_domains(), 2);
  EXPECT_EQ(c.NodeOf(3), 0);
  EXPECT_EQ(c.NodeOf(4), 1);
  EXPECT_TRUE(c.SameNode(4, 7));
  EXPECT_TRUE(c.SameScaleUpDomain(0, 3));
  EXPECT_FALSE(c.SameScaleUpDomain(3, 4));
  EXPECT_FALSE(c.SameScaleUpDomain(2, 2));
}

TEST(ClusterSpecTest, BandwidthAndLatencyBetweenDevices) {
  ClusterSpec c = SwitchedCluster();
  EXPECT_DOUBLE_EQ(c.LinkBandwidthBetween(0, 3), 100e9);  // NVLink-like
  EXPECT_DOUBLE_EQ(c.LinkBandwidthBetween(0, 4), 10e9);   // NIC
  EXPECT_DOUBLE_EQ(c.LinkBandwidthBetween(5, 5), 1e12);   // local copy
  EXPECT_DOUBLE_EQ(c.LatencyBetween(0, 3), 1e-6);
  EXPECT_DOUBLE_EQ(c.LatencyBetween(0, 4), 5e-6);
  EXPECT_DOUBLE_EQ(c.LatencyBetween(6, 6), 0);
  EXPECT_EQ(c.ScaleUpHops(0, 3), 1);
  EXPECT_EQ(c.ScaleUpHops(0, 4), -1);
}

// A domain larger than a node (NVL72-like) still counts devices on other nodes as near.
TEST(ClusterSpecTest, DomainSpanningNodes) {
  ClusterSpec c = SwitchedCluster();
  c.devices_per_node = 2;
  c.num_nodes = 4;
  ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  EXPECT_FALSE(c.SameNode(1, 2));
  EXPECT_TRUE(c.SameScaleUpDomain(1, 2));
  EXPECT_DOUBLE_EQ(c.LinkBandwidthBetween(1, 2), 100e9);
}

TEST(ClusterSpecTest, TorusCoordsAndHops) {
  ClusterSpec mesh = TorusCluster(false);
  EXPECT_EQ(mesh.TorusCoords(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(mesh.TorusCoords(7), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(mesh.ScaleUpHops(0, 3), 3);   // along x, no wraparound
  EXPECT_EQ(mesh.ScaleUpHops(0, 15), 6);  // (0,0) -> (3,3)
  ClusterSpec torus = TorusCluster(true);
  EXPECT_EQ(torus.ScaleUpHops(0, 3), 1);  // the wraparound link
  EXPECT_EQ(torus.ScaleUpHops(0, 15), 2);
  EXPECT_EQ(torus.ScaleUpHops(0, 10), 4);  // (0,0) -> (2,2): no shortcut
  EXPECT_DOUBLE_EQ(torus.LatencyBetween(0, 10), 4e-6);
  // Point to point in a torus runs over one route: one link's bandwidth.
  EXPECT_DOUBLE_EQ(torus.LinkBandwidthBetween(0, 10), 50e9);
}

TEST(ScaleUpSpecTest, TorusLinksPerDevice) {
  ScaleUpSpec s;
  s.kind = ScaleUpKind::kTorus;
  s.wraparound = false;
  s.torus_dims = {2, 2, 1};
  EXPECT_EQ(s.TorusLinksPerDevice(), 2);
  s.torus_dims = {4, 4, 4};
  EXPECT_EQ(s.TorusLinksPerDevice(), 6);
  s.torus_dims = {2, 4};
  EXPECT_EQ(s.TorusLinksPerDevice(), 3);
  s.wraparound = true;
  EXPECT_EQ(s.TorusLinksPerDevice(), 4);
  s.kind = ScaleUpKind::kSwitched;
  EXPECT_EQ(s.TorusLinksPerDevice(), 0);
}

TEST(ClusterNamesTest, KindsRoundTrip) {
  for (DeviceKind k : {DeviceKind::kGpu, DeviceKind::kTpu, DeviceKind::kCpu})
    EXPECT_EQ(*ParseDeviceKind(DeviceKindName(k)), k);
  for (ScaleUpKind k : {ScaleUpKind::kNone, ScaleUpKind::kSwitched, ScaleUpKind::kTorus})
    EXPECT_EQ(*ParseScaleUpKind(ScaleUpKindName(k)), k);
  EXPECT_EQ(*ParseScaleUpKind("nvswitch"), ScaleUpKind::kSwitched);
  EXPECT_FALSE(ParseDeviceKind("fpga").ok());
  EXPECT_FALSE(ParseScaleUpKind("hypercube").ok());
}

}  // namespace
}  // namespace shardscope
