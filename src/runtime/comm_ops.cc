// Communication ops: what each comm role moves, posted non-blocking.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "runtime/phase_runner.h"

namespace shardscope::runtime {

StatusOr<Request> PhaseRunner::PostComm(const Op& op, MicroBatch& mb, OpRecord* rec) {
  const bool send = op.collective == Collective::kSend;
  const bool p2p = send || op.collective == Collective::kRecv;
  auto sum = [&](const TensorRef& t) -> StatusOr<Request> {
    if (!t.contiguous()) return InternalError("all-reduce of a strided view");
    rec->bytes = t.bytes();
    return comm_.AllReduce(op.group_id, t.data, t.elements(), t.dtype, {});
  };
  switch (op.role) {
    case OpRole::kEmbeddingReduce:
      return sum(mb.x);
    case OpRole::kAttnReduce:
      return sum(mb.proj);
    case OpRole::kFfnReduce:
      return sum(mb.ffn_out);
    case OpRole::kArgMaxGather:
      mb.all_best.resize(mb.local_best.size() * static_cast<size_t>(tp_));
      rec->bytes = static_cast<int64_t>(mb.all_best.size() * sizeof(ArgMaxPair));
      // (value, index) pairs move as opaque bytes.
      return comm_.AllGather(op.group_id, mb.local_best.data(), mb.all_best.data(),
                             static_cast<int64_t>(mb.local_best.size() * sizeof(ArgMaxPair)),
                             DType::kUint8, {});
    case OpRole::kAttnGather:
      RETURN_IF_ERROR(Act(&mb.gathered, {sp_, mb.packed.elements()}));
      rec->bytes = mb.gathered.bytes();
      return comm_.AllGather(op.group_id, mb.packed.data, mb.gathered.data, mb.packed.elements(),
                             mb.packed.dtype, {});
    case OpRole::kTokenIds:
      return PostTokenIds(op, mb, rec);
    case OpRole::kActivations:
      if (!p2p) break;
      rec->bytes = mb.x.bytes();
      return send ? comm_.Send(op.peer, mb.x.data, mb.x.elements(), mb.x.dtype, Tag(op), {})
                  : comm_.Recv(op.peer, mb.x.data, mb.x.elements(), mb.x.dtype, Tag(op), {});
    case OpRole::kRingKv: {
      if (!p2p) break;
      if (mb.blocks.empty()) return InternalError("ring send before the own K/V block exists");
      if (send) {
        if (static_cast<size_t>(op.sp_step) >= mb.blocks.size()) {
          return InternalError("ring block {} has not arrived", op.sp_step);
        }
        const TensorRef& held = mb.blocks[static_cast<size_t>(op.sp_step)];
        rec->bytes = held.bytes();
        return comm_.Send(op.peer, held.data, held.elements(), held.dtype, Tag(op), {});
      }
      // Blocks all have the shape of this rank's own block (S/sp tokens per
      // request); each gets its own memory, so in-flight blocks stay valid.
      const TensorRef own = mb.blocks.front();
      mb.blocks.resize(static_cast<size_t>(op.sp_step) + 2);
      TensorRef& next = mb.blocks[static_cast<size_t>(op.sp_step) + 1];
      ASSIGN_OR_RETURN(next, backend_.NewTensor(own.dtype, own.shape));
      rec->bytes = next.bytes();
      return comm_.Recv(op.peer, next.data, next.elements(), next.dtype, Tag(op), {});
    }
    case OpRole::kDispatch:
      return Dispatch(op, mb, rec);
    case OpRole::kCombine:
      return Combine(op, mb, rec);
    case OpRole::kNone:
    case OpRole::kEmbedding:
    case OpRole::kInputNorm:
    case OpRole::kPostAttentionNorm:
    case OpRole::kQaNorm:
    case OpRole::kKvANorm:
    case OpRole::kQNorm:
    case OpRole::kKNorm:
    case OpRole::kFinalNorm:
    case OpRole::kQkvProj:
    case OpRole::kQProj:
    case OpRole::kQaProj:
    case OpRole::kQbProj:
    case OpRole::kKvProj:
    case OpRole::kKvAProj:
    case OpRole::kRope:
    case OpRole::kRopeQ:
    case OpRole::kRopeK:
    case OpRole::kKvAppend:
    case OpRole::kKvUpProj:
    case OpRole::kAbsorbUk:
    case OpRole::kAbsorbUv:
    case OpRole::kAttention:
    case OpRole::kAttentionDecode:
    case OpRole::kAttentionMerge:
    case OpRole::kOutProj:
    case OpRole::kResidualAttn:
    case OpRole::kResidualFfn:
    case OpRole::kRouter:
    case OpRole::kPermute:
    case OpRole::kExpertGateUp:
    case OpRole::kExpertDown:
    case OpRole::kSharedGateUp:
    case OpRole::kSharedDown:
    case OpRole::kUnpermute:
    case OpRole::kFfnUp:
    case OpRole::kFfnActivation:
    case OpRole::kSharedActivation:
    case OpRole::kExpertActivation:
    case OpRole::kFfnDown:
    case OpRole::kLmHead:
    case OpRole::kSample:
    case OpRole::kSampleLocal:
    case OpRole::kSampleSelect:
    case OpRole::kMtpNorm:
    case OpRole::kMtpProj:
    case OpRole::kQuantAttn:
    case OpRole::kQuantQb:
    case OpRole::kQuantKvB:
    case OpRole::kQuantOut:
    case OpRole::kQuantFfn:
    case OpRole::kQuantDown:
    case OpRole::kQuantSharedDown:
    case OpRole::kQuantExpertDown:
      break;
  }
  return Unimplemented("not implemented: comm op {} ({} over {}) in the CPU executor", OpName(op),
                       CollectiveShortName(op.collective), DimName(op.dim));
}

StatusOr<Request> PhaseRunner::PostTokenIds(const Op& op, MicroBatch& mb, OpRecord* rec) {
  static_assert(std::is_same_v<decltype(MicroBatch::out_ids), std::vector<int32_t>>);
  const int64_t ids = static_cast<int64_t>(mb.out_ids.size());
  rec->bytes = ids * 4;
  if (op.collective == Collective::kBroadcast) {
    mb.ids_ready = true;
    return comm_.Broadcast(op.group_id, mb.out_ids.data(), ids, DType::kInt32, op.peer, {});
  }
  if (op.collective == Collective::kSend) {
    return comm_.Send(op.peer, mb.out_ids.data(), ids, DType::kInt32, Tag(op), {});
  }
  if (op.collective == Collective::kRecv) {
    mb.ids_ready = true;
    return comm_.Recv(op.peer, mb.out_ids.data(), ids, DType::kInt32, Tag(op), {});
  }
  return Unimplemented("not implemented: comm op {} ({} over {}) in the CPU executor", OpName(op),
                       CollectiveShortName(op.collective), DimName(op.dim));
}

StatusOr<Request> PhaseRunner::Dispatch(const Op& op, MicroBatch& mb, OpRecord* rec) {
  const Group& g = EpGroup();
  const int64_t n = static_cast<int64_t>(g.ranks.size());
  int64_t most = 0;
  for (int64_t j = 0; j < n; ++j) {
    most = std::max<int64_t>(most, static_cast<int64_t>(placement_.ExpertsOfEpRank(j).size()));
  }
  // Per member, the counts for each of its local experts (padded to `most`).
  std::vector<int64_t> send(static_cast<size_t>(n * most), 0);
  int64_t slot = 0;
  for (int64_t j = 0; j < n; ++j) {
    const auto& experts = placement_.ExpertsOfEpRank(j);
    for (size_t i = 0; i < experts.size(); ++i) send[j * most + i] = mb.slot_counts[slot++];
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> recv, comm_.ExchangeCounts(op.group_id, send, most));
  const int64_t mine = static_cast<int64_t>(placement_.ExpertsOfEpRank(c_ep_).size());
  mb.recv_counts.assign(static_cast<size_t>(n * mine), 0);
  std::vector<int64_t> send_f(n), recv_f(n);
  int64_t total = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t rows = 0;
    for (int64_t i = 0; i < mine; ++i) {
      mb.recv_counts[j * mine + i] = recv[j * most + i];
      rows += recv[j * most + i];
    }
    recv_f[j] = rows * hidden_;
    send_f[j] = mb.send_rows[j] * hidden_;
    total += rows;
  }
  if (total > mb.moe_rows) return InternalError("{} rows arrive, room for {}", total, mb.moe_rows);
  mb.recv = RowsOf(mb.recv_buf, 0, total);
  rec->bytes = 0;
  const int64_t size = DTypeSize(mb.perm.dtype);
  for (int64_t j = 0; j < n; ++j) {
    rec->bytes_per_peer.push_back(send_f[j] * size);
    rec->bytes += send_f[j] * size;
  }
  return comm_.AllToAllV(op.group_id, mb.perm.data, send_f, mb.recv.data, recv_f, mb.perm.dtype,
                         {});
}

StatusOr<Request> PhaseRunner::Combine(const Op& op, MicroBatch& mb, OpRecord* rec) {
  const int64_t n = static_cast<int64_t>(EpGroup().ranks.size());
  const int64_t mine = static_cast<int64_t>(placement_.ExpertsOfEpRank(c_ep_).size());
  std::vector<int64_t> send_f(n), recv_f(n);
  for (int64_t j = 0; j < n; ++j) {
    int64_t rows = 0;
    for (int64_t i = 0; i < mine; ++i) rows += mb.recv_counts[j * mine + i];
    send_f[j] = rows * hidden_;
    recv_f[j] = mb.send_rows[j] * hidden_;
  }
  RETURN_IF_ERROR(Act(&mb.combined, {mb.perm.dim(0), hidden_}));
  rec->bytes = 0;
  const int64_t size = DTypeSize(mb.combined.dtype);
  for (int64_t j = 0; j < n; ++j) {
    rec->bytes_per_peer.push_back(send_f[j] * size);
    rec->bytes += send_f[j] * size;
  }
  return comm_.AllToAllV(op.group_id, mb.combine_send.data, send_f, mb.combined.data, recv_f,
                         mb.combined.dtype, {});
}

}  // namespace shardscope::runtime
