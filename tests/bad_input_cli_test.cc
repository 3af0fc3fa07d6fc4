// Issue 35's survey of hostile input, from the command line: each reproduction
// that crashed, hung or did something silently wrong now ends with exit 2, one
// clear line naming the file or field, and nothing written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using Result = shardscope::testing::CliResult;

Result RunCli(const std::string& args, const std::string& prefix = "") {
  return shardscope::testing::RunShardscope(args, prefix);
}

fs::path Dir() {
  static const fs::path dir = shardscope::testing::FreshTempDir("bad_input_cli_");
  return dir;
}

fs::path Write(const std::string& name, const std::string& text) {
  const fs::path p = Dir() / name;
  std::ofstream(p) << text;
  return p;
}

// One tiny simulated experiment; `extra` adds lines to it (4-space indent).
std::string Tiny(const std::string& extra = "", const std::string& model = "tiny-dense") {
  return "experiments:\n  - name: tiny\n    model: " + model +
         "\n    hardware: h100-sxm\n    parallelism: {tp_size: 1}\n    batch_size: 1\n"
         "    sequence_length: 8\n    tokens_to_generate: 2\n" +
         extra;
}

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// The error is one line, exit 2, nothing on stdout.
void ExpectOneLineError(const Result& r, const std::string& expected) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
}

// `run --out ''` wrote the store under "/" (the empty root joined with "/model/…").
TEST(BadInputCliTest, RunOutEmptyIsRefused) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  ExpectOneLineError(RunCli("run --config " + cfg.string() + " --out ''"),
                     "--out: trace store: an empty path");
  EXPECT_FALSE(fs::exists("/tiny-dense")) << "the store went to /";
}

// Values that passed validation and then ran out of memory (std::bad_alloc).
TEST(BadInputCliTest, HugeRequestsDurationAndLayersAreRefusedNamingTheField) {
  const std::string served =
      "    workload:\n      arrivals: {process: poisson, rate_per_s: 10}\n"
      "      prompt_tokens: 8\n      output_tokens: 2\n";
  const fs::path requests = Write("requests.yaml", Tiny(served + "      requests: 1e9\n"));
  ExpectOneLineError(RunCli("run --no-trace --config " + requests.string()),
                     "field 'workload.requests': is 1000000000: at most 1000000 requests");
  const fs::path duration = Write("duration.yaml", Tiny(served + "      duration_s: 1e12\n"));
  ExpectOneLineError(RunCli("run --no-trace --config " + duration.string()),
                     "field 'workload.duration_s': is 1e+12 s: at 10 requests/s that draws");
  const fs::path layers = Write("layers.yaml", Tiny("", "{base: tiny-dense, num_layers: 1e8}"));
  for (const char* cmd : {"run --no-trace", "plan", "check"}) {
    SCOPED_TRACE(cmd);
    ExpectOneLineError(RunCli(std::string(cmd) + " --config " + layers.string()),
                       "num_layers': is 100000000: at most 10000 layers");
  }
}

// /dev/zero never ends: every reader of a small file refuses it before reading.
TEST(BadInputCliTest, DevZeroAsConfigPromptsCalibrationOrWorkloadCardIsRefused) {
  ExpectOneLineError(RunCli("plan --config /dev/zero"),
                     "/dev/zero: file is a character device, not a regular file");
  const fs::path prompts = Write("prompts.yaml", Tiny("    prompts: /dev/zero\n"));
  ExpectOneLineError(RunCli("plan --config " + prompts.string()),
                     "/dev/zero: the prompts file is a character device, not a regular file");
  const fs::path cfg = Write("tiny.yaml", Tiny());
  ExpectOneLineError(RunCli("run --no-trace --calibration /dev/zero --config " + cfg.string()),
                     "/dev/zero: file is a character device, not a regular file");
  const fs::path store = Dir() / "store";
  ASSERT_EQ(RunCli("run --config " + cfg.string() + " --out " + store.string()).exit_code, 0);
  ExpectOneLineError(RunCli("analyze --workload-card /dev/zero " + store.string()),
                     "/dev/zero: file is a character device, not a regular file");
}

