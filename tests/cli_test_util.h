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
#include <sstream>
#include <string>

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

// A fresh, empty folder under the test temp dir (ctest runs tests in parallel
// processes, so the pid and a counter keep every call's files apart). A folder
// of that name can only be left by an earlier process with the same pid (pids
// are reused): it is removed, so no test sees another's files.
inline std::filesystem::path FreshTempDir(const std::string& prefix) {
  static int calls = 0;
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              (prefix + std::to_string(getpid()) + "_" + std::to_string(calls++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// `prefix` goes before the binary (environment assignments, a timeout).
inline CliResult RunShardscope(const std::string& args, const std::string& prefix = "") {
  std::filesystem::path dir = FreshTempDir("cli_run_");
  std::filesystem::path out = dir / "stdout", err = dir / "stderr";
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
