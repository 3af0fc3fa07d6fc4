#include "importers/hlo_ops.h"

#include <gtest/gtest.h>

namespace shardscope::importers {
namespace {

using Groups = std::vector<std::vector<int32_t>>;

// The all-reduce of ../shared/testdata/xla/tpu_inference_2.xplane.pb, verbatim.
constexpr std::string_view kAllReduce =
    "%all-reduce = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} all-reduce(f32[5,1024,1024,256]"
    "{3,2,1,0:T(8,128)} %bitcast), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), "
    "use_global_device_ids=true, to_apply=%region_0.3.clone";

TEST(HloOpsTest, ParsesAnInstruction) {
  auto inst = ParseHloInstruction(kAllReduce);
  ASSERT_TRUE(inst.has_value());
  EXPECT_EQ(inst->name, "all-reduce");
  EXPECT_EQ(inst->shape, "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}");
  EXPECT_EQ(inst->opcode, "all-reduce");
  EXPECT_EQ(inst->operands, "f32[5,1024,1024,256]{3,2,1,0:T(8,128)} %bitcast");
  EXPECT_EQ(HloAttribute(inst->attributes, "replica_groups"), "[4,2]<=[2,4]T(1,0)");
  EXPECT_EQ(HloAttribute(inst->attributes, "channel_id"), "1");
  EXPECT_EQ(HloAttribute(inst->attributes, "to_apply"), "%region_0.3.clone");
  EXPECT_EQ(HloAttribute(inst->attributes, "missing"), "");
}

TEST(HloOpsTest, ParsesTupleShapesRootAndQuotedAttributes) {
  auto inst = ParseHloInstruction(
      "ROOT %copy-start.1 = (f32[4]{0:S(5)}, f32[4]{0}, u32[]{:S(2)}) copy-start(f32[4]{0} "
      "%p), metadata={op_name=\"a, b={c}\" source_line=3}, cross_program_prefetch_index=0");
  ASSERT_TRUE(inst.has_value());
  EXPECT_EQ(inst->name, "copy-start.1");
  EXPECT_EQ(inst->shape, "(f32[4]{0:S(5)}, f32[4]{0}, u32[]{:S(2)})");
  EXPECT_EQ(inst->opcode, "copy-start");
  // The comma and braces inside the quoted op_name do not end the attribute.
  EXPECT_EQ(HloAttribute(inst->attributes, "metadata"), "{op_name=\"a, b={c}\" source_line=3}");
  EXPECT_EQ(HloAttribute(inst->attributes, "cross_program_prefetch_index"), "0");
  // Without the '%' prefix (newer printers) too.
  auto plain = ParseHloInstruction("add.1 = f32[2]{0} add(f32[2]{0} a, f32[2]{0} b)");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->name, "add.1");
  EXPECT_EQ(plain->opcode, "add");
  EXPECT_EQ(plain->attributes, "");
}

TEST(HloOpsTest, RejectsWhatIsNotAnInstruction) {
  EXPECT_FALSE(ParseHloInstruction("all-reduce.1").has_value());
  EXPECT_FALSE(ParseHloInstruction("jit_f(1234)").has_value());
  EXPECT_FALSE(ParseHloInstruction("%x = f32[2]{0} add(f32[2]{0} %a").has_value());  // unclosed
  EXPECT_FALSE(ParseHloInstruction("").has_value());
}

TEST(HloOpsTest, OperandNames) {
  EXPECT_EQ(HloOperandNames("(f32[4]{0}, u32[]) %all-gather-start.3"),
            std::vector<std::string_view>{"all-gather-start.3"});
  EXPECT_EQ(HloOperandNames("f32[2]{0} %a, f32[2]{0} %b.1"),
            (std::vector<std::string_view>{"a", "b.1"}));
}

TEST(HloOpsTest, ClassifiesCollectives) {
  auto c = ClassifyHloCollective("all-reduce");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->op, HloCollective::kAllReduce);
  EXPECT_EQ(c->part, AsyncPart::kSync);
  c = ClassifyHloCollective("%all-gather-start.12");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->op, HloCollective::kAllGather);
  EXPECT_EQ(c->part, AsyncPart::kStart);
  c = ClassifyHloCollective("collective-permute-done");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->op, HloCollective::kCollectivePermute);
  EXPECT_EQ(c->part, AsyncPart::kDone);
  c = ClassifyHloCollective("reduce-scatter.7");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->op, HloCollective::kReduceScatter);
  c = ClassifyHloCollective("ragged-all-to-all");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->op, HloCollective::kAllToAll);
  EXPECT_FALSE(ClassifyHloCollective("fusion.3").has_value());
  EXPECT_FALSE(ClassifyHloCollective("copy-start").has_value());
  EXPECT_FALSE(ClassifyHloCollective("all-reduce-fusion").has_value());
  for (HloCollective op :
       {HloCollective::kAllReduce, HloCollective::kAllGather, HloCollective::kReduceScatter,
        HloCollective::kAllToAll, HloCollective::kCollectivePermute,
        HloCollective::kCollectiveBroadcast}) {
    ASSERT_TRUE(ClassifyHloCollective(HloCollectiveName(op)).has_value()) << HloCollectiveName(op);
    EXPECT_EQ(ClassifyHloCollective(HloCollectiveName(op))->op, op);
  }
  EXPECT_EQ(HloCollectiveName(HloCollective::kAllToAll), "all-to-all");
  EXPECT_EQ(HloCollectiveName(HloCollective::kCollectiveBroadcast), "collective-broadcast");
  EXPECT_EQ(ToTraceCollective(HloCollective::kCollectivePermute), trace::Collective::kSend);
  EXPECT_EQ(ToTraceCollective(HloCollective::kReduceScatter), trace::Collective::kReduceScatter);
}

