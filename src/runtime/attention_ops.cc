// Attention ops: rope, the KV cache, MLA up-projections, prefill, ring (SP)
// and decode attention and their log-sum-exp merge.
#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::RunRope(const Op& op, MicroBatch& mb) {
  const int64_t T = mb.tokens;
  RopeOpArgs a;
  a.positions = mb.pos;
  a.spec = rope_spec_;
  if (!mla_) {
    a.head_dim = head_dim_;
    if (op.role != OpRole::kRopeK) {
      a.heads = hq_;
      RETURN_IF_ERROR(backend_.Rope(a, View(mb.qkv, 0, T, 0, hq_ * head_dim_)));
    }
    if (op.role != OpRole::kRopeQ) {
      a.heads = hkv_;
      RETURN_IF_ERROR(backend_.Rope(a, View(mb.qkv, 0, T, hq_ * head_dim_, hkv_ * head_dim_)));
    }
    return Status::Ok();
  }
  a.head_dim = rope_;
  if (op.role == OpRole::kRopeQ) {  // the rope part of each query head
    a.heads = hq_, a.head_stride = qk_;
    return backend_.Rope(a, View(mb.qkv, 0, T, nope_, (hq_ - 1) * qk_ + rope_));
  }
  if (op.role == OpRole::kRopeK) {  // the shared k_rope of the latent rows
    a.heads = 1;
    return backend_.Rope(a, View(mb.kv_a, 0, T, kv_lora_rank_, rope_));
  }
  return Unimplemented("not implemented: MLA rope '{}'", op.label());
}

TensorRef PhaseRunner::NewKv(const MicroBatch& mb) const {
  if (mla_) return mb.kv_a;
  return View(mb.qkv, 0, mb.tokens, hq_ * head_dim_, 2 * hkv_ * head_dim_);
}

Status PhaseRunner::KvAppend(const Op& op, MicroBatch& mb) {
  TensorRef block = NewKv(mb);
  if (prefill_ && sp_ > 1) {
    // The block travels the ring: its own memory, fresh each layer, since a ring
    // send may still read the previous layer's block until the phase ends.
    ASSIGN_OR_RETURN(TensorRef own, backend_.NewTensor(dtype_, {block.dim(0), block.dim(1)}));
    RETURN_IF_ERROR(backend_.Copy(block, own));
    block = own;
    mb.blocks.clear();
    mb.partial_count = 0;
    mb.blocks.push_back(own);
  }
  const int64_t width = mla_ ? latent_ : hkv_ * head_dim_;
  // Rows a cache can take: this rank's prompt rows and every generated token.
  const int64_t capacity =
      (prefill_ ? mb.local : seq_) + experiment_.workload.tokens_to_generate - 1;
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    KvCache& c = st_.cache[{op.layer, mb.requests[r]}];
    if (c.k.empty()) {
      ASSIGN_OR_RETURN(c.k, backend_.NewTensor(*st_.arena, dtype_, {capacity, width}));
      if (!mla_) {
        ASSIGN_OR_RETURN(c.v, backend_.NewTensor(*st_.arena, dtype_, {capacity, width}));
      }
    }
    if (c.rows() + mb.local > c.k.dim(0)) {
      return InternalError("the KV cache of request {} is full ({} rows)", mb.requests[r],
                           c.k.dim(0));
    }
    const int64_t row = static_cast<int64_t>(r) * mb.local;
    RETURN_IF_ERROR(
        backend_.Copy(View(block, row, mb.local, 0, width), RowsOf(c.k, c.rows(), mb.local)));
    if (!mla_) {
      RETURN_IF_ERROR(
          backend_.Copy(View(block, row, mb.local, width, width), RowsOf(c.v, c.rows(), mb.local)));
    }
    c.pos.insert(c.pos.end(), mb.pos.begin() + row, mb.pos.begin() + row + mb.local);
  }
  return Status::Ok();
}

Status PhaseRunner::ExpandMla(const TensorRef& latent, const TensorRef& kvb, MicroBatch& mb) {
  const int64_t n = latent.dim(0), per = nope_ + vd_;
  RETURN_IF_ERROR(Act(&mb.k_exp, {n, hq_ * qk_}));
  RETURN_IF_ERROR(Act(&mb.v_exp, {n, hq_ * vd_}));
  for (int64_t h = 0; h < hq_; ++h) {
    RETURN_IF_ERROR(
        backend_.Copy(View(kvb, 0, n, h * per, nope_), View(mb.k_exp, 0, n, h * qk_, nope_)));
    RETURN_IF_ERROR(backend_.Copy(View(latent, 0, n, kv_lora_rank_, rope_),
                                  View(mb.k_exp, 0, n, h * qk_ + nope_, rope_)));
    RETURN_IF_ERROR(
        backend_.Copy(View(kvb, 0, n, h * per + nope_, vd_), View(mb.v_exp, 0, n, h * vd_, vd_)));
  }
  return Status::Ok();
}

