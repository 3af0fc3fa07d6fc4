// `shardscope calibrate` and `validate` end to end: exit codes, files, messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace shardscope
