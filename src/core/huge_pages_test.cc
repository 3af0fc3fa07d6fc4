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

}  // namespace
}  // namespace shardscope
