// Attention ops: rope, the KV cache, MLA up-projections, prefill, ring (SP)
// and decode attention and their log-sum-exp merge.
#include "runtime/phase_runner.h"

namespace shardscope::runtime {

Status PhaseRunner::RunRope(const Op& op, MicroBatch& mb) {
  const int64_t T = mb.tokens;
  const int64_t* pos = mb.pos.data();
  if (!mla_) {
    const int64_t stride = mb.qkv.dim(1);
    if (op.role != OpRole::kRopeK) {
      k_.Rope(mb.qkv.data(), T, stride, hq_, d_, d_, pos, rope_spec_);
    }
    if (op.role != OpRole::kRopeQ) {
      k_.Rope(mb.qkv.data() + hq_ * d_, T, stride, hkv_, d_, d_, pos, rope_spec_);
    }
    return Status::Ok();
  }
  if (op.role == OpRole::kRopeQ) {
    k_.Rope(mb.qkv.data() + nope_, T, hq_ * qk_, hq_, qk_, rope_, pos, rope_spec_);
    return Status::Ok();
  }
  if (op.role == OpRole::kRopeK) {
    k_.Rope(mb.kv_a.data() + r_, T, latent_, 1, rope_, rope_, pos, rope_spec_);
    return Status::Ok();
  }
  return Unimplemented("not implemented: MLA rope '{}'", op.label());
}

Tensor PhaseRunner::OwnBlock(const MicroBatch& mb) {
  if (mla_) return mb.kv_a.Clone();
  Tensor b({mb.tokens, 2 * hkv_ * d_});
  k_.CopyRows(mb.qkv.data() + hq_ * d_, mb.qkv.dim(1), b.data(), 2 * hkv_ * d_, mb.tokens,
              2 * hkv_ * d_);
  return b;
}

Status PhaseRunner::KvAppend(const Op& op, MicroBatch& mb) {
  Tensor block = OwnBlock(mb);
  const int64_t width = mla_ ? latent_ : hkv_ * d_;
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    KvCache& c = st_.cache[{op.layer, mb.requests[r]}];
    for (int64_t t = 0; t < mb.local; ++t) {
      const int64_t row = static_cast<int64_t>(r) * mb.local + t;
      const float* src = block.data() + row * block.dim(1);
      c.k.insert(c.k.end(), src, src + width);
      if (!mla_) c.v.insert(c.v.end(), src + width, src + 2 * width);
      c.pos.push_back(mb.pos[static_cast<size_t>(row)]);
    }
  }
  if (prefill_ && sp_ > 1) {
    // A ring send may still read the previous layer's blocks: keep them to the phase end.
    for (Tensor& b : mb.blocks) mb.retired.push_back(std::move(b));
    mb.blocks.clear();
    mb.partials.clear();
    mb.block_kvb.clear();
    mb.blocks.push_back(std::move(block));
  }
  return Status::Ok();
}

void PhaseRunner::ExpandMla(const Tensor& latent, const Tensor& kvb, Tensor* k, Tensor* v) {
  const int64_t n = latent.dim(0), per = nope_ + vd_;
  *k = Tensor({n, hq_ * qk_});
  *v = Tensor({n, hq_ * vd_});
  for (int64_t h = 0; h < hq_; ++h) {
    k_.CopyRows(kvb.data() + h * per, hq_ * per, k->data() + h * qk_, hq_ * qk_, n, nope_);
    k_.CopyRows(latent.data() + r_, latent_, k->data() + h * qk_ + nope_, hq_ * qk_, n, rope_);
    k_.CopyRows(kvb.data() + h * per + nope_, hq_ * per, v->data() + h * vd_, hq_ * vd_, n, vd_);
  }
}

