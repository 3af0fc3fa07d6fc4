#include "trace/store_leftovers.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/scratch_dir.h"

namespace shardscope::trace {
namespace {

namespace fs = std::filesystem;

// The pid of a process that has ended (and been reaped).
int64_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// issue 35: a run killed with SIGKILL left a hidden temp trace that nothing showed or removed.
TEST(StoreLeftoversTest, FindsTheTempFilesOfDeadWritersOnly) {
  testing::ScratchDir scratch("leftovers");
  const fs::path root = scratch.path();
  const fs::path run = root / "tiny-dense" / "single" / "batch_1_seq_8";
  fs::create_directories(run);
  const int64_t dead = DeadPid();
  const fs::path killed =
      run / (".trace_20261129T000000.000000.trace.tmp-" + std::to_string(dead) + "-0");
  const fs::path writing =
      run / (".trace_20261129T000001.000000.trace.tmp-" + std::to_string(getpid()) + "-0");
  std::ofstream(killed) << std::string(100, 'x');
  std::ofstream(writing) << "x";
  std::ofstream(run / "trace_20261129T000002.000000.trace") << "{}";

  StatusOr<std::vector<Leftover>> found = FindLeftovers(root.string());
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].path, killed.string());
  EXPECT_EQ((*found)[0].bytes, 100);
  EXPECT_EQ((*found)[0].pid, dead);

  ASSERT_TRUE(RemoveLeftovers(*found).ok());
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(writing)) << "a file still being written was removed";
  EXPECT_TRUE(FindLeftovers(root.string())->empty());
  EXPECT_TRUE(FindLeftovers((root / "missing").string())->empty());
}

}  // namespace
}  // namespace shardscope::trace