Status PhaseRunner::KvUpProj(const Op& op, MicroBatch& mb) {
  const BackendLayerWeights& lw = LayerWeights(op);
  const int64_t per = nope_ + vd_;
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  if (op.role == OpRole::kKvUpProj) {
    const size_t j = static_cast<size_t>(op.sp_step);
    if (op.sp_step >= 0 && j >= mb.blocks.size()) {
      return InternalError("ring block {} has not arrived", j);
    }
    const TensorRef& src = op.sp_step >= 0 ? mb.blocks[j] : mb.kv_a;
    TensorRef* out = &mb.kvb;
    if (op.sp_step >= 0) {
      if (mb.block_kvb.size() <= j) mb.block_kvb.resize(j + 1);
      out = &mb.block_kvb[j];
    }
    RETURN_IF_ERROR(Act(out, {src.dim(0), hq_ * per}));
    return Linear(View(src, 0, src.dim(0), 0, kv_lora_rank_), lw.kv_b, 0, hq_ * per, TensorRef(),
                  *out);
  }
  if (op.role == OpRole::kAbsorbUk) {  // absorb W_UK into the query; keep q_rope beside it
    RETURN_IF_ERROR(Act(&mb.q_lat, {R, hq_ * latent_}));
    for (int64_t h = 0; h < hq_; ++h) {
      RETURN_IF_ERROR(backend_.Gemm(
          View(mb.qkv, 0, R, h * qk_, nope_), View(lw.kv_b, 0, kv_lora_rank_, h * per, nope_),
          View(mb.q_lat, 0, R, h * latent_, kv_lora_rank_), /*trans_b=*/true));
      RETURN_IF_ERROR(backend_.Copy(View(mb.qkv, 0, R, h * qk_ + nope_, rope_),
                                    View(mb.q_lat, 0, R, h * latent_ + kv_lora_rank_, rope_)));
    }
    return Status::Ok();
  }
  // OpRole::kAbsorbUv.
  RETURN_IF_ERROR(Act(&mb.attn, {R, hq_ * vd_}));
  for (int64_t h = 0; h < hq_; ++h) {
    RETURN_IF_ERROR(backend_.Gemm(View(mb.o_lat, 0, R, h * kv_lora_rank_, kv_lora_rank_),
                                  View(lw.kv_b, 0, kv_lora_rank_, h * per + nope_, vd_),
                                  View(mb.attn, 0, R, h * vd_, vd_)));
  }
  return Status::Ok();
}

Status PhaseRunner::AttendPerRequest(const MicroBatch& mb, const TensorRef& k, const TensorRef& v,
                                     int64_t kv_heads, const std::vector<int64_t>& kpos,
                                     int64_t keys_per_request, const TensorRef& out,
                                     const TensorRef& lse) {
  AttentionOpArgs a;
  a.heads = hq_, a.kv_heads = kv_heads, a.head_dim = qk_, a.head_dim_v = vd_;
  a.scale = scale_;
  a.k_positions = kpos;
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    const int64_t q0 = static_cast<int64_t>(r) * mb.local;
    const int64_t k0 = static_cast<int64_t>(r) * keys_per_request;
    a.q_positions.assign(mb.pos.begin() + q0, mb.pos.begin() + q0 + mb.local);
    RETURN_IF_ERROR(backend_.Attention(a, View(mb.qkv, q0, mb.local, 0, hq_ * qk_),
                                       RowsOf(k, k0, keys_per_request),
                                       RowsOf(v, k0, keys_per_request), RowsOf(out, q0, mb.local),
                                       lse.empty() ? TensorRef() : RowsOf(lse, q0, mb.local)));
  }
  return Status::Ok();
}

Status PhaseRunner::PrefillAttention(MicroBatch& mb) {
  RETURN_IF_ERROR(Act(&mb.attn, {mb.tokens, hq_ * vd_}));
  const std::vector<int64_t> kpos(mb.pos.begin(), mb.pos.begin() + mb.local);
  if (mla_) {
    RETURN_IF_ERROR(ExpandMla(mb.kv_a, mb.kvb, mb));
    return AttendPerRequest(mb, mb.k_exp, mb.v_exp, hq_, kpos, mb.local, mb.attn, TensorRef());
  }
  const int64_t T = mb.tokens;
  return AttendPerRequest(mb, View(mb.qkv, 0, T, hq_ * head_dim_, hkv_ * head_dim_),
                          View(mb.qkv, 0, T, (hq_ + hkv_) * head_dim_, hkv_ * head_dim_), hkv_,
                          kpos, mb.local, mb.attn, TensorRef());
}

