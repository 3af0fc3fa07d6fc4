#include "program/expert_balancer.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

// Zipf(s = 1) loads 1/i over 8 experts (expert 0 the hottest), 4 EP ranks.
std::vector<double> Zipf8() {
  std::vector<double> load;
  for (int i = 1; i <= 8; ++i) load.push_back(1.0 / i);
  return load;
}

TEST(ExpertBalancerTest, WithoutRedundancyContiguousPlacementIsImbalanced) {
  // By hand: contiguous pairs give rank loads 1 + 1/2, 1/3 + 1/4, 1/5 + 1/6,
  // 1/7 + 1/8; mean H8 / 4 = 0.679464; max ÷ mean = 1.5 / 0.679464 = 2.2076.
  const std::vector<double> load = Zipf8();
  std::vector<double> contiguous(4, 0.0);
  for (int x = 0; x < 8; ++x) contiguous[x / 2] += load[x];
  EXPECT_NEAR(LoadImbalance(contiguous), 2.2076, 1e-4);
}

TEST(ExpertBalancerTest, ZipfLoadWithFourRedundantSlotsHandComputed) {
  // Replication (load per replica, highest first, ties to the lower id):
  // e0 1 → 2 reps (.5); e0 .5 = e1 .5 → e0 3 reps (.333); e1 .5 → 2 reps (.25);
  // e0 .333 = e2 .333 → e0 4 reps (.25). Replicas: e0 ×4, e1 ×2, the rest ×1.
  // LPT over 4 ranks of 3 slots: e2 .333 → r0; e0 ×4 → r1 r2 r3 r1;
  // e1 ×2 → r2 r3; e3 .25 → r0 (.583); e4 .2 → r1 (.7, full); e5 → r2 (.667,
  // full); e6 → r3 (.643, full); e7 → r0 (.708).
  const ExpertReplicas r = BalanceExperts(Zipf8(), 4, 4);
  ASSERT_EQ(r.slots_per_rank, 3);
  const std::vector<int32_t> slots = {2, 3, 7, 0, 0, 4, 0, 1, 5, 0, 1, 6};
  EXPECT_EQ(r.slot_expert, slots);
  EXPECT_EQ(r.expert_slots[0], (std::vector<int32_t>{3, 4, 6, 9}));
  EXPECT_EQ(r.expert_slots[1], (std::vector<int32_t>{7, 10}));
  ASSERT_EQ(r.rank_load.size(), 4u);
  EXPECT_NEAR(r.rank_load[0], 1.0 / 3 + 1.0 / 4 + 1.0 / 8, 1e-12);
  EXPECT_NEAR(r.rank_load[1], 0.25 + 0.25 + 0.2, 1e-12);
  EXPECT_NEAR(r.rank_load[2], 0.25 + 0.25 + 1.0 / 6, 1e-12);
  EXPECT_NEAR(r.rank_load[3], 0.25 + 0.25 + 1.0 / 7, 1e-12);
  // max ÷ mean = 0.708333 / 0.679464 = 1.0425 (2.2076 before).
  EXPECT_NEAR(LoadImbalance(r.rank_load), 1.0425, 1e-4);
}

TEST(ExpertBalancerTest, EpNeedNotDivideTheRoutedExperts) {
  // 256 routed + 32 redundant = 288 slots: EP144 (2 per rank) and EP72 (4).
  std::vector<double> load(256, 1.0);
  for (int64_t ep : {144, 72}) {
    const ExpertReplicas r = BalanceExperts(load, 32, ep);
    EXPECT_EQ(r.slots_per_rank, 288 / ep);
    int64_t placed = 0;
    for (const auto& s : r.expert_slots) {
      EXPECT_GE(s.size(), 1u);
      placed += static_cast<int64_t>(s.size());
    }
    EXPECT_EQ(placed, 288);
    for (int32_t x : r.slot_expert) EXPECT_GE(x, 0);
  }
}

TEST(ExpertBalancerTest, ImbalanceOfEmptyOrZeroLoadIsZero) {
  EXPECT_EQ(LoadImbalance({}), 0);
  EXPECT_EQ(LoadImbalance({0, 0}), 0);
  EXPECT_DOUBLE_EQ(LoadImbalance({1, 1, 1}), 1);
}

}  // namespace
}  // namespace shardscope
