// The op loop: set-up, dispatch by role, completion of comm ops.
#include "runtime/phase_runner.h"

#include <cmath>
#include <stdexcept>

#include "runtime/rank_status.h"

namespace shardscope::runtime {

PhaseRunner::PhaseRunner(const Experiment& e, const Placement& pl, int64_t rank, Kernels& k,
                         Communicator& c, const Weights& w, Executor::State& st,
                         const ExecutorOptions& options, const PhaseProgram& program,
                         std::vector<OpRecord>* records, std::vector<SampleRecord>* samples)
    : e_(e),
      m_(e.model),
      pl_(pl),
      rank_(rank),
      k_(k),
      c_(c),
      w_(w),
      st_(st),
      opt_(options),
      prog_(program),
      records_(records),
      samples_(samples) {
  const ParallelSpec& p = e.parallel;
  tp_ = p.tp, sp_ = p.sp, ep_ = p.ep, dp_ = p.dp;
  c_tp_ = pl.Coord(rank, Dim::kTp), c_sp_ = pl.Coord(rank, Dim::kSp);
  c_ep_ = pl.Coord(rank, Dim::kEp), c_dp_ = pl.Coord(rank, Dim::kDp);
  prefill_ = program.phase == Phase::kPrefill;
  phase_index_ = prefill_ ? 0 : static_cast<int32_t>(program.step + 1);
  h_ = m_.hidden_size;
  seq_ = e.workload.sequence_length;
  const ShardGeometry geo(m_, tp_, ep_);
  hq_ = geo.q_heads();
  mla_ = m_.attention == AttentionKind::kMla;
  if (mla_) {
    nope_ = m_.mla.qk_nope_head_dim, rope_ = m_.mla.qk_rope_head_dim;
    r_ = m_.mla.kv_lora_rank, vd_ = m_.mla.v_head_dim;
    qk_ = nope_ + rope_;
    latent_ = r_ + rope_;
    rope_spec_.style = RopeStyle::kInterleaved;
  } else {
    d_ = m_.head_dim;
    hkv_ = geo.kv_heads();
    qk_ = vd_ = d_;
    rope_spec_.style = RopeStyle::kHalfSplit;
  }
  rope_spec_.theta = m_.rope_theta;
  rope_spec_.scaling = m_.rope_scaling;
  double scale = 1.0 / std::sqrt(static_cast<double>(qk_));
  const RopeScaling& rs = m_.rope_scaling;
  if (mla_ && rs.kind == RopeScalingKind::kYarn && rs.mscale_all_dim > 0) {
    // DeepSeek's MLA: softmax scale × mscale(factor, mscale_all_dim)².
    const double ms = YarnMscale(rs.factor, rs.mscale_all_dim);
    scale *= ms * ms;
  }
  scale_ = static_cast<float>(scale);
}

Status PhaseRunner::Run() {
  if (sp_ > 1) {
    ASSIGN_OR_RETURN(layout_, SpLayout::Create(e_.parallel.sp_variant, seq_, sp_));
  }
  RETURN_IF_ERROR(SetUpMicroBatches());
  const RankProgram& rp = prog_.ranks[static_cast<size_t>(rank_)];
  PositionGuard position(opt_.position, &rp, phase_index_);
  inflight_.resize(rp.ops.size());
  for (const Op& op : rp.ops) {
    position.Enter(op.id);
    Status s;
    try {
      s = RunOp(op);
    } catch (const std::exception& ex) {  // a kernel's std::bad_alloc, a library's throw
      s = InternalError("exception: {}", ex.what());
    }
    if (!s.ok()) return Failed(op, s);
  }
  for (size_t i = 0; i < inflight_.size(); ++i) {
    position.Enter(static_cast<int32_t>(i));
    Status s = Complete(static_cast<int32_t>(i));
    if (!s.ok()) return Failed(rp.ops[i], s);
  }
  // Token ids for the next phase: from sampling, the SP broadcast or the PP return.
  for (MicroBatch& mb : mbs_) {
    if (!mb.ids_ready) continue;
    for (size_t r = 0; r < mb.requests.size(); ++r) {
      st_.next_token[mb.requests[r]] = mb.out_ids[r];
    }
  }
  if (opt_.record_ops) {
    for (Pending& p : pending_records_) records_->push_back(std::move(p.record));
  }
  return Status::Ok();
}

Status PhaseRunner::Failed(const Op& op, const Status& s) const {
  return Status(s.code(), fmt::format("rank {} failed in {}: {}", rank_,
                                      OpContext(op, phase_index_), s.message()));
}

Status PhaseRunner::SetUpMicroBatches() {
  const int64_t replicas = dp_ * ep_;
  const int64_t replica = c_dp_ * ep_ + c_ep_;
  const Range share = SplitRange(e_.workload.batch_size, replicas, replica);
  const int64_t count = share.count;
  int64_t first = share.begin;
  mbs_.resize(static_cast<size_t>(prog_.micro_batches));
  std::vector<int64_t> local_pos;
  if (prefill_) {
    for (int64_t p = 0; p < seq_; ++p) {
      if (sp_ == 1 || layout_->OwnerOf(p) == c_sp_) local_pos.push_back(p);
    }
  }
  for (int64_t mb = 0; mb < prog_.micro_batches; ++mb) {
    MicroBatch& b = mbs_[static_cast<size_t>(mb)];
    const int64_t n = SplitCount(count, prog_.micro_batches, mb);
    for (int64_t i = 0; i < n; ++i) b.requests.push_back(first + i);
    first += n;
    b.local = prefill_ ? static_cast<int64_t>(local_pos.size()) : 1;
    b.tokens = n * b.local;
    for (int64_t req : b.requests) {
      if (prefill_) {
        for (int64_t p : local_pos) {
          b.pos.push_back(p);
          const auto& given = e_.workload.prompts;
          b.ids.push_back(given.empty() ? PromptToken(e_.workload.seed, req, p, m_.vocab_size)
                                        : given[static_cast<size_t>(req)][static_cast<size_t>(p)]);
        }
      } else {
        b.pos.push_back(prog_.context_len);
        auto it = st_.next_token.find(req);
        b.ids.push_back(it == st_.next_token.end() ? -1 : it->second);
      }
    }
    b.out_ids.assign(b.requests.size(), -1);
    b.x = Tensor({b.tokens, h_});
  }
  return Status::Ok();
}

Status PhaseRunner::RunOp(const Op& op) {
  if (op.micro_batch < 0 || op.micro_batch >= static_cast<int32_t>(mbs_.size())) {
    return InternalError("micro-batch {} out of range", op.micro_batch);
  }
  if (opt_.fault.active() && opt_.fault.Matches(rank_, phase_index_, op)) {
    RETURN_IF_ERROR(InjectFault(opt_.fault));
  }
  for (int32_t d : op.deps) RETURN_IF_ERROR(Complete(d));
  MicroBatch& mb = mbs_[static_cast<size_t>(op.micro_batch)];
  Pending rec;
  rec.record.phase_index = phase_index_;
  rec.record.op = op;
  if (op.is_comm()) {
    rec.record.start_ns = NowNs();
    Inflight f;
    ASSIGN_OR_RETURN(f.request, PostComm(op, mb, &rec.record));
    f.done = false;
    f.record = static_cast<int64_t>(pending_records_.size());
    pending_records_.push_back(std::move(rec));
    inflight_[static_cast<size_t>(op.id)] = std::move(f);
  } else {
    if (op.layer >= 0 && !w_.has_layer(op.layer)) {
      return InternalError("layer {} is not on this rank's stage", op.layer);
    }
    rec.record.start_ns = NowNs();
    RETURN_IF_ERROR(RunCompute(op, mb));
    rec.record.end_ns = NowNs();
    pending_records_.push_back(std::move(rec));
  }
  return Poll();
}

Status PhaseRunner::Poll() {
  for (size_t i = 0; i < inflight_.size(); ++i) {
    Inflight& f = inflight_[i];
    if (f.done) continue;
    ASSIGN_OR_RETURN(bool done, f.request->Test());
    if (done) Finish(f);
  }
  return Status::Ok();
}

void PhaseRunner::Finish(Inflight& f) {
  f.done = true;
  pending_records_[static_cast<size_t>(f.record)].record.end_ns = NowNs();
  f.request.reset();
}

Status PhaseRunner::Complete(int32_t id) {
  if (id < 0 || id >= static_cast<int32_t>(inflight_.size())) return Status::Ok();
  Inflight& f = inflight_[static_cast<size_t>(id)];
  if (f.done) return Status::Ok();
  // Blocked on peers: what the launcher's hang report says of this rank.
  if (opt_.position != nullptr) opt_.position->waiting_on.store(id, std::memory_order_relaxed);
  Status s = f.request->Wait();
  if (opt_.position != nullptr) opt_.position->waiting_on.store(-1, std::memory_order_relaxed);
  RETURN_IF_ERROR(s);
  Finish(f);
  return Status::Ok();
}

void PhaseRunner::Linear(const float* x, int64_t lda, int64_t m, int64_t kk, const Tensor& w,
                         int64_t col, int64_t n, const Tensor& bias, float* y, int64_t ldc) {
  const int64_t ldw = w.dim(w.rank() - 1);
  k_.Gemm(m, n, kk, x, lda, w.data() + col, ldw, false, y, ldc, 0.0f);
  if (!bias.empty()) {
    for (int64_t i = 0; i < m; ++i) k_.Add(bias.data() + col, y + i * ldc, n);
  }
}

Tensor PhaseRunner::Linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t m = x.rank() == 2 ? x.dim(0) : 0;
  Tensor y({m, w.dim(1)});
  Linear(x.data(), x.dim(1), m, x.dim(1), w, 0, w.dim(1), bias, y.data(), w.dim(1));
  return y;
}

