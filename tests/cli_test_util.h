// Running the `shardscope` binary from a test as a user would: its exit code,
// stdout and stderr. Shared by the end-to-end test files.
#ifndef SHARDSCOPE_TESTS_CLI_TEST_UTIL_H_
#define SHARDSCOPE_TESTS_CLI_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "testing/scratch_dir.h"

namespace shardscope::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh, empty folder (testing/scratch_dir.h) that lives until the process
// exits, so that a test can keep handing its path around; removed then, unless
// SHARDSCOPE_KEEP_TEST_FILES is set (its path is then printed).
inline std::filesystem::path FreshTempDir(std::string prefix) {
  static std::vector<std::unique_ptr<ScratchDir>> dirs;
  while (!prefix.empty() && prefix.back() == '_') prefix.pop_back();
  dirs.push_back(std::make_unique<ScratchDir>(prefix));
  return dirs.back()->path();
}

// `prefix` goes before the binary (environment assignments, a timeout).
inline CliResult RunShardscope(const std::string& args, const std::string& prefix = "") {
  ScratchDir dir("cli_run");
  const std::filesystem::path out = dir.File("stdout"), err = dir.File("stderr");
  std::string cmd = prefix + std::string(SHARDSCOPE_BINARY) + " " + args + " >" + out.string() +
                    " 2>" + err.string();
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadWholeFile(out);
  r.err = ReadWholeFile(err);
  return r;
}

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_TESTS_CLI_TEST_UTIL_H_
