#include "runtime/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace shardscope::runtime {
namespace {

// Counts what the arena takes from its source.
class CountingSource final : public MemorySource {
 public:
  StatusOr<void*> Allocate(int64_t bytes) override {
    ++allocations;
    live += 1;
    return HostMemory().Allocate(bytes);
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

}  // namespace
}  // namespace shardscope::runtime
