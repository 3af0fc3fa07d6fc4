#include "runtime/device/backend_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "runtime/device/dtype_convert.h"

namespace shardscope::runtime {
namespace {

constexpr int64_t kPad = 3;  // extra columns of a strided case's tensors (the view skips one)

// A case made ready on one backend: its tensors (views) in op order, the
// tensors whose final values are the result, and its host arguments and results.
struct Prepared {
  std::vector<TensorRef> t;
  std::vector<TensorRef> results;
  std::vector<int64_t> q_pos, k_pos;
  std::vector<int32_t> ids;
  std::vector<int64_t> rows;
  std::vector<int32_t> idx_out;
  std::vector<int64_t> row_of_out, counts_out;
  std::vector<float> max_out;
};

// Builds a case's tensors on a backend from a seed: every value is drawn in
// the same order on every backend and rounded to the dtype, padding included.
class Builder {
 public:
  Builder(const OpCase& c, DType dtype, Backend& b, uint32_t seed, Prepared* p)
      : c_(c), dtype_(dtype), b_(b), rng_(seed), p_(p) {}

  // An input of `shape`, values center ± spread; a column window when the case is strided.
  Status In(std::vector<int64_t> shape, float center = 0.0f, float spread = 1.0f) {
    ASSIGN_OR_RETURN(TensorRef t, Make(std::move(shape), center, spread));
    p_->t.push_back(t);
    return Status::Ok();
  }
  // An output (its parent's final values are part of the result).
  Status Out(std::vector<int64_t> shape) {
    RETURN_IF_ERROR(In(std::move(shape)));
    p_->results.push_back(parent_);
    return Status::Ok();
  }
  // The last tensor is written in place: its final values are part of the result.
  void InPlace() { p_->results.push_back(parent_); }
  std::mt19937& rng() { return rng_; }

 private:
  StatusOr<TensorRef> Make(std::vector<int64_t> shape, float center, float spread) {
    const bool view = c_.strided && shape.size() == 2;
    std::vector<int64_t> full = shape;
    if (view) full[1] += kPad;
    ASSIGN_OR_RETURN(parent_, b_.NewTensor(dtype_, full));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(parent_.elements()));
    for (float& x : v) x = RoundTo(dtype_, center + spread * u(rng_));
    RETURN_IF_ERROR(b_.CopyFromHost(v.data(), parent_));
    return view ? View(parent_, 0, shape[0], 1, shape[1]) : parent_;
  }

