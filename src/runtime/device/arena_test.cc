#include "runtime/device/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/huge_pages.h"

namespace shardscope::runtime {
namespace {

// Counts what the arena takes from its source.
class CountingSource final : public MemorySource {
 public:
  StatusOr<void*> Allocate(int64_t bytes, MemoryUse use) override {
    ++allocations;
    live += 1;
    return HostMemory().Allocate(bytes, use);
  }
  void Free(void* p) override {
    live -= 1;
    HostMemory().Free(p);
  }
  int64_t allocations = 0, live = 0;
};

TEST(ArenaTest, AllocationsAreAlignedAndDistinct) {
  CountingSource src;
  Arena arena(&src);
  StatusOr<void*> a = arena.Allocate(3);
  StatusOr<void*> b = arena.Allocate(100);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*a) % Arena::kAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*b) % Arena::kAlignment, 0u);
  EXPECT_EQ(static_cast<char*>(*b) - static_cast<char*>(*a), 64);
  EXPECT_EQ(arena.used(), 64 + 128);
  EXPECT_EQ(src.allocations, 1);
  EXPECT_FALSE(arena.Allocate(-1).ok());
}

TEST(ArenaTest, ASecondStepOfTheSameSizeTakesNothingFromTheSystem) {
  CountingSource src;
  {
    Arena arena(&src);
    auto step = [&] {
      for (int i = 0; i < 5; ++i) ASSERT_TRUE(arena.Allocate(700 * 1024).ok());
    };
    step();  // 3.5 MiB: more than the first chunk
    EXPECT_GT(src.allocations, 1);
    ASSERT_TRUE(arena.Reset().ok());
    EXPECT_EQ(src.live, 1);  // coalesced into one chunk
    const int64_t after_first = src.allocations;
    for (int s = 0; s < 4; ++s) {
      step();
      ASSERT_TRUE(arena.Reset().ok());
    }
    EXPECT_EQ(src.allocations, after_first);
    EXPECT_EQ(arena.system_allocations(), after_first);
    EXPECT_GE(arena.capacity(), 5 * 700 * 1024);
  }
  EXPECT_EQ(src.live, 0);  // the destructor gives everything back
}

// The VmFlags of the mapping that holds `p` (/proc/self/smaps), or "" if none.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(' ') > line.find('-')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(ArenaTest, LargeWeightChunksAreHugePageAlignedAndAskForHugePages) {
  const int64_t bytes = 3 * static_cast<int64_t>(kHugePageBytes) + 5;
  Arena weights(&HostMemory(), bytes, MemoryUse::kWeights);
  Arena scratch(&HostMemory(), bytes);
  StatusOr<void*> w = weights.Allocate(bytes);
  StatusOr<void*> s = scratch.Allocate(bytes);
  StatusOr<void*> small = HostMemory().Allocate(1000, MemoryUse::kWeights);
  ASSERT_TRUE(w.ok() && s.ok() && small.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*w) % kHugePageBytes, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*small) % Arena::kAlignment, 0u);
  std::memset(*w, 1, static_cast<size_t>(bytes));  // all of it is usable
  std::memset(*s, 1, static_cast<size_t>(bytes));
  // Where the kernel has transparent huge pages, the weights' mapping carries
  // the MADV_HUGEPAGE flag ("hg"); scratch and small chunks are left to malloc.
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_NE(VmFlagsOf(*w).find(" hg"), std::string::npos) << VmFlagsOf(*w);
    EXPECT_EQ(VmFlagsOf(*s).find(" hg"), std::string::npos) << VmFlagsOf(*s);
  }
  HostMemory().Free(*small);
}

}  // namespace
}  // namespace shardscope::runtime