// A FIFO with no writer blocked the config loader and the trace reader forever.
TEST(BadInputCliTest, FifoAsConfigOrTraceIsRefusedWithoutBlocking) {
  const fs::path fifo = Dir() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ExpectOneLineError(RunCli("plan --config " + fifo.string(), "timeout 60 "),
                     fifo.string() + ": file is a FIFO (named pipe), not a regular file");
  const Result trace = RunCli("analyze " + fifo.string(), "timeout 60 ");
  ExpectOneLineError(trace, "the trace is a FIFO (named pipe), not a regular file");
}

// A configuration larger than any real one is refused by its size, not read.
TEST(BadInputCliTest, OversizedConfigIsRefusedBySize) {
  const fs::path big = Dir() / "big.yaml";
  { std::ofstream(big) << "experiments: []\n"; }
  fs::resize_file(big, int64_t{100} << 20);  // sparse: costs no disk
  ExpectOneLineError(RunCli("plan --config " + big.string()),
                     big.string() + ": file is 100 MiB, more than the 64 MiB it may be");
}

// `--experiment ''` selected every experiment of the file.
TEST(BadInputCliTest, ExperimentEmptyIsRefused) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  for (const char* cmd : {"run --no-trace", "plan", "check"}) {
    SCOPED_TRACE(cmd);
    const Result r = RunCli(std::string(cmd) + " --experiment '' --config " + cfg.string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("--experiment: must not be empty"), std::string::npos) << r.err;
  }
}

// An experiment name with an escape sequence reached the terminal raw.
TEST(BadInputCliTest, ExperimentNameWithAControlCharacterIsRefused) {
  std::string yaml = Tiny();
  yaml.replace(yaml.find("name: tiny"), 10, "name: \"ti\\e[31mny\"");
  const fs::path cfg = Write("escape.yaml", yaml);
  const Result r = RunCli("plan --config " + cfg.string());
  ExpectOneLineError(r, "field 'experiments[0].name': contains the control character 0x1b");
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "the escape reached the terminal";
}

// `run --no-trace` ended its summary with a "traces" heading over nothing.
TEST(BadInputCliTest, RunNoTraceEndsWithoutATracesHeading) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  const Result r = RunCli("run --no-trace --config " + cfg.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\ntraces\n"), std::string::npos) << r.out;
  const fs::path store = Dir() / "no_trace_store";
  const Result traced = RunCli("run --config " + cfg.string() + " --out " + store.string());
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_NE(traced.out.find("\ntraces\n  " + store.string()), std::string::npos) << traced.out;
}

// A trace of the tiny experiment in a fresh store.
fs::path TinyTrace(const std::string& name) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  const fs::path store = Dir() / name;
  const Result r = RunCli("run --config " + cfg.string() + " --out " + store.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& entry : fs::recursive_directory_iterator(store)) {
    if (entry.path().extension() == ".trace") return entry.path();
  }
  ADD_FAILURE() << "no trace in " << store;
  return {};
}

// `report in.trace -o in.trace` and `validate --measured m --sim-trace m` replaced their input.
TEST(BadInputCliTest, OutputOverAnInputIsRefused) {
  const fs::path trace = TinyTrace("over_input");
  const std::string before = shardscope::testing::ReadWholeFile(trace);
  ASSERT_FALSE(before.empty());
  ExpectOneLineError(RunCli("report " + trace.string() + " -o " + trace.string()),
                     "--output " + trace.string() + ": is also an input");
  const fs::path cfg = Write("tiny.yaml", Tiny());
  ExpectOneLineError(RunCli("validate --config " + cfg.string() + " --experiment tiny --measured " +
                            trace.string() + " --sim-trace " + trace.string()),
                     "--sim-trace " + trace.string() + ": is also an input");
  EXPECT_EQ(shardscope::testing::ReadWholeFile(trace), before) << "the input was changed";
}

