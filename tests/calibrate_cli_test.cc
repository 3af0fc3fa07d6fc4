// `shardscope calibrate` and `validate` end to end: exit codes, files, messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_test_util.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;
using testing::FreshTempDir;
using testing::ReadWholeFile;
using testing::RunShardscope;

// A simulated TP2 run of the tiny dense model on local-cpu, as a measured trace.
fs::path SimulatedTrace(const fs::path& dir, fs::path* config) {
  *config = dir / "exp.yaml";
  std::ofstream(*config) << R"(experiments:
  - name: tiny_tp2
    model: tiny-dense
    hardware: local-cpu
    batch_size: 2
    sequence_length: 32
    tokens_to_generate: 4
    dtype: fp32
    parallelism: {strategy: tp2, tp_size: 2}
)";
  auto r = RunShardscope("run --config " + config->string() + " --out " + (dir / "t").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : fs::recursive_directory_iterator(dir / "t")) {
    if (e.path().extension() == ".trace") return e.path();
  }
  ADD_FAILURE() << "no trace written";
  return {};
}

TEST(CalibrateCliTest, WritesAFileRunAcceptsAndRefusesToOverwrite) {
  const fs::path dir = FreshTempDir("calibrate_cli_");
  fs::path config;
  const fs::path trace = SimulatedTrace(dir, &config);
  const fs::path out = dir / "cal.yaml";
  auto r = RunShardscope("calibrate " + trace.string() + " -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| gemm |"), std::string::npos) << r.out;
  EXPECT_NE(ReadWholeFile(out).find("launch_overhead_us:"), std::string::npos);
  // The file feeds the simulator.
  auto run = RunShardscope("run --config " + config.string() + " --no-trace --calibration " +
                           out.string());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // Not overwritten without --force.
  std::ofstream(out) << "keep\n";
  auto again = RunShardscope("calibrate " + trace.string() + " -o " + out.string());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("exists: not overwritten (use --force)"), std::string::npos)
      << again.err;
  EXPECT_EQ(ReadWholeFile(out), "keep\n");
  auto forced = RunShardscope("calibrate " + trace.string() + " -o " + out.string() + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

TEST(CalibrateCliTest, BadInputExitsTwoNamingTheFile) {
  const fs::path dir = FreshTempDir("calibrate_cli_");
  auto missing = RunShardscope("calibrate " + (dir / "absent.trace").string() + " -o " +
                               (dir / "c.yaml").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("absent.trace"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir / "c.yaml"));
}

TEST(CalibrateCliTest, ValidatePrintsSignedErrors) {
  const fs::path dir = FreshTempDir("validate_cli_");
  fs::path config;
  const fs::path trace = SimulatedTrace(dir, &config);
  auto r = RunShardscope("validate --config " + config.string() +
                         " --experiment tiny_tp2 --format csv --measured " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tiny_tp2,run,ttft,s,"), std::string::npos) << r.out;
  auto bad = RunShardscope("validate --config " + config.string() +
                           " --experiment nope --measured " + trace.string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("nope"), std::string::npos) << bad.err;
}

// An all_reduce_perf log of 8 ranks on one node whose out-of-place times follow
// t = 60 µs + size / 120 GB/s, 8 B … 1 GiB (×2), as nccl-tests prints it.
double LogMicros(int64_t size) { return 60 + static_cast<double>(size) / 120e3; }

fs::path WriteNcclTestsLog(const fs::path& dir) {
  const fs::path path = dir / "all_reduce.log";
  std::ofstream f(path);
  f << "# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
       "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < 8; ++r) {
    f << "#  Rank  " << r << " Group  0 Pid   1234 on      node0 device  " << r << " [0000:1" << r
      << ":00] NVIDIA H100 80GB HBM3\n";
  }
  f << "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong"
       "     time   algbw   busbw #wrong\n"
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
       "     (us)  (GB/s)  (GB/s)\n";
  for (int64_t size = 8; size <= (int64_t{1} << 30); size *= 2) {
    const double t = LogMicros(size);
    const double alg = static_cast<double>(size) / (t * 1e3);
    char row[256];
    std::snprintf(
        row, sizeof row,
        "%12lld  %12lld  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n",
        static_cast<long long>(size), static_cast<long long>(size / 4), "float", "sum", -1, t, alg,
        alg * 1.75, 0, t, alg, alg * 1.75, 0);
    f << row;
  }
  f << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 51.2 \n#\n";
  return path;
}

// The number after `"key": ` in JSON text (the first one).
double JsonNumber(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size() + 4, nullptr);
}

// The `column` of the first data row of `shardscope collective --format csv`.
double CsvColumn(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  std::istringstream h(header), r(row);
  std::string name, cell;
  while (std::getline(h, name, ',')) {
    std::getline(r, cell, ',');
    if (name == column) return std::strtod(cell.c_str(), nullptr);
  }
  return -1;
}

