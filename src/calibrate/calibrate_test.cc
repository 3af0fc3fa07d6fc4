#include "calibrate/calibrate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibrate/trace_samples.h"
#include "cluster/cluster_yaml.h"
#include "config/experiment_json.h"
#include "plan/test_experiments.h"
#include "sim/compute_model.h"
#include "sim/simulator.h"
#include "testing/scratch_dir.h"
#include "trace/trace_writer.h"

namespace shardscope::calibrate {
namespace {

namespace fs = std::filesystem;

// The true parameters of the synthetic run.
const sim::Efficiency kGemm{0.6, 0.4, 4};
const sim::Efficiency kSmallGemm{0.5, 0.45, 2};  // 2–32 rows on a CPU (small_gemm_rows)
const sim::Efficiency kGemv{0.8, 0.7, 0};
const sim::Efficiency kElementwise{0.5, 0.3, 0};
const double kLaunch = 3.1622776601683795e-6;  // 10^-5.5 s
const double kLatency = 4e-6, kAlgbw = 2.5e9;  // the all-reduce of 2 ranks

ClusterSpec TestCluster() {
  ClusterSpec c;
  c.name = "test-host";
  c.num_nodes = 1;
  c.devices_per_node = 2;
  c.device.name = "Test CPU core";
  c.device.kind = DeviceKind::kCpu;
  c.device.peak_flops[DType::kFp32] = 1e11;
  c.device.memory_bandwidth = 2e10;
  c.device.launch_overhead = 1e-6;
  c.scale_out.nic_bandwidth_per_device = 5e9;
  return c;
}

int64_t Ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// A trace of experiment `name` run in fp32 on TestCluster(), to add ops to.
StatusOr<std::unique_ptr<trace::TraceWriter>> OpenTestTrace(const std::string& path,
                                                            const std::string& name) {
  const nlohmann::json metadata = {{"experiment",
                                    {{"name", name},
                                     {"workload", {{"dtype", "fp32"}}},
                                     {"cluster", ClusterToJson(TestCluster())}}}};
  return trace::TraceWriter::Open(path, metadata);
}

// A two-rank fp32 trace whose op times are the compute model's with the true
// parameters: ffn_up GEMMs of m = 2 … 32 rows (the CPU's small_gemm class),
// of 64 … 512 rows (gemm: square, and with k = 8 to be memory-bound), matrix-vector products
// (m = 1), norms, two attention ops (too few to fit), and all-reduces of
// 1 kB … 10 MB where rank 1 waits 7 µs for rank 0 (sync wait, not transfer).
std::string WriteSyntheticTrace(const std::string& path) {
  const DeviceRoofs roofs{1e11, 2e10};
  auto writer = OpenTestTrace(path, "synthetic");
  EXPECT_TRUE(writer.ok()) << writer.status().message();
  int64_t t = 0;
  auto op = [&](int32_t rank, const std::string& kind, double flops, double read, double written,
                double seconds) {
    trace::OpEvent e;
    e.rank = rank;
    e.name = kind;
    e.kind = kind;
    e.phase = trace::Phase::kPrefill;
    e.flops = static_cast<int64_t>(flops);
    e.bytes_read = static_cast<int64_t>(read);
    e.bytes_written = static_cast<int64_t>(written);
    e.ts_ns = t;
    e.dur_ns = Ns(seconds);
    t += e.dur_ns + 1000;
    (*writer)->AddOp(e);
  };
  const double k = 1024, n = 1024;
  for (int32_t rank : {0, 1}) {
    for (int rep = 0; rep < 3; ++rep) {
      for (double m : {2.0, 4.0, 8.0, 16.0, 32.0}) {
        ShapeSample s{2 * m * n * k, 4 * (m * k + k * n + m * n), m, 0, 1};
        op(rank, "ffn_up", s.flops, 4 * (m * k + k * n), 4 * m * n,
           ModelSeconds(kSmallGemm, roofs, kLaunch, s));
      }
      for (double m : {64.0, 128.0, 256.0, 512.0}) {
        for (double depth : {k, 8.0}) {
          ShapeSample s{2 * m * n * depth, 4 * (m * depth + depth * n + m * n), m, 0, 1};
          op(rank, "ffn_up", s.flops, 4 * (m * depth + depth * n), 4 * m * n,
             ModelSeconds(kGemm, roofs, kLaunch, s));
        }
      }
      for (double width : {512.0, 1024.0, 2048.0, 4096.0}) {
        ShapeSample s{2 * width * k, 4 * (k + k * width + width), 1, 0, 1};
        op(rank, "ffn_down", s.flops, 4 * (k + k * width), 4 * width,
           ModelSeconds(kGemv, roofs, kLaunch, s));
      }
      for (double bytes : {1e4, 1e5, 1e6, 1e7}) {
        ShapeSample s{bytes / 4, bytes, 0, 0, 1};
        op(rank, "norm", s.flops, bytes / 2, bytes / 2,
           ModelSeconds(kElementwise, roofs, kLaunch, s));
      }
    }
    op(rank, "attention", 1e6, 1e5, 1e5, 1e-4);
  }
  int64_t seq = 0;
  for (double bytes : {1e3, 1e4, 1e5, 1e6, 1e7}) {
    for (int rep = 0; rep < 2; ++rep, ++seq) {
      const double transfer = kLatency + bytes / kAlgbw;
      for (int32_t rank : {0, 1}) {
        trace::OpEvent e;
        e.rank = rank;
        e.stream = 1;
        e.name = "allreduce.tp";
        e.category = trace::Category::kComm;
        e.kind = "all_reduce";
        e.collective = Collective::kAllReduce;
        e.dim = Dim::kTp;
        e.group = {0, 1};
        e.seq = seq;
        e.bytes = static_cast<int64_t>(bytes);
        e.ts_ns = t - (rank == 1 ? 7000 : 0);
        e.dur_ns = Ns(transfer) + (rank == 1 ? 7000 : 0);
        (*writer)->AddOp(e);
      }
      t += Ns(transfer) + 10000;
    }
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

class CalibrateTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path(); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  testing::ScratchDir scratch_{"calibrate_test"};
  fs::path dir_;
};

const ClassFit& Find(const CalibrationResult& r, const std::string& name) {
  for (const ClassFit& f : r.classes) {
    if (f.name == name) return f;
  }
  ADD_FAILURE() << "no class " << name;
  static ClassFit none;
  return none;
}

TEST_F(CalibrateTest, RecoversTheTrueParametersOfASyntheticTrace) {
  auto r = Calibrate({WriteSyntheticTrace(Path("run.trace"))}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->device, "Test CPU core");
  EXPECT_EQ(r->dtype, DType::kFp32);
  ASSERT_TRUE(r->launch_fitted);
  EXPECT_NEAR(r->calibration.launch_overhead, kLaunch, kLaunch * 0.01);

  const ClassFit& gemm = Find(*r, "gemm");
  ASSERT_TRUE(gemm.fitted) << gemm.why_not;
  EXPECT_EQ(gemm.samples, 2 * 3 * 8);
  EXPECT_EQ(gemm.shapes, 8);
  EXPECT_NEAR(gemm.result.flops, kGemm.flops, kGemm.flops * 0.01);
  EXPECT_NEAR(gemm.result.memory, kGemm.memory, kGemm.memory * 0.01);
  EXPECT_NEAR(gemm.result.half_rows, kGemm.half_rows, kGemm.half_rows * 0.05);
  EXPECT_LT(gemm.residual.rms_relative, 0.01);

  // 2–32 rows: a CPU device's small-GEMM regime (its default small_gemm_rows),
  // fitted apart from the larger GEMMs.
  EXPECT_EQ(r->calibration.small_gemm_rows, 32);
  const ClassFit& small = Find(*r, "small_gemm");
  ASSERT_TRUE(small.fitted) << small.why_not;
  EXPECT_EQ(small.samples, 2 * 3 * 5);
  EXPECT_NEAR(small.result.flops, kSmallGemm.flops, kSmallGemm.flops * 0.01);
  EXPECT_NEAR(small.result.memory, kSmallGemm.memory, kSmallGemm.memory * 0.01);
  EXPECT_NEAR(small.result.half_rows, kSmallGemm.half_rows, kSmallGemm.half_rows * 0.05);

  // m = 1: the matrix-vector regime, rows found from FLOPs and bytes.
  const ClassFit& gemv = Find(*r, "gemv");
  ASSERT_TRUE(gemv.fitted) << gemv.why_not;
  EXPECT_EQ(gemv.samples, 2 * 3 * 4);
  EXPECT_NEAR(gemv.result.memory, kGemv.memory, kGemv.memory * 0.01);

  const ClassFit& elementwise = Find(*r, "elementwise");
  ASSERT_TRUE(elementwise.fitted);
  EXPECT_NEAR(elementwise.result.memory, kElementwise.memory, kElementwise.memory * 0.01);

  const ClassFit& attention = Find(*r, "attention");
  EXPECT_FALSE(attention.fitted);
  EXPECT_EQ(attention.samples, 2);
  EXPECT_NE(attention.why_not.find("too few samples (2 < 5)"), std::string::npos);
  EXPECT_EQ(attention.result.flops, attention.prior.flops);

  ASSERT_EQ(r->collectives.size(), 1u);
  const CollectiveFit& ar = r->collectives[0];
  EXPECT_EQ(ar.collective, Collective::kAllReduce);
  EXPECT_EQ(ar.group_size, 2);
  EXPECT_EQ(ar.samples, 10);  // calls, not rank-ops: the two members are one call
  EXPECT_EQ(ar.sizes, 5);
  ASSERT_TRUE(ar.fit.latency_known);
  EXPECT_NEAR(ar.fit.latency, kLatency, kLatency * 0.01);  // without rank 1's 7 µs wait
  EXPECT_NEAR(ar.fit.algbw, kAlgbw, kAlgbw * 0.01);
  // The wait: rank 0 waits 0, rank 1 7 µs: a member waits 3.5 µs on average.
  EXPECT_EQ(ar.wait_calls, 10);
  EXPECT_NEAR(ar.wait, 3.5e-6, 1e-9);
  EXPECT_NEAR(ar.busbw, kAlgbw, kAlgbw * 0.01);  // 2(n−1)/n = 1 for n = 2
  ASSERT_TRUE(r->network_fitted);
  EXPECT_NEAR(r->calibration.network_efficiency, 0.5, 0.005);  // 2.5 of 5 GB/s
}

// Matrix-vector products whose every fourth run of a shape takes twice as
// long (a host that slows now and then): each shape's median is the true
// time, its mean 1.25 × it. With shape_mean the fit is of the mean op, so its
// memory efficiency is the true one ÷ 1.25 (the launch, ~2 % of these ops,
// is left to the grid).
TEST_F(CalibrateTest, ShapeTimeIsTheMedianOrTheMeanOfItsOps) {
  const DeviceRoofs roofs{1e11, 2e10};
  const std::string path = Path("jittered.trace");
  {
    auto writer = OpenTestTrace(path, "jittered");
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    int64_t t = 0;
    const double k = 1024;
    for (double width : {512.0, 1024.0, 2048.0, 4096.0, 8192.0}) {
      for (double slow : {1.0, 1.0, 1.0, 2.0}) {
        ShapeSample s{2 * width * k, 4 * (k + k * width + width), 1, 0, 1};
        trace::OpEvent e;
        e.name = e.kind = "ffn_down";
        e.phase = trace::Phase::kDecode;
        e.flops = static_cast<int64_t>(s.flops);
        e.bytes_read = static_cast<int64_t>(4 * (k + k * width));
        e.bytes_written = static_cast<int64_t>(4 * width);
        e.ts_ns = t;
        e.dur_ns = Ns(slow * ModelSeconds(kGemv, roofs, kLaunch, s));
        t += e.dur_ns + 1000;
        (*writer)->AddOp(e);
      }
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  auto median = Calibrate({path}, {});
  CalibrateOptions o;
  o.shape_mean = true;
  auto mean = Calibrate({path}, o);
  ASSERT_TRUE(median.ok() && mean.ok()) << median.status().message();
  const ClassFit& m = Find(*median, "gemv");
  const ClassFit& a = Find(*mean, "gemv");
  ASSERT_TRUE(m.fitted && a.fitted);
  EXPECT_NEAR(m.result.memory, kGemv.memory, kGemv.memory * 0.02);
  EXPECT_NEAR(a.result.memory, kGemv.memory / 1.25, kGemv.memory * 0.02);
  EXPECT_NE(CalibrationSummary(*median).find("the median of its ops"), std::string::npos);
  EXPECT_NE(CalibrationSummary(*mean).find("the mean of its ops"), std::string::npos);
}

TEST_F(CalibrateTest, WritesAFileTheSimulatorLoads) {
  auto r = Calibrate({WriteSyntheticTrace(Path("run.trace"))}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  // The CPU's sgemm packs from the cache too: the file says so for the gemm class alone.
  const std::string yaml = CalibrationYaml(*r);
  EXPECT_NE(yaml.find("ramp_from_cache: true"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("ramp_from_cache"), yaml.rfind("ramp_from_cache"));
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(TestCluster().device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const sim::Efficiency& gemm = loaded->classes.at(sim::OpClass::kGemm);
  EXPECT_NEAR(gemm.flops, r->calibration.classes.at(sim::OpClass::kGemm).flops, 1e-3);
  EXPECT_NEAR(gemm.half_rows, 4, 0.2);
  EXPECT_EQ(loaded->small_gemm_rows, 32);
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kSmallGemm).memory, kSmallGemm.memory, 0.01);
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kGemv).memory, kGemv.memory, 0.01);
  EXPECT_NEAR(loaded->launch_overhead, kLaunch, kLaunch * 0.01);
  EXPECT_NEAR(loaded->network_efficiency, 0.5, 0.005);
  // The all-reduce's fitted line is the simulator's for 2-rank all-reduces.
  ASSERT_EQ(loaded->terms.collectives.size(), 1u);
  const sim::MeasuredCollective& ar = loaded->terms.collectives.at({Collective::kAllReduce, 2});
  EXPECT_NEAR(ar.latency, kLatency, kLatency * 0.01);
  EXPECT_NEAR(ar.algbw, kAlgbw, kAlgbw * 0.01);
  EXPECT_NEAR(ar.wait, 3.5e-6, 1e-9);
  EXPECT_NEAR((r->calibration.terms.collectives.at({Collective::kAllReduce, 2}).latency), kLatency,
              kLatency * 0.01);
  // Attention was not fitted: the file leaves it to the defaults.
  EXPECT_EQ(
      loaded->classes.at(sim::OpClass::kAttention).flops,
      sim::DefaultCalibration(TestCluster().device).classes.at(sim::OpClass::kAttention).flops);
}

TEST_F(CalibrateTest, DoesNotOverwriteWithoutForce) {
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, "old\n", false).ok());
  Status s = WriteNewFile(out, "new\n", false);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(out), std::string::npos);
  EXPECT_NE(s.message().find("--force"), std::string::npos);
  ASSERT_TRUE(WriteNewFile(out, "new\n", true).ok());
  std::ifstream f(out);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "new");
}