  const OpCase& c_;
  const DType dtype_;
  Backend& b_;
  std::mt19937 rng_;
  Prepared* p_;
  TensorRef parent_;
};

int64_t Dv(const OpCase& c) { return c.head_dim_v > 0 ? c.head_dim_v : c.head_dim; }

// Tensors and host arguments of `c` on `b` (a fresh step of its arena).
Status Prepare(const OpCase& c, DType dtype, Backend& b, uint32_t seed, Prepared* p) {
  RETURN_IF_ERROR(b.ResetArena());
  *p = Prepared();
  Builder in(c, dtype, b, seed, p);
  const int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  switch (c.op) {
    case BackendOp::kGemm:
      RETURN_IF_ERROR(in.In({c.m, c.k}));
      RETURN_IF_ERROR(in.In(c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector{c.k, c.n}));
      return in.Out({c.m, c.n});
    case BackendOp::kAdd:
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      return in.InPlace(), Status::Ok();
    case BackendOp::kAddBias:
      RETURN_IF_ERROR(in.In({c.n}));
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      return in.InPlace(), Status::Ok();
    case BackendOp::kRmsNorm:
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      RETURN_IF_ERROR(in.In({c.n}, 1.0f, 0.1f));  // norm weights near 1
      return in.Out({c.m, c.n});
    case BackendOp::kRope: {
      const int64_t stride = c.head_stride > 0 ? c.head_stride : c.head_dim;
      RETURN_IF_ERROR(in.In({c.m, (c.heads - 1) * stride + c.head_dim}));
      for (int64_t t = 0; t < c.m; ++t) p->q_pos.push_back(3 + 5 * t);
      return in.InPlace(), Status::Ok();
    }
    case BackendOp::kSwiGlu:
      RETURN_IF_ERROR(in.In({c.m, 2 * c.n}));
      return in.Out({c.m, c.n});
    case BackendOp::kGelu:
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      return in.Out({c.m, c.n});
    case BackendOp::kAttention: {
      const int64_t tk = c.n > 0 ? c.n : c.m;
      RETURN_IF_ERROR(in.In({c.m, q}));
      RETURN_IF_ERROR(in.In({tk, kv}));
      RETURN_IF_ERROR(in.In({tk, c.kv_heads * Dv(c)}));
      RETURN_IF_ERROR(in.Out({c.m, c.heads * Dv(c)}));
      if (c.lse) RETURN_IF_ERROR(in.Out({c.m, c.heads}));
      if (c.n > 0) {  // the queries are the last of the keys' positions: each sees one at least
        for (int64_t j = 0; j < tk; ++j) p->k_pos.push_back(2 * j);
        for (int64_t i = 0; i < c.m; ++i) p->q_pos.push_back(2 * (tk - c.m + i) + (i % 2));
      }
      return Status::Ok();
    }
    case BackendOp::kDecodeAttention:
      RETURN_IF_ERROR(in.In({c.m, q}));
      for (int64_t r = 0; r < c.m; ++r) {
        const int64_t len = std::max<int64_t>(1, c.n - r);
        RETURN_IF_ERROR(in.In({len, kv}));
        RETURN_IF_ERROR(in.In({len, c.kv_heads * Dv(c)}));
      }
      RETURN_IF_ERROR(in.Out({c.m, c.heads * Dv(c)}));
      if (c.lse) RETURN_IF_ERROR(in.Out({c.m, c.heads}));
      return Status::Ok();
    case BackendOp::kAttentionMerge:
      for (int64_t part = 0; part < c.k; ++part) {
        RETURN_IF_ERROR(in.In({c.m, c.n}));
        RETURN_IF_ERROR(in.In({c.m}));
      }
      return in.Out({c.m, c.n});
    case BackendOp::kRouter:
      RETURN_IF_ERROR(in.In({c.m, c.experts}, 0.0f, 2.0f));
      if (c.router == RouterScore::kSigmoidBias) RETURN_IF_ERROR(in.In({c.experts}, 0.0f, 0.1f));
      RETURN_IF_ERROR(in.Out({c.m * c.top_k}));
      p->idx_out.assign(static_cast<size_t>(c.m * c.top_k), -1);
      return Status::Ok();
    case BackendOp::kPermute: {
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      RETURN_IF_ERROR(in.Out({c.m * c.top_k, c.n}));
      std::vector<int32_t> experts(static_cast<size_t>(c.experts));
      for (int64_t t = 0; t < c.m; ++t) {  // k distinct experts per token
        std::iota(experts.begin(), experts.end(), 0);
        std::shuffle(experts.begin(), experts.end(), in.rng());
        p->ids.insert(p->ids.end(), experts.begin(), experts.begin() + c.top_k);
      }
      p->row_of_out.assign(static_cast<size_t>(c.m * c.top_k), -1);
      p->counts_out.assign(static_cast<size_t>(c.experts), -1);
      return Status::Ok();
    }
    case BackendOp::kUnpermute:
      RETURN_IF_ERROR(in.In({c.m * c.top_k, c.n}));
      RETURN_IF_ERROR(in.In({c.m * c.top_k}));
      if (c.lse) RETURN_IF_ERROR(in.In({c.m, c.n}));
      RETURN_IF_ERROR(in.Out({c.m, c.n}));
      p->rows.resize(static_cast<size_t>(c.m * c.top_k));
      std::iota(p->rows.begin(), p->rows.end(), 0);
      std::shuffle(p->rows.begin(), p->rows.end(), in.rng());
      return Status::Ok();
    case BackendOp::kEmbedding: {
      RETURN_IF_ERROR(in.In({c.k, c.n}));
      RETURN_IF_ERROR(in.Out({c.m, c.n}));
      std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(c.k + 8));
      for (int64_t t = 0; t < c.m; ++t) p->ids.push_back(id(in.rng()));  // some not in the shard
      return Status::Ok();
    }
    case BackendOp::kArgMax:
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      p->idx_out.assign(static_cast<size_t>(c.m), -1);
      p->max_out.assign(static_cast<size_t>(c.m), 0.0f);
      return Status::Ok();
    case BackendOp::kCopy:
      RETURN_IF_ERROR(in.In({c.m, c.n}));
      return in.Out({c.m, c.n});
  }
  return InternalError("unknown backend op");
}

