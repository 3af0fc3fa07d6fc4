#include "program/op.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "program/program.h"

namespace shardscope {
namespace {

TEST(OpTest, Names) {
  Op op;
  op.kind = OpKind::kAttention;
  op.layer = 3;
  EXPECT_EQ(OpName(op), "L3.attention");
  op.sp_step = 2;
  EXPECT_EQ(OpName(op), "L3.attention.s2");
  op = Op{};
  op.kind = OpKind::kNorm;
  op.layer = 0;
  op.role = OpRole::kInputNorm;
  EXPECT_EQ(OpName(op), "L0.norm.input");
  op = Op{};
  op.kind = OpKind::kLmHead;
  EXPECT_EQ(OpName(op), "lm_head");
  op = Op{};
  op.collective = Collective::kAllReduce;
  op.dim = Dim::kTp;
  op.role = OpRole::kAttnReduce;
  op.layer = 3;
  EXPECT_EQ(OpName(op), "allreduce.tp.attn.L3");
  op = Op{};
  op.collective = Collective::kSend;
  op.dim = Dim::kPp;
  op.role = OpRole::kActivations;
  EXPECT_EQ(OpName(op), "send.pp.activations");
  EXPECT_EQ(StreamName(CommStream(Dim::kEp)), "comm.ep");
  EXPECT_EQ(CommStream(Dim::kPp), Stream::kCommPp);
  EXPECT_EQ(PhaseName(Phase::kDecode), "decode");
  EXPECT_EQ(OpKindName(OpKind::kAttentionMerge), "attention_merge");
  EXPECT_EQ(CollectiveShortName(Collective::kAllToAll), "alltoall");
}

// The role's text is what op names (and so traces) carry; each role's kind is fixed.
TEST(OpTest, RolesKeepTheirLabelsAndKinds) {
  EXPECT_EQ(RoleLabel(OpRole::kNone), "");
  EXPECT_EQ(RoleLabel(OpRole::kQkvProj), "");
  EXPECT_EQ(RoleLabel(OpRole::kPostAttentionNorm), "post_attention");
  EXPECT_EQ(RoleLabel(OpRole::kAbsorbUk), "uk");
  EXPECT_EQ(RoleLabel(OpRole::kSharedGateUp), "gate_up");
  EXPECT_EQ(RoleLabel(OpRole::kExpertGateUp), "gate_up");
  EXPECT_EQ(RoleLabel(OpRole::kSampleSelect), "select");
  EXPECT_EQ(RoleLabel(OpRole::kArgMaxGather), "sampling");
  EXPECT_EQ(RoleLabel(OpRole::kAttnGather), "attn");
  EXPECT_EQ(RoleLabel(OpRole::kRingKv), "kv");
  EXPECT_EQ(RoleKind(OpRole::kSharedDown), OpKind::kSharedExpert);
  EXPECT_EQ(RoleKind(OpRole::kRopeK), OpKind::kRope);
  EXPECT_EQ(RoleKind(OpRole::kSampleLocal), OpKind::kSampling);
  EXPECT_EQ(RoleKind(OpRole::kDispatch), OpKind::kComm);
  Op op;
  op.kind = OpKind::kExpertGemm;
  op.role = OpRole::kExpertDown;
  op.layer = 4;
  EXPECT_EQ(op.label(), "down");
  EXPECT_EQ(OpName(op), "L4.expert_gemm.down");
}

TEST(OpTest, Totals) {
  RankProgram rp;
  Op a;
  a.kind = OpKind::kFfnUp;
  a.flops = 10, a.bytes_read = 5, a.bytes_written = 3, a.weight_bytes = 2;
  Op b;
  b.collective = Collective::kAllReduce;
  b.dim = Dim::kTp;
  b.bytes = 100;
  rp.ops = {a, a, b};
  OpTotals t = Totals(rp);
  EXPECT_EQ(t.compute_ops, 2);
  EXPECT_EQ(t.comm_ops, 1);
  EXPECT_EQ(t.flops, 20);
  EXPECT_EQ(t.weight_bytes, 4);
  EXPECT_EQ(t.comm_bytes[static_cast<int>(Dim::kTp)], 100);
  PhaseProgram p;
  a.replication = 4;
  p.ranks = {RankProgram{0, {a}, {}}, RankProgram{1, {a}, {}}};
  EXPECT_DOUBLE_EQ(UniqueFlops(p), 5.0);
}

}  // namespace
}  // namespace shardscope

namespace shardscope {
namespace {

TEST(OpTest, BytesPerPeerIsTheDenseRowOfPeerSends) {
  Op op;
  op.collective = Collective::kAllToAll;
  EXPECT_EQ(BytesPerPeer(op, 3), std::vector<int64_t>({0, 0, 0}));  // nothing sent
  op.peer_sends = {{0, 5}, {2, 7}};
  EXPECT_EQ(BytesPerPeer(op, 4), std::vector<int64_t>({5, 0, 7, 0}));
  // Entries outside the group are dropped (ProgramCheck rejects them).
  EXPECT_EQ(BytesPerPeer(op, 2), std::vector<int64_t>({5, 0}));
}

// The simulator reads every op of a phase from memory on a fresh run; its
// speed follows the bytes per op (docs/sim.md, "Engine"). What it reads comes
// first, and the dense all-to-all rows are not kept in the op.
TEST(OpTest, StaysSmallWithTheEngineFieldsFirst) {
  EXPECT_LE(sizeof(Op), 160u);
  EXPECT_LT(offsetof(Op, peer_sends), offsetof(Op, layer));
  EXPECT_LT(offsetof(Op, expert_tokens), offsetof(Op, dim));
  EXPECT_LT(offsetof(Op, peer_sends), offsetof(Op, micro_batch));
  EXPECT_LT(offsetof(Op, peer_sends), offsetof(Op, replication));
  EXPECT_LT(offsetof(Op, peer_sends), offsetof(Op, weight_bytes));
}

}  // namespace
}  // namespace shardscope