TEST_F(CalibrateTest, NegativeFieldIsAnErrorNamingFileEventAndField) {
  const std::string path = Path("bad.json");
  std::ofstream(path) << R"({"traceEvents": [
{"ph": "X", "pid": 0, "tid": 0, "ts": 1, "dur": 5, "name": "L0.norm", "cat": "compute", "args": {"kind": "norm", "bytes_read": 100}},
{"ph": "X", "pid": 0, "tid": 0, "ts": 10, "dur": 5, "name": "L1.norm", "cat": "compute", "args": {"kind": "norm", "flops": -3, "bytes_read": 100}}
]})";
  auto r = Calibrate({path}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("op event 2 ('L1.norm'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("args.flops"), std::string::npos) << r.status().message();
}

TEST_F(CalibrateTest, MissingFileIsAnError) {
  auto r = Calibrate({Path("absent.trace")}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("absent.trace"), std::string::npos);
}

TEST_F(CalibrateTest, UnknownHardwareIsAnError) {
  CalibrateOptions o;
  o.hardware = "no-such-machine";
  auto r = Calibrate({WriteSyntheticTrace(Path("run.trace"))}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--hardware"), std::string::npos);
}

// Matrix-vector products that alone run at 0.9 × 20 GB/s, on one rank alone
// and on two ranks sharing a node bus of 30 GB/s (15 each) — while the
// cluster file says 20. The lone run measures e_m, the shared one the bus.
std::string WriteGemvTrace(const std::string& path, int world, double true_cap,
                           const std::vector<double>& widths = {512, 1024, 2048, 4096}) {
  ClusterSpec cluster = TestCluster();
  cluster.node_memory_bandwidth = 20e9;
  nlohmann::json metadata = {
      {"experiment",
       {{"name", "synthetic_gemv"},
        {"parallelism", {{"world_size", world}, {"pp_size", 1}, {"dp_size", 1}, {"ep_size", 1}}},
        {"workload", {{"dtype", "fp32"}, {"batch_size", 1}}},
        {"cluster", ClusterToJson(cluster)}}}};
  auto writer = trace::TraceWriter::Open(path, metadata);
  EXPECT_TRUE(writer.ok());
  const DeviceRoofs roofs{1e11, 2e10};
  const sim::Efficiency truth{0.5, 0.9, 0};
  int64_t t = 0;
  for (int32_t rank = 0; rank < world; ++rank) {
    for (double width : widths) {
      for (int rep = 0; rep < 3; ++rep) {
        const double k = 1024;
        ShapeSample s{2 * width * k, 4 * (k + k * width + width), 1, 0, 1, true_cap};
        trace::OpEvent e;
        e.rank = rank;
        e.name = e.kind = "ffn_down";
        e.flops = static_cast<int64_t>(s.flops);
        e.bytes_read = static_cast<int64_t>(4 * (k + k * width));
        e.bytes_written = static_cast<int64_t>(4 * width);
        e.ts_ns = t;
        e.dur_ns = Ns(ModelSeconds(truth, roofs, kLaunch, s));
        t += e.dur_ns + 1000;
        (*writer)->AddOp(e);
      }
    }
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

// issue 35: the metadata's counts were read with nlohmann's value<int64_t>(), which
// casts a float unchecked (batch 1e300 is undefined behaviour) and throws on text;
// nonsense counts and non-text names now fall back to their defaults.
TEST_F(CalibrateTest, MetadataCountsOutOfRangeOrOfTheWrongTypeFallBack) {
  ClusterSpec cluster = TestCluster();
  cluster.node_memory_bandwidth = 20e9;
  nlohmann::json c = ClusterToJson(cluster);
  c["name"] = 7;
  c["devices_per_node"] = -1e30;
  c["device"]["kind"] = nullptr;
  const nlohmann::json metadata = {
      {"experiment",
       {{"name", "nonsense"},
        {"parallelism", {{"world_size", 1e300}, {"dp_size", "two"}, {"ep_size", 1e19}}},
        {"workload", {{"dtype", 5}, {"batch_size", 1e300}}},
        {"cluster", c}}}};
  const std::string path = Path("nonsense.trace");
  auto writer = trace::TraceWriter::Open(path, metadata);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  trace::OpEvent e;
  e.name = e.kind = "ffn_down";
  e.phase = trace::Phase::kPrefill;
  e.flops = 1000000;
  e.bytes_read = 4096;
  e.dur_ns = 1000;
  (*writer)->AddOp(e);
  ASSERT_TRUE((*writer)->Close().ok());
  auto samples = CollectSamples({path});
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_TRUE(samples->cluster.has_value());
  EXPECT_EQ(samples->cluster->name, "");
  EXPECT_EQ(samples->cluster->devices_per_node, 1);
  EXPECT_FALSE(samples->dtype.has_value());
}

TEST_F(CalibrateTest, FitsTheNodeMemoryBusOfTwoBusyRanks) {
  auto r = Calibrate(
      {WriteGemvTrace(Path("tp1.trace"), 1, 30e9), WriteGemvTrace(Path("tp2.trace"), 2, 15e9)}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(Find(*r, "gemv").result.memory, 0.9, 0.9 * 0.01);
  ASSERT_TRUE(r->node_bandwidth_fitted);
  EXPECT_NEAR(r->calibration.node_memory_bandwidth, 30e9, 30e9 * 0.01);
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(TestCluster().device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(loaded->node_memory_bandwidth, 30e9, 30e9 * 0.01);
}

// The same runs, but the shared run's matrices are not the lone run's: the bus
// cannot be told apart from the shapes' own rates, so the cluster's is kept.
TEST_F(CalibrateTest, KeepsTheClusterNodeBusWhenNoShapeWasMeasuredAloneAndShared) {
  auto r = Calibrate({WriteGemvTrace(Path("tp1.trace"), 1, 30e9, {512, 1024, 2048, 4096}),
                      WriteGemvTrace(Path("tp2.trace"), 2, 15e9, {768, 1536, 3072, 6144})},
                     {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->node_bandwidth_fitted);
  EXPECT_NE(r->node_bandwidth_why_not.find("measured both alone on the node and with its"),
            std::string::npos);
  EXPECT_NE(r->node_bandwidth_why_not.find("20 GB/s kept"), std::string::npos);
  EXPECT_NE(CalibrationSummary(*r).find("node memory bandwidth not fitted"), std::string::npos);
  EXPECT_EQ(CalibrationYaml(*r).find("node_memory_bandwidth_gb_s"), std::string::npos);
}

const TermFit& FindTerm(const CalibrationResult& r, const std::string& name) {
  for (const TermFit& t : r.terms) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no term " << name;
  static TermFit none{""};
  return none;
}

// A simulated run with known overhead terms gives them back: the host gap
// before each decode step's first op is the iteration overhead, the shortest
// kernel the minimum kernel time (every op is at least that, some exactly).
TEST_F(CalibrateTest, RecoversTheIterationOverheadAndMinimumKernelOfASimulatedRun) {
  ParallelSpec p;
  p.tp = 2;
  p.strategy = "test";
  const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, 2, 64, 9);
  const std::string terms = Path("terms.yaml");
  std::ofstream(terms) << "iteration_overhead_us: 25\nmin_kernel_us: 6\n";
  sim::SimOptions o;
  o.calibration_file = terms;
  o.trace_file = Path("sim.trace");
  auto simulated = sim::SimulateExperiment(e, o);
  ASSERT_TRUE(simulated.ok()) << simulated.status().message();
  auto r = Calibrate({o.trace_file}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TermFit& gap = FindTerm(*r, "iteration_overhead_us");
  ASSERT_TRUE(gap.fitted) << gap.why_not;
  EXPECT_EQ(gap.samples, 2 * 7);          // 2 ranks × 7 pairs of consecutive steps (8 steps)
  EXPECT_NEAR(gap.seconds, 25e-6, 2e-9);  // ns rounding of the trace
  const TermFit& floor = FindTerm(*r, "min_kernel_us");
  ASSERT_TRUE(floor.fitted) << floor.why_not;
  EXPECT_NEAR(floor.seconds, 6e-6, 1e-9);
  EXPECT_FALSE(FindTerm(*r, "cold_start_us").fitted);
  EXPECT_FALSE(FindTerm(*r, "cold_start_us").why_not.empty());
  // The file carries them.
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(e.cluster.device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(loaded->terms.iteration_overhead, 25e-6, 2e-9);
  EXPECT_NEAR(loaded->terms.min_kernel, 6e-6, 1e-9);
  // Without the terms the simulated steps follow each other with no gap.
  sim::SimOptions plain = o;
  plain.calibration_file.clear();
  plain.trace_file = Path("plain.trace");
  ASSERT_TRUE(sim::SimulateExperiment(e, plain).ok());
  auto r0 = Calibrate({plain.trace_file}, {});
  ASSERT_TRUE(r0.ok());
  EXPECT_NEAR(FindTerm(*r0, "iteration_overhead_us").seconds, 0, 2e-9);
}

// Ranks of known unequal speed (rank_speed_spread in the simulation) give the
// spread back: on TP2 × DP2 every rank runs the same ops, rank r at 1 + s·z_r
// of the model's time, so each phase's slowest rank is s·z₄ above the mean.
TEST_F(CalibrateTest, RecoversTheRankSpreadOfSimulatedRuns) {
  ParallelSpec p;
  p.tp = 2;
  p.dp = 2;
  p.strategy = "test";
  const std::string truth = Path("spread.yaml");
  std::ofstream(truth) << "rank_speed_spread: 0.04\n";
  std::vector<std::string> traces;
  for (int64_t batch : {2, 4, 8}) {
    const Experiment e = testing::ZooExperiment("tiny-dense", "h100-sxm", p, batch, 64, 5);
    sim::SimOptions o;
    o.calibration_file = truth;
    o.trace_file = Path(fmt::format("spread_b{}.trace", batch));
    auto simulated = sim::SimulateExperiment(e, o);
    ASSERT_TRUE(simulated.ok()) << simulated.status().message();
    traces.push_back(o.trace_file);
  }
  auto r = Calibrate(traces, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TermFit& spread = FindTerm(*r, "rank_speed_spread");
  ASSERT_TRUE(spread.fitted) << spread.why_not;
  EXPECT_EQ(spread.samples, 6);  // 3 runs × 2 phases
  EXPECT_NEAR(spread.seconds, 0.04, 0.0005);
  EXPECT_NE(CalibrationYaml(*r).find("rank_speed_spread: 0.04"), std::string::npos)
      << CalibrationYaml(*r);
  // One rank has no spread to show.
  ParallelSpec one;
  one.strategy = "test";
  sim::SimOptions o;
  o.calibration_file = truth;
  o.trace_file = Path("lone.trace");
  ASSERT_TRUE(
      sim::SimulateExperiment(testing::ZooExperiment("tiny-dense", "h100-sxm", one, 2, 64, 5), o)
          .ok());
  auto lone = Calibrate({o.trace_file}, {});
  ASSERT_TRUE(lone.ok()) << lone.status().message();
  EXPECT_EQ(FindTerm(*lone, "rank_speed_spread").samples, 0);
  EXPECT_FALSE(FindTerm(*lone, "rank_speed_spread").fitted);
}

// Each rank's time over its ops' time at their mean over the ranks: the slowest's
// excess over the ranks' mean. An op that one rank alone ran is left out.
TEST(RankSpreadOfTest, SlowestRankOverTheMeanOnSharedOps) {
  std::vector<RankOpTime> ops;
  const std::tuple<int, double, double> a{0, 1e6, 1e3}, b{1, 0, 4e3}, own{2, 5e6, 0};
  for (int i = 0; i < 10; ++i) {
    ops.push_back({0, a, 1.0e-3});
    ops.push_back({1, a, 1.1e-3});
    ops.push_back({0, b, 2.0e-3});
    ops.push_back({1, b, 2.2e-3});
  }
  ops.push_back({1, own, 1.0});  // rank 1's alone: not compared
  auto s = RankSpreadOf(ops, 16);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->ranks, 2);
  // Rank 1 ran 1.1 × rank 0 on every shared op: 1.1 / 1.05 − 1.
  EXPECT_NEAR(s->excess, 1.1 / 1.05 - 1, 1e-12);
  EXPECT_FALSE(RankSpreadOf(ops, 21).has_value());  // 20 shared ops each
  ops.erase(std::remove_if(ops.begin(), ops.end(), [](const RankOpTime& o) { return o.rank; }),
            ops.end());
  EXPECT_FALSE(RankSpreadOf(ops, 1).has_value());  // one rank
}

// Simulated runs of tiny-moe-mla and tiny-dense on local-cpu (both
// cache-resident), and of `more` models, at each of `batches` with the
// calibration `truth` (file text, over the CPU defaults): their traces.
std::vector<std::string> SimulatedResidentTraces(const std::string& dir, const std::string& truth,
                                                 std::vector<int64_t> batches = {2},
                                                 std::vector<std::string> more = {}) {
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/truth.yaml";
  std::ofstream(file) << truth;
  std::vector<std::string> traces;
  for (int64_t batch : batches) {
    std::vector<std::string> models = {"tiny-moe-mla", "tiny-dense"};
    models.insert(models.end(), more.begin(), more.end());
    for (const std::string& model : models) {
      const Experiment e = testing::ZooExperiment(model, "local-cpu", {}, batch, 64, 9);
      EXPECT_EQ(sim::CacheResident(e), model.starts_with("tiny")) << model;
      sim::SimOptions o;
      o.calibration_file = file;
      o.trace_file = fmt::format("{}/{}.b{}.trace", dir, model, batch);
      auto simulated = sim::SimulateExperiment(e, o);
      EXPECT_TRUE(simulated.ok()) << simulated.status().message();
      traces.push_back(o.trace_file);
    }
  }
  return traces;
}

// Simulated runs of two small models whose weights fit local-cpu's cache, with
// a known cache bandwidth, per-class launches and a host gap of fixed + per op
// before each decode step: calibrate gives them back.
TEST_F(CalibrateTest, RecoversTheCacheBandwidthLaunchPerClassAndPerOpGapOfSimulatedRuns) {
  auto r = Calibrate(SimulatedResidentTraces(dir_.string(),
                                             "ops:\n  gemm: {launch_us: 2}\n  small_gemm: "
                                             "{launch_us: 2, cache_bandwidth_gb_s: 40, "
                                             "cache_flops_efficiency: 1}\n"
                                             "  elementwise: {launch_us: "
                                             "0.3}\ncache_bandwidth_gb_s: 40\n"
                                             "iteration_overhead_us: 3\n"
                                             "iteration_overhead_per_op_us: 0.2\n"),
                     {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->cache.fitted) << r->cache.why_not;
  EXPECT_GT(r->cache.samples, 100);
  EXPECT_NEAR(r->cache.bandwidth, 40e9, 40e9 * 0.03);
  // The decode GEMMs (2 rows: small_gemm, no row ramp from the cache) show the
  // launch; the prefill's (gemm) pay the ramp from the cache too and are
  // FLOP-bound there, so their launch hides under the FLOPs.
  const ClassFit& gemm = Find(*r, "small_gemm");
  ASSERT_TRUE(gemm.fitted) << gemm.why_not;
  EXPECT_NEAR(gemm.result.launch, 2e-6, 2e-6 * 0.15);
  const ClassFit& elementwise = Find(*r, "elementwise");
  ASSERT_TRUE(elementwise.fitted) << elementwise.why_not;
  EXPECT_NEAR(elementwise.result.launch, 0.3e-6, 0.3e-6 * 0.15);
  const TermFit& fixed = FindTerm(*r, "iteration_overhead_us");
  const TermFit& per_op = FindTerm(*r, "iteration_overhead_per_op_us");
  ASSERT_TRUE(fixed.fitted && per_op.fitted) << per_op.why_not;
  EXPECT_NEAR(fixed.seconds, 3e-6, 0.05e-6);
  EXPECT_NEAR(per_op.seconds, 0.2e-6, 0.002e-6);
  // The file carries them.
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(TestCluster().device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(loaded->cache_bandwidth, r->cache.bandwidth, r->cache.bandwidth * 1e-3);
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kSmallGemm).launch, gemm.result.launch, 1e-9);
}

// Cache-resident runs whose GEMMs stream from the cache at 80 GB/s and every
// other class at 40: each class's rate is found.
TEST_F(CalibrateTest, RecoversAClassOwnCacheBandwidth) {
  auto r = Calibrate(SimulatedResidentTraces(dir_.string(),
                                             "ops:\n  gemm: {launch_us: 2, cache_bandwidth_gb_s: "
                                             "80}\n  small_gemm: {launch_us: 2, "
                                             "cache_bandwidth_gb_s: 80, "
                                             "cache_flops_efficiency: 1}\n  elementwise: "
                                             "{launch_us: 0.3}\n"
                                             "cache_bandwidth_gb_s: 40\n"),
                     {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->cache.fitted) << r->cache.why_not;
  // The decode GEMMs' (small_gemm: memory-bound from the cache).
  const ClassFit& gemm = Find(*r, "small_gemm");
  ASSERT_TRUE(gemm.fitted) << gemm.why_not;
  EXPECT_NEAR(gemm.result.cache, 80e9, 80e9 * 0.03);
  EXPECT_NE(gemm.note.find("own cache bandwidth"), std::string::npos) << gemm.note;
  // The common rate is the GEMMs' (most of the time); elementwise ops get
  // their own, within the launch grid's step (0.05 decade, which the rate
  // absorbs on these launch-bound ops).
  const ClassFit& elementwise = Find(*r, "elementwise");
  const double rate = elementwise.result.cache > 0 ? elementwise.result.cache : r->cache.bandwidth;
  EXPECT_NEAR(rate, 40e9, 40e9 * 0.1);
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(TestCluster().device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kSmallGemm).cache, gemm.result.cache, 1e-3 * 80e9);
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kElementwise).cache, elementwise.result.cache,
              1e-3 * 40e9);
}

// Runs of 2 and 8 rows: from memory (bench-dense-250m) the small GEMMs' FLOP
// term ramps with the rows to 0.99 of the peak; cache-resident (the tiny
// models, bf16: 2 FLOPs per byte at 2 rows), 2-row ones stream at 16 GB/s and
// 8-row ones are FLOP-bound at a ceiling of 0.45 (as the CPU's SmallGemm):
// the ceiling and the rate are found, and written to the file.
TEST_F(CalibrateTest, RecoversAClassFlopCeilingFromTheCache) {
  const std::string truth =
      "ops:\n  small_gemm: {flops_efficiency: 0.99, memory_efficiency: 0.68, half_rows: 11, "
      "launch_us: 1, cache_bandwidth_gb_s: 16, cache_flops_efficiency: 0.45}\n"
      "cache_bandwidth_gb_s: 30\n";
  auto r =
      Calibrate(SimulatedResidentTraces(dir_.string(), truth, {2, 8}, {"bench-dense-250m"}), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->cache.fitted) << r->cache.why_not;
  const ClassFit& gemm = Find(*r, "small_gemm");
  ASSERT_TRUE(gemm.fitted) << gemm.why_not;
  EXPECT_NEAR(gemm.result.cache, 16e9, 16e9 * 0.03) << CalibrationSummary(*r);
  EXPECT_NEAR(gemm.result.cache_flops, 0.45, 0.45 * 0.05);
  EXPECT_NE(gemm.note.find("FLOP efficiency 0.4"), std::string::npos) << gemm.note;
  const std::string out = Path("calibration.yaml");
  ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(TestCluster().device));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_NEAR(loaded->classes.at(sim::OpClass::kSmallGemm).cache_flops, gemm.result.cache_flops,
              1e-3);
}

// A dimension tensor cores cannot take: k, or m or n ≥ 16, not a multiple of
// 16 bytes (bf16, fp8). m and n are the shape's two roots, so an odd m ≥ 16
// counts too.
TEST(GemmRowsTest, MisalignedShapes) {
  auto odd = [](double m, double k, double n, double s) {
    return GemmMisaligned(2 * m * n * k, s * (m * k + k * n), s * m * n, s);
  };
  EXPECT_FALSE(odd(16, 4096, 4096, 2));
  EXPECT_FALSE(odd(3, 4096, 14336, 2));   // a decode batch of 3 rows
  EXPECT_TRUE(odd(1024, 4096, 6283, 2));  // 50 257-token vocabulary over 8 ranks
  EXPECT_TRUE(odd(16, 6283, 4096, 2));
  EXPECT_TRUE(odd(37, 4096, 4096, 2));     // the price of not telling m from n
  EXPECT_FALSE(odd(1024, 4096, 6283, 4));  // fp32: no tensor cores, no alignment rule
  EXPECT_TRUE(odd(1024, 4096, 6284, 2));   // 12 568 bytes: a multiple of 8, not 16
  EXPECT_FALSE(odd(1024, 4096, 6288, 2));
  EXPECT_FALSE(GemmMisaligned(0, 10, 10, 2));
  // k alone (foreign GEMMs, whose m is the batch's): an odd m or n passes.
  auto odd_k = [](double m, double k, double n) {
    return GemmMisaligned(2 * m * n * k, 2 * (m * k + k * n), 2 * m * n, 2, /*k_only=*/true);
  };
  EXPECT_FALSE(odd_k(37, 4096, 4096));
  EXPECT_FALSE(odd_k(1024, 4096, 6283));
  EXPECT_TRUE(odd_k(16, 6283, 4096));
}

TEST(GemmRowsTest, SmallerRootOfTheShape) {
  // m × k · k × n in fp32 (4 bytes): FLOPs 2mnk, read (mk + kn)·4, written mn·4.
  auto rows = [](double m, double k, double n) {
    return GemmRows(2 * m * n * k, 4 * (m * k + k * n), 4 * m * n, 4);
  };
  EXPECT_EQ(rows(1, 1024, 4096), 1);
  EXPECT_EQ(rows(4, 1024, 4096), 4);
  EXPECT_EQ(rows(128, 2048, 512), 128);
  EXPECT_EQ(GemmRows(0, 10, 10, 4), 0);
}

// GEMMs on a Hopper GPU: tensor-core tiles of 64 rows make the ramp long.
const sim::Efficiency kHopperGemm{0.7, 0.8, 64};

// A Kineto trace (PyTorch profiler, recorded with shapes) of bf16 matrix
// products on an H100 whose kernel times are the compute model's with known
// parameters: each kernel reaches its shape through its launch (correlation id)
// and the launch's host op (External id; the Input Dims and Input type). The
// fit must give the parameters back.
TEST_F(CalibrateTest, RecoversTheTrueParametersOfASyntheticKinetoTrace) {
  auto cluster = LoadZooCluster("h100-sxm", DefaultHardwareDir());
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const DeviceRoofs roofs{*cluster->device.PeakFlops(DType::kBf16),
                          cluster->device.memory_bandwidth};
  std::string events;
  double t = 0;  // µs
  int64_t id = 0;
  auto add = [&](const std::string& name, const nlohmann::json& dims, double seconds) {
    ++id;
    const double host = t, launch = t + 1, kernel = t + 5, dur = seconds * 1e6;
    events += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 100, "tid": 10, "ts": {:.3f}, )"
        R"("dur": 4.0, "args": {{"External id": {}, "Input Dims": {}, )"
        R"("Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}}}},)"
        "\n",
        name, host, id, dims.dump());
    events += fmt::format(
        R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, )"
        R"("tid": 10, "ts": {:.3f}, "dur": 2.0, "args": {{"External id": {}, "correlation": {}}}}},)"
        "\n",
        launch, id, 1000 + id);
    events += fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_{}", "pid": 0, "tid": 7, )"
        R"("ts": {:.3f}, "dur": {:.3f}, "args": {{"correlation": {}}}}},)"
        "\n",
        id, kernel, dur, 1000 + id);
    t = kernel + dur + 10;
  };
  const double k = 4096, n = 4096;
  for (int rep = 0; rep < 3; ++rep) {
    for (double m : {2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0}) {
      const ShapeSample s{2 * m * n * k, 2 * (m * k + k * n + m * n), m, 0, 1};
      add("aten::mm", nlohmann::json::array({{m, k}, {k, n}}),
          ModelSeconds(kHopperGemm, roofs, kLaunch, s));
    }
    for (double width : {1024.0, 4096.0, 14336.0}) {  // addmm: bias first; m = 1
      const ShapeSample s{2 * width * k, 2 * (k + k * width + width), 1, 0, 1};
      add("aten::addmm", nlohmann::json::array({{width}, {1, k}, {k, width}}),
          ModelSeconds(kGemv, roofs, kLaunch, s));
    }
    // A projection from 6 283 inputs (k not a multiple of 8 bf16): cuBLAS
    // runs it without tensor cores, 8× the model's time. Left out of the fit.
    for (double m : {64.0, 256.0, 1024.0}) {
      const double odd = 6283;
      const ShapeSample s{2 * m * n * odd, 2 * (m * odd + odd * n + m * n), m, 0, 1};
      add("aten::mm", nlohmann::json::array({{m, odd}, {odd, n}}),
          8 * ModelSeconds(kHopperGemm, roofs, kLaunch, s));
    }
  }
  events.resize(events.size() - 2);  // the last ",\n"
  const std::string path = Path("kineto.pt.trace.json");
  std::ofstream(path) << R"({"schemaVersion": 1, "deviceProperties": [{"name": "NVIDIA H100"}],)"
                      << "\n\"traceEvents\": [\n"
                      << events << "\n]}\n";
  CalibrateOptions o;
  o.hardware = "h100-sxm";
  auto r = Calibrate({path}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, DType::kBf16);  // from the ops' Input type: the trace has no metadata
  ASSERT_TRUE(r->launch_fitted);
  EXPECT_NEAR(r->calibration.launch_overhead, kLaunch, kLaunch * 0.01);
  const ClassFit& gemm = Find(*r, "gemm");
  ASSERT_TRUE(gemm.fitted) << gemm.why_not;
  EXPECT_EQ(gemm.samples, 3 * 11);
  EXPECT_EQ(gemm.shapes, 11);
  EXPECT_NE(gemm.note.find("9 ops of misaligned shapes left out"), std::string::npos) << gemm.note;
  EXPECT_NEAR(gemm.result.flops, kHopperGemm.flops, kHopperGemm.flops * 0.01);
  EXPECT_NEAR(gemm.result.memory, kHopperGemm.memory, kHopperGemm.memory * 0.01);
  EXPECT_NEAR(gemm.result.half_rows, kHopperGemm.half_rows, kHopperGemm.half_rows * 0.05);
  const ClassFit& gemv = Find(*r, "gemv");
  ASSERT_TRUE(gemv.fitted) << gemv.why_not;
  EXPECT_EQ(gemv.samples, 3 * 3);
  EXPECT_NEAR(gemv.result.memory, kGemv.memory, kGemv.memory * 0.01);
  // Classes the trace has no shapes for say why.
  const ClassFit& attention = Find(*r, "attention");
  EXPECT_FALSE(attention.fitted);
  EXPECT_NE(attention.why_not.find("(0 < 5)"), std::string::npos) << attention.why_not;
}