Status PhaseRunner::KvUpProj(const Op& op, MicroBatch& mb) {
  const LayerWeights& lw = L(op);
  const int64_t per = nope_ + vd_;
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  if (op.role == OpRole::kKvUpProj) {
    const Tensor& src = op.sp_step >= 0 ? mb.blocks[static_cast<size_t>(op.sp_step)] : mb.kv_a;
    Tensor out({src.dim(0), hq_ * per});
    Linear(src.data(), latent_, src.dim(0), r_, lw.kv_b, 0, hq_ * per, Tensor(), out.data(),
           hq_ * per);
    if (op.sp_step >= 0) {
      mb.block_kvb.resize(static_cast<size_t>(op.sp_step) + 1);
      mb.block_kvb[static_cast<size_t>(op.sp_step)] = std::move(out);
    } else {
      mb.kvb = std::move(out);
    }
    return Status::Ok();
  }
  if (op.role == OpRole::kAbsorbUk) {  // absorb W_UK into the query; keep q_rope beside it
    mb.q_lat = Tensor({R, hq_ * latent_});
    for (int64_t h = 0; h < hq_; ++h) {
      k_.Gemm(R, r_, nope_, mb.qkv.data() + h * qk_, hq_ * qk_, lw.kv_b.data() + h * per, hq_ * per,
              true, mb.q_lat.data() + h * latent_, hq_ * latent_, 0.0f);
      k_.CopyRows(mb.qkv.data() + h * qk_ + nope_, hq_ * qk_, mb.q_lat.data() + h * latent_ + r_,
                  hq_ * latent_, R, rope_);
    }
    return Status::Ok();
  }
  // OpRole::kAbsorbUv.
  {
    mb.attn = Tensor({R, hq_ * vd_});
    for (int64_t h = 0; h < hq_; ++h) {
      k_.Gemm(R, vd_, r_, mb.o_lat.data() + h * r_, hq_ * r_, lw.kv_b.data() + h * per + nope_,
              hq_ * per, false, mb.attn.data() + h * vd_, hq_ * vd_, 0.0f);
    }
    return Status::Ok();
  }
}

void PhaseRunner::AttendPerRequest(const MicroBatch& mb, const float* k, int64_t k_stride,
                                   const float* v, int64_t v_stride, int64_t kv_heads,
                                   const std::vector<int64_t>& kpos, int64_t keys_per_request,
                                   Tensor* out, Tensor* lse) {
  const float* q = mb.qkv.data();
  const int64_t q_stride = mb.qkv.dim(1);
  for (size_t r = 0; r < mb.requests.size(); ++r) {
    const int64_t q0 = static_cast<int64_t>(r) * mb.local;
    const int64_t k0 = static_cast<int64_t>(r) * keys_per_request;
    AttentionArgs a;
    a.q = q + q0 * q_stride, a.q_stride = q_stride;
    a.k = k + k0 * k_stride, a.k_stride = k_stride;
    a.v = v + k0 * v_stride, a.v_stride = v_stride;
    a.tq = mb.local, a.tk = keys_per_request, a.hq = hq_, a.hkv = kv_heads;
    a.dqk = qk_, a.dv = vd_, a.qpos = mb.pos.data() + q0, a.kpos = kpos.data();
    a.scale = scale_;
    a.out = out->data() + q0 * hq_ * vd_, a.out_stride = hq_ * vd_;
    a.lse = lse ? lse->data() + q0 * hq_ : nullptr;
    k_.Attention(a);
  }
}

Status PhaseRunner::PrefillAttention(MicroBatch& mb) {
  mb.attn = Tensor({mb.tokens, hq_ * vd_});
  const std::vector<int64_t> kpos(mb.pos.begin(), mb.pos.begin() + mb.local);
  if (mla_) {
    Tensor k, v;
    ExpandMla(mb.kv_a, mb.kvb, &k, &v);
    AttendPerRequest(mb, k.data(), hq_ * qk_, v.data(), hq_ * vd_, hq_, kpos, mb.local, &mb.attn,
                     nullptr);
  } else {
    const int64_t stride = mb.qkv.dim(1);
    AttendPerRequest(mb, mb.qkv.data() + hq_ * d_, stride, mb.qkv.data() + (hq_ + hkv_) * d_,
                     stride, hkv_, kpos, mb.local, &mb.attn, nullptr);
  }
  return Status::Ok();
}

