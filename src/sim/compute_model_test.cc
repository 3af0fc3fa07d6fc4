#include "sim/compute_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "cluster/cluster_yaml.h"
#include "plan/test_experiments.h"
#include "testing/scratch_dir.h"

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

// DeepSeek-V3's absorbed MLA decode on one Hopper: 44 requests, 2 query tokens
// each (MTP), 128 heads over a 4,940-token latent cache (576 wide, bf16). Its
// ~240 FLOPs per byte make it FLOP-bound, at FlashMLA's measured 580 TFLOP/s
// (0.586 of the bf16 peak), not the 0.5 of a bandwidth-bound decode kernel.
TEST(ComputeModelTest, MlaDecodeAttentionRunsAtFlashMlasMeasuredRate) {
  const DeviceSpec d = H100();
  auto model = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  ASSERT_TRUE(model.ok());
  Op op;
  op.kind = OpKind::kAttentionDecode;
  const int64_t requests = 44, q = 2, context = 4940, heads = 128;
  const int64_t pairs = q * context + q * (q + 1) / 2;
  op.flops = 2 * requests * pairs * heads * (576 + 512);  // 121.1 GFLOP
  op.bytes_read = requests * q * heads * 576 * 2 + requests * (context + q) * 576 * 2;
  op.bytes_written = requests * q * heads * 512 * 2;
  const double flop_time = static_cast<double>(op.flops) / 580e12;  // 208.8 µs
  const double byte_time =
      static_cast<double>(op.bytes_read + op.bytes_written) / (d.memory_bandwidth * 0.85);
  ASSERT_LT(byte_time, flop_time);  // 96 µs: FLOP-bound
  EXPECT_NEAR(model->Seconds(op) - d.launch_overhead, flop_time, 0.002 * flop_time);
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
  testing::ScratchDir scratch;
  const std::string path = scratch.File("calib.yaml");
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

namespace shardscope::sim {
namespace {

DeviceSpec LocalCpu() {
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/local-cpu.yaml");
  EXPECT_TRUE(c.ok());
  return c->device;
}

// Regression (docs/history/benchmarks-series.md, TP1 decode +80 %): the GEMM's row ramp made a
// one-row fp32 product on the CPU compute-bound. In the gemv regime it has no
// ramp, so it is bandwidth-bound: 2 FLOPs per 4-byte weight is below the
// ridge (83 GFLOP/s ÷ 24 GB/s ≈ 3.5 FLOP/B).
TEST(ComputeModelTest, MatrixVectorProductIsBandwidthBoundOnTheCpu) {
  const DeviceSpec d = LocalCpu();
  const Calibration cal = DefaultCalibration(d);
  auto model = ComputeModel::Create(d, DType::kFp32, cal);
  ASSERT_TRUE(model.ok());
  Op gemv = Gemm(1, 4096, 4096);
  gemv.bytes_read *= 2, gemv.bytes_written *= 2;  // fp32
  const Efficiency& e = cal.classes.at(OpClass::kGemv);
  EXPECT_EQ(e.half_rows, 0);
  EXPECT_NEAR(
      model->Seconds(gemv) - (e.launch >= 0 ? e.launch : d.launch_overhead),
      static_cast<double>(gemv.bytes_read + gemv.bytes_written) / (d.memory_bandwidth * e.memory),
      1e-12);
  // Two rows are a GEMM again, with the ramp of the gemm class.
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 2), OpClass::kGemm);
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 1), OpClass::kGemv);
  EXPECT_EQ(ClassOfShape(OpKind::kNorm, 1), OpClass::kElementwise);
  // A per-kind override wins over the regime.
  Calibration over = cal;
  over.kinds[OpKind::kFfnUp] = {0.5, 0.1, 0};
  auto overridden = ComputeModel::Create(d, DType::kFp32, over);
  ASSERT_TRUE(overridden.ok());
  EXPECT_NEAR(
      overridden->Seconds(gemv) - d.launch_overhead,
      static_cast<double>(gemv.bytes_read + gemv.bytes_written) / (d.memory_bandwidth * 0.1),
      1e-12);
}

// The CPU executor runs 2–32-row GEMMs with a kernel of its own (SmallGemm):
// the calibration's small_gemm_rows puts them in their own class, between the
// gemv (1 row) and the gemm (more rows) classes. Times are the roofline of the
// class's entry, by hand.
TEST(ComputeModelTest, SmallGemmRowsHaveTheirOwnClass) {
  const DeviceSpec d = LocalCpu();
  Calibration cal = DefaultCalibration(d);
  EXPECT_EQ(cal.small_gemm_rows, 32);
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 1, 32), OpClass::kGemv);
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 1.5, 32), OpClass::kSmallGemm);  // tokens per expert
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 32, 32), OpClass::kSmallGemm);
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 33, 32), OpClass::kGemm);
  EXPECT_EQ(ClassOfShape(OpKind::kNorm, 4, 32), OpClass::kElementwise);
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 4), OpClass::kGemm);      // no small rows: the gemm class
  EXPECT_EQ(ClassOfShape(OpKind::kFfnUp, 0, 32), OpClass::kGemm);  // rows unknown

  cal.classes[OpClass::kSmallGemm] = {0.5, 0.5, 0, 0};  // no ramp, no launch
  cal.classes[OpClass::kGemm] = {1.0, 1.0, 0, 0};
  auto fp32 = [](Op op) {
    op.bytes_read *= 2, op.bytes_written *= 2;
    return op;
  };
  const Op small = fp32(Gemm(4, 4096, 4096)), large = fp32(Gemm(40, 4096, 4096));
  auto roofline = [&](const Op& op, double e) {
    return std::max(static_cast<double>(op.flops) / (105e9 * e),
                    static_cast<double>(op.bytes_read + op.bytes_written) / (30e9 * e));
  };
  auto model = ComputeModel::Create(d, DType::kFp32, cal);
  ASSERT_TRUE(model.ok());
  ASSERT_EQ(model->peak_flops(), 105e9);
  ASSERT_EQ(model->memory_bandwidth(), 30e9);
  EXPECT_NEAR(model->Seconds(small), roofline(small, 0.5), 1e-12);
  EXPECT_NEAR(model->Seconds(large), roofline(large, 1.0), 1e-12);
  // Without small rows, 4 rows are the gemm class's.
  cal.small_gemm_rows = 0;
  auto off = ComputeModel::Create(d, DType::kFp32, cal);
  ASSERT_TRUE(off.ok());
  EXPECT_NEAR(off->Seconds(small), roofline(small, 1.0), 1e-12);
  // A per-kind override wins over the regime.
  cal.small_gemm_rows = 32;
  cal.kinds[OpKind::kFfnUp] = {0.25, 0.25, 0, 0};
  auto over = ComputeModel::Create(d, DType::kFp32, cal);
  ASSERT_TRUE(over.ok());
  EXPECT_NEAR(over->Seconds(small), roofline(small, 0.25), 1e-12);
}