// ../shared/testdata/kineto: real PyTorch traces. Kernels launched by a matrix
// product recorded with shapes are GEMM samples; every class without enough
// says why it is not fitted; NCCL kernels with sizes give communication fits.
TEST_F(CalibrateTest, KinetoTracesGiveAFileOrSayWhyNotPerClass) {
  const fs::path data = fs::path(SHARDSCOPE_SOURCE_DIR) / ".." / "shared" / "testdata" / "kineto";
  if (!fs::exists(data / "nccl_data.json.gz")) GTEST_SKIP() << "no " << data;
  for (const char* name :
       {"nccl_data.json.gz", "rank0.json.gz", "sglang_Qwen3-8B_decode.json.gz"}) {
    SCOPED_TRACE(name);
    CalibrateOptions o;
    o.hardware = "h100-sxm";
    auto r = Calibrate({(data / name).string()}, o);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().message();
      EXPECT_NE(r.status().message().find("gemm: "), std::string::npos) << r.status().message();
      continue;
    }
    for (const ClassFit& f : r->classes) {
      if (!f.fitted) {
        EXPECT_FALSE(f.why_not.empty()) << f.name;
      }
    }
    for (const CollectiveFit& f : r->collectives) {
      if (f.why_not.empty()) {
        EXPECT_GT(f.fit.algbw, 0);
      }
    }
    const std::string out = Path(std::string(name) + ".yaml");
    ASSERT_TRUE(WriteNewFile(out, CalibrationYaml(*r), false).ok());
    auto loaded = sim::LoadCalibration(out, r->calibration);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  }
}

}  // namespace
}  // namespace shardscope::calibrate