TEST(HloOpsTest, ShapeBytes) {
  // Hand-computed: elements × bytes per element, tuples summed.
  EXPECT_EQ(*HloShapeBytes("f32[5,1024,1024,256]{3,2,1,0:T(8,128)}"), 5368709120);
  EXPECT_EQ(*HloShapeBytes("bf16[8,128]{1,0}"), 2048);
  EXPECT_EQ(*HloShapeBytes("f32[]"), 4);
  EXPECT_EQ(*HloShapeBytes("(f32[8]{0}, bf16[4]{0}, u32[]{:S(2)})"), 32 + 8 + 4);
  EXPECT_EQ(*HloShapeBytes("s4[3]{0}"), 2);              // 12 bits, packed
  EXPECT_EQ(*HloShapeBytes("f32[<=16,2]{1,0}"), 128);    // bounded dynamic: the bound
  EXPECT_EQ(*HloShapeBytes("f8e4m3fn[1024]{0}"), 1024);  //
  EXPECT_EQ(*HloShapeBytes("()"), 0);
  EXPECT_EQ(*HloShapeBytes("token[]"), 0);
  auto unknown = HloShapeBytes("q7[4]{0}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown element type 'q7'"), std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(HloShapeBytes("f32[4").ok());
  EXPECT_FALSE(HloShapeBytes("f32[x]").ok());
  EXPECT_FALSE(HloShapeBytes("").ok());
  EXPECT_EQ(HloElementType("(bf16[4]{0}, f32[2])"), "bf16");
  EXPECT_EQ(HloElementType("pred[]"), "pred");
}

TEST(HloOpsTest, OperandBytesNeedPrintedShapes) {
  EXPECT_EQ(*HloOperandBytes("f32[8]{0} %a, f32[8]{0} %b"), 64);
  EXPECT_EQ(*HloOperandBytes("(f32[8]{0}, s32[2]) %t"), 40);
  auto bare = HloOperandBytes("%a, %b");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().code(), StatusCode::kNotFound);
}