constexpr int64_t kVocabBegin = 5;  // embedding: the table's first vocabulary row

Status Invoke(const OpCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  switch (c.op) {
    case BackendOp::kGemm:
      return b.Gemm(t[0], t[1], t[2], c.trans_b);
    case BackendOp::kAdd:
      return b.Add(t[0], t[1]);
    case BackendOp::kAddBias:
      return b.AddBias(t[0], t[1]);
    case BackendOp::kRmsNorm:
      return b.RmsNorm(t[0], t[1], 1e-6f, t[2]);
    case BackendOp::kRope: {
      RopeOpArgs a;
      a.heads = c.heads, a.head_dim = c.head_dim, a.head_stride = c.head_stride;
      a.spec.style = c.rope_style;
      a.positions = p.q_pos;
      return b.Rope(a, t[0]);
    }
    case BackendOp::kSwiGlu:
      return b.SwiGlu(t[0], t[1]);
    case BackendOp::kGelu:
      return b.Gelu(t[0], t[1]);
    case BackendOp::kAttention: {
      AttentionOpArgs a;
      a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
      a.head_dim_v = c.head_dim_v;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      a.q_positions = p.q_pos, a.k_positions = p.k_pos;
      return b.Attention(a, t[0], t[1], t[2], t[3], c.lse ? t[4] : TensorRef());
    }
    case BackendOp::kDecodeAttention: {
      DecodeAttentionOpArgs a;
      a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
      a.head_dim_v = c.head_dim_v;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      std::vector<TensorRef> k, v;
      for (int64_t r = 0; r < c.m; ++r) {
        k.push_back(t[static_cast<size_t>(1 + 2 * r)]);
        v.push_back(t[static_cast<size_t>(2 + 2 * r)]);
      }
      const size_t o = static_cast<size_t>(1 + 2 * c.m);
      return b.DecodeAttention(a, t[0], k, v, t[o], c.lse ? t[o + 1] : TensorRef());
    }
    case BackendOp::kAttentionMerge: {
      std::vector<TensorRef> outs, lses;
      for (int64_t part = 0; part < c.k; ++part) {
        outs.push_back(t[static_cast<size_t>(2 * part)]);
        lses.push_back(t[static_cast<size_t>(2 * part + 1)]);
      }
      return b.AttentionMerge(outs, lses, t.back());
    }
    case BackendOp::kRouter: {
      RouterOpArgs a;
      a.kind = c.router, a.top_k = c.top_k, a.n_group = c.n_group, a.topk_group = c.topk_group;
      a.normalize = c.router == RouterScore::kSoftmax;
      a.scale = c.router == RouterScore::kSoftmax ? 1.0 : 2.5;
      const bool bias = c.router == RouterScore::kSigmoidBias;
      return b.Router(a, t[0], bias ? t[1] : TensorRef(), p.idx_out, t.back());
    }
    case BackendOp::kPermute:
      return b.Permute(t[0], p.ids, c.top_k, p.row_of_out, p.counts_out, t[1]);
    case BackendOp::kUnpermute:
      return b.Unpermute(t[0], p.rows, t[1], c.top_k, c.lse ? t[2] : TensorRef(), t.back());
    case BackendOp::kEmbedding:
      return b.Embedding(p.ids, t[0], kVocabBegin, t[1]);
    case BackendOp::kArgMax:
      return b.ArgMax(t[0], 11, p.max_out, p.idx_out);
    case BackendOp::kCopy:
      return b.Copy(t[0], t[1]);
  }
  return InternalError("unknown backend op");
}

