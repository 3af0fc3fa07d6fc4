// MoE ops: router, permute into EP-rank / expert order, the local experts.
#include <algorithm>

#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::Router(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  const MoeSpec& moe = model_.moe;
  const int64_t T = mb.tokens;
  RETURN_IF_ERROR(Linear(mb.hn, lw.router, TensorRef(), &mb.router_logits));
  RouterOpArgs a;
  a.top_k = moe.experts_per_token;
  TensorRef bias;
  if (moe.router == RouterKind::kSigmoidBias) {
    a.kind = RouterScore::kSigmoidBias;
    a.n_group = moe.n_group, a.topk_group = moe.topk_group;
    bias = lw.router_bias;
  }
  a.normalize = moe.norm_topk_prob;
  a.scale = moe.routed_scaling_factor;
  mb.router_idx.assign(static_cast<size_t>(T * a.top_k), 0);
  RETURN_IF_ERROR(Act(&mb.router_w, {T * a.top_k}));
  return backend_.Router(a, mb.router_logits, bias, mb.router_idx, mb.router_w);
}

Status PhaseRunner::MoeBuffers(MicroBatch& mb) {
  const int64_t topk = model_.moe.experts_per_token;
  if (ep_ == 1) {
    mb.moe_rows = mb.tokens * topk;
  } else {
    // Member j of the EP group is replica (c_dp, j): its share of the batch, this micro-batch's
    // part.
    const int64_t mine = static_cast<int64_t>(placement_.ExpertsOfEpRank(c_ep_).size());
    const int64_t replicas = dp_ * ep_;
    const int64_t mb_index = &mb - mbs_.data();
    mb.moe_rows = 0;
    for (int64_t j = 0; j < ep_; ++j) {
      const int64_t share =
          SplitRange(experiment_.workload.batch_size, replicas, c_dp_ * ep_ + j).count;
      const int64_t tokens = SplitCount(share, prog_.micro_batches, mb_index) * mb.local;
      mb.moe_rows += tokens * std::min(topk, mine);
    }
  }
  const int64_t rows = mb.moe_rows;
  RETURN_IF_ERROR(Act(&mb.recv_buf, {rows, hidden_}));
  RETURN_IF_ERROR(Act(&mb.in_buf, {rows, hidden_}));
  RETURN_IF_ERROR(Act(&mb.out_buf, {rows, hidden_}));
  return Act(&mb.send_buf, {rows, hidden_});
}

Status PhaseRunner::Permute(MicroBatch& mb) {
  RETURN_IF_ERROR(MoeBuffers(mb));
  const int64_t E = model_.moe.num_routed_experts, topk = model_.moe.experts_per_token;
  const int64_t n = ep_;
  std::vector<int32_t> slot_of(static_cast<size_t>(E));
  mb.send_rows.assign(static_cast<size_t>(n), 0);
  int32_t slot = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t x : placement_.ExpertsOfEpRank(j)) slot_of[static_cast<size_t>(x)] = slot++;
  }
  std::vector<int32_t> slots(mb.router_idx.size());
  for (size_t a = 0; a < slots.size(); ++a) slots[a] = slot_of[mb.router_idx[a]];
  RETURN_IF_ERROR(Act(&mb.perm, {mb.tokens * topk, hidden_}));
  mb.row_of.assign(slots.size(), 0);
  mb.slot_counts.assign(static_cast<size_t>(E), 0);
  RETURN_IF_ERROR(backend_.Permute(mb.hn, slots, topk, mb.row_of, mb.slot_counts, mb.perm));
  slot = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < placement_.ExpertsOfEpRank(j).size(); ++i) {
      mb.send_rows[j] += mb.slot_counts[slot++];
    }
  }
  return Status::Ok();
}

Status PhaseRunner::ExpertGateUp(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  const int64_t mine = static_cast<int64_t>(lw.experts.size());
  // Rows per local expert, gathered expert-major from source-major arrivals.
  const int64_t n = ep_ > 1 ? ep_ : 1;
  const TensorRef& in = ep_ > 1 ? mb.recv : mb.perm;
  const int64_t rows = in.dim(0);
  if (rows > mb.moe_rows) return InternalError("{} expert rows, room for {}", rows, mb.moe_rows);
  std::vector<int64_t> counts(static_cast<size_t>(n * mine));
  if (ep_ > 1) {
    counts = mb.recv_counts;
  } else {
    for (int64_t i = 0; i < mine; ++i) counts[i] = mb.slot_counts[i];
  }
  mb.expert_rows.assign(static_cast<size_t>(mine), 0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < mine; ++i) mb.expert_rows[i] += counts[j * mine + i];
  }
  mb.expert_in = RowsOf(mb.in_buf, 0, rows);
  // Source-major offset of (j, i) → expert-major offset.
  std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
  for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
  int64_t src = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < mine; ++i) {
      const int64_t c = counts[j * mine + i];
      if (c > 0)
        RETURN_IF_ERROR(backend_.Copy(RowsOf(in, src, c), RowsOf(mb.expert_in, exp_off[i], c)));
      exp_off[i] += c, src += c;
    }
  }
  const int64_t width = lw.experts.empty() ? 0 : lw.experts[0].gate_up.dim(1);
  RETURN_IF_ERROR(Act(&mb.up_buf, {mb.moe_rows, width}));
  mb.expert_up = Flat(mb.up_buf, 0, {rows, width});
  int64_t row = 0;
  for (int64_t i = 0; i < mine; ++i) {
    const BackendExpertWeights& f = lw.experts[static_cast<size_t>(i)];
    const int64_t c = mb.expert_rows[i];
    if (c > 0) {
      RETURN_IF_ERROR(Linear(RowsOf(mb.expert_in, row, c), f.gate_up, 0, width, f.gate_up_bias,
                             RowsOf(mb.expert_up, row, c)));
    }
    row += c;
  }
  return Status::Ok();
}

Status PhaseRunner::ExpertDown(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  const int64_t mine = static_cast<int64_t>(lw.experts.size());
  const int64_t rows = mb.expert_act.dim(0);
  mb.expert_out = RowsOf(mb.out_buf, 0, rows);
  int64_t row = 0;
  for (int64_t i = 0; i < mine; ++i) {
    const BackendExpertWeights& f = lw.experts[static_cast<size_t>(i)];
    const int64_t c = mb.expert_rows[i];
    if (c > 0) {
      RETURN_IF_ERROR(Linear(RowsOf(mb.expert_act, row, c), f.down, 0, hidden_, f.down_bias,
                             RowsOf(mb.expert_out, row, c)));
    }
    row += c;
  }
  if (ep_ > 1) {  // back to source-major order for the combine
    mb.combine_send = RowsOf(mb.send_buf, 0, rows);
    std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
    for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
    int64_t dst = 0;
    for (int64_t j = 0; j < ep_; ++j) {
      for (int64_t i = 0; i < mine; ++i) {
        const int64_t c = mb.recv_counts[j * mine + i];
        if (c > 0) {
          RETURN_IF_ERROR(
              backend_.Copy(RowsOf(mb.expert_out, exp_off[i], c), RowsOf(mb.combine_send, dst, c)));
        }
        exp_off[i] += c, dst += c;
      }
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::runtime