// small_gemm_rows and the small_gemm class's entry come from a calibration file.
TEST(ComputeModelTest, CalibrationFileSetsTheSmallGemmRows) {
  const DeviceSpec d = H100();
  EXPECT_EQ(DefaultCalibration(d).small_gemm_rows, 0);
  testing::ScratchDir scratch;
  const std::string path = scratch.File("small.yaml");
  std::ofstream(path) << "small_gemm_rows: 16\nops:\n  small_gemm: {memory_efficiency: 0.4}\n"
                         "  gemm: {ramp_from_cache: true, cache_flops_efficiency: 0.6}\n";
  auto c = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->small_gemm_rows, 16);
  EXPECT_TRUE(c->classes.at(OpClass::kGemm).cache_ramp);
  EXPECT_EQ(c->classes.at(OpClass::kGemm).cache_flops, 0.6);
  EXPECT_LE(c->classes.at(OpClass::kSmallGemm).cache_flops, 0);  // not given: `flops`
  EXPECT_FALSE(DefaultCalibration(d).classes.at(OpClass::kGemm).cache_ramp);
  // The CPU defaults: sgemm packs from the cache too, SmallGemm and sgemv do not.
  EXPECT_TRUE(DefaultCalibration(LocalCpu()).classes.at(OpClass::kGemm).cache_ramp);
  EXPECT_FALSE(DefaultCalibration(LocalCpu()).classes.at(OpClass::kSmallGemm).cache_ramp);
  EXPECT_FALSE(DefaultCalibration(LocalCpu()).classes.at(OpClass::kGemv).cache_ramp);
  EXPECT_EQ(c->For(OpKind::kFfnUp, 8).memory, 0.4);
  EXPECT_NE(c->For(OpKind::kFfnUp, 17).memory, 0.4);
  std::ofstream(path) << "small_gemm_rows: -1\n";
  auto bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("small_gemm_rows"), std::string::npos);
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  // A FLOP ceiling above the peak, or none at all, names the file and the field.
  for (const char* value : {"1.5", "0"}) {
    std::ofstream(path) << "ops:\n  small_gemm: {cache_flops_efficiency: " << value << "}\n";
    auto wrong = LoadCalibration(path, DefaultCalibration(d));
    ASSERT_FALSE(wrong.ok()) << value;
    EXPECT_NE(wrong.status().message().find("cache_flops_efficiency"), std::string::npos)
        << wrong.status().message();
    EXPECT_NE(wrong.status().message().find(path), std::string::npos) << wrong.status().message();
  }
}

TEST(ComputeModelTest, SharedMemoryBusCapsTheRate) {
  const DeviceSpec d = LocalCpu();
  Calibration cal = DefaultCalibration(d);
  cal.classes[OpClass::kElementwise] = {1.0, 0.7, 0};  // alone: 0.7 × 30 = 21 GB/s
  Op norm;
  norm.kind = OpKind::kNorm;
  norm.bytes_read = 1 << 20;
  const double bytes = static_cast<double>(norm.bytes_read);
  auto alone = ComputeModel::Create(d, DType::kFp32, cal, 0);
  auto shared = ComputeModel::Create(d, DType::kFp32, cal, 14.6e9);  // 29.2 GB/s over 2
  auto roomy = ComputeModel::Create(d, DType::kFp32, cal, 29.2e9);   // 29.2 GB/s over 1
  ASSERT_TRUE(alone.ok() && shared.ok() && roomy.ok());
  EXPECT_NEAR(alone->Seconds(norm) - d.launch_overhead, bytes / 21e9, 1e-15);
  EXPECT_NEAR(shared->Seconds(norm) - d.launch_overhead, bytes / 14.6e9, 1e-15);
  EXPECT_NEAR(roomy->Seconds(norm) - d.launch_overhead, bytes / 21e9, 1e-15);
}

TEST(ComputeModelTest, ConcurrentDevicesPerNode) {
  // world, devices per node, pp, micro-batches (0: pp), requests per replica.
  EXPECT_EQ(ConcurrentDevicesPerNode(1, 2, 1, 0, 1), 1);  // TP1
  EXPECT_EQ(ConcurrentDevicesPerNode(2, 2, 1, 0, 1), 2);  // TP2, SP2, DP2, EP2
  EXPECT_EQ(ConcurrentDevicesPerNode(16, 8, 1, 0, 8), 8);
  EXPECT_EQ(ConcurrentDevicesPerNode(2, 2, 2, 0, 1), 1);  // PP2, one request: stages alternate
  EXPECT_EQ(ConcurrentDevicesPerNode(2, 2, 2, 0, 4), 2);  // PP2, two micro-batches
  EXPECT_EQ(ConcurrentDevicesPerNode(8, 8, 4, 2, 8), 4);  // 2 of 4 stages busy
  ClusterSpec c;
  EXPECT_EQ(SharedBandwidthPerDevice(c, 2), 0);  // GPUs: no shared bus
  c.node_memory_bandwidth = 29.2e9;
  EXPECT_NEAR(SharedBandwidthPerDevice(c, 2), 14.6e9, 1);
}

}  // namespace
}  // namespace shardscope::sim

