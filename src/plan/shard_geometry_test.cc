#include "plan/shard_geometry.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

ModelSpec Gqa(int64_t heads, int64_t kv_heads, int64_t vocab) {
  ModelSpec m;
  m.attention = AttentionKind::kGqa;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.vocab_size = vocab;
  return m;
}

TEST(ShardGeometryTest, SplitRangeGivesTheFirstPartsOneMore) {
  // 10 over 4: 3, 3, 2, 2.
  EXPECT_EQ(SplitRange(10, 4, 0), (Range{0, 3}));
  EXPECT_EQ(SplitRange(10, 4, 1), (Range{3, 3}));
  EXPECT_EQ(SplitRange(10, 4, 2), (Range{6, 2}));
  EXPECT_EQ(SplitRange(10, 4, 3), (Range{8, 2}));
  EXPECT_EQ(SplitCount(10, 4, 3), 2);
  EXPECT_EQ(SplitRange(3, 4, 3), (Range{3, 0}));  // more parts than items
}

TEST(ShardGeometryTest, KvHeadsSplitWhenTpDividesThem) {
  // Llama-3.1-70B-like: 64 query heads, 8 KV heads, TP 4.
  const ShardGeometry g(Gqa(64, 8, 128256), 4, 1);
  EXPECT_EQ(g.q_heads(), 16);
  EXPECT_EQ(g.QHeads(3), (Range{48, 16}));
  EXPECT_EQ(g.kv_heads(), 2);
  EXPECT_EQ(g.kv_replication(), 1);
  EXPECT_EQ(g.KvHeads(0), (Range{0, 2}));
  EXPECT_EQ(g.KvHeads(3), (Range{6, 2}));
}

TEST(ShardGeometryTest, KvHeadsReplicateWhenTpExceedsThem) {
  // 8 KV heads on TP16: each KV head on 2 ranks; rank c holds head c / 2, the
  // one its 4 query heads (group of 64 / 8 = 8 heads) read.
  const ShardGeometry g(Gqa(64, 8, 128256), 16, 1);
  EXPECT_EQ(g.q_heads(), 4);
  EXPECT_EQ(g.kv_heads(), 1);
  EXPECT_EQ(g.kv_replication(), 2);
  for (int64_t c = 0; c < 16; ++c) {
    EXPECT_EQ(g.KvHeads(c), (Range{c / 2, 1})) << c;
    // Every query head of the rank belongs to the KV head's group.
    const Range q = g.QHeads(c);
    EXPECT_EQ(q.begin / 8, c / 2);
    EXPECT_EQ((q.end() - 1) / 8, c / 2);
  }
}

TEST(ShardGeometryTest, MlaKeepsOneReplicatedLatent) {
  ModelSpec m = Gqa(128, 128, 129280);
  m.attention = AttentionKind::kMla;
  const ShardGeometry g(m, 8, 1);
  EXPECT_EQ(g.q_heads(), 16);
  EXPECT_EQ(g.kv_heads(), 1);
  EXPECT_EQ(g.kv_replication(), 8);
  EXPECT_EQ(g.KvHeads(5), (Range{0, 1}));
}

TEST(ShardGeometryTest, VocabNotDivisibleByTp) {
  // 32003 rows over TP 4: 8001, 8001, 8001, 8000.
  const ShardGeometry g(Gqa(32, 8, 32003), 4, 1);
  EXPECT_EQ(g.Vocab(0), (Range{0, 8001}));
  EXPECT_EQ(g.Vocab(2), (Range{16002, 8001}));
  EXPECT_EQ(g.Vocab(3), (Range{24003, 8000}));
  EXPECT_EQ(g.Vocab(3).end(), 32003);
  EXPECT_EQ(g.Intermediate(14336, 3), (Range{10752, 3584}));
}

TEST(ShardGeometryTest, ExpertRangesOfEp) {
  ModelSpec m = Gqa(128, 128, 129280);
  m.moe.num_routed_experts = 256;
  const ShardGeometry ep16(m, 1, 16);
  EXPECT_EQ(ep16.experts_per_rank(), 16);
  EXPECT_EQ(ep16.Experts(0), (Range{0, 16}));
  EXPECT_EQ(ep16.Experts(15), (Range{240, 16}));
  const ShardGeometry ep128(m, 1, 128);
  EXPECT_EQ(ep128.experts_per_rank(), 2);
  EXPECT_EQ(ep128.Experts(127), (Range{254, 2}));
  EXPECT_EQ(ShardGeometry(Gqa(8, 8, 100), 1, 1).experts_per_rank(), 0);  // dense
}

}  // namespace
}  // namespace shardscope
