#include "sim/compute_model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cluster/cluster_yaml.h"

namespace shardscope::sim {
namespace {

DeviceSpec H100() {
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/h100-sxm.yaml");
  EXPECT_TRUE(c.ok());
  return c->device;
}

Op Gemm(int64_t m, int64_t n, int64_t k) {
  Op op;
  op.kind = OpKind::kFfnUp;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = 2 * m * n * k;
  op.bytes_read = 2 * (m * k + k * n);
  op.bytes_written = 2 * m * n;
  return op;
}

TEST(ComputeModelTest, NeverBeatsPhysicsAndLargeGemmIsComputeBound) {
  const DeviceSpec d = H100();
  auto model = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  ASSERT_TRUE(model.ok());
  for (const Op& op : {Gemm(8192, 8192, 8192), Gemm(1, 8192, 8192), Gemm(64, 4096, 14336)}) {
    const double t = model->Seconds(op);
    EXPECT_GE(t, static_cast<double>(op.flops) / model->peak_flops());
    EXPECT_GE(t, static_cast<double>(op.bytes_read + op.bytes_written) / d.memory_bandwidth);
  }
  const Op big = Gemm(8192, 8192, 8192);
  // Large: ~0.75 of peak (+ launch).
  EXPECT_NEAR(model->Seconds(big) - d.launch_overhead,
              static_cast<double>(big.flops) / (model->peak_flops() * 0.75 * 8192 / (8192 + 32)),
              1e-9);
  // Decode GEMV: memory-bound.
  const Op gemv = Gemm(1, 8192, 8192);
  EXPECT_NEAR(
      model->Seconds(gemv) - d.launch_overhead,
      static_cast<double>(gemv.bytes_read + gemv.bytes_written) / (d.memory_bandwidth * 0.85),
      1e-12);
}

TEST(ComputeModelTest, EmptyOpTakesNoTime) {
  const DeviceSpec d = H100();
  auto model = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  ASSERT_TRUE(model.ok());
  Op op;
  op.kind = OpKind::kExpertGemm;
  EXPECT_EQ(model->Seconds(op), 0);
}

TEST(ComputeModelTest, CalibrationFileOverridesAndRejectsEfficiencyAboveOne) {
  const DeviceSpec d = H100();
  const std::string path = ::testing::TempDir() + "/calib.yaml";
  {
    std::ofstream f(path);
    f << "ops:\n  gemm: {flops_efficiency: 0.5, half_rows: 0}\n  attention: {memory_efficiency: "
         "0.7}\nlaunch_overhead_us: 0\n";
  }
  auto c = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->For(OpKind::kFfnDown).flops, 0.5);
  EXPECT_EQ(c->For(OpKind::kAttention).memory, 0.7);
  auto model = ComputeModel::Create(d, DType::kBf16, *c);
  ASSERT_TRUE(model.ok());
  const Op big = Gemm(8192, 8192, 8192);
  EXPECT_NEAR(model->Seconds(big), static_cast<double>(big.flops) / (model->peak_flops() * 0.5),
              1e-12);
  {
    std::ofstream f(path);
    f << "ops:\n  gemm: {flops_efficiency: 1.2}\n";
  }
  auto bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(0, 1]"), std::string::npos);
  {
    std::ofstream f(path);
    f << "ops:\n  gemmm: {flops_efficiency: 0.5}\n";
  }
  auto typo = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("gemmm"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::sim
