#include "testing/scratch_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shardscope::testing {
namespace {

namespace fs = std::filesystem;

// Sets SHARDSCOPE_KEEP_TEST_FILES (or unsets it, for nullptr) for one scope and
// restores what the test process was started with.
class KeepVariable {
 public:
  explicit KeepVariable(const char* value) {
    const char* old = std::getenv(kName);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value == nullptr) {
      unsetenv(kName);
    } else {
      setenv(kName, value, 1);
    }
  }
  ~KeepVariable() {
    if (had_) {
      setenv(kName, old_.c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "SHARDSCOPE_KEEP_TEST_FILES";
  bool had_ = false;
  std::string old_;
};

// Makes a scratch dir with a file in it and returns its path after the dir is gone.
std::string MakeAndDrop(std::string* stderr_text) {
  ::testing::internal::CaptureStderr();
  std::string path;
  {
    ScratchDir dir("scratch_dir_test");
    path = dir.path();
    EXPECT_TRUE(fs::is_directory(path));
    std::ofstream(dir.File("a.txt")) << "x";
    fs::create_directories(dir.File("sub/deeper"));
  }
  *stderr_text = ::testing::internal::GetCapturedStderr();
  return path;
}

TEST(ScratchDirTest, RemovedWithItsContentsByDefault) {
  KeepVariable unset(nullptr);
  std::string err;
  const std::string path = MakeAndDrop(&err);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(err, "");
}

TEST(ScratchDirTest, ZeroOrEmptyDoesNotKeep) {
  for (const char* value : {"0", ""}) {
    KeepVariable keep(value);
    std::string err;
    EXPECT_FALSE(fs::exists(MakeAndDrop(&err))) << "'" << value << "'";
  }
}

TEST(ScratchDirTest, KeptAndPrintedWhenAsked) {
  std::string path, err;
  {
    KeepVariable keep("1");
    path = MakeAndDrop(&err);
  }
  EXPECT_TRUE(fs::exists(fs::path(path) / "a.txt"));
  EXPECT_TRUE(fs::is_directory(fs::path(path) / "sub/deeper"));
  EXPECT_EQ(err, "SHARDSCOPE_KEEP_TEST_FILES: kept " + path + "\n");
  fs::remove_all(path);
}

TEST(ScratchDirTest, FreshFolderUnderTmpdirPerObject) {
  KeepVariable unset(nullptr);
  ScratchDir base("scratch_dir_base");
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", base.path().c_str(), 1);
  {
    ScratchDir a("x"), b("x");
    EXPECT_NE(a.path(), b.path());
    EXPECT_EQ(fs::path(a.path()).parent_path(), fs::path(base.path()));
    EXPECT_EQ(fs::path(a.path()).filename().string().rfind("x_", 0), 0u);
    EXPECT_EQ(a.File("f.yaml"), a.path() + "/f.yaml");
  }
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_TRUE(fs::is_empty(base.path()));
}

}  // namespace
}  // namespace shardscope::testing
