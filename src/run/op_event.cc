#include "run/op_event.h"

namespace shardscope {

void FillOpEvent(const Op& op, const Placement& placement, trace::OpEvent* e,
                 const std::vector<ExpertReplicas>* replicas) {
  e->stream = static_cast<int32_t>(op.stream);
  e->name = OpName(op);
  e->category = op.is_comm() ? trace::Category::kComm : trace::Category::kCompute;
  e->layer = op.layer;
  e->micro_batch = op.micro_batch;
  e->sp_step = op.sp_step;
  e->flops = op.flops;
  e->bytes_read = op.bytes_read;
  e->bytes_written = op.bytes_written;
  e->group.clear();
  e->bytes_per_peer.clear();
  e->algorithm.clear();  // a simulator's (or a library's) choice, set by the caller
  e->protocol.clear();
  e->all_to_all.clear();
  e->experts.clear();
  e->expert_tokens.clear();
  e->peer = -1;
  e->root = -1;
  // Expert counts on one rank of each set routing the same tokens: tp coordinate 0
  // (expert-TP ranks see the same tokens) and sp coordinate 0 when the op is
  // replicated over sp (decode), so a sum over ranks counts each token once.
  if (!op.expert_tokens.empty() && placement.Coord(e->rank, Dim::kTp) == 0 &&
      (op.replication == 1 || placement.Coord(e->rank, Dim::kSp) == 0)) {
    const std::vector<int64_t>& mine =
        placement.ExpertsOfEpRank(placement.Coord(e->rank, Dim::kEp));
    const ExpertReplicas* slots =
        replicas != nullptr && op.layer >= 0 && op.layer < std::ssize(*replicas)
            ? &(*replicas)[static_cast<size_t>(op.layer)]
            : nullptr;
    if (slots != nullptr && slots->slots_per_rank == std::ssize(op.expert_tokens)) {
      // EPLB: the experts of this rank's slots (a replicated expert appears on several ranks).
      const int64_t first = placement.Coord(e->rank, Dim::kEp) * slots->slots_per_rank;
      for (int64_t s = first; s < first + slots->slots_per_rank; ++s) {
        e->experts.push_back(slots->slot_expert[static_cast<size_t>(s)]);
      }
      e->expert_tokens = op.expert_tokens;
    } else if (mine.size() == op.expert_tokens.size()) {
      for (int64_t x : mine) e->experts.push_back(static_cast<int32_t>(x));
      e->expert_tokens = op.expert_tokens;
    }
  }
  if (!op.is_comm()) {
    e->collective = trace::Collective::kNone;
    e->kind = std::string(OpKindName(op.kind));
    e->dim = Dim::kNone;
    e->seq = -1;
    e->bytes = 0;
    return;
  }
  e->collective = op.collective;
  e->kind = std::string(trace::CollectiveName(e->collective));
  e->dim = op.dim;
  e->seq = op.seq;
  e->bytes = op.bytes;
  if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
    e->peer = static_cast<int32_t>(op.peer);
  } else if (op.group_id >= 0) {
    const Group& group = placement.groups()[static_cast<size_t>(op.group_id)];
    for (int64_t r : group.ranks) e->group.push_back(static_cast<int32_t>(r));
    if (op.collective == Collective::kAllToAll) {  // the dense row, from its non-zeros
      e->bytes_per_peer = BytesPerPeer(op, group.ranks.size());
    }
    if (op.collective == Collective::kBroadcast) e->root = static_cast<int32_t>(op.peer);
  }
}

}  // namespace shardscope