// The result tensors (whole, padding included) and the host results, as floats.
StatusOr<std::vector<float>> Collect(Backend& b, const Prepared& p) {
  RETURN_IF_ERROR(b.Synchronize());
  std::vector<float> out;
  for (const TensorRef& r : p.results) {
    std::vector<float> v(static_cast<size_t>(r.elements()));
    RETURN_IF_ERROR(b.CopyToHost(r, v.data()));
    out.insert(out.end(), v.begin(), v.end());
  }
  for (int32_t x : p.idx_out) out.push_back(static_cast<float>(x));
  for (int64_t x : p.row_of_out) out.push_back(static_cast<float>(x));
  for (int64_t x : p.counts_out) out.push_back(static_cast<float>(x));
  out.insert(out.end(), p.max_out.begin(), p.max_out.end());
  return out;
}

}  // namespace

std::string OpCase::Name() const {
  const std::string view = strided ? " views" : "";
  switch (op) {
    case BackendOp::kGemm:
      return fmt::format("gemm m={} n={} k={}{}{}", m, n, k, trans_b ? " bᵀ" : "", view);
    case BackendOp::kRope:
      return fmt::format("rope t={} heads={} d={} stride={} {}{}", m, heads, head_dim, head_stride,
                         rope_style == RopeStyle::kHalfSplit ? "half-split" : "interleaved", view);
    case BackendOp::kAttention:
    case BackendOp::kDecodeAttention:
      return fmt::format("{} q={} k={} heads={}/{} d={}/{}{}{}", BackendOpName(op), m, n, heads,
                         kv_heads, head_dim, head_dim_v, lse ? " lse" : "", view);
    case BackendOp::kAttentionMerge:
      return fmt::format("attention_merge rows={} dv={} parts={}", m, n, k);
    case BackendOp::kRouter:
      return fmt::format("router t={} experts={} top{} groups={}/{} {}", m, experts, top_k,
                         topk_group, n_group,
                         router == RouterScore::kSoftmax ? "softmax" : "sigmoid+bias");
    case BackendOp::kPermute:
      return fmt::format("permute t={} h={} experts={} top{}", m, n, experts, top_k);
    case BackendOp::kUnpermute:
      return fmt::format("unpermute t={} h={} top{}{}", m, n, top_k, lse ? " shared" : "");
    case BackendOp::kEmbedding:
      return fmt::format("embedding t={} h={} rows={}", m, n, k);
    case BackendOp::kAdd:
    case BackendOp::kAddBias:
    case BackendOp::kRmsNorm:
    case BackendOp::kSwiGlu:
    case BackendOp::kGelu:
    case BackendOp::kArgMax:
    case BackendOp::kCopy:
      break;
  }
  return fmt::format("{} m={} n={}{}", BackendOpName(op), m, n, view);
}