// `calibrate -o existing` printed the whole fit, then refused to write it.
TEST(BadInputCliTest, CalibrateOutputExistingIsRefusedBeforeTheFit) {
  const fs::path trace = TinyTrace("calibrate_existing");
  const fs::path existing = Write("existing_calibration.yaml", "# mine\n");
  ExpectOneLineError(RunCli("calibrate " + trace.string() + " -o " + existing.string()),
                     existing.string() + " exists: not overwritten (use --force)");
  EXPECT_EQ(shardscope::testing::ReadWholeFile(existing), "# mine\n");
}

// `search` took 0 or negative numbers as "the default" and an empty --csv as "none".
TEST(BadInputCliTest, SearchRefusesNonPositiveNumbersAndEmptyPaths) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  const std::string search = "search --config " + cfg.string() + " --experiment tiny ";
  for (const char* bad : {"--max-candidates 0", "--max-candidates -5", "--top -1", "--devices 0",
                          "--slo-ttft-ms -5", "--slo-tpot-ms 0"}) {
    SCOPED_TRACE(bad);
    const Result r = RunCli(search + bad);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("must be a positive number"), std::string::npos) << r.err;
  }
  const Result csv = RunCli(search + "--csv ''");
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_NE(csv.err.find("--csv: must not be empty"), std::string::npos) << csv.err;
}

// SIGKILL during a run left a hidden temp trace that `traces list` neither showed nor removed.
TEST(BadInputCliTest, TracesGcRemovesTheTempTraceOfAKilledRun) {
  const fs::path trace = TinyTrace("gc_store");
  const fs::path store = Dir() / "gc_store";
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  int status = 0;
  waitpid(dead, &status, 0);
  const fs::path temp = trace.parent_path() /
                        ("." + trace.filename().string() + ".tmp-" + std::to_string(dead) + "-0");
  std::ofstream(temp) << std::string(1000, 'x');
  const Result list = RunCli("traces list --root " + store.string());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("\n1 temporary file ("), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(" of killed runs are not listed: `shardscope traces gc --root " +
                          store.string() + "` removes them"),
            std::string::npos)
      << list.out;
  const Result dry = RunCli("traces gc --dry-run --root " + store.string());
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(fs::exists(temp));
  const Result gc = RunCli("traces gc --root " + store.string());
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed " + temp.string()), std::string::npos) << gc.out;
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_TRUE(fs::exists(trace)) << "gc removed a finished trace";
  const Result after = RunCli("traces list --root " + store.string());
  EXPECT_EQ(after.out.find("temporary file"), std::string::npos) << after.out;
}

// `--decode-steps 99999999999999999999` was accepted (beyond int64).
TEST(BadInputCliTest, DecodeStepsBeyondInt64IsRefused) {
  const fs::path cfg = Write("tiny.yaml", Tiny());
  const Result r =
      RunCli("run --no-trace --decode-steps 99999999999999999999 --config " + cfg.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--decode-steps: must be a whole number from 0 to 1000000000, got "
                       "99999999999999999999"),
            std::string::npos)
      << r.err;
}

// A key given twice in YAML silently kept its first value.
TEST(BadInputCliTest, DuplicateYamlKeyIsRefusedNamingBothLines) {
  const fs::path cfg = Write("dup.yaml", Tiny("    batch_size: 4\n"));
  ExpectOneLineError(RunCli("plan --config " + cfg.string()),
                     cfg.string() + ": line 9: duplicate key 'batch_size' (first on line 6)");
}

// A sweep of thousands of points loaded silently for minutes (it was quadratic):
// it is linear now, and a load of 2,000 experiments or more says how far it is.
TEST(BadInputCliTest, LongSweepLoadReportsProgressOnStderr) {
  std::string seeds;
  for (int i = 0; i < 2000; ++i) seeds += (i > 0 ? ", " : "") + std::to_string(i);
  const fs::path cfg = Write("sweep2000.yaml", Tiny("    seed: [" + seeds + "]\n"));
  const Result r = RunCli("plan --json --config " + cfg.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("shardscope: reading " + cfg.string() + ": 1000 of 2000 experiments\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(": 2000 of 2000 experiments\n"), std::string::npos) << r.err;
  // A short file says nothing.
  EXPECT_EQ(RunCli("plan --config " + Write("one.yaml", Tiny()).string()).err, "");
}

}  // namespace
