// MoE ops: router, permute into EP-rank / expert order, the local experts.
#include <algorithm>

#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::Router(const Op& op, MicroBatch& mb) {
  const LayerWeights& lw = L(op);
  const MoeSpec& moe = m_.moe;
  const int64_t T = mb.tokens;
  mb.router_logits = Linear(mb.hn, lw.router, Tensor());
  RouterArgs a;
  a.experts = moe.num_routed_experts;
  a.top_k = moe.experts_per_token;
  if (moe.router == RouterKind::kSigmoidBias) {
    a.kind = RouterScore::kSigmoidBias;
    a.n_group = moe.n_group, a.topk_group = moe.topk_group;
    a.bias = lw.router_bias.data();
  }
  a.normalize = moe.norm_topk_prob;
  a.scale = moe.routed_scaling_factor;
  mb.router_idx.assign(static_cast<size_t>(T * a.top_k), 0);
  mb.router_w = Tensor({T * a.top_k});
  k_.Router(mb.router_logits.data(), T, a, mb.router_idx.data(), mb.router_w.data());
  return Status::Ok();
}

Status PhaseRunner::Permute(MicroBatch& mb) {
  const int64_t E = m_.moe.num_routed_experts, topk = m_.moe.experts_per_token;
  const int64_t n = ep_;
  std::vector<int32_t> slot_of(static_cast<size_t>(E));
  mb.send_rows.assign(static_cast<size_t>(n), 0);
  int32_t slot = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t x : pl_.ExpertsOfEpRank(j)) slot_of[static_cast<size_t>(x)] = slot++;
  }
  std::vector<int32_t> slots(mb.router_idx.size());
  for (size_t a = 0; a < slots.size(); ++a) slots[a] = slot_of[mb.router_idx[a]];
  mb.perm = Tensor({mb.tokens * topk, h_});
  mb.row_of.assign(slots.size(), 0);
  mb.slot_counts.assign(static_cast<size_t>(E), 0);
  k_.Permute(mb.hn.data(), mb.tokens, h_, slots.data(), topk, E, mb.perm.data(), mb.row_of.data(),
             mb.slot_counts.data());
  slot = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < pl_.ExpertsOfEpRank(j).size(); ++i) {
      mb.send_rows[j] += mb.slot_counts[slot++];
    }
  }
  return Status::Ok();
}

Status PhaseRunner::ExpertGateUp(const Op& op, MicroBatch& mb) {
  const LayerWeights& lw = L(op);
  const int64_t mine = static_cast<int64_t>(lw.experts.size());
  {
    // Rows per local expert, gathered expert-major from source-major arrivals.
    const int64_t n = ep_ > 1 ? ep_ : 1;
    const Tensor& in = ep_ > 1 ? mb.recv : mb.perm;
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
    mb.expert_in = Tensor({in.dim(0), h_});
    // Source-major offset of (j, i) → expert-major offset.
    std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
    for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
    int64_t src = 0;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < mine; ++i) {
        const int64_t c = counts[j * mine + i];
        k_.CopyRows(in.data() + src * h_, h_, mb.expert_in.data() + exp_off[i] * h_, h_, c, h_);
        exp_off[i] += c, src += c;
      }
    }
    const int64_t width = lw.experts.empty() ? 0 : lw.experts[0].gate_up.dim(1);
    mb.expert_up = Tensor({in.dim(0), width});
    int64_t row = 0;
    for (int64_t i = 0; i < mine; ++i) {
      const ExpertWeights& f = lw.experts[static_cast<size_t>(i)];
      const int64_t c = mb.expert_rows[i];
      Linear(mb.expert_in.data() + row * h_, h_, c, h_, f.gate_up, 0, width, f.gate_up_bias,
             mb.expert_up.data() + row * width, width);
      row += c;
    }
    return Status::Ok();
  }
}

Status PhaseRunner::ExpertDown(const Op& op, MicroBatch& mb) {
  const LayerWeights& lw = L(op);
  const int64_t mine = static_cast<int64_t>(lw.experts.size());
  {
    const int64_t inter = mb.expert_act.dim(1);
    mb.expert_out = Tensor({mb.expert_act.dim(0), h_});
    int64_t row = 0;
    for (int64_t i = 0; i < mine; ++i) {
      const ExpertWeights& f = lw.experts[static_cast<size_t>(i)];
      const int64_t c = mb.expert_rows[i];
      Linear(mb.expert_act.data() + row * inter, inter, c, inter, f.down, 0, h_, f.down_bias,
             mb.expert_out.data() + row * h_, h_);
      row += c;
    }
    if (ep_ > 1) {  // back to source-major order for the combine
      mb.combine_send = Tensor({mb.expert_out.dim(0), h_});
      std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
      for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
      int64_t dst = 0;
      for (int64_t j = 0; j < ep_; ++j) {
        for (int64_t i = 0; i < mine; ++i) {
          const int64_t c = mb.recv_counts[j * mine + i];
          k_.CopyRows(mb.expert_out.data() + exp_off[i] * h_, h_, mb.combine_send.data() + dst * h_,
                      h_, c, h_);
          exp_off[i] += c, dst += c;
        }
      }
    }
    return Status::Ok();
  }
}

}  // namespace shardscope::runtime
