// Issue 35's survey of hostile input, from the command line: each reproduction
// that crashed, hung or did something silently wrong now ends with exit 2, one
// clear line naming the file or field, and nothing written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>

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

}  // namespace
