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
#include <system_error>
#include <vector>

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

// Paths a test process made under the temp dir, removed when it exits
// (SHARDSCOPE_KEEP_TEST_FILES=1 keeps them, to look at a failure's files).
class TestFiles {
 public:
  static TestFiles& Get() {
    static TestFiles files;
    return files;
  }
  void Add(std::filesystem::path p) { paths_.push_back(std::move(p)); }
  ~TestFiles() {
    if (std::getenv("SHARDSCOPE_KEEP_TEST_FILES") != nullptr) return;
    for (const std::filesystem::path& p : paths_) {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  }

 private:
  TestFiles() = default;
  std::vector<std::filesystem::path> paths_;
};

// A fresh, empty folder under the test temp dir (ctest runs tests in parallel
// processes, so the pid and a counter keep every call's files apart), removed
// when the process exits. A folder of that name can only be left by an
// earlier process with the same pid (pids are reused): it is removed, so no
// test sees another's files.
inline std::filesystem::path FreshTempDir(const std::string& prefix) {
  static int calls = 0;
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              (prefix + std::to_string(getpid()) + "_" + std::to_string(calls++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TestFiles::Get().Add(dir);
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
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return r;
}

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_TESTS_CLI_TEST_UTIL_H_
