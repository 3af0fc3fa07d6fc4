#include "plan/placement.h"

#include <gtest/gtest.h>

#include "plan/test_experiments.h"

namespace shardscope {
namespace {

using testing::ZooExperiment;

ParallelSpec Sizes(int64_t tp, int64_t pp, int64_t sp = 1, int64_t ep = 1, int64_t dp = 1) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.sp = sp;
  p.ep = ep;
  p.dp = dp;
  return p;
}

TEST(PlacementTest, TpInnermostPpAcrossNodes) {
  Experiment e = ZooExperiment("seed-dense-16l", "h100-sxm", Sizes(8, 2), 16, 128);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  EXPECT_EQ(pl->world_size(), 16);
  EXPECT_EQ(pl->Coord(9, Dim::kTp), 1);
  EXPECT_EQ(pl->Coord(9, Dim::kPp), 1);
  EXPECT_EQ(pl->Location(9).node, 1);
  EXPECT_EQ(pl->Location(9).local, 1);
  EXPECT_EQ(pl->GroupOf(9, Dim::kTp).ranks, (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_FALSE(pl->GroupOf(9, Dim::kTp).spans_nodes);
  EXPECT_EQ(pl->GroupOf(9, Dim::kPp).ranks, (std::vector<int64_t>{1, 9}));
  EXPECT_TRUE(pl->GroupOf(9, Dim::kPp).spans_nodes);
  EXPECT_TRUE(pl->GroupOf(9, Dim::kPp).spans_scale_up);
  EXPECT_EQ(pl->GroupsOf(Dim::kTp).size(), 2u);
  EXPECT_EQ(pl->GroupsOf(Dim::kPp).size(), 8u);
  EXPECT_EQ(pl->LayersOfStage(0).front(), 0);
  EXPECT_EQ(pl->LayersOfStage(0).back(), 7);
  EXPECT_EQ(pl->StageOfLayer(8), 1);
  std::array<int64_t, kNumDims> c{};
  c[static_cast<int>(Dim::kTp)] = 3;
  c[static_cast<int>(Dim::kPp)] = 1;
  EXPECT_EQ(pl->RankAt(c), 11);
}

TEST(PlacementTest, OrderIsConfigurable) {
  ParallelSpec p = Sizes(2, 4);
  p.order = {Dim::kPp, Dim::kTp, Dim::kSp, Dim::kEp, Dim::kDp};
  Experiment e = ZooExperiment("seed-dense-16l", "h100-sxm", p, 4, 128);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  EXPECT_EQ(pl->GroupOf(0, Dim::kPp).ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(pl->GroupOf(0, Dim::kTp).ranks, (std::vector<int64_t>{0, 4}));
}

TEST(PlacementTest, UnevenLayersAndExperts) {
  Experiment e = ZooExperiment("deepseek-v3", "h100-sxm", Sizes(1, 4, 1, 8), 8, 128);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  // 61 layers over 4 stages: 16, 15, 15, 15.
  EXPECT_EQ(pl->LayersOfStage(0).size(), 16u);
  EXPECT_EQ(pl->LayersOfStage(3).size(), 15u);
  EXPECT_EQ(pl->LayersOfStage(3).back(), 60);
  EXPECT_EQ(pl->ExpertsOfEpRank(1).front(), 32);
  EXPECT_EQ(pl->EpRankOfExpert(255), 7);
  EXPECT_EQ(pl->GroupOf(0, Dim::kEp).ranks.size(), 8u);
}

TEST(PlacementTest, KvHeadsReplicateWhenTpExceedsThem) {
  // Llama-3.1-8B has 8 KV heads: tp 16 replicates each twice (allowed).
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", Sizes(16, 1), 1, 128);
  EXPECT_TRUE(ValidatePlan(e).ok());
  e = ZooExperiment("qwen2.5-32b", "h100-sxm", Sizes(20, 1), 1, 128);  // 40 heads, 8 KV heads
  Status s = ValidatePlan(e);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a multiple"), std::string::npos) << s.message();
}

TEST(PlacementTest, ZigzagNeedsTwiceTheChunks) {
  ParallelSpec p = Sizes(1, 1, 4);
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", p, 1, 12);
  EXPECT_FALSE(ValidatePlan(e).ok());
  e.parallel.sp_variant = SpVariant::kRing;
  EXPECT_TRUE(ValidatePlan(e).ok());
}

}  // namespace
}  // namespace shardscope
