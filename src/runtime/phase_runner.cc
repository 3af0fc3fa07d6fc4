// The op loop: set-up, dispatch by role, completion of comm ops.
#include "runtime/phase_runner.h"

#include <cmath>
#include <stdexcept>

#include "runtime/rank_status.h"

namespace shardscope::runtime {

PhaseRunner::PhaseRunner(const Experiment& e, const Placement& pl, int64_t rank, Backend& b,
                         Communicator& c, const BackendWeights& w, Executor::State& st,
                         const ExecutorOptions& options, const PhaseProgram& program,
                         std::vector<OpRecord>* records, std::vector<SampleRecord>* samples)
    : experiment_(e),
      model_(e.model),
      placement_(pl),
      rank_(rank),
      backend_(b),
      comm_(c),
      weights_(w),
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
  hidden_ = model_.hidden_size;
  seq_ = e.workload.sequence_length;
  const ShardGeometry geo(model_, tp_, ep_);
  hq_ = geo.q_heads();
  mla_ = model_.attention == AttentionKind::kMla;
  if (mla_) {
    nope_ = model_.mla.qk_nope_head_dim, rope_ = model_.mla.qk_rope_head_dim;
    kv_lora_rank_ = model_.mla.kv_lora_rank, vd_ = model_.mla.v_head_dim;
    qk_ = nope_ + rope_;
    latent_ = kv_lora_rank_ + rope_;
    rope_spec_.style = RopeStyle::kInterleaved;
  } else {
    head_dim_ = model_.head_dim;
    hkv_ = geo.kv_heads();
    qk_ = vd_ = head_dim_;
    rope_spec_.style = RopeStyle::kHalfSplit;
  }
  rope_spec_.theta = model_.rope_theta;
  rope_spec_.scaling = model_.rope_scaling;
  double scale = 1.0 / std::sqrt(static_cast<double>(qk_));
  const RopeScaling& rs = model_.rope_scaling;
  if (mla_ && rs.kind == RopeScalingKind::kYarn && rs.mscale_all_dim > 0) {
    // DeepSeek's MLA: softmax scale × mscale(factor, mscale_all_dim)².
    const double ms = YarnMscale(rs.factor, rs.mscale_all_dim);
    scale *= ms * ms;
  }
  scale_ = static_cast<float>(scale);
  dtype_ = kExecutorDType;
  timer_ = b.NewTimer();
}

Status PhaseRunner::Run() {
  if (sp_ > 1) {
    ASSIGN_OR_RETURN(layout_, SpLayout::Create(experiment_.parallel.sp_variant, seq_, sp_));
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
  const Range share = SplitRange(experiment_.workload.batch_size, replicas, replica);
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
          const auto& given = experiment_.workload.prompts;
          b.ids.push_back(given.empty()
                              ? PromptToken(experiment_.workload.seed, req, p, model_.vocab_size)
                              : given[static_cast<size_t>(req)][static_cast<size_t>(p)]);
        }
      } else {
        b.pos.push_back(prog_.context_len);
        auto it = st_.next_token.find(req);
        b.ids.push_back(it == st_.next_token.end() ? -1 : it->second);
      }
    }
    b.out_ids.assign(b.requests.size(), -1);
    RETURN_IF_ERROR(Act(&b.x, {b.tokens, hidden_}));
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
  for (int32_t d : DepsOf(prog_.ranks[static_cast<size_t>(rank_)], op)) {
    RETURN_IF_ERROR(Complete(d));
  }
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
    if (op.layer >= 0 && !weights_.has_layer(op.layer)) {
      return InternalError("layer {} is not on this rank's stage", op.layer);
    }
    // Issued now; as long as the backend's own clock says.
    rec.record.start_ns = NowNs();
    RETURN_IF_ERROR(timer_->Start());
    RETURN_IF_ERROR(RunCompute(op, mb));
    RETURN_IF_ERROR(timer_->Stop());
    ASSIGN_OR_RETURN(const int64_t elapsed, timer_->ElapsedNs());
    rec.record.end_ns = rec.record.start_ns + elapsed;
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

Status PhaseRunner::Act(TensorRef* t, std::vector<int64_t> shape) {
  if (!t->empty() && t->row_stride == 0 && t->shape == shape) return Status::Ok();
  ASSIGN_OR_RETURN(*t, backend_.NewTensor(dtype_, std::move(shape)));
  return Status::Ok();
}

