#include "program/program_check.h"

#include <gtest/gtest.h>

#include "program/program_test_util.h"

namespace shardscope {
namespace {

using testing::BuildOrDie;
using testing::Built;
using testing::MakeExperiment;
using testing::Sizes;

Op* Find(PhaseProgram& p, int64_t rank, Collective c) {
  for (Op& op : p.ranks[rank].ops) {
    if (op.collective == c) return &op;
  }
  return nullptr;
}

void ExpectBroken(const PhaseProgram& p, const Placement& pl, std::string_view needle) {
  Status s = CheckProgram(p, pl);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(ProgramCheckTest, AcceptsABuiltProgram) {
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2, .pp = 2}, 4, 16),
                       Phase::kPrefill);
  EXPECT_TRUE(CheckProgram(b.program, b.placement).ok());
}

TEST(ProgramCheckTest, CatchesARoleOfAnotherKind) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 2, 16), Phase::kPrefill);
  for (Op& op : b.program.ranks[0].ops) {
    if (op.role == OpRole::kInputNorm) {
      op.role = OpRole::kExpertDown;
      break;
    }
  }
  ExpectBroken(b.program, b.placement, "role 'down' does not belong to kind norm");
}

TEST(ProgramCheckTest, CatchesMismatchedCollectives) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 2, 16), Phase::kPrefill);
  Find(b.program, 1, Collective::kAllReduce)->bytes += 2;
  ExpectBroken(b.program, b.placement, "differs");
}

TEST(ProgramCheckTest, CatchesAMissingCollective) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 2, 16), Phase::kPrefill);
  // Turn rank 1's last all-gather into a compute op: rank 0 waits alone.
  for (auto it = b.program.ranks[1].ops.rbegin(); it != b.program.ranks[1].ops.rend(); ++it) {
    if (it->collective == Collective::kAllGather) {
      it->kind = OpKind::kSampling;
      it->role = OpRole::kSample;
      it->collective = Collective::kNone;
      it->stream = Stream::kCompute;
      break;
    }
  }
  ExpectBroken(b.program, b.placement, "only 1 of the 2 members");
}

TEST(ProgramCheckTest, CatchesUnmatchedPointToPoint) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.pp = 2}, 2, 16), Phase::kPrefill);
  Find(b.program, 1, Collective::kRecv)->bytes -= 1;
  ExpectBroken(b.program, b.placement, "receives");
}

TEST(ProgramCheckTest, CatchesAllToAllSplitsThatDisagree) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyMoe(true), Sizes{.ep = 2}, 2, 16), Phase::kPrefill);
  Op* a2a = Find(b.program, 0, Collective::kAllToAll);
  ASSERT_NE(a2a, nullptr);
  ASSERT_EQ(a2a->role, OpRole::kDispatch);
  std::vector<int64_t> row = BytesPerPeer(*a2a, 2);
  ASSERT_GE(row[1], 128);
  row[0] += 128;  // same total, different split: the combine sends back the old one
  row[1] -= 128;
  a2a->peer_sends.clear();
  for (size_t j = 0; j < row.size(); ++j) {
    if (row[j] != 0) a2a->peer_sends.push_back({static_cast<int32_t>(j), row[j]});
  }
  ExpectBroken(b.program, b.placement, "whose dispatch sent it");
}

TEST(ProgramCheckTest, CatchesPeerSendsThatAreNotARowsNonZeros) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyMoe(true), Sizes{.ep = 2}, 2, 16), Phase::kPrefill);
  ASSERT_TRUE(CheckProgram(b.program, b.placement).ok());
  Op* a2a = Find(b.program, 0, Collective::kAllToAll);
  ASSERT_NE(a2a, nullptr);
  ASSERT_EQ(a2a->peer_sends.size(), 2u);  // both members get tokens
  const std::vector<PeerBytes> good = a2a->peer_sends;
  a2a->peer_sends.back().bytes += 1;  // no longer sums to bytes
  ExpectBroken(b.program, b.placement, "peer_sends sum to");
  a2a->peer_sends = good;
  a2a->peer_sends.push_back({1, 0});  // a zero entry (and a position twice)
  ExpectBroken(b.program, b.placement, "peer_sends entry");
  a2a->peer_sends = {good[1], good[0]};  // positions out of order
  ExpectBroken(b.program, b.placement, "peer_sends entry");
  a2a->peer_sends = {good[0], {2, good[1].bytes}};  // outside the group of 2
  ExpectBroken(b.program, b.placement, "among the 2 members");
  a2a->peer_sends = good;
  EXPECT_TRUE(CheckProgram(b.program, b.placement).ok());
}

TEST(ProgramCheckTest, CatchesForwardDependencies) {
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), {}, 1, 16), Phase::kPrefill);
  SetDeps(b.program.ranks[0], 3, {7});
  ExpectBroken(b.program, b.placement, "does not point back");
}

TEST(ProgramCheckTest, CatchesDepsOutsideTheRanksBlock) {
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), {}, 1, 16), Phase::kPrefill);
  RankProgram& rp = b.program.ranks[0];
  rp.ops[3].deps_begin = static_cast<int32_t>(rp.deps.size());
  rp.ops[3].deps_count = 1;
  ExpectBroken(b.program, b.placement, "outside the rank's");
}

TEST(ProgramCheckTest, CatchesADeadlock) {
  // Two pipeline ranks that both receive before they send: matched, but stuck.
  Experiment e = MakeExperiment(testing::TinyDense(), Sizes{.pp = 2}, 2, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  PhaseProgram p;
  for (int64_t r = 0; r < 2; ++r) {
    RankProgram rp;
    rp.rank = r;
    for (Collective c : {Collective::kRecv, Collective::kSend}) {
      Op op;
      op.id = static_cast<int32_t>(rp.ops.size());
      op.collective = c;
      op.dim = Dim::kPp;
      op.stream = Stream::kCommPp;
      op.peer = 1 - r;
      op.bytes = 64;
      rp.ops.push_back(op);
    }
    p.ranks.push_back(rp);
  }
  ExpectBroken(p, *pl, "deadlock");
  // Receiving on one side only after sending is fine.
  std::swap(p.ranks[0].ops[0], p.ranks[0].ops[1]);
  p.ranks[0].ops[0].id = 0;
  p.ranks[0].ops[1].id = 1;
  EXPECT_TRUE(CheckProgram(p, *pl).ok());
}

TEST(ProgramCheckTest, CatchesOpsOnTheWrongStream) {
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 1, 16), Phase::kPrefill);
  Find(b.program, 0, Collective::kAllReduce)->stream = Stream::kCommSp;
  ExpectBroken(b.program, b.placement, "stream");
}

}  // namespace
}  // namespace shardscope