namespace shardscope::sim {
namespace {

// The calibration's optional terms (docs/fidelity.md): each off at 0, each
// only adds time, each read from the file.
Calibration WithTerms(const DeviceSpec& d, OverheadTerms terms) {
  Calibration c = DefaultCalibration(d);
  c.terms = terms;
  return c;
}

TEST(ComputeModelTest, MinimumKernelDurationFloorsShortOpsOnly) {
  const DeviceSpec d = H100();
  OverheadTerms t;
  t.min_kernel = 5e-6;
  auto off = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  auto on = ComputeModel::Create(d, DType::kBf16, WithTerms(d, t));
  ASSERT_TRUE(off.ok() && on.ok());
  const Op tiny = Gemm(1, 64, 64);  // ~ the 2 µs launch alone
  ASSERT_LT(off->Seconds(tiny), 5e-6);
  EXPECT_DOUBLE_EQ(on->Seconds(tiny), 5e-6);
  const Op big = Gemm(4096, 4096, 4096);
  ASSERT_GT(off->Seconds(big), 5e-6);
  EXPECT_DOUBLE_EQ(on->Seconds(big), off->Seconds(big));
}

TEST(ComputeModelTest, Fp8QuantisationAddsOneElementwisePassOverTheInput) {
  const DeviceSpec d = H100();
  OverheadTerms t;
  t.fp8_quant_bytes_per_element = 5;
  const Calibration calib = WithTerms(d, t);
  auto fp8_off = ComputeModel::Create(d, DType::kFp8, DefaultCalibration(d));
  auto fp8_on = ComputeModel::Create(d, DType::kFp8, calib);
  auto bf16_on = ComputeModel::Create(d, DType::kBf16, calib);
  ASSERT_TRUE(fp8_off.ok() && fp8_on.ok() && bf16_on.ok());
  const Op op = Gemm(512, 4096, 7168);  // m × k = 512 × 7168 input elements
  const double quant =
      512.0 * 7168 * 5 / (d.memory_bandwidth * calib.classes.at(OpClass::kElementwise).memory) +
      d.launch_overhead;
  EXPECT_NEAR(fp8_on->Seconds(op) - fp8_off->Seconds(op), quant, 1e-15);
  // A fitted fixed cost per pass replaces the one launch.
  t.fp8_quant_fixed = 4.5e-6;
  auto fixed = ComputeModel::Create(d, DType::kFp8, WithTerms(d, t));
  ASSERT_TRUE(fixed.ok());
  EXPECT_NEAR(fixed->Seconds(op) - fp8_off->Seconds(op), quant - d.launch_overhead + 4.5e-6, 1e-15);
  // Not an FP8 GEMM: nothing to quantise.
  auto bf16_off = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  EXPECT_DOUBLE_EQ(bf16_on->Seconds(op), bf16_off->Seconds(op));
  // Nor the router (kept in high precision) or an elementwise op.
  Op router = op;
  router.kind = OpKind::kRouter;
  EXPECT_DOUBLE_EQ(fp8_on->Seconds(router), fp8_off->Seconds(router));
}

TEST(ComputeModelTest, Bf16LmHeadOfAnFp8ModelRunsAtTheBf16Peak) {
  const DeviceSpec d = H100();
  OverheadTerms t;
  t.fp8_quant_bytes_per_element = 5;
  auto all_fp8 = ComputeModel::Create(d, DType::kFp8, WithTerms(d, t));
  auto bf16_head = ComputeModel::Create(d, DType::kFp8, WithTerms(d, t), 0, DType::kBf16);
  ASSERT_TRUE(all_fp8.ok() && bf16_head.ok());
  Op head = Gemm(8192, 8192, 8192);  // FLOP-bound
  head.kind = OpKind::kLmHead;
  const double e = bf16_head->FlopsEfficiency(head);
  const double launch = d.launch_overhead;
  ASSERT_GT(*d.PeakFlops(DType::kFp8), *d.PeakFlops(DType::kBf16));
  EXPECT_NEAR(bf16_head->Seconds(head) - launch,
              static_cast<double>(head.flops) / (*d.PeakFlops(DType::kBf16) * e), 1e-12);
  // The FP8 head pays the quantisation pass too; the bf16 one does not.
  const double quant = 8192.0 * 8192 * 5 / (d.memory_bandwidth * 0.85) + launch;
  EXPECT_NEAR(all_fp8->Seconds(head) - launch - quant,
              static_cast<double>(head.flops) / (*d.PeakFlops(DType::kFp8) * e), 1e-12);
  // Other GEMMs keep the model's dtype.
  EXPECT_DOUBLE_EQ(bf16_head->Seconds(Gemm(8192, 8192, 8192)),
                   all_fp8->Seconds(Gemm(8192, 8192, 8192)));
}

// Replayed from a CUDA graph, a kernel pays no host launch but still its
// device-side cost as a graph node: the default GPU tables carry the per-class
// fixed costs fitted on our H100 / H200 sweeps (each op timed as a node of a
// replayed graph; bench/gpu/results/<gpu>/calibrate_bf16.txt).
TEST(ComputeModelTest, GraphReplayedKernelsPayTheirMeasuredDeviceCost) {
  const DeviceSpec d = H100();
  auto model = ComputeModel::Create(d, DType::kBf16, DefaultCalibration(d));
  ASSERT_TRUE(model.ok());
  const ComputeModel replay = model->WithoutLaunch();
  ASSERT_NEAR(d.launch_overhead, 4e-6, 1e-15);
  // A tiny decode op: the residual add of 2 tokens of width 7168, bf16: reads
  // 2 × 28 672 B, writes 28 672 B = 86 016 B at 0.85 × 3.35 TB/s = 0.0302 µs.
  Op add;
  add.kind = OpKind::kResidualAdd;
  add.m = 2;
  add.bytes_read = 2 * 2 * 7168 * 2;
  add.bytes_written = 2 * 7168 * 2;
  const double add_roofline = 86016.0 / (3350e9 * 0.85);
  EXPECT_NEAR(add_roofline, 0.0302e-6, 0.0001e-6);
  // Replayed: the roofline + the elementwise class's 1.78 µs (was 0: free);
  // eager: the roofline + the 4 µs launch, as before.
  EXPECT_NEAR(replay.Seconds(add), add_roofline + 1.78e-6, 1e-15);
  EXPECT_NEAR(model->Seconds(add), add_roofline + 4e-6, 1e-15);
  // A decode GEMV (1 × 4096 × 4096, 33.6 MB: 11.8 µs): + the gemv class's 2.82 µs.
  const Op gemv = Gemm(1, 4096, 4096);
  const double gemv_roofline =
      static_cast<double>(gemv.bytes_read + gemv.bytes_written) / (3350e9 * 0.85);
  EXPECT_NEAR(replay.Seconds(gemv), gemv_roofline + 2.82e-6, 1e-15);
  EXPECT_NEAR(model->Seconds(gemv) - replay.Seconds(gemv), 4e-6 - 2.82e-6, 1e-15);
  // A large GEMM (8192³, 1.49 ms) barely moves: roofline + 3.16 µs against
  // roofline + 4 µs eager, 0.06 % apart.
  const Op big = Gemm(8192, 8192, 8192);
  const double big_roofline =
      static_cast<double>(big.flops) / (989.4e12 * 0.75 * 8192.0 / (8192 + 32));
  EXPECT_NEAR(replay.Seconds(big), big_roofline + 3.16e-6, 1e-12);
  EXPECT_LT(model->Seconds(big) / replay.Seconds(big) - 1, 0.001);
  // The roofline alone, for differences in which fixed costs cancel.
  EXPECT_NEAR(model->WithoutFixedCosts().Seconds(add), add_roofline, 1e-15);
  EXPECT_NEAR(model->WithoutFixedCosts().Seconds(big), big_roofline, 1e-12);
}

// The H200's own measured figures (gemv 3.98 µs, gather 2.51 µs); the H800 is
// the H100's silicon and the A100 is not measured: both take the H100's.
TEST(ComputeModelTest, GraphReplayCostsFollowTheMeasuredPart) {
  const std::string dir = std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/";
  auto h200 = LoadClusterFile(dir + "h200.yaml");
  auto h800 = LoadClusterFile(dir + "h800.yaml");
  auto a100 = LoadClusterFile(dir + "a100-sxm.yaml");
  auto tpu = LoadClusterFile(dir + "tpu-v5e.yaml");
  ASSERT_TRUE(h200.ok() && h800.ok() && a100.ok() && tpu.ok());
  const Calibration c200 = DefaultCalibration(h200->device);
  EXPECT_DOUBLE_EQ(c200.classes.at(OpClass::kGemv).replay, 3.98e-6);
  EXPECT_DOUBLE_EQ(c200.classes.at(OpClass::kGemm).replay, 3.55e-6);
  EXPECT_DOUBLE_EQ(c200.classes.at(OpClass::kGather).replay, 2.51e-6);
  for (const DeviceSpec& d : {h800->device, a100->device, H100()}) {
    const Calibration c = DefaultCalibration(d);
    EXPECT_DOUBLE_EQ(c.classes.at(OpClass::kGemv).replay, 2.82e-6) << d.name;
    EXPECT_DOUBLE_EQ(c.classes.at(OpClass::kGemm).replay, 3.16e-6) << d.name;
    EXPECT_DOUBLE_EQ(c.classes.at(OpClass::kGather).replay, 2.24e-6) << d.name;
    EXPECT_DOUBLE_EQ(c.classes.at(OpClass::kElementwise).replay, 1.78e-6) << d.name;
    EXPECT_DOUBLE_EQ(c.classes.at(OpClass::kAttentionDecode).replay, 1.78e-6) << d.name;
  }
  // No CUDA graphs on a TPU: no replay cost.
  EXPECT_LT(DefaultCalibration(tpu->device).classes.at(OpClass::kGemm).replay, 0);
}

// A calibration file sets a class's (or kind's) replay cost; with
// async_launch the class's launch is the device-side cost under replay.
TEST(ComputeModelTest, CalibrationFileSetsReplayCosts) {
  const DeviceSpec d = H100();
  testing::ScratchDir dir("replay_us");
  const std::string path = dir.path() + "/cal.yaml";
  {
    std::ofstream f(path);
    f << "ops:\n  elementwise: {replay_us: 0.5}\n  residual_add: {replay_us: 1}\n"
         "  gemv: {replay_us: 0}\n";
  }
  auto cal = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  auto model = ComputeModel::Create(d, DType::kBf16, *cal);
  ASSERT_TRUE(model.ok());
  const ComputeModel replay = model->WithoutLaunch();
  Op norm;
  norm.kind = OpKind::kNorm;
  norm.bytes_read = 1000;
  Op add = norm;
  add.kind = OpKind::kResidualAdd;
  const double roofline = 1000 / (3350e9 * 0.85);
  EXPECT_NEAR(replay.Seconds(norm), roofline + 0.5e-6, 1e-15);
  EXPECT_NEAR(replay.Seconds(add), roofline + 1e-6, 1e-15);
  const Op gemv = Gemm(1, 4096, 4096);
  EXPECT_NEAR(replay.Seconds(gemv), model->WithoutFixedCosts().Seconds(gemv), 1e-15);
  // Eager launches are unchanged by it.
  EXPECT_NEAR(model->Seconds(norm), roofline + 4e-6, 1e-15);
  // async_launch: under replay the class's launch (device-side cost), not replay_us.
  Calibration async = *cal;
  async.terms.async_launch = true;
  async.classes[OpClass::kElementwise].launch = 2e-6;
  auto fitted = ComputeModel::Create(d, DType::kBf16, async);
  ASSERT_TRUE(fitted.ok());
  EXPECT_NEAR(fitted->WithoutLaunch().Seconds(norm), roofline + 2e-6, 1e-15);
  {
    std::ofstream f(path);
    f << "ops:\n  gemm: {replay_us: -1}\n";
  }
  auto bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("replay_us"), std::string::npos);
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
}

TEST(ComputeModelTest, CalibrationFileReadsTheTermsAndRejectsNegativeOnes) {
  const DeviceSpec d = H100();
  testing::ScratchDir scratch;
  const std::string path = scratch.File("terms.yaml");
  {
    std::ofstream f(path);
    f << "request_overhead_us: 1500\nresponse_overhead_us: 200\niteration_overhead_us: 30\n"
         "cuda_graphs: true\ngraph_replay_us: 12\nmin_kernel_us: 3\n"
         "fp8_quant_bytes_per_element: 5\nfp8_quant_fixed_us: 4.5\ncold_start_us: 40000\n"
         "rank_speed_spread: 0.03\n";
  }
  auto c = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->terms.request_overhead, 1.5e-3);
  EXPECT_DOUBLE_EQ(c->terms.response_overhead, 2e-4);
  EXPECT_DOUBLE_EQ(c->terms.iteration_overhead, 3e-5);
  EXPECT_TRUE(c->terms.cuda_graphs);
  EXPECT_DOUBLE_EQ(c->terms.graph_replay, 1.2e-5);
  EXPECT_DOUBLE_EQ(c->terms.min_kernel, 3e-6);
  EXPECT_DOUBLE_EQ(c->terms.fp8_quant_bytes_per_element, 5);
  EXPECT_DOUBLE_EQ(c->terms.fp8_quant_fixed, 4.5e-6);
  const std::vector<std::string> active = c->terms.Active();
  EXPECT_NE(std::find(active.begin(), active.end(), "fp8_quant 5 B/element + 4.5 µs per pass"),
            active.end());
  EXPECT_DOUBLE_EQ(c->terms.cold_start, 0.04);
  EXPECT_DOUBLE_EQ(c->terms.rank_speed_spread, 0.03);
  EXPECT_NE(std::find(active.begin(), active.end(), "rank_speed_spread 3 %"), active.end());
  EXPECT_EQ(c->terms.Active().size(), 8u);                   // graph_replay is cuda_graphs' entry
  EXPECT_EQ(c->terms.Active(/*serving=*/false).size(), 6u);  // no request, response overhead
  EXPECT_DOUBLE_EQ(c->terms.IterationSeconds(true), 3e-5 + 1.2e-5);
  EXPECT_DOUBLE_EQ(c->terms.IterationSeconds(false), 3e-5);
  EXPECT_TRUE(DefaultCalibration(d).terms.Active().empty());
  {
    std::ofstream f(path);
    f << "min_kernel_us: -1\n";
  }
  auto bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("min_kernel_us"), std::string::npos);
  std::ofstream(path) << "fp8_quant_fixed_us: -2\n";
  bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp8_quant_fixed_us"), std::string::npos);
  // A spread is a fraction of the time, below one half.
  for (const char* value : {"-0.1", "0.5"}) {
    std::ofstream(path) << "rank_speed_spread: " << value << "\n";
    bad = LoadCalibration(path, DefaultCalibration(d));
    ASSERT_FALSE(bad.ok()) << value;
    EXPECT_NE(bad.status().message().find("rank_speed_spread"), std::string::npos);
    EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().message();
  }
}