void PhaseRunner::Norm(const Tensor& x, const Tensor& w, Tensor* y) {
  *y = Tensor(x.shape());
  k_.RmsNorm(x.data(), x.dim(1), w.data(), y->data(), y->dim(1), x.dim(0), x.dim(1),
             static_cast<float>(m_.norm_eps));
}

void PhaseRunner::Activation(const Tensor& up, Tensor* act) {
  const int64_t m = up.dim(0);
  if (m_.activation == Activation::kSwiGlu) {
    *act = Tensor({m, up.dim(1) / 2});
    k_.SwiGlu(up.data(), m, up.dim(1) / 2, act->data());
  } else {
    *act = Tensor(up.shape());
    k_.Gelu(up.data(), up.size(), act->data());
  }
}

Status PhaseRunner::RunCompute(const Op& op, MicroBatch& mb) {
  const int64_t T = mb.tokens;
  switch (op.role) {
    case OpRole::kEmbedding:
      for (int32_t id : mb.ids) {
        if (id < 0) return InternalError("no input token for a request (missing prefill?)");
      }
      k_.Embedding(mb.ids.data(), T, w_.embedding().data(), w_.vocab().begin, w_.vocab().count, h_,
                   mb.x.data());
      return Status::Ok();
    case OpRole::kInputNorm:
      return Norm(mb.x, L(op).input_norm, &mb.hn), Status::Ok();
    case OpRole::kPostAttentionNorm:
      return Norm(mb.x, L(op).post_norm, &mb.hn), Status::Ok();
    case OpRole::kQaNorm:
      return Norm(mb.qa, L(op).q_a_norm, &mb.qa), Status::Ok();
    case OpRole::kKvANorm:
      k_.RmsNorm(mb.kv_a.data(), latent_, L(op).kv_a_norm.data(), mb.kv_a.data(), latent_, T, r_,
                 static_cast<float>(m_.norm_eps));
      return Status::Ok();
    case OpRole::kFinalNorm:
      return HeadNorm(mb);
    case OpRole::kQkvProj: {
      const LayerWeights& lw = L(op);
      mb.qkv = Linear(mb.hn, lw.qkv, lw.qkv_bias);
      return Status::Ok();
    }
    case OpRole::kQProj: {
      const LayerWeights& lw = L(op);
      if (!mla_) {  // GQA with replicated KV heads: the q columns alone
        mb.qkv = Tensor({T, lw.qkv.dim(1)});
        Linear(mb.hn.data(), h_, T, h_, lw.qkv, 0, hq_ * d_, lw.qkv_bias, mb.qkv.data(),
               lw.qkv.dim(1));
        return Status::Ok();
      }
      return mb.qkv = Linear(mb.hn, lw.q, Tensor()), Status::Ok();
    }
    case OpRole::kQaProj: {
      const LayerWeights& lw = L(op);
      return mb.qa = Linear(mb.hn, lw.q_a, lw.q_a_bias), Status::Ok();
    }
    case OpRole::kQbProj:
      return mb.qkv = Linear(mb.qa, L(op).q_b, Tensor()), Status::Ok();
    case OpRole::kKvProj: {
      if (mla_) break;
      const LayerWeights& lw = L(op);
      const int64_t at = hq_ * d_;
      Linear(mb.hn.data(), h_, T, h_, lw.qkv, at, 2 * hkv_ * d_, lw.qkv_bias, mb.qkv.data() + at,
             lw.qkv.dim(1));
      return Status::Ok();
    }
    case OpRole::kKvAProj: {
      const LayerWeights& lw = L(op);
      return mb.kv_a = Linear(mb.hn, lw.kv_a, lw.kv_a_bias), Status::Ok();
    }
    case OpRole::kRope:
    case OpRole::kRopeQ:
    case OpRole::kRopeK:
      return RunRope(op, mb);
    case OpRole::kKvAppend:
      return KvAppend(op, mb);
    case OpRole::kKvUpProj:
    case OpRole::kAbsorbUk:
    case OpRole::kAbsorbUv:
      return KvUpProj(op, mb);
    case OpRole::kAttention:
      return op.sp_step >= 0 ? RingStep(op, mb) : PrefillAttention(mb);
    case OpRole::kAttentionDecode:
      return DecodeAttention(op, mb);
    case OpRole::kAttentionMerge:
      return Merge(mb);
    case OpRole::kOutProj: {
      const LayerWeights& lw = L(op);
      mb.proj = Linear(mb.attn, lw.o, lw.o_bias);
      return Status::Ok();
    }
    case OpRole::kResidualAttn:
      return k_.Add(mb.proj.data(), mb.x.data(), mb.x.size()), Status::Ok();
    case OpRole::kResidualFfn:
      return k_.Add(mb.ffn_out.data(), mb.x.data(), mb.x.size()), Status::Ok();
    case OpRole::kFfnUp: {
      const ExpertWeights& f = L(op).ffn;
      mb.up = Linear(mb.hn, f.gate_up, f.gate_up_bias);
      return Status::Ok();
    }
    case OpRole::kFfnActivation:
      return Activation(mb.up, &mb.act), Status::Ok();
    case OpRole::kSharedActivation:
      return Activation(mb.sh_up, &mb.sh_act), Status::Ok();
    case OpRole::kExpertActivation:
      return Activation(mb.expert_up, &mb.expert_act), Status::Ok();
    case OpRole::kFfnDown: {
      const ExpertWeights& f = L(op).ffn;
      mb.ffn_out = Linear(mb.act, f.down, f.down_bias);
      return Status::Ok();
    }
    case OpRole::kRouter:
      return Router(op, mb);
    case OpRole::kPermute:
      return Permute(mb);
    case OpRole::kSharedGateUp: {
      const ExpertWeights& f = L(op).shared;
      return mb.sh_up = Linear(mb.hn, f.gate_up, f.gate_up_bias), Status::Ok();
    }
    case OpRole::kSharedDown: {
      const ExpertWeights& f = L(op).shared;
      mb.shared_out = Linear(mb.sh_act, f.down, f.down_bias);
      return Status::Ok();
    }
    case OpRole::kExpertGateUp:
      return ExpertGateUp(op, mb);
    case OpRole::kExpertDown:
      return ExpertDown(op, mb);
    case OpRole::kUnpermute: {
      const Tensor& y = ep_ > 1 ? mb.combined : mb.expert_out;
      mb.ffn_out = Tensor({T, h_});
      const int64_t topk = m_.moe.experts_per_token;
      k_.Unpermute(y.data(), T, h_, mb.row_of.data(), mb.router_w.data(), topk,
                   mb.shared_out.empty() ? nullptr : mb.shared_out.data(), mb.ffn_out.data());
      return Status::Ok();
    }
    case OpRole::kLmHead:
      mb.logits = Tensor({mb.final_hn.dim(0), w_.vocab().count});
      LmHead(k_, mb.final_hn.data(), mb.final_hn.dim(0), h_, w_.lm_head().data(), w_.vocab().count,
             mb.logits.data());
      return Status::Ok();
    case OpRole::kSample:
    case OpRole::kSampleLocal:
    case OpRole::kSampleSelect:
      return Sampling(op, mb);
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
      break;
  }
  return Unimplemented("not implemented: op {} (kind {}, label '{}') in the CPU executor",
                       OpName(op), OpKindName(op.kind), op.label());
}

}  // namespace shardscope::runtime
