// XLA's HLO instruction text as profilers record it ("%all-reduce.1 = f32[8,128]{1,0}
// all-reduce(f32[8,128]{1,0} %p), replica_groups={{0,1},{2,3}}, to_apply=%add"): the parts
// of one instruction, which ops are collectives, shape sizes, replica groups, and the
// size of a collective in the nccl-tests convention (docs/trace_format.md). Pure functions.
#ifndef SHARDSCOPE_IMPORTERS_HLO_OPS_H_
#define SHARDSCOPE_IMPORTERS_HLO_OPS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

// One instruction, split; views into the text it was parsed from.
struct HloInstruction {
  std::string_view name;        // "all-reduce.1" (without the '%')
  std::string_view shape;       // "f32[8,128]{1,0}", or a tuple "(f32[8]{0}, u32[])"
  std::string_view opcode;      // "all-reduce"
  std::string_view operands;    // inside the parentheses: "f32[8,128]{1,0} %p"
  std::string_view attributes;  // after them: "replica_groups={{0,1}}, to_apply=%add"
};

// Splits "%name = shape opcode(operands), attributes"; nullopt when `text` has not that form.
std::optional<HloInstruction> ParseHloInstruction(std::string_view text);

// The value of attribute `key` in an instruction's attributes ("{{0,1},{2,3}}" for
// "replica_groups"), or empty when absent.
std::string_view HloAttribute(std::string_view attributes, std::string_view key);

// The instruction names of the operands, in order ("%p" gives "p").
std::vector<std::string_view> HloOperandNames(std::string_view operands);

enum class HloCollective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,  // also ragged-all-to-all
  kCollectivePermute,
  kCollectiveBroadcast,
};

// kSync: the blocking op; kStart/kDone: the two halves of an asynchronous one.
enum class AsyncPart : uint8_t { kSync, kStart, kDone };

struct HloCollectiveOp {
  HloCollective op = HloCollective::kAllReduce;
  AsyncPart part = AsyncPart::kSync;
};

// Classifies an opcode or instruction name ("all-reduce", "%all-gather-start.2",
// "collective-permute-done"); a trailing ".N" is ignored. nullopt for other ops.
std::optional<HloCollectiveOp> ClassifyHloCollective(std::string_view opcode_or_name);

// The trace model's collective (collective-permute: kSend; see the XLA section of
// docs/trace_format.md for how its two directions are emitted).
trace::Collective ToTraceCollective(HloCollective op);
std::string_view HloCollectiveName(HloCollective op);  // "all-reduce", …

// Bytes of a shape: an array "bf16[4,128]{1,0}", a scalar "f32[]", or a tuple (the sum of
// its elements). A bounded dynamic dimension "<=8" counts its bound; sub-byte types
// (s4, u4, …) are packed. InvalidArgument naming the element type when it is unknown.
StatusOr<int64_t> HloShapeBytes(std::string_view shape);

// The element type of a shape's first array ("f32"), or empty.
std::string_view HloElementType(std::string_view shape);

// Sums the shapes of an operand list ("f32[8]{0} %a, f32[8]{0} %b"). NotFound when an
// operand is printed without its shape.
StatusOr<int64_t> HloOperandBytes(std::string_view operands);

// Parses a replica_groups (or source_target_pairs) value: the explicit form
// "{{0,1},{2,3}}" and the iota form "[G,S]<=[d0,d1,…]T(p0,p1,…)" (iota over the product
// of the d's, reshaped to them, transposed by the permutation, read out as G groups of
// S). "{}" gives no groups (the op spans all devices).
StatusOr<std::vector<std::vector<int32_t>>> ParseReplicaGroups(std::string_view value);

// The message size of a collective as nccl-tests counts it, from the operand shapes when
// the text prints them (all-gather: × group_size), else from the result shape of a
// blocking op (reduce-scatter: × group_size).
StatusOr<int64_t> HloCollectiveBytes(const HloInstruction& inst, HloCollectiveOp kind,
                                     int64_t group_size);

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_HLO_OPS_H_