Status PhaseRunner::RingStep(const Op& op, MicroBatch& mb) {
  const size_t j = static_cast<size_t>(op.sp_step);
  if (j >= mb.blocks.size()) return InternalError("ring block {} has not arrived", j);
  const int64_t src = (c_sp_ - static_cast<int64_t>(j) + sp_) % sp_;
  std::vector<int64_t> kpos;
  for (int64_t p = 0; p < seq_; ++p) {
    if (layout_->OwnerOf(p) == src) kpos.push_back(p);
  }
  // Partials in the order the steps run (the merge sums them in that order).
  const size_t at = static_cast<size_t>(2 * mb.partial_count++);
  if (mb.partials.size() < at + 2) mb.partials.resize(at + 2);
  TensorRef& out = mb.partials[at];
  TensorRef& lse = mb.partials[at + 1];
  RETURN_IF_ERROR(Act(&out, {mb.tokens, hq_ * vd_}));
  RETURN_IF_ERROR(Act(&lse, {mb.tokens, hq_}));
  const TensorRef& block = mb.blocks[j];
  const int64_t n = static_cast<int64_t>(kpos.size());
  if (mla_) {
    if (j >= mb.block_kvb.size()) return InternalError("ring block {} not up-projected", j);
    RETURN_IF_ERROR(ExpandMla(block, mb.block_kvb[j], mb));
    return AttendPerRequest(mb, mb.k_exp, mb.v_exp, hq_, kpos, n, out, lse);
  }
  const int64_t rows = block.dim(0);
  return AttendPerRequest(mb, View(block, 0, rows, 0, hkv_ * head_dim_),
                          View(block, 0, rows, hkv_ * head_dim_, hkv_ * head_dim_), hkv_, kpos, n,
                          out, lse);
}

Status PhaseRunner::DecodeAttention(const Op& op, MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  DecodeAttentionOpArgs a;
  a.heads = hq_, a.scale = scale_;
  TensorRef q;
  if (mla_) {
    q = mb.q_lat;
    a.kv_heads = 1, a.head_dim = latent_, a.head_dim_v = kv_lora_rank_;
  } else {
    q = View(mb.qkv, 0, R, 0, hq_ * head_dim_);
    a.kv_heads = hkv_, a.head_dim = a.head_dim_v = head_dim_;
  }
  std::vector<TensorRef> k, v;
  for (int64_t req : mb.requests) {
    const KvCache& c = st_.cache[{op.layer, req}];
    if (c.k.empty()) return InternalError("no KV cache for request {} (missing prefill?)", req);
    const int64_t width = c.k.dim(1);
    k.push_back(View(c.k, 0, c.rows(), 0, width));
    v.push_back(mla_ ? View(c.k, 0, c.rows(), 0, kv_lora_rank_) : View(c.v, 0, c.rows(), 0, width));
  }
  const int64_t dv = a.head_dim_v;
  TensorRef& out = mla_ ? mb.o_lat : mb.attn;
  if (sp_ == 1) {
    RETURN_IF_ERROR(Act(&out, {R, hq_ * dv}));
    return backend_.DecodeAttention(a, q, k, v, out, TensorRef());
  }
  // Partial over this rank's shard of the cache: [R·hq·dv outputs | R·hq lse].
  RETURN_IF_ERROR(Act(&mb.packed, {R * hq_ * (dv + 1)}));
  return backend_.DecodeAttention(a, q, k, v, Flat(mb.packed, 0, {R, hq_ * dv}),
                                  Flat(mb.packed, R * hq_ * dv, {R, hq_}));
}

Status PhaseRunner::Merge(MicroBatch& mb) {
  std::vector<TensorRef> outs, lses;
  if (prefill_) {
    const int64_t rows = mb.tokens * hq_;
    for (int64_t i = 0; i < mb.partial_count; ++i) {
      outs.push_back(Flat(mb.partials[static_cast<size_t>(2 * i)], 0, {rows, vd_}));
      lses.push_back(Flat(mb.partials[static_cast<size_t>(2 * i + 1)], 0, {rows}));
    }
    mb.partial_count = 0;
    RETURN_IF_ERROR(Act(&mb.attn, {mb.tokens, hq_ * vd_}));
    return backend_.AttentionMerge(outs, lses, Flat(mb.attn, 0, {rows, vd_}));
  }
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  const int64_t dv = mla_ ? kv_lora_rank_ : vd_;
  const int64_t part = R * hq_ * (dv + 1);
  for (int64_t s = 0; s < sp_; ++s) {
    outs.push_back(Flat(mb.gathered, s * part, {R * hq_, dv}));
    lses.push_back(Flat(mb.gathered, s * part + R * hq_ * dv, {R * hq_}));
  }
  TensorRef& out = mla_ ? mb.o_lat : mb.attn;
  RETURN_IF_ERROR(Act(&out, {R, hq_ * dv}));
  return backend_.AttentionMerge(outs, lses, Flat(out, 0, {R * hq_, dv}));
}

}  // namespace shardscope::runtime