Status PhaseRunner::Linear(const TensorRef& x, const TensorRef& w, int64_t col, int64_t n,
                           const TensorRef& bias, const TensorRef& y) {
  const bool all = col == 0 && n == w.dim(1);
  RETURN_IF_ERROR(backend_.Gemm(x, all ? w : View(w, 0, w.dim(0), col, n), y));
  if (bias.empty()) return Status::Ok();
  return backend_.AddBias(all ? bias : Flat(bias, col, {n}), y);
}

Status PhaseRunner::Linear(const TensorRef& x, const TensorRef& w, const TensorRef& bias,
                           TensorRef* y) {
  RETURN_IF_ERROR(Act(y, {x.dim(0), w.dim(1)}));
  return Linear(x, w, 0, w.dim(1), bias, *y);
}

Status PhaseRunner::Norm(const TensorRef& x, const TensorRef& w, TensorRef* y) {
  RETURN_IF_ERROR(Act(y, x.shape));
  return backend_.RmsNorm(x, w, static_cast<float>(model_.norm_eps), *y);
}

Status PhaseRunner::Activation(const TensorRef& up, const TensorRef& act) {
  if (model_.activation == Activation::kSwiGlu) return backend_.SwiGlu(up, act);
  return backend_.Gelu(up, act);
}

Status PhaseRunner::Activation(const TensorRef& up, TensorRef* act) {
  const bool glu = model_.activation == Activation::kSwiGlu;
  RETURN_IF_ERROR(Act(act, {up.dim(0), glu ? up.dim(1) / 2 : up.dim(1)}));
  return Activation(up, *act);
}

Status PhaseRunner::Embed(MicroBatch& mb) {
  for (int32_t id : mb.ids) {
    if (id < 0) return InternalError("no input token for a request (missing prefill?)");
  }
  return backend_.Embedding(mb.ids, weights_.embedding(), weights_.vocab().begin, mb.x);
}

Status PhaseRunner::QProj(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  if (!mla_) {  // GQA with replicated KV heads: the q columns alone
    const int64_t T = mb.tokens;
    RETURN_IF_ERROR(Act(&mb.qkv, {T, lw.qkv.dim(1)}));
    return Linear(mb.hn, lw.qkv, 0, hq_ * head_dim_, lw.qkv_bias,
                  View(mb.qkv, 0, T, 0, hq_ * head_dim_));
  }
  return Linear(mb.hn, lw.q, TensorRef(), &mb.qkv);
}

Status PhaseRunner::KvProj(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  const int64_t at = hq_ * head_dim_, n = 2 * hkv_ * head_dim_;
  return Linear(mb.hn, lw.qkv, at, n, lw.qkv_bias, View(mb.qkv, 0, mb.tokens, at, n));
}

Status PhaseRunner::ExpertActivation(MicroBatch& mb) {
  const bool glu = model_.activation == Activation::kSwiGlu;
  const int64_t width = glu ? mb.expert_up.dim(1) / 2 : mb.expert_up.dim(1);
  RETURN_IF_ERROR(Act(&mb.act_buf, {mb.moe_rows, width}));
  mb.expert_act = Flat(mb.act_buf, 0, {mb.expert_up.dim(0), width});
  return Activation(mb.expert_up, mb.expert_act);
}

Status PhaseRunner::Unpermute(MicroBatch& mb) {
  const TensorRef& y = ep_ > 1 ? mb.combined : mb.expert_out;
  RETURN_IF_ERROR(Act(&mb.ffn_out, {mb.tokens, hidden_}));
  return backend_.Unpermute(y, mb.row_of, mb.router_w, model_.moe.experts_per_token, mb.shared_out,
                            mb.ffn_out);
}

Status PhaseRunner::LmHead(MicroBatch& mb) {
  RETURN_IF_ERROR(Act(&mb.logits, {mb.final_hn.dim(0), weights_.vocab().count}));
  return backend_.Gemm(mb.final_hn, weights_.lm_head(), mb.logits);
}