Status PhaseRunner::RingStep(const Op& op, MicroBatch& mb) {
  const size_t j = static_cast<size_t>(op.sp_step);
  if (j >= mb.blocks.size()) return InternalError("ring block {} has not arrived", j);
  const int64_t src = (c_sp_ - static_cast<int64_t>(j) + sp_) % sp_;
  std::vector<int64_t> kpos;
  for (int64_t p = 0; p < seq_; ++p) {
    if (layout_->OwnerOf(p) == src) kpos.push_back(p);
  }
  Tensor out({mb.tokens, hq_ * vd_}), lse({mb.tokens, hq_});
  const Tensor& block = mb.blocks[j];
  const int64_t n = static_cast<int64_t>(kpos.size());
  if (mla_) {
    if (j >= mb.block_kvb.size()) return InternalError("ring block {} not up-projected", j);
    Tensor k, v;
    ExpandMla(block, mb.block_kvb[j], &k, &v);
    AttendPerRequest(mb, k.data(), hq_ * qk_, v.data(), hq_ * vd_, hq_, kpos, n, &out, &lse);
  } else {
    const int64_t stride = 2 * hkv_ * d_;
    AttendPerRequest(mb, block.data(), stride, block.data() + hkv_ * d_, stride, hkv_, kpos, n,
                     &out, &lse);
  }
  mb.partials.push_back(std::move(out));
  mb.partials.push_back(std::move(lse));
  return Status::Ok();
}

Status PhaseRunner::DecodeAttention(const Op& op, MicroBatch& mb) {
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  DecodeAttentionArgs a;
  a.hq = hq_, a.scale = scale_;
  if (mla_) {
    a.q = mb.q_lat.data(), a.q_stride = hq_ * latent_;
    a.k_stride = a.v_stride = latent_, a.hkv = 1, a.dqk = latent_, a.dv = r_;
  } else {
    a.q = mb.qkv.data(), a.q_stride = mb.qkv.dim(1);
    a.k_stride = a.v_stride = hkv_ * d_, a.hkv = hkv_, a.dqk = a.dv = d_;
  }
  for (int64_t req : mb.requests) {
    KvCache& c = st_.cache[{op.layer, req}];
    a.k.push_back(c.k.data());
    a.v.push_back(mla_ ? c.k.data() : c.v.data());
    a.len.push_back(static_cast<int64_t>(c.pos.size()));
  }
  Tensor& out = mla_ ? mb.o_lat : mb.attn;
  if (sp_ == 1) {
    out = Tensor({R, hq_ * a.dv});
    a.out = out.data(), a.out_stride = hq_ * a.dv;
    k_.DecodeAttention(a);
    return Status::Ok();
  }
  // Partial over this rank's shard of the cache: [R·hq·dv outputs | R·hq lse].
  mb.packed = Tensor({R * hq_ * (a.dv + 1)});
  a.out = mb.packed.data(), a.out_stride = hq_ * a.dv, a.lse = mb.packed.data() + R * hq_ * a.dv;
  k_.DecodeAttention(a);
  return Status::Ok();
}

Status PhaseRunner::Merge(MicroBatch& mb) {
  std::vector<const float*> outs, lses;
  if (prefill_) {
    for (size_t i = 0; i + 1 < mb.partials.size(); i += 2) {
      outs.push_back(mb.partials[i].data());
      lses.push_back(mb.partials[i + 1].data());
    }
    mb.attn = Tensor({mb.tokens, hq_ * vd_});
    k_.AttentionMerge(outs, lses, mb.tokens * hq_, vd_, mb.attn.data(), nullptr);
    mb.partials.clear();
    return Status::Ok();
  }
  const int64_t R = static_cast<int64_t>(mb.requests.size());
  const int64_t dv = mla_ ? r_ : vd_;
  const int64_t part = R * hq_ * (dv + 1);
  for (int64_t s = 0; s < sp_; ++s) {
    outs.push_back(mb.gathered.data() + s * part);
    lses.push_back(mb.gathered.data() + s * part + R * hq_ * dv);
  }
  Tensor& out = mla_ ? mb.o_lat : mb.attn;
  out = Tensor({R, hq_ * dv});
  k_.AttentionMerge(outs, lses, R * hq_, dv, out.data(), nullptr);
  return Status::Ok();
}

}  // namespace shardscope::runtime