TEST(CalibrateCliTest, AnNcclTestsLogSetsTheCollectiveTimeForCollectiveAndRun) {
  const fs::path dir = FreshTempDir("calibrate_nccl_");
  const fs::path log = WriteNcclTestsLog(dir);
  const fs::path out = dir / "cal.yaml";
  auto r = RunShardscope("calibrate --nccl-tests " + log.string() + " -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("all_reduce (nccl-tests)"), std::string::npos) << r.out;
  EXPECT_NE(ReadWholeFile(out).find("source: nccl-tests"), std::string::npos);
  // `collective` with the file times 64 MiB as the log did (the model alone differs).
  const std::string sweep =
      "collective --hardware h100-sxm --nodes 1 --ranks 8 --op all_reduce --sizes 64M:64M "
      "--format csv";
  auto model = RunShardscope(sweep);
  auto calibrated = RunShardscope(sweep + " --calibration " + out.string());
  ASSERT_EQ(model.exit_code, 0) << model.err;
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  const double want = LogMicros(int64_t{64} << 20);
  EXPECT_NEAR(CsvColumn(calibrated.out, "time_us") / want, 1, 0.03) << calibrated.out;
  EXPECT_GT(std::abs(CsvColumn(model.out, "time_us") / want - 1), 0.2) << model.out;
  // And the small sizes take the log's latency.
  auto small = RunShardscope(
      "collective --hardware h100-sxm --nodes 1 --ranks 8 --op all_reduce --sizes 1K:1K "
      "--format csv --calibration " +
      out.string());
  EXPECT_NEAR(CsvColumn(small.out, "time_us") / LogMicros(1024), 1, 0.03) << small.out;
  // `run` takes it for its TP8 all-reduces: the prefill slows.
  const fs::path config = dir / "exp.yaml";
  std::ofstream(config) << R"(experiments:
  - name: llama_tp8
    model: llama-3.1-8b
    hardware: h100-sxm
    batch_size: 1
    sequence_length: 512
    tokens_to_generate: 2
    dtype: bf16
    parallelism: {strategy: tp8, tp_size: 8}
)";
  auto plain = RunShardscope("run --config " + config.string() + " --no-trace --json");
  auto with = RunShardscope("run --config " + config.string() +
                            " --no-trace --json --calibration " + out.string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_GT(JsonNumber(with.out, "ttft_s"), 1.2 * JsonNumber(plain.out, "ttft_s"))
      << plain.out.substr(0, 400) << with.out.substr(0, 400);
  // Refused: an existing file.
  auto again = RunShardscope("calibrate --nccl-tests " + log.string() + " -o " + out.string());
  EXPECT_EQ(again.exit_code, 2);
}

TEST(CalibrateCliTest, ADeepEpLogSetsTheDispatchKernel) {
  const fs::path dir = FreshTempDir("calibrate_deepep_");
  const fs::path log = dir / "intranode.log";
  // test_intranode.py's best FP8 dispatch on 8 H800s, without its time (older tests).
  std::ofstream(log) << "[config] num_tokens=4096, hidden=7168, num_topk=8\n"
                        "[tuning] SMs 24, NVL chunk 4: 101.00 GB/s (NVL)\n"
                        "[tuning] Best dispatch (FP8): SMs 24, NVL chunk 20, 120.00 GB/s (NVL)\n";
  const fs::path out = dir / "cal.yaml";
  auto noranks =
      RunShardscope("calibrate --deepep " + log.string() + " --hardware h800 -o " + out.string());
  EXPECT_EQ(noranks.exit_code, 2);
  EXPECT_NE(noranks.err.find("--deepep-ranks"), std::string::npos) << noranks.err;
  EXPECT_FALSE(fs::exists(out));
  auto r = RunShardscope("calibrate --deepep " + log.string() +
                         " --deepep-ranks 8 --hardware h800 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadWholeFile(out).find("exchange:"), std::string::npos);
  const std::string dispatch =
      "collective --hardware h800 --nodes 1 --ranks 8 --op dispatch --kernel normal --format csv";
  auto model = RunShardscope(dispatch);
  auto calibrated = RunShardscope(dispatch + " --calibration " + out.string());
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  // DeepEP's figure for the test's routing is the log's; the hardware file's is not.
  EXPECT_NEAR(CsvColumn(calibrated.out, "nvlink_gb_s"), 120, 1) << calibrated.out;
  EXPECT_GT(CsvColumn(model.out, "nvlink_gb_s"), 130) << model.out;
  EXPECT_GT(CsvColumn(calibrated.out, "time_us"), 1.1 * CsvColumn(model.out, "time_us"));
}

TEST(CalibrateCliTest, LogErrorsExitTwoNamingFileAndLine) {
  const fs::path dir = FreshTempDir("calibrate_logs_");
  const fs::path log = dir / "bad.log";
  std::ofstream(log) << "# nThread 1 nGpus 8\n#  Rank  0 Group 0\n#  Rank  7 Group 0\n"
                        "#       size         count      type   redop    root     time   algbw   "
                        "busbw #wrong     time   algbw   busbw #wrong\n"
                        "        1024           256     float     sum      -1    oops\n";
  auto r = RunShardscope("calibrate --nccl-tests all_reduce=" + log.string() + " -o " +
                         (dir / "c.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.log:5:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "c.yaml"));
  auto name = RunShardscope("calibrate --nccl-tests reduce=" + log.string() + " -o " +
                            (dir / "c.yaml").string());
  EXPECT_EQ(name.exit_code, 2);
  EXPECT_NE(name.err.find("'reduce' is not a collective nccl-tests runs"), std::string::npos)
      << name.err;
  auto nothing = RunShardscope("calibrate -o " + (dir / "c.yaml").string());
  EXPECT_EQ(nothing.exit_code, 2);
}

}  // namespace
}  // namespace shardscope