Status PhaseRunner::RunCompute(const Op& op, MicroBatch& mb) {
  const float eps = static_cast<float>(model_.norm_eps);
  switch (op.role) {
    case OpRole::kEmbedding:
      return Embed(mb);
    case OpRole::kInputNorm:
      return Norm(mb.x, LayerWeights(op).input_norm, &mb.hn);
    case OpRole::kPostAttentionNorm:
      return Norm(mb.x, LayerWeights(op).post_norm, &mb.hn);
    case OpRole::kQaNorm:
      return backend_.RmsNorm(mb.qa, LayerWeights(op).q_a_norm, eps, mb.qa);
    case OpRole::kKvANorm: {
      const TensorRef c_kv = View(mb.kv_a, 0, mb.tokens, 0, kv_lora_rank_);
      return backend_.RmsNorm(c_kv, LayerWeights(op).kv_a_norm, eps, c_kv);
    }
    case OpRole::kFinalNorm:
      return HeadNorm(mb);
    case OpRole::kQkvProj:
      return Linear(mb.hn, LayerWeights(op).qkv, LayerWeights(op).qkv_bias, &mb.qkv);
    case OpRole::kQProj:
      return QProj(op, mb);
    case OpRole::kQaProj:
      return Linear(mb.hn, LayerWeights(op).q_a, LayerWeights(op).q_a_bias, &mb.qa);
    case OpRole::kQbProj:
      return Linear(mb.qa, LayerWeights(op).q_b, TensorRef(), &mb.qkv);
    case OpRole::kKvProj:
      if (mla_) break;
      return KvProj(op, mb);
    case OpRole::kKvAProj:
      return Linear(mb.hn, LayerWeights(op).kv_a, LayerWeights(op).kv_a_bias, &mb.kv_a);
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
    case OpRole::kOutProj:
      return Linear(mb.attn, LayerWeights(op).o, LayerWeights(op).o_bias, &mb.proj);
    case OpRole::kResidualAttn:
      return backend_.Add(mb.proj, mb.x);
    case OpRole::kResidualFfn:
      return backend_.Add(mb.ffn_out, mb.x);
    case OpRole::kFfnUp:
      return Linear(mb.hn, LayerWeights(op).ffn.gate_up, LayerWeights(op).ffn.gate_up_bias, &mb.up);
    case OpRole::kFfnActivation:
      return Activation(mb.up, &mb.act);
    case OpRole::kSharedActivation:
      return Activation(mb.sh_up, &mb.sh_act);
    case OpRole::kExpertActivation:
      return ExpertActivation(mb);
    case OpRole::kFfnDown:
      return Linear(mb.act, LayerWeights(op).ffn.down, LayerWeights(op).ffn.down_bias, &mb.ffn_out);
    case OpRole::kRouter:
      return Router(op, mb);
    case OpRole::kPermute:
      return Permute(mb);
    case OpRole::kSharedGateUp:
      return Linear(mb.hn, LayerWeights(op).shared.gate_up, LayerWeights(op).shared.gate_up_bias,
                    &mb.sh_up);
    case OpRole::kSharedDown:
      return Linear(mb.sh_act, LayerWeights(op).shared.down, LayerWeights(op).shared.down_bias,
                    &mb.shared_out);
    case OpRole::kExpertGateUp:
      return ExpertGateUp(op, mb);
    case OpRole::kExpertDown:
      return ExpertDown(op, mb);
    case OpRole::kUnpermute:
      return Unpermute(mb);
    case OpRole::kLmHead:
      return LmHead(mb);
    case OpRole::kSample:
    case OpRole::kSampleLocal:
    case OpRole::kSampleSelect:
      return Sampling(op, mb);
    // The executor computes in its own dtype (kExecutorDType): a GEMM input's
    // quantisation is the simulator's cost only; its values stay as they are.
    case OpRole::kQuantAttn:
    case OpRole::kQuantQb:
    case OpRole::kQuantKvB:
    case OpRole::kQuantOut:
    case OpRole::kQuantFfn:
    case OpRole::kQuantDown:
    case OpRole::kQuantSharedDown:
    case OpRole::kQuantExpertDown:
      return Status::Ok();
    case OpRole::kNone:
    case OpRole::kMtpNorm:  // MTP is simulated only
    case OpRole::kQNorm:    // qk_norm is simulated only (Weights::Create refuses it)
    case OpRole::kKNorm:
    case OpRole::kMtpProj:
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
