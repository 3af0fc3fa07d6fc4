#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace shardscope {
namespace {

constexpr size_t kH = kHugePageBytes;

// Addresses are only computed with, never dereferenced.
const void* At(uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(HugePagesTest, WholeHugePagesAreTheAlignedPagesInside) {
  // Starts on a boundary: every whole page from there.
  EXPECT_EQ(WholeHugePages(At(4 * kH), 3 * kH), std::make_pair(size_t{0}, 3 * kH));
  // Starts 4 KiB past one: the first whole page begins at the next boundary,
  // and the partial page at the end is left out.
  EXPECT_EQ(WholeHugePages(At(4 * kH + 4096), 3 * kH), std::make_pair(kH - 4096, size_t{2} * kH));
  // Less than one whole page inside: none.
  EXPECT_EQ(WholeHugePages(At(4 * kH + 4096), kH), std::make_pair(size_t{0}, size_t{0}));
  EXPECT_EQ(WholeHugePages(nullptr, 8 * kH), std::make_pair(size_t{0}, size_t{0}));
}

TEST(HugePagesTest, ResizeOnHugePagesKeepsTheElements) {
  std::vector<int64_t> v = {1, 2, 3};
  const size_t n = 3 * kH / sizeof(int64_t);  // allocates: advised, then filled
  ResizeOnHugePages(v, n);
  ASSERT_EQ(v.size(), n);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 3);
  EXPECT_EQ(v[3], 0);
  EXPECT_EQ(v[n - 1], 0);
  const int64_t* data = v.data();
  ResizeOnHugePages(v, 5);  // shrinking keeps the buffer
  EXPECT_EQ(v.data(), data);
  EXPECT_EQ(v.size(), 5u);
  ResizeOnHugePages(v, n);  // and so does growing within its capacity
  EXPECT_EQ(v.data(), data);
  EXPECT_EQ(v[4], 0);
}

}  // namespace
}  // namespace shardscope