TEST(HloOpsTest, ExplicitReplicaGroups) {
  EXPECT_EQ(*ParseReplicaGroups("{{0,1},{2,3}}"), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(*ParseReplicaGroups("{ {0, 2, 4}, {1,3,5} }"), (Groups{{0, 2, 4}, {1, 3, 5}}));
  EXPECT_EQ(*ParseReplicaGroups("{}"), Groups{});
  EXPECT_EQ(*ParseReplicaGroups("{{0,1},{1,2},{2,0}}"), (Groups{{0, 1}, {1, 2}, {2, 0}}));
  EXPECT_FALSE(ParseReplicaGroups("{{0,a}}").ok());
  EXPECT_FALSE(ParseReplicaGroups("{0,1}").ok());
  EXPECT_FALSE(ParseReplicaGroups("").ok());
}

TEST(HloOpsTest, IotaReplicaGroups) {
  // iota(8) as [2,4] = {{0,1,2,3},{4,5,6,7}}, transposed to [4,2] = {{0,4},{1,5},{2,6},{3,7}}.
  EXPECT_EQ(*ParseReplicaGroups("[4,2]<=[2,4]T(1,0)"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // iota(8) as [4,2] transposed to [2,4] = {{0,2,4,6},{1,3,5,7}}.
  EXPECT_EQ(*ParseReplicaGroups("[2,4]<=[4,2]T(1,0)"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // No transpose: consecutive blocks.
  EXPECT_EQ(*ParseReplicaGroups("[2,4]<=[8]"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // [2,2,2] (value 4a+2b+c at (a,b,c)) transposed by (2,1,0), read row-major over (c,b,a):
  // 0,4,2,6,1,5,3,7.
  EXPECT_EQ(*ParseReplicaGroups("[2,4]<=[2,2,2]T(2,1,0)"), (Groups{{0, 4, 2, 6}, {1, 5, 3, 7}}));
  auto wrong_size = ParseReplicaGroups("[4,4]<=[2,4]T(1,0)");
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.status().message().find("does not hold every device"), std::string::npos);
  EXPECT_FALSE(ParseReplicaGroups("[4,2]<=[2,4]T(0,0)").ok());  // not a permutation
  EXPECT_FALSE(ParseReplicaGroups("[4,2]<=[2,4]T(1,0)x").ok());
  EXPECT_FALSE(ParseReplicaGroups("[4,2]").ok());
}

TEST(HloOpsTest, CollectiveBytesFollowNcclTests) {
  auto ar = ParseHloInstruction(kAllReduce);
  ASSERT_TRUE(ar.has_value());
  EXPECT_EQ(*HloCollectiveBytes(*ar, {HloCollective::kAllReduce, AsyncPart::kSync}, 2), 5368709120);
  // All-gather: the full output = operand × group size.
  auto ag = ParseHloInstruction(
      "%all-gather-start = (f32[4,128]{1,0}, f32[16,128]{1,0}) all-gather-start(f32[4,128]{1,0} "
      "%p), replica_groups={{0,1,2,3}}, dimensions={0}");
  ASSERT_TRUE(ag.has_value());
  EXPECT_EQ(*HloCollectiveBytes(*ag, {HloCollective::kAllGather, AsyncPart::kStart}, 4),
            4 * 128 * 4 * 4);
  // Reduce-scatter: the full input (the operand), or the result × group size when the
  // operands are printed without shapes.
  auto rs = ParseHloInstruction(
      "%rs = bf16[2,64]{1,0} reduce-scatter(bf16[8,64]{1,0} %x), replica_groups={{0,1,2,3}}");
  EXPECT_EQ(*HloCollectiveBytes(*rs, {HloCollective::kReduceScatter, AsyncPart::kSync}, 4),
            8 * 64 * 2);
  auto rs_bare = ParseHloInstruction("%rs = bf16[2,64]{1,0} reduce-scatter(%x), dimensions={0}");
  EXPECT_EQ(*HloCollectiveBytes(*rs_bare, {HloCollective::kReduceScatter, AsyncPart::kSync}, 4),
            8 * 64 * 2);
  auto start_bare = ParseHloInstruction("%s = (f32[4], f32[16]) all-gather-start(%p)");
  EXPECT_FALSE(
      HloCollectiveBytes(*start_bare, {HloCollective::kAllGather, AsyncPart::kStart}, 4).ok());
  auto unknown = ParseHloInstruction("%a = zz[4] all-reduce(zz[4] %p)");
  auto bytes = HloCollectiveBytes(*unknown, {HloCollective::kAllReduce, AsyncPart::kSync}, 2);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("'zz'"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::importers