// A rank slower than the model (scale > 1) takes scale × the op's time; a
// faster one less, but never less than the op's FLOPs at the peak or bytes at
// the device's bandwidth.
TEST(ComputeModelTest, RankScaleSlowsAndSpeedsUpWithinTheRoofline) {
  const DeviceSpec d = LocalCpu();
  Calibration cal = DefaultCalibration(d);
  cal.classes[OpClass::kElementwise] = {1.0, 0.98, 0};  // 0.98 × 30 GB/s
  auto m = ComputeModel::Create(d, DType::kFp32, cal, 0);
  ASSERT_TRUE(m.ok());
  Op norm;
  norm.kind = OpKind::kNorm;
  norm.bytes_read = 30 << 20;
  const double t = m->Seconds(norm);
  EXPECT_DOUBLE_EQ(m->Seconds(norm, 1), t);
  EXPECT_DOUBLE_EQ(m->Seconds(norm, 1.1), 1.1 * t);
  EXPECT_DOUBLE_EQ(m->Seconds(norm, 0.995), 0.995 * t);  // launch included: 30 MB at 0.98 + 0.5 µs
  // At half the time the bytes would pass 30 GB/s: the floor is the bandwidth's.
  EXPECT_DOUBLE_EQ(m->Seconds(norm, 0.5), static_cast<double>(norm.bytes_read) / 30e9);
}

