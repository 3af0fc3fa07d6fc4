#include "trace/byte_source.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"

namespace shardscope::trace {
namespace {

using testing::ScratchDir;

// One gzip member of `text`, made by zlib.
std::string GzipMember(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  return out;
}

StatusOr<std::string> ReadAll(ByteSource& source) {
  std::string out;
  char buf[4096];
  while (true) {
    ASSIGN_OR_RETURN(size_t n, source.Read(buf, sizeof(buf)));
    if (n == 0) return out;
    out.append(buf, n);
  }
}

std::string Text(int n, char c) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::string(1, c) + std::to_string(i) + ",";
  return s;
}

TEST(ByteSourceTest, MultiMemberGzipReadsAsTheConcatenation) {
  const std::string a = Text(50000, 'a'), b = Text(30000, 'b'), c = "tail";
  const std::string file = GzipMember(a) + GzipMember(b) + GzipMember(c);
  ScratchDir dir;
  WriteFile(dir.File("m.trace.gz"), file);
  auto source = OpenByteSource(dir.File("m.trace.gz"));
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_TRUE((*source)->compressed());
  auto text = ReadAll(**source);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(*text == a + b + c);
  EXPECT_EQ((*source)->raw_offset(), static_cast<int64_t>(file.size()));
}

TEST(ByteSourceTest, TruncatedSecondMemberIsDataLossNamingTheFile) {
  const std::string first = GzipMember(Text(1000, 'a'));
  const std::string second = GzipMember(Text(20000, 'b'));
  ScratchDir dir;
  WriteFile(dir.File("cut.trace.gz"), first + second.substr(0, second.size() / 2));
  auto source = OpenByteSource(dir.File("cut.trace.gz"));
  ASSERT_TRUE(source.ok());
  auto text = ReadAll(**source);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(text.status().message().find(dir.File("cut.trace.gz")), std::string::npos)
      << text.status().ToString();
  EXPECT_NE(text.status().message().find("truncated"), std::string::npos);
}

TEST(ByteSourceTest, PlainFileIsReadAsIs) {
  ScratchDir dir;
  const std::string text = "{\"traceEvents\":[]}";
  WriteFile(dir.File("p.trace"), text);
  auto source = OpenByteSource(dir.File("p.trace"));
  ASSERT_TRUE(source.ok());
  EXPECT_FALSE((*source)->compressed());
  auto got = ReadAll(**source);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, text);
}

// Read ahead on a thread: the same bytes, whatever the block and read sizes, and the
// same error after the same bytes.
TEST(ByteSourceTest, ReadAheadGivesTheSameBytesAndErrors) {
  const std::string a = Text(40000, 'a'), b = Text(20000, 'b');
  const std::string file = GzipMember(a) + GzipMember(b);
  for (size_t block : {size_t{61}, size_t{1000}, size_t{1} << 16}) {
    SCOPED_TRACE(block);
    auto source = ReadAheadSource(MemoryByteSource(file, "m.gz"), block, 3);
    EXPECT_TRUE(source->compressed());
    auto text = ReadAll(*source);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_TRUE(*text == a + b);
    EXPECT_EQ(source->raw_offset(), static_cast<int64_t>(file.size()));
  }
  const std::string cut = file.substr(0, file.size() - 500);
  auto direct = MemoryByteSource(cut, "cut.gz");
  std::string want;
  char buf[4096];
  Status want_error;
  while (true) {
    auto n = direct->Read(buf, sizeof(buf));
    if (!n.ok()) {
      want_error = n.status();
      break;
    }
    ASSERT_NE(*n, 0u);
    want.append(buf, *n);
  }
  auto ahead = ReadAheadSource(MemoryByteSource(cut, "cut.gz"), 777, 2);
  std::string got;
  Status got_error;
  while (true) {
    auto n = ahead->Read(buf, sizeof(buf));
    if (!n.ok()) {
      got_error = n.status();
      break;
    }
    ASSERT_NE(*n, 0u);
    got.append(buf, *n);
  }
  EXPECT_EQ(got_error.code(), StatusCode::kDataLoss);
  EXPECT_EQ(got_error.ToString(), want_error.ToString());
  EXPECT_TRUE(got == want);
  // Dropped half-way: the reading thread stops.
  auto dropped = ReadAheadSource(MemoryByteSource(file, "m.gz"), 100, 2);
  ASSERT_TRUE(dropped->Read(buf, 10).ok());
}

}  // namespace
}  // namespace shardscope::trace