std::vector<OpCase> DefaultOpCases() {
  using B = BackendOp;
  std::vector<OpCase> cases;
  auto add = [&](OpCase c) { cases.push_back(c); };
  add({.op = B::kGemm, .m = 7, .n = 33, .k = 64});
  add({.op = B::kGemm, .m = 1, .n = 130, .k = 17});
  add({.op = B::kGemm, .m = 5, .n = 9, .k = 12, .trans_b = true, .strided = true});
  add({.op = B::kGemm, .m = 1, .n = 6, .k = 10, .trans_b = true});
  add({.op = B::kGemm, .m = 0, .n = 6, .k = 10});
  add({.op = B::kAdd, .m = 5, .n = 41});
  add({.op = B::kAddBias, .m = 4, .n = 19, .strided = true});
  add({.op = B::kRmsNorm, .m = 6, .n = 96});
  add({.op = B::kRmsNorm, .m = 3, .n = 20, .strided = true});
  add({.op = B::kRope, .m = 5, .heads = 3, .head_dim = 16});
  add({.op = B::kRope, .m = 4, .heads = 2, .head_dim = 8, .rope_style = RopeStyle::kInterleaved});
  add({.op = B::kRope,  // MLA's query: the rope part of each head
       .m = 3,
       .heads = 3,
       .head_dim = 4,
       .head_stride = 10,
       .rope_style = RopeStyle::kInterleaved,
       .strided = true});
  add({.op = B::kSwiGlu, .m = 4, .n = 37});
  add({.op = B::kGelu, .m = 3, .n = 50});
  add({.op = B::kAttention, .m = 9, .n = 0, .heads = 4, .kv_heads = 2, .head_dim = 16});
  add({.op = B::kAttention, .m = 1, .n = 0, .heads = 2, .kv_heads = 2, .head_dim = 8});
  add({.op = B::kAttention,  // a ring block: other keys, positions, lse, views
       .m = 4,
       .n = 7,
       .heads = 4,
       .kv_heads = 1,
       .head_dim = 8,
       .strided = true,
       .lse = true});
  add({.op = B::kAttention,
       .m = 5,
       .n = 5,
       .heads = 2,
       .kv_heads = 2,
       .head_dim = 12,
       .head_dim_v = 6,
       .lse = true});
  add({.op = B::kDecodeAttention, .m = 3, .n = 9, .heads = 4, .kv_heads = 2, .head_dim = 8});
  add({.op = B::kDecodeAttention,  // MLA's absorbed form: one KV head, dv < dqk, lse
       .m = 2,
       .n = 6,
       .heads = 3,
       .kv_heads = 1,
       .head_dim = 10,
       .head_dim_v = 8,
       .strided = true,
       .lse = true});
  add({.op = B::kAttentionMerge, .m = 12, .n = 8, .k = 3});
  add({.op = B::kRouter, .m = 5, .experts = 8, .top_k = 2});
  add({.op = B::kRouter,
       .m = 4,
       .experts = 16,
       .top_k = 3,
       .n_group = 4,
       .topk_group = 2,
       .router = RouterScore::kSigmoidBias});
  add({.op = B::kPermute, .m = 6, .n = 10, .experts = 5, .top_k = 2});
  add({.op = B::kUnpermute, .m = 6, .n = 10, .top_k = 2});
  add({.op = B::kUnpermute, .m = 3, .n = 7, .lse = true, .top_k = 3});
  add({.op = B::kEmbedding, .m = 9, .n = 12, .k = 6});
  add({.op = B::kArgMax, .m = 4, .n = 29});
  add({.op = B::kCopy, .m = 5, .n = 13, .strided = true});
  return cases;
}

