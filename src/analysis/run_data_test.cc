#include "analysis/run_data.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardscope::analysis {
namespace {

// `n` ops on `ranks` ranks, rank-major or interleaved, with a collective every third.
std::vector<trace::OpEvent> Ops(int n, int ranks, bool rank_major) {
  std::vector<trace::OpEvent> ops;
  for (int i = 0; i < n; ++i) {
    trace::OpEvent op;
    op.rank = rank_major ? i * ranks / n : i % ranks;
    op.ts_ns = i * 10;
    op.dur_ns = 5 + i % 7;
    op.flops = 1000 + i;
    op.step = i / 100;
    if (i % 3 == 0) {
      op.category = trace::Category::kComm;
      op.collective = trace::Collective::kAllReduce;
      op.group = {0, 1};
      op.bytes = 64 * (i % 5 + 1);
    }
    ops.push_back(op);
  }
  return ops;
}

void ExpectSameData(const RunData& a, const RunData& b) {
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (const auto& [rank, ra] : a.ranks) {
    const RankData& rb = b.ranks.at(rank);
    ASSERT_EQ(ra.ops.size(), rb.ops.size()) << rank;
    for (size_t i = 0; i < ra.ops.size(); ++i) {
      EXPECT_EQ(ra.ops[i].ts, rb.ops[i].ts);
      EXPECT_EQ(ra.ops[i].end, rb.ops[i].end);
      EXPECT_EQ(ra.ops[i].group, rb.ops[i].group);
      EXPECT_EQ(ra.ops[i].step, rb.ops[i].step);
      EXPECT_EQ(ra.ops[i].coll, rb.ops[i].coll);
    }
    EXPECT_EQ(ra.flops, rb.flops);
    EXPECT_EQ(ra.bytes_sent, rb.bytes_sent);
  }
  EXPECT_EQ(a.traffic, b.traffic);
  EXPECT_EQ(a.groups.size(), b.groups.size());
}

// The size hint only sizes the op arrays: right, far too small or far too
// large, and for ranks in any order, the collected data are the same.
TEST(RunCollectorTest, SizeHintChangesNothingButCapacity) {
  for (bool rank_major : {false, true}) {
    const std::vector<trace::OpEvent> ops = Ops(20000, 3, rank_major);
    RunData plain;
    RunCollector plain_collector(&plain);
    for (const auto& op : ops) plain_collector.OnOp(op);
    for (int64_t bytes : {int64_t{20000} * 240, int64_t{1000}, int64_t{20000} * 240 * 100}) {
      RunData hinted;
      RunCollector collector(&hinted);
      collector.set_size_hint(bytes);
      for (const auto& op : ops) collector.OnOp(op);
      ExpectSameData(plain, hinted);
      int64_t reserved = 0;
      for (const auto& [rank, rd] : hinted.ranks) {
        reserved += static_cast<int64_t>(rd.ops.capacity());
      }
      // At most 1.5 × the ops the hint promises, and the doubling of each array.
      EXPECT_LE(reserved, bytes / 150 * 3 / 2 + 2 * 20000 + 3 * 1024) << rank_major << " " << bytes;
    }
  }
}

}  // namespace
}  // namespace shardscope::analysis