namespace shardscope::calibrate {
namespace {

// An all_reduce_perf log of `ranks` ranks whose times follow t = latency +
// size / algbw, 8 B … 1 GiB (×2), the first row a warm-up at 3× its time.
std::string WriteNcclTestsLog(const std::string& path, int ranks, double latency_us,
                              double algbw_gb_s) {
  std::ofstream f(path);
  f << "# nccl-tests version 2.13.11 nccl-headers=22602 nccl-library=22602\n"
    << "# Collective test starting: all_reduce_perf\n"
    << "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
       "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < ranks; ++r) {
    f << fmt::format(
        "#  Rank {:2} Group  0 Pid {:6} on {:>10} device {:2} [0000:{:02x}:00] "
        "NVIDIA H100 80GB HBM3\n",
        r, 4000 + r, fmt::format("node{}", r / 8), r % 8, 0x18 + r % 8);
  }
  f << "#\n#                                                              out-of-place"
       "                       in-place\n"
    << "#       size         count      type   redop    root     time   algbw   busbw #wrong"
       "     time   algbw   busbw #wrong\n"
    << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
       "     (us)  (GB/s)  (GB/s)\n";
  const double factor = 2.0 * (ranks - 1) / ranks;
  for (int64_t size = 8; size <= (int64_t{1} << 30); size *= 2) {
    double t = latency_us + static_cast<double>(size) / (algbw_gb_s * 1e3);
    if (size == 8) t *= 3;
    const double alg = static_cast<double>(size) / (t * 1e3);
    const std::string timing =
        fmt::format("  {:7.2f}  {:6.2f}  {:6.2f}  {:6}", t, alg, alg * factor, 0);
    f << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", size, size / 4, "float", "sum", -1)
      << timing << timing << "\n";
  }
  f << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 99.1 \n#\n"
    << "# Collective test concluded: all_reduce_perf\n";
  return path;
}

TEST_F(CalibrateTest, FitsAnNcclTestsLogIntoTheCollectivesTime) {
  CalibrateOptions o;
  o.nccl_tests.push_back({WriteNcclTestsLog(Path("ar.log"), 16, 25, 240), std::nullopt});
  auto r = Calibrate({}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->collectives.size(), 1u);
  const CollectiveFit& f = r->collectives[0];
  EXPECT_EQ(f.source, "nccl-tests");
  EXPECT_EQ(f.collective, Collective::kAllReduce);
  EXPECT_EQ(f.group_size, 16);
  EXPECT_EQ(f.sizes, 28);
  // The robust line sets the warm-up row aside.
  EXPECT_NEAR(f.fit.latency, 25e-6, 0.25e-6);
  EXPECT_NEAR(f.fit.algbw, 240e9, 2.4e9);
  const sim::MeasuredCollective& m =
      r->calibration.terms.collectives.at({Collective::kAllReduce, 16});
  EXPECT_TRUE(m.exact);
  // The file says where the line came from, and loads as an exact line.
  const std::string yaml = CalibrationYaml(*r);
  EXPECT_NE(yaml.find("source: nccl-tests"), std::string::npos) << yaml;
  const std::string out = Path("cal.yaml");
  ASSERT_TRUE(WriteNewFile(out, yaml, false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(DeviceSpec{}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const sim::MeasuredCollective& l = loaded->terms.collectives.at({Collective::kAllReduce, 16});
  EXPECT_TRUE(l.exact);
  EXPECT_NEAR(l.latency, m.latency, m.latency * 1e-3);
  EXPECT_NEAR(l.algbw, m.algbw, m.algbw * 1e-3);
  EXPECT_NE(CalibrationSummary(*r).find("all_reduce (nccl-tests)"), std::string::npos);
}

TEST_F(CalibrateTest, AnNcclTestsLineReplacesTheTracesLine) {
  CalibrateOptions o;
  o.nccl_tests.push_back({WriteNcclTestsLog(Path("ar2.log"), 2, 9, 20), std::nullopt});
  auto r = Calibrate({WriteSyntheticTrace(Path("run.trace"))}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const sim::MeasuredCollective& m =
      r->calibration.terms.collectives.at({Collective::kAllReduce, 2});
  EXPECT_TRUE(m.exact);
  EXPECT_NEAR(m.latency, 9e-6, 0.1e-6);
  ASSERT_EQ(r->collectives.size(), 2u);
  EXPECT_NE(r->collectives[0].note.find("replaced by the nccl-tests line"), std::string::npos);
}

TEST_F(CalibrateTest, NothingToCalibrateFromIsAnError) {
  auto r = Calibrate({}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing to calibrate from"), std::string::npos);
  CalibrateOptions o;
  o.deepep.push_back(Path("ll.log"));
  std::ofstream(Path("ll.log")) << "[rank 0] Dispatch bandwidth: 40.00 GB/s, avg_t=170.00 us | "
                                   "Combine bandwidth: 41.00 GB/s, avg_t=320.00 us\n";
  auto no_hw = Calibrate({}, o);
  ASSERT_FALSE(no_hw.ok());
  EXPECT_NE(no_hw.status().message().find("--deepep needs"), std::string::npos);
}

TEST_F(CalibrateTest, DeepEpLogsGiveTheExchangeBlock) {
  std::ofstream(Path("intra.log"))
      << "[config] num_tokens=4096, hidden=7168, num_topk=8\n"
         "[tuning] Best dispatch (FP8): SMs 24, NVL chunk 20, 150.00 GB/s (NVL), t: 300.00 us\n"
         "[tuning] Best combine: SMs 24, NVL chunk 6: 140.00 GB/s (NVL), t: 600.00 us\n";
  CalibrateOptions o;
  o.hardware = "h800";
  o.deepep = {Path("intra.log")};
  o.deepep_ranks = 8;
  auto r = Calibrate({}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->exchange_fitted);
  ASSERT_TRUE(r->calibration.exchange_normal.scale_up_efficiency.has_value());
  const double e = *r->calibration.exchange_normal.scale_up_efficiency;
  const std::string yaml = CalibrationYaml(*r);
  EXPECT_NE(yaml.find("exchange:\n  normal: {scale_up_efficiency: "), std::string::npos) << yaml;
  const std::string out = Path("cal.yaml");
  ASSERT_TRUE(WriteNewFile(out, yaml, false).ok());
  auto loaded = sim::LoadCalibration(out, sim::DefaultCalibration(DeviceSpec{}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(loaded->exchange_normal.scale_up_efficiency.has_value());
  EXPECT_NEAR(*loaded->exchange_normal.scale_up_efficiency, e, 1e-3);
  EXPECT_FALSE(loaded->exchange_normal.latency.has_value());
  EXPECT_FALSE(loaded->exchange_low_latency.any());
  EXPECT_NE(CalibrationSummary(*r).find("MoE exchange, normal kernels (DeepEP)"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope::calibrate
