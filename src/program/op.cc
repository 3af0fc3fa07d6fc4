#include "program/op.h"

#include <fmt/format.h>

namespace shardscope {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kNorm:
      return "norm";
    case OpKind::kQkvProj:
      return "qkv_proj";
    case OpKind::kQProj:
      return "q_proj";
    case OpKind::kKvProj:
      return "kv_proj";
    case OpKind::kKvUpProj:
      return "kv_up_proj";
    case OpKind::kRope:
      return "rope";
    case OpKind::kKvAppend:
      return "kv_append";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kAttentionDecode:
      return "attention_decode";
    case OpKind::kAttentionMerge:
      return "attention_merge";
    case OpKind::kOutProj:
      return "out_proj";
    case OpKind::kResidualAdd:
      return "residual_add";
    case OpKind::kRouter:
      return "router";
    case OpKind::kPermute:
      return "permute";
    case OpKind::kExpertGemm:
      return "expert_gemm";
    case OpKind::kSharedExpert:
      return "shared_expert";
    case OpKind::kUnpermute:
      return "unpermute";
    case OpKind::kFfnUp:
      return "ffn_up";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kFfnDown:
      return "ffn_down";
    case OpKind::kLmHead:
      return "lm_head";
    case OpKind::kSampling:
      return "sampling";
    case OpKind::kComm:
      return "comm";
  }
  return "?";
}

std::string_view StreamName(Stream s) {
  switch (s) {
    case Stream::kCompute:
      return "compute";
    case Stream::kCommTp:
      return "comm.tp";
    case Stream::kCommSp:
      return "comm.sp";
    case Stream::kCommEp:
      return "comm.ep";
    case Stream::kCommDp:
      return "comm.dp";
    case Stream::kCommPp:
      return "comm.pp";
  }
  return "?";
}

std::string_view PhaseName(Phase p) {
  switch (p) {
    case Phase::kPrefill:
      return "prefill";
    case Phase::kDecode:
      return "decode";
  }
  return "?";
}

Stream CommStream(Dim d) { return static_cast<Stream>(1 + static_cast<int>(d)); }

std::string OpName(const Op& op) {
  std::string name;
  if (op.is_comm()) {
    name = fmt::format("{}.{}", CollectiveShortName(op.collective), DimName(op.dim));
    if (!op.label.empty()) name += fmt::format(".{}", op.label);
    if (op.layer >= 0) name += fmt::format(".L{}", op.layer);
  } else {
    if (op.layer >= 0) name = fmt::format("L{}.", op.layer);
    name += OpKindName(op.kind);
    if (!op.label.empty()) name += fmt::format(".{}", op.label);
  }
  if (op.sp_step >= 0) name += fmt::format(".s{}", op.sp_step);
  return name;
}

}  // namespace shardscope