// `collectives:` (as `shardscope calibrate` writes it) gives each collective's
// measured latency and bandwidth; a null latency (one message size: no line)
// gives none; a bad name, group size, latency or bandwidth names its entry
// and field.
TEST(ComputeModelTest, CalibrationFileReadsMeasuredCollectives) {
  const DeviceSpec d = H100();
  testing::ScratchDir scratch;
  const std::string path = scratch.File("collectives.yaml");
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    return LoadCalibration(path, DefaultCalibration(d));
  };
  auto c = load(
      "collectives:\n"
      "  - {collective: all_reduce, group_size: 2, latency_us: 28.06, algbw_gb_s: 1.9, calls: 9}\n"
      "  - {collective: all_gather, group_size: 2, latency_us: null, algbw_gb_s: 0.003}\n"
      "  - {collective: send_recv, group_size: 2, latency_us: 4}\n"
      "  - {collective: all_to_all, group_size: 2, latency_us: 3, algbw_gb_s: 4, wait_us: 6.5}\n"
      "  - {collective: broadcast, group_size: 2, latency_us: null, wait_us: 9}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->terms.collectives.size(), 3u);  // the broadcast has no line: not used
  const MeasuredCollective& a2a = c->terms.collectives.at({Collective::kAllToAll, 2});
  EXPECT_DOUBLE_EQ(a2a.latency, 3e-6);
  EXPECT_DOUBLE_EQ(a2a.wait, 6.5e-6);
  const MeasuredCollective& ar = c->terms.collectives.at({Collective::kAllReduce, 2});
  EXPECT_DOUBLE_EQ(ar.latency, 28.06e-6);
  EXPECT_DOUBLE_EQ(ar.algbw, 1.9e9);
  const MeasuredCollective& p2p = c->terms.collectives.at({Collective::kSend, 2});
  EXPECT_DOUBLE_EQ(p2p.latency, 4e-6);
  EXPECT_EQ(p2p.algbw, 0);
  const std::vector<std::string> active = c->terms.Active(false);
  ASSERT_EQ(active.size(), 3u);
  EXPECT_EQ(active[0], "all_reduce over 2: latency 28.06 µs, 1.9 GB/s");
  EXPECT_EQ(active[1], "all_to_all over 2: latency 3 µs + wait 6.5 µs, 4 GB/s");
  EXPECT_EQ(active[2], "send_recv over 2: latency 4 µs");
  auto error = [&](const std::string& text, const std::string& field) {
    auto bad = load(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status().message();
  };
  error("collectives:\n  - {collective: allreduse, group_size: 2, latency_us: 1}\n",
        "collectives[0].collective");
  error("collectives:\n  - {collective: all_reduce, group_size: 1, latency_us: 1}\n", "group_size");
  error(
      "collectives:\n  - {collective: all_to_all, group_size: 4, latency_us: 2}\n"
      "  - {collective: all_reduce, group_size: 2, latency_us: -3}\n",
      "collectives[1].latency_us");
  error("collectives:\n  - {collective: all_reduce, group_size: 2, latency_us: 3, algbw_gb_s: 0}\n",
        "collectives[0].algbw_gb_s");
  error("collectives:\n  - {collective: all_reduce, group_size: 2, latency_us: 3, wait_us: -1}\n",
        "collectives[0].wait_us");
}

// A cache-resident working set streams at the calibration's cache bandwidth
// (no memory efficiency, no shared bus) and its GEMMs pay no row ramp; each
// class pays its own launch. Hand-computed for a 100 GFLOP/s, 10 GB/s device.
TEST(ComputeModelTest, CacheResidentOpsStreamAtTheCacheBandwidthWithoutTheRamp) {
  DeviceSpec d = LocalCpu();
  d.peak_flops[DType::kFp32] = 100e9;
  d.memory_bandwidth = 10e9;
  d.launch_overhead = 1e-6;
  Calibration cal = DefaultCalibration(d);
  cal.small_gemm_rows = 0;  // the 2-row GEMM below is the gemm class's
  cal.classes[OpClass::kGemm] = {1.0, 0.5, 8, 2e-6};
  cal.cache_bandwidth = 50e9;
  Op gemm = Gemm(2, 1024, 1024);  // 4 194 304 FLOPs; bf16 bytes: 2·(2048 + 1048576) + 4096
  const double flops = 2.0 * 2 * 1024 * 1024;
  const double bytes = 2.0 * (2 * 1024 + 1024 * 1024) + 2.0 * 2 * 1024;
  auto memory = ComputeModel::Create(d, DType::kFp32, cal, 4e9);
  auto cached = ComputeModel::Create(d, DType::kFp32, cal, 4e9, std::nullopt, true);
  ASSERT_TRUE(memory.ok() && cached.ok());
  // From memory: max(F / (100e9 · 2/10), B / min(5e9, 4e9)) + 2 µs = B / 4e9 + 2 µs.
  EXPECT_NEAR(memory->Seconds(gemm), std::max(flops / 20e9, bytes / 4e9) + 2e-6, 1e-15);
  EXPECT_NEAR(memory->Seconds(gemm), bytes / 4e9 + 2e-6, 1e-15);
  // From cache, no ramp: max(F / 100e9, B / 50e9) + 2 µs = max(41.9, 42.1) µs + 2 µs.
  EXPECT_NEAR(cached->Seconds(gemm), bytes / 50e9 + 2e-6, 1e-15);
  EXPECT_GT(bytes / 50e9, flops / 100e9);
  EXPECT_NEAR(cached->FlopsEfficiency(gemm), 1.0, 1e-15);
  // A class that packs its operands wherever they are (sgemm) pays the ramp
  // from the cache too: max(F / (100e9 · 2/10), B / 50e9) + 2 µs = F / 20e9 + 2 µs.
  Calibration packs = cal;
  packs.classes[OpClass::kGemm].cache_ramp = true;
  auto packed = ComputeModel::Create(d, DType::kFp32, packs, 4e9, std::nullopt, true);
  ASSERT_TRUE(packed.ok());
  EXPECT_NEAR(packed->Seconds(gemm), flops / 20e9 + 2e-6, 1e-15);
  EXPECT_NEAR(packed->FlopsEfficiency(gemm), 0.2, 1e-15);
  // The class's own cache rate, where it has one: max(41.9, 21.0) µs + 2 µs.
  Calibration own = cal;
  own.classes[OpClass::kGemm].cache = 100e9;
  auto own_rate = ComputeModel::Create(d, DType::kFp32, own, 4e9, std::nullopt, true);
  ASSERT_TRUE(own_rate.ok());
  EXPECT_NEAR(own_rate->Seconds(gemm), flops / 100e9 + 2e-6, 1e-15);
  // Its own FLOP ceiling from the cache (0.4): max(F / 40e9, B / 100e9) + 2 µs =
  // 104.9 µs + 2 µs; from memory the class's ramped `flops` still (unchanged).
  own.classes[OpClass::kGemm].cache_flops = 0.4;
  auto ceiling = ComputeModel::Create(d, DType::kFp32, own, 4e9, std::nullopt, true);
  auto ceiling_memory = ComputeModel::Create(d, DType::kFp32, own, 4e9);
  ASSERT_TRUE(ceiling.ok() && ceiling_memory.ok());
  EXPECT_NEAR(ceiling->Seconds(gemm), flops / 40e9 + 2e-6, 1e-15);
  EXPECT_NEAR(ceiling->FlopsEfficiency(gemm), 0.4, 1e-15);
  EXPECT_NEAR(ceiling_memory->Seconds(gemm), bytes / 4e9 + 2e-6, 1e-15);
  // With the ramp from the cache, the ramp scales the cache ceiling: 0.4 · 2/10.
  own.classes[OpClass::kGemm].cache_ramp = true;
  auto ramped = ComputeModel::Create(d, DType::kFp32, own, 4e9, std::nullopt, true);
  ASSERT_TRUE(ramped.ok());
  EXPECT_NEAR(ramped->Seconds(gemm), flops / 8e9 + 2e-6, 1e-15);
  // A class without its own launch pays the device's.
  Op norm;
  norm.kind = OpKind::kNorm;
  norm.bytes_read = 1 << 20;
  cal.classes[OpClass::kElementwise] = {1.0, 0.5, 0};
  auto plain = ComputeModel::Create(d, DType::kFp32, cal);
  ASSERT_TRUE(plain.ok());
  EXPECT_NEAR(plain->Seconds(norm), (1 << 20) / 5e9 + 1e-6, 1e-15);
  // No cache bandwidth: a resident model reads memory as before.
  cal.cache_bandwidth = 0;
  auto off = ComputeModel::Create(d, DType::kFp32, cal, 4e9, std::nullopt, true);
  ASSERT_TRUE(off.ok());
  EXPECT_NEAR(off->Seconds(gemm), bytes / 4e9 + 2e-6, 1e-15);
  // Without launch (CUDA-graph replay), no class pays one.
  EXPECT_NEAR(memory->WithoutLaunch().Seconds(gemm), bytes / 4e9, 1e-15);
}

// The tiny MoE's weights and KV cache (a few MB per rank) fit local-cpu's
// 16 MiB of last-level cache per core; bench-dense-250m's 1 GB do not.
TEST(ComputeModelTest, CacheResidentWhenEveryRanksWeightsAndKvFitTheCache) {
  ParallelSpec ep2;
  ep2.strategy = "ep2";
  ep2.ep = 2;
  const Experiment moe = testing::ZooExperiment("tiny-moe-mla", "local-cpu", ep2, 4, 64, 9);
  EXPECT_TRUE(CacheResident(moe));
  const Experiment dense = testing::ZooExperiment("bench-dense-250m", "local-cpu", {}, 1, 128, 9);
  EXPECT_FALSE(CacheResident(dense));
  Experiment no_cache = moe;
  no_cache.cluster.device.l2_cache_bytes = 0;
  EXPECT_FALSE(CacheResident(no_cache));
}

TEST(ComputeModelTest, CalibrationFileReadsLaunchPerClassAndCacheBandwidth) {
  const DeviceSpec d = LocalCpu();
  testing::ScratchDir scratch;
  const std::string path = scratch.File("launch.yaml");
  std::ofstream(path) << "ops:\n  gemm: {flops_efficiency: 0.9, launch_us: 3}\n"
                         "  norm: {launch_us: 0.25}\ncache_bandwidth_gb_s: 40\n"
                         "iteration_overhead_per_op_us: 0.2\n";
  auto c = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->classes.at(OpClass::kGemm).launch, 3e-6);
  EXPECT_DOUBLE_EQ(c->classes.at(OpClass::kGemm).flops, 0.9);
  EXPECT_DOUBLE_EQ(c->kinds.at(OpKind::kNorm).launch, 0.25e-6);
  EXPECT_DOUBLE_EQ(c->cache_bandwidth, 40e9);
  EXPECT_DOUBLE_EQ(c->terms.iteration_overhead_per_op, 0.2e-6);
  EXPECT_DOUBLE_EQ(c->terms.PerOpSeconds(10), 2e-6);
  std::ofstream(path) << "ops:\n  gemm: {launch_us: -1}\n";
  auto bad = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("launch_us"), std::string::npos);
  std::ofstream(path) << "cache_bandwidth_gb_s: -5\n";
  auto negative = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("cache_bandwidth_gb_s"), std::string::npos);
  // A class's own cache rate.
  std::ofstream(path) << "ops:\n  gemm: {cache_bandwidth_gb_s: 72}\n";
  auto own = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_DOUBLE_EQ(own->classes.at(OpClass::kGemm).cache, 72e9);
  EXPECT_LT(own->classes.at(OpClass::kGemv).cache, 0);
  std::ofstream(path) << "ops:\n  gemm: {cache_bandwidth_gb_s: 0}\n";
  auto zero = LoadCalibration(path, DefaultCalibration(d));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("ops.gemm"), std::string::npos) << zero.status().message();
}

}  // namespace
// Asynchronous launches (GPUs): the host issues kernels ahead, so an op takes
// the larger of its device time and the launch interval, not their sum; its
// class's fixed cost is device time, which a graph replay still pays.
TEST(ComputeModelTest, AsyncLaunchHidesTheLaunchUnderLongerKernels) {
  const DeviceSpec d = H100();  // launch_overhead 4 µs
  Calibration c = DefaultCalibration(d);
  c.classes[OpClass::kGemm].launch = 1e-6;
  c.classes[OpClass::kGemv].launch = 1e-6;
  c.terms.async_launch = true;
  auto model = ComputeModel::Create(d, DType::kBf16, c);
  ASSERT_TRUE(model.ok());
  Calibration sync = c;
  sync.terms.async_launch = false;
  auto summed = ComputeModel::Create(d, DType::kBf16, sync);
  ASSERT_TRUE(summed.ok());
  // A 4096 × 4096 matrix-vector product: 33.6 MB at 0.85 × 3.35 TB/s ≈ 11.8 µs,
  // + 1 µs of device cost, longer than the 4 µs launch: the launch hides.
  const Op big = Gemm(1, 4096, 4096);
  const double device = summed->Seconds(big);  // roofline + 1 µs (the class's cost)
  EXPECT_NEAR(model->Seconds(big), device, 1e-15);
  EXPECT_GT(device, d.launch_overhead);
  // A 64 × 64 one: ~8 KB, far under 4 µs: the launch interval sets its time.
  const Op small = Gemm(1, 64, 64);
  EXPECT_LT(summed->Seconds(small), d.launch_overhead);
  EXPECT_NEAR(model->Seconds(small), d.launch_overhead, 1e-15);
  // Replayed from a graph: no launch, but the device-side cost stays.
  EXPECT_NEAR(model->WithoutLaunch().Seconds(small), summed->Seconds(small), 1e-15);
  EXPECT_GT(model->WithoutLaunch().Seconds(small), 1e-6);
  EXPECT_NE(c.terms.Active(false).back().find("async_launch"), std::string::npos);
}

}  // namespace shardscope::sim

