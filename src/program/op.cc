#include "program/op.h"

#include <fmt/format.h>

#include "core/enum_names.h"

namespace shardscope {

namespace {

constexpr auto kOpKindNames = MakeEnumNames<OpKind>({{OpKind::kEmbedding, "embedding"},
                                                     {OpKind::kNorm, "norm"},
                                                     {OpKind::kQkvProj, "qkv_proj"},
                                                     {OpKind::kQProj, "q_proj"},
                                                     {OpKind::kKvProj, "kv_proj"},
                                                     {OpKind::kKvUpProj, "kv_up_proj"},
                                                     {OpKind::kRope, "rope"},
                                                     {OpKind::kKvAppend, "kv_append"},
                                                     {OpKind::kAttention, "attention"},
                                                     {OpKind::kAttentionDecode, "attention_decode"},
                                                     {OpKind::kAttentionMerge, "attention_merge"},
                                                     {OpKind::kOutProj, "out_proj"},
                                                     {OpKind::kResidualAdd, "residual_add"},
                                                     {OpKind::kRouter, "router"},
                                                     {OpKind::kPermute, "permute"},
                                                     {OpKind::kExpertGemm, "expert_gemm"},
                                                     {OpKind::kSharedExpert, "shared_expert"},
                                                     {OpKind::kUnpermute, "unpermute"},
                                                     {OpKind::kFfnUp, "ffn_up"},
                                                     {OpKind::kActivation, "activation"},
                                                     {OpKind::kFfnDown, "ffn_down"},
                                                     {OpKind::kLmHead, "lm_head"},
                                                     {OpKind::kSampling, "sampling"},
                                                     {OpKind::kQuantize, "quantize"},
                                                     {OpKind::kComm, "comm"}});
static_assert(kOpKindNames.InEnumOrder() && kOpKindNames.entries().back().value == OpKind::kComm);

constexpr auto kStreamNames = MakeEnumNames<Stream>({{Stream::kCompute, "compute"},
                                                     {Stream::kCommTp, "comm.tp"},
                                                     {Stream::kCommSp, "comm.sp"},
                                                     {Stream::kCommEp, "comm.ep"},
                                                     {Stream::kCommDp, "comm.dp"},
                                                     {Stream::kCommPp, "comm.pp"}});
static_assert(kStreamNames.InEnumOrder() && kStreamNames.entries().size() == size_t{kNumStreams});

}  // namespace

std::string_view OpKindName(OpKind kind) { return kOpKindNames.Name(kind); }

std::string_view RoleLabel(OpRole role) {
  switch (role) {
    case OpRole::kNone:
    case OpRole::kEmbedding:
    case OpRole::kQkvProj:
    case OpRole::kRope:
    case OpRole::kKvAppend:
    case OpRole::kAttention:
    case OpRole::kAttentionDecode:
    case OpRole::kAttentionMerge:
    case OpRole::kOutProj:
    case OpRole::kRouter:
    case OpRole::kPermute:
    case OpRole::kUnpermute:
    case OpRole::kFfnUp:
    case OpRole::kFfnDown:
    case OpRole::kLmHead:
    case OpRole::kSample:
      return "";
    case OpRole::kInputNorm:
      return "input";
    case OpRole::kPostAttentionNorm:
      return "post_attention";
    case OpRole::kQaNorm:
    case OpRole::kQaProj:
      return "q_a";
    case OpRole::kKvANorm:
    case OpRole::kKvAProj:
      return "kv_a";
    case OpRole::kFinalNorm:
      return "final";
    case OpRole::kQProj:
    case OpRole::kRopeQ:
    case OpRole::kQNorm:
      return "q";
    case OpRole::kQbProj:
    case OpRole::kQuantQb:
      return "q_b";
    case OpRole::kKvProj:
    case OpRole::kRingKv:
      return "kv";
    case OpRole::kRopeK:
    case OpRole::kKNorm:
      return "k";
    case OpRole::kKvUpProj:
    case OpRole::kQuantKvB:
      return "kv_b";
    case OpRole::kAbsorbUk:
      return "uk";
    case OpRole::kAbsorbUv:
      return "uv";
    case OpRole::kResidualAttn:
    case OpRole::kAttnReduce:
    case OpRole::kAttnGather:
    case OpRole::kQuantAttn:
      return "attn";
    case OpRole::kResidualFfn:
    case OpRole::kFfnActivation:
    case OpRole::kFfnReduce:
    case OpRole::kQuantFfn:
      return "ffn";
    case OpRole::kExpertGateUp:
    case OpRole::kSharedGateUp:
      return "gate_up";
    case OpRole::kExpertDown:
    case OpRole::kSharedDown:
    case OpRole::kQuantDown:
      return "down";
    case OpRole::kQuantOut:
      return "out";
    case OpRole::kQuantSharedDown:
      return "shared_down";
    case OpRole::kQuantExpertDown:
      return "expert_down";
    case OpRole::kSharedActivation:
      return "shared";
    case OpRole::kExpertActivation:
      return "expert";
    case OpRole::kSampleLocal:
      return "local";
    case OpRole::kSampleSelect:
      return "select";
    case OpRole::kMtpProj:
      return "mtp_eh";
    case OpRole::kMtpNorm:
      return "mtp";
    case OpRole::kEmbeddingReduce:
      return "embedding";
    case OpRole::kArgMaxGather:
      return "sampling";
    case OpRole::kTokenIds:
      return "token_ids";
    case OpRole::kActivations:
      return "activations";
    case OpRole::kDispatch:
      return "dispatch";
    case OpRole::kCombine:
      return "combine";
  }
  return {};
}

OpKind RoleKind(OpRole role) {
  switch (role) {
    case OpRole::kNone:
    case OpRole::kEmbeddingReduce:
    case OpRole::kAttnReduce:
    case OpRole::kFfnReduce:
    case OpRole::kArgMaxGather:
    case OpRole::kAttnGather:
    case OpRole::kTokenIds:
    case OpRole::kActivations:
    case OpRole::kRingKv:
    case OpRole::kDispatch:
    case OpRole::kCombine:
      return OpKind::kComm;
    case OpRole::kEmbedding:
      return OpKind::kEmbedding;
    case OpRole::kInputNorm:
    case OpRole::kPostAttentionNorm:
    case OpRole::kQaNorm:
    case OpRole::kKvANorm:
    case OpRole::kQNorm:
    case OpRole::kKNorm:
    case OpRole::kFinalNorm:
    case OpRole::kMtpNorm:
      return OpKind::kNorm;
    case OpRole::kQkvProj:
      return OpKind::kQkvProj;
    case OpRole::kQProj:
    case OpRole::kQaProj:
    case OpRole::kQbProj:
      return OpKind::kQProj;
    case OpRole::kKvProj:
    case OpRole::kKvAProj:
      return OpKind::kKvProj;
    case OpRole::kRope:
    case OpRole::kRopeQ:
    case OpRole::kRopeK:
      return OpKind::kRope;
    case OpRole::kKvAppend:
      return OpKind::kKvAppend;
    case OpRole::kKvUpProj:
    case OpRole::kAbsorbUk:
    case OpRole::kAbsorbUv:
      return OpKind::kKvUpProj;
    case OpRole::kAttention:
      return OpKind::kAttention;
    case OpRole::kAttentionDecode:
      return OpKind::kAttentionDecode;
    case OpRole::kAttentionMerge:
      return OpKind::kAttentionMerge;
    case OpRole::kOutProj:
      return OpKind::kOutProj;
    case OpRole::kResidualAttn:
    case OpRole::kResidualFfn:
      return OpKind::kResidualAdd;
    case OpRole::kRouter:
      return OpKind::kRouter;
    case OpRole::kPermute:
      return OpKind::kPermute;
    case OpRole::kExpertGateUp:
    case OpRole::kExpertDown:
      return OpKind::kExpertGemm;
    case OpRole::kSharedGateUp:
    case OpRole::kSharedDown:
      return OpKind::kSharedExpert;
    case OpRole::kUnpermute:
      return OpKind::kUnpermute;
    case OpRole::kFfnUp:
    case OpRole::kMtpProj:
      return OpKind::kFfnUp;
    case OpRole::kFfnActivation:
    case OpRole::kSharedActivation:
    case OpRole::kExpertActivation:
      return OpKind::kActivation;
    case OpRole::kFfnDown:
      return OpKind::kFfnDown;
    case OpRole::kLmHead:
      return OpKind::kLmHead;
    case OpRole::kSample:
    case OpRole::kSampleLocal:
    case OpRole::kSampleSelect:
      return OpKind::kSampling;
    case OpRole::kQuantAttn:
    case OpRole::kQuantQb:
    case OpRole::kQuantKvB:
    case OpRole::kQuantOut:
    case OpRole::kQuantFfn:
    case OpRole::kQuantDown:
    case OpRole::kQuantSharedDown:
    case OpRole::kQuantExpertDown:
      return OpKind::kQuantize;
  }
  return {};
}

std::string_view StreamName(Stream s) { return kStreamNames.Name(s); }

Stream CommStream(Dim d) { return static_cast<Stream>(1 + static_cast<int>(d)); }

std::string OpName(const Op& op) {
  std::string name;
  if (op.draft > 0) name = fmt::format("draft{}.", op.draft - 1);
  if (op.is_comm()) {
    name += fmt::format("{}.{}", CollectiveShortName(op.collective), DimName(op.dim));
    if (!op.label().empty()) name += fmt::format(".{}", op.label());
    if (op.layer >= 0) name += fmt::format(".L{}", op.layer);
  } else {
    if (op.layer >= 0) name += fmt::format("L{}.", op.layer);
    name += OpKindName(op.kind);
    if (!op.label().empty()) name += fmt::format(".{}", op.label());
  }
  if (op.sp_step >= 0) name += fmt::format(".s{}", op.sp_step);
  return name;
}

std::vector<int64_t> BytesPerPeer(const Op& op, size_t group_size) {
  std::vector<int64_t> row(group_size, 0);
  for (const PeerBytes& p : op.peer_sends) {
    if (p.position >= 0 && static_cast<size_t>(p.position) < group_size) row[p.position] = p.bytes;
  }
  return row;
}

}  // namespace shardscope
