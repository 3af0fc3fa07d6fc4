#include "trace/block_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

// Writes `n` blocks of distinct text through a BlockWriter to `path`; returns the text.
std::string WriteBlocks(const std::string& path, const BlockWriterOptions& options, int n) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  std::string all;
  {
    BlockWriter w(fd, path, options);
    for (int i = 0; i <= n; ++i) {
      TextBlock b = w.NewBlock();
      std::string text = "block " + std::to_string(i) + ":" + std::string(i * 37 % 1000, 'x');
      b.Reserve(text.size());
      std::memcpy(b.data.get(), text.data(), text.size());
      b.size = text.size();
      all += text;
      Status s = i < n ? w.Write(std::move(b)) : w.Finish(std::move(b));
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(w.bytes_in(), static_cast<int64_t>(all.size()));
  }
  close(fd);
  return all;
}

TEST(BlockWriterTest, PlainBlocksArriveInOrder) {
  ScratchDir dir;
  BlockWriterOptions o;
  o.block_bytes = 64;
  std::string text = WriteBlocks(dir.File("p"), o, 500);
  EXPECT_EQ(ReadWholeFile(dir.File("p")), text);
}

TEST(BlockWriterTest, GzipBlocksFromManyThreadsInflateInOrderAsOneMember) {
  ScratchDir dir;
  for (int threads : {1, 4}) {
    BlockWriterOptions o;
    o.gzip = true;
    o.threads = threads;
    o.block_bytes = 64;
    std::string text = WriteBlocks(dir.File("g.gz"), o, 500);
    std::string gz = ReadWholeFile(dir.File("g.gz"));
    // zlib's gunzip (uncompress with gzip framing) as the reference reader.
    z_stream zs{};
    ASSERT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
    std::string out(text.size() + 16, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(gz.data());
    zs.avail_in = static_cast<uInt>(gz.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END) << threads;  // CRC and length checked
    EXPECT_EQ(zs.avail_in, 0u) << threads;                       // one member, nothing after
    out.resize(out.size() - zs.avail_out);
    inflateEnd(&zs);
    EXPECT_EQ(out, text) << threads;
  }
}

TEST(BlockWriterTest, WriteErrorIsReported) {
  ScratchDir dir;
  WriteFile(dir.File("ro"), "");
  int fd = open(dir.File("ro").c_str(), O_RDONLY);  // writes fail with EBADF
  ASSERT_GE(fd, 0);
  {
    BlockWriter w(fd, "ro-file", {});
    TextBlock b = w.NewBlock();
    b.size = 10;
    std::memset(b.data.get(), 'a', 10);
    Status s = w.Finish(std::move(b));
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_NE(s.message().find("ro-file"), std::string::npos) << s.ToString();
  }
  close(fd);
}

}  // namespace
}  // namespace shardscope::trace