namespace shardscope::sim {
namespace {

// Under W8A8 roles a layer GEMM runs at the FP8 peak times the device's FP8
// GEMM efficiency, the LM head and the router at bf16's, attention at bf16's
// (the activations'); a dynamic per-tensor quantisation op pays the
// calibration's measured per-pass cost instead of its class's launch.
TEST(ComputeModelTest, PeaksFollowTheDtypeRoles) {
  DeviceSpec d = H100();
  ASSERT_DOUBLE_EQ(d.fp8_gemm_efficiency, 0.85);
  PrecisionSpec spec;
  ASSERT_TRUE(ApplyPrecisionPreset("w8a8-fp8", &spec).ok());
  const Precision w8a8 =
      ResolvePrecision(spec, DType::kBf16, DType::kBf16, DType::kBf16, DType::kBf16);
  Calibration cal = DefaultCalibration(d);
  cal.terms.fp8_quant_fixed = 5e-6;
  auto model = ComputeModel::Create(d, w8a8, cal);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const double fp8 = d.peak_flops.at(DType::kFp8), bf16 = d.peak_flops.at(DType::kBf16);
  Op op = Gemm(4096, 8192, 8192);
  op.role = OpRole::kFfnUp;
  EXPECT_DOUBLE_EQ(model->PeakFor(op), fp8 * 0.85);
  op.kind = OpKind::kLmHead, op.role = OpRole::kLmHead;
  EXPECT_DOUBLE_EQ(model->PeakFor(op), bf16);
  op.kind = OpKind::kRouter, op.role = OpRole::kRouter;
  EXPECT_DOUBLE_EQ(model->PeakFor(op), bf16);
  op.kind = OpKind::kKvUpProj, op.role = OpRole::kAbsorbUk;
  EXPECT_DOUBLE_EQ(model->PeakFor(op), bf16);
  op.kind = OpKind::kAttention, op.role = OpRole::kAttention;
  EXPECT_DOUBLE_EQ(model->PeakFor(op), bf16);
  // A compute-bound GEMM: 2 × 0.85 = 1.7 times as fast as in bf16.
  auto plain = ComputeModel::Create(d, DType::kBf16, cal);
  ASSERT_TRUE(plain.ok());
  Op big = Gemm(8192, 8192, 8192);
  big.role = OpRole::kFfnUp;
  const double launch = d.launch_overhead;
  EXPECT_NEAR((plain->Seconds(big) - launch) / (model->Seconds(big) - launch), 1.7, 1e-3);
  // The quantisation op: its bytes at the elementwise rate plus the measured pass.
  Op quant;
  quant.kind = OpKind::kQuantize, quant.role = OpRole::kQuantFfn;
  quant.m = 4096, quant.n = 8192;
  quant.bytes_read = 2 * 2 * quant.m * quant.n;
  quant.bytes_written = quant.m * quant.n + 4;
  const double rate = d.memory_bandwidth * cal.classes.at(OpClass::kElementwise).memory;
  EXPECT_NEAR(model->Seconds(quant), (5.0 * quant.m * quant.n + 4) / rate + 5e-6, 1e-12);
  // Without roles (the legacy fields alone) the model is the dtype's.
  const Precision legacy =
      ResolvePrecision({}, DType::kFp8, DType::kFp8, DType::kBf16, DType::kFp8);
  auto old = ComputeModel::Create(d, legacy, cal);
  ASSERT_TRUE(old.ok());
  EXPECT_DOUBLE_EQ(old->PeakFor(big), fp8);
}

// DeepSeek's block-scaled FP8 GEMMs (deepseek-fp8) follow DeepGEMM's measured
// curve, not cuBLASLt's per-tensor efficiency. Hand-computed against the rows
// of DeepGEMM's README (H800): the expert down projection as a contiguous
// grouped GEMM, 4 experts × 8,192 rows, N = 7168, K = 2048, measured 1,099
// TFLOP/s: 0.71 · 1978.9 · 8192 / (8192 + 96) · 2048 / (2048 + 640) = 1,058.
// MLA's kv_b, M = 4096, N = 32768, K = 512, measured 590: the curve gives 610
// where the GEMM class at 0.85 gave 1,252. W8A8's per-tensor GEMMs are unchanged.
TEST(ComputeModelTest, BlockScaledFp8GemmsFollowDeepGemmsCurve) {
  const DeviceSpec d = H100();
  const Calibration cal = DefaultCalibration(d);
  ASSERT_TRUE(cal.fp8_block_gemm.has_value());
  auto precision = [](const char* preset) {
    PrecisionSpec spec;
    EXPECT_TRUE(ApplyPrecisionPreset(preset, &spec).ok());
    return ResolvePrecision(spec, DType::kBf16, DType::kBf16, DType::kBf16, DType::kBf16);
  };
  auto ds = ComputeModel::Create(d, precision("deepseek-fp8"), cal);
  auto w8a8 = ComputeModel::Create(d, precision("w8a8-fp8"), cal);
  ASSERT_TRUE(ds.ok() && w8a8.ok());
  const double fp8 = d.peak_flops.at(DType::kFp8), launch = d.launch_overhead;
  auto fp8_gemm = [](OpKind kind, OpRole role, int64_t m, int64_t n, int64_t k) {
    Op op;
    op.kind = kind, op.role = role;
    op.m = m, op.n = n, op.k = k;
    op.flops = 2 * m * n * k;
    op.bytes_read = m * k + n * k;
    op.bytes_written = 2 * m * n;
    return op;
  };
  Op down = fp8_gemm(OpKind::kExpertGemm, OpRole::kExpertDown, 4 * 8192, 7168, 2048);
  down.bytes_read += 3 * 7168 * 2048;  // four experts' weights
  down.expert_tokens = {8192, 8192, 8192, 8192};
  const double curve = 0.71 * (8192.0 / (8192 + 96)) * (2048.0 / (2048 + 640));
  const double t = ds->Seconds(down) - launch;
  EXPECT_NEAR(t, static_cast<double>(down.flops) / (fp8 * curve), 1e-9);
  EXPECT_NEAR(static_cast<double>(down.flops) / t / 1e12, 1058, 1);  // README: 1,099
  // The same GEMM under W8A8: the FP8 peak at 0.85 and the GEMM class's 0.75.
  const double ramp = 0.75 * 8192 / (8192 + 32);
  EXPECT_NEAR(w8a8->Seconds(down) - launch, static_cast<double>(down.flops) / (fp8 * 0.85 * ramp),
              1e-9);
  // kv_b (K = 512): the K ramp takes it to less than half the peak's share.
  const Op kv_b = fp8_gemm(OpKind::kKvUpProj, OpRole::kKvUpProj, 4096, 32768, 512);
  const double kv_t = ds->Seconds(kv_b) - launch;
  EXPECT_NEAR(static_cast<double>(kv_b.flops) / kv_t / 1e12, 610, 1);  // README: 590
  // Four rows per GEMM (decode): weight streaming at the curve's 0.66 of the bandwidth.
  const Op small = fp8_gemm(OpKind::kOutProj, OpRole::kOutProj, 4, 7168, 16384);
  EXPECT_NEAR(
      ds->Seconds(small) - launch,
      static_cast<double>(small.bytes_read + small.bytes_written) / (d.memory_bandwidth * 0.66),
      1e-12);
  // The LM head and the absorbed MLA products stay off the curve.
  Op head = fp8_gemm(OpKind::kLmHead, OpRole::kLmHead, 4096, 8192, 7168);
  EXPECT_DOUBLE_EQ(ds->FlopsEfficiency(head), w8a8->FlopsEfficiency(head));
}

}  // namespace
}  // namespace shardscope::sim
