#include "core/small_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

namespace fs = std::filesystem;

fs::path TempPath(const std::string& name) {
  static testing::ScratchDir scratch("small_file");
  return fs::path(scratch.path()) / name;
}

TEST(SmallFileTest, ReadsARegularFileWhole) {
  const fs::path p = TempPath("ok.txt");
  std::ofstream(p) << "a: 1\nb: 2\n";
  StatusOr<std::string> text = ReadSmallFile(p.string());
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "a: 1\nb: 2\n");
  fs::remove(p);
}

TEST(SmallFileTest, MissingFileNamesItAndTheRole) {
  StatusOr<std::string> r = ReadSmallFile("/nonexistent/x.csv", "the request file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(),
            "/nonexistent/x.csv: cannot read the request file (No such file or directory)");
}

// issue 35: /dev/zero as a config grew a string until std::bad_alloc.
TEST(SmallFileTest, DevZeroIsRefusedBeforeAnyRead) {
  StatusOr<std::string> r = ReadSmallFile("/dev/zero", "the prompts file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "/dev/zero: the prompts file is a character device, not a regular file");
}

// issue 35: a FIFO with no writer blocked open() forever.
TEST(SmallFileTest, FifoIsRefusedWithoutBlocking) {
  const fs::path p = TempPath("fifo");
  fs::remove(p);
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  StatusOr<std::string> r = ReadSmallFile(p.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), p.string() + ": file is a FIFO (named pipe), not a regular file");
  StatusOr<int> fd = OpenRegularFile(p.string(), "the trace");
  EXPECT_FALSE(fd.ok());
  fs::remove(p);
}

TEST(SmallFileTest, DirectoryIsRefused) {
  testing::ScratchDir dir;
  StatusOr<std::string> r = ReadSmallFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a directory, not a regular file"), std::string::npos);
}

TEST(SmallFileTest, FileOverTheCapIsRefusedBySize) {
  const fs::path p = TempPath("big");
  std::ofstream(p) << std::string(2000, 'x');
  StatusOr<std::string> r = ReadSmallFile(p.string(), "", 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), p.string() + ": file is 1.95 KiB, more than the 1 KiB it may be");
  EXPECT_TRUE(ReadSmallFile(p.string(), "", 2000).ok());
  fs::remove(p);
}

TEST(SmallFileTest, EmptyPathIsRefused) {
  StatusOr<std::string> r = ReadSmallFile("", "the calibration");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "an empty path given for the calibration");
}

}  // namespace
}  // namespace shardscope