std::vector<OpCase> BenchOpCases() {
  // A 1B-class model's shapes: hidden 2048, 32 heads of 64 (8 KV heads), FFN 8192,
  // vocabulary shard 32000, 64 experts top-6.
  using B = BackendOp;
  std::vector<OpCase> cases;
  for (int64_t t : {1, 128}) {
    cases.push_back({.op = B::kGemm, .m = t, .n = 2048, .k = 2048});
    cases.push_back({.op = B::kAdd, .m = t, .n = 2048});
    cases.push_back({.op = B::kAddBias, .m = t, .n = 2048});
    cases.push_back({.op = B::kRmsNorm, .m = t, .n = 2048});
    cases.push_back({.op = B::kRope, .m = t, .heads = 32, .head_dim = 64});
    cases.push_back({.op = B::kSwiGlu, .m = t, .n = 8192});
    cases.push_back({.op = B::kGelu, .m = t, .n = 8192});
    cases.push_back({.op = B::kRouter, .m = t, .experts = 64, .top_k = 6});
    cases.push_back({.op = B::kPermute, .m = t, .n = 2048, .experts = 64, .top_k = 6});
    cases.push_back({.op = B::kUnpermute, .m = t, .n = 2048, .top_k = 6});
    cases.push_back({.op = B::kEmbedding, .m = t, .n = 2048, .k = 32000});
    cases.push_back({.op = B::kCopy, .m = t, .n = 2048});
  }
  cases.push_back(
      {.op = B::kAttention, .m = 128, .n = 0, .heads = 32, .kv_heads = 8, .head_dim = 64});
  cases.push_back(
      {.op = B::kDecodeAttention, .m = 8, .n = 512, .heads = 32, .kv_heads = 8, .head_dim = 64});
  cases.push_back({.op = B::kAttentionMerge, .m = 128 * 32, .n = 64, .k = 4});
  cases.push_back({.op = B::kArgMax, .m = 8, .n = 32000});
  return cases;
}

double Nmse(const std::vector<float>& out, const std::vector<float>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    err += d * d;
    mag += static_cast<double>(ref[i]) * ref[i];
  }
  if (std::isnan(err)) return INFINITY;
  if (mag == 0.0) return err == 0.0 ? 0.0 : INFINITY;
  return err / mag;
}

double NmseTolerance(DType dtype) {
  // A last-bit difference in every output element costs about ulp² / 3:
  // bf16 (8 bits) 5e-6, fp16 (11 bits) 8e-8; fp32 sums in another order.
  switch (dtype) {
    case DType::kBf16:
      return 1e-4;
    case DType::kFp16:
      return 1e-6;
    default:
      return 1e-9;
  }
}

StatusOr<std::vector<float>> RunOp(const OpCase& c, DType dtype, Backend& b, uint32_t seed) {
  if (!b.Supports(c.op, dtype)) {
    return Unimplemented("not implemented: {} on {} tensors in backend '{}'", BackendOpName(c.op),
                         DTypeName(dtype), b.name());
  }
  Prepared p;
  RETURN_IF_ERROR(Prepare(c, dtype, b, seed, &p));
  RETURN_IF_ERROR(Invoke(c, b, p));
  return Collect(b, p);
}

StatusOr<double> CompareOp(const OpCase& c, DType dtype, Backend& backend, Backend& reference,
                           uint32_t seed) {
  ASSIGN_OR_RETURN(std::vector<float> out, RunOp(c, dtype, backend, seed));
  ASSIGN_OR_RETURN(std::vector<float> ref, RunOp(c, dtype, reference, seed));
  return Nmse(out, ref);
}

StatusOr<int64_t> TimeOp(const OpCase& c, DType dtype, Backend& b, int reps) {
  Prepared p;
  RETURN_IF_ERROR(Prepare(c, dtype, b, 1, &p));
  RETURN_IF_ERROR(Invoke(c, b, p));  // warm-up
  std::unique_ptr<OpTimer> timer = b.NewTimer();
  std::vector<int64_t> ns;
  for (int r = 0; r < reps; ++r) {
    RETURN_IF_ERROR(timer->Start());
    RETURN_IF_ERROR(Invoke(c, b, p));
    RETURN_IF_ERROR(timer->Stop());
    ASSIGN_OR_RETURN(int64_t t, timer->ElapsedNs());
    ns.push_back(t);
  }
  if (ns.empty()) return int64_t{0};
  std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
  return ns[ns.size() / 2];
}

}  // namespace shardscope::runtime
