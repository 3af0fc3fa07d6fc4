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
  Builder(bool strided, DType dtype, Backend& b, uint32_t seed, Prepared* p)
      : strided_(strided), dtype_(dtype), b_(b), rng_(seed), p_(p) {}

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
  Status InPlace() {
    p_->results.push_back(parent_);
    return Status::Ok();
  }
  std::mt19937& rng() { return rng_; }
  Prepared& prepared() { return *p_; }

 private:
  StatusOr<TensorRef> Make(std::vector<int64_t> shape, float center, float spread) {
    const bool view = strided_ && shape.size() == 2;
    std::vector<int64_t> full = shape;
    if (view) full[1] += kPad;
    ASSIGN_OR_RETURN(parent_, b_.NewTensor(dtype_, full));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(parent_.elements()));
    for (float& x : v) x = RoundTo(dtype_, center + spread * u(rng_));
    RETURN_IF_ERROR(b_.CopyFromHost(v.data(), parent_));
    return view ? View(parent_, 0, shape[0], 1, shape[1]) : parent_;
  }

  const bool strided_;
  const DType dtype_;
  Backend& b_;
  std::mt19937 rng_;
  Prepared* p_;
  TensorRef parent_;
};

template <typename Case>
bool IsStrided(const Case& c) {
  if constexpr (requires { c.strided; }) {
    return c.strided;
  } else {
    return false;
  }
}

template <typename Case>
int64_t ValueDim(const Case& c) {
  return c.head_dim_v > 0 ? c.head_dim_v : c.head_dim;
}

constexpr int64_t kVocabBegin = 5;  // embedding: the table's first vocabulary row

// Per op family: Prepare builds the case's tensors (in op order) and host
// arguments; Invoke runs the op on them.

Status Prepare(const GemmCase& c, Builder& in) {
  RETURN_IF_ERROR(in.In({c.m, c.k}));
  RETURN_IF_ERROR(in.In(c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector{c.k, c.n}));
  return in.Out({c.m, c.n});
}
Status Invoke(const GemmCase& c, Backend& b, Prepared& p) {
  return b.Gemm(p.t[0], p.t[1], p.t[2], c.trans_b);
}

Status Prepare(const RowwiseCase& c, Builder& in) {
  Prepared& p = in.prepared();
  switch (c.kind) {
    case BackendOp::kAdd:
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      return in.InPlace();
    case BackendOp::kAddBias:
      RETURN_IF_ERROR(in.In({c.cols}));
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      return in.InPlace();
    case BackendOp::kRmsNorm:
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      RETURN_IF_ERROR(in.In({c.cols}, 1.0f, 0.1f));  // norm weights near 1
      return in.Out({c.rows, c.cols});
    case BackendOp::kSwiGlu:
      RETURN_IF_ERROR(in.In({c.rows, 2 * c.cols}));
      return in.Out({c.rows, c.cols});
    case BackendOp::kGelu:
    case BackendOp::kCopy:
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      return in.Out({c.rows, c.cols});
    case BackendOp::kArgMax:
      RETURN_IF_ERROR(in.In({c.rows, c.cols}));
      p.idx_out.assign(static_cast<size_t>(c.rows), -1);
      p.max_out.assign(static_cast<size_t>(c.rows), 0.0f);
      return Status::Ok();
    default:
      return InvalidArgument("{} is not a row-wise op", BackendOpName(c.kind));
  }
}
Status Invoke(const RowwiseCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  switch (c.kind) {
    case BackendOp::kAdd:
      return b.Add(t[0], t[1]);
    case BackendOp::kAddBias:
      return b.AddBias(t[0], t[1]);
    case BackendOp::kRmsNorm:
      return b.RmsNorm(t[0], t[1], 1e-6f, t[2]);
    case BackendOp::kSwiGlu:
      return b.SwiGlu(t[0], t[1]);
    case BackendOp::kGelu:
      return b.Gelu(t[0], t[1]);
    case BackendOp::kArgMax:
      return b.ArgMax(t[0], 11, p.max_out, p.idx_out);
    case BackendOp::kCopy:
      return b.Copy(t[0], t[1]);
    default:
      return InvalidArgument("{} is not a row-wise op", BackendOpName(c.kind));
  }
}

Status Prepare(const RopeCase& c, Builder& in) {
  const int64_t stride = c.head_stride > 0 ? c.head_stride : c.head_dim;
  RETURN_IF_ERROR(in.In({c.tokens, (c.heads - 1) * stride + c.head_dim}));
  for (int64_t t = 0; t < c.tokens; ++t) in.prepared().q_pos.push_back(3 + 5 * t);
  return in.InPlace();
}
Status Invoke(const RopeCase& c, Backend& b, Prepared& p) {
  RopeOpArgs a;
  a.heads = c.heads, a.head_dim = c.head_dim, a.head_stride = c.head_stride;
  a.spec.style = c.style;
  a.positions = p.q_pos;
  return b.Rope(a, p.t[0]);
}

Status Prepare(const AttentionCase& c, Builder& in) {
  Prepared& p = in.prepared();
  const int64_t tk = c.keys > 0 ? c.keys : c.queries;
  RETURN_IF_ERROR(in.In({c.queries, c.heads * c.head_dim}));
  RETURN_IF_ERROR(in.In({tk, c.kv_heads * c.head_dim}));
  RETURN_IF_ERROR(in.In({tk, c.kv_heads * ValueDim(c)}));
  RETURN_IF_ERROR(in.Out({c.queries, c.heads * ValueDim(c)}));
  if (c.lse) RETURN_IF_ERROR(in.Out({c.queries, c.heads}));
  if (c.keys > 0) {  // the queries are the last of the keys' positions: each sees one at least
    for (int64_t j = 0; j < tk; ++j) p.k_pos.push_back(2 * j);
    for (int64_t i = 0; i < c.queries; ++i) p.q_pos.push_back(2 * (tk - c.queries + i) + (i % 2));
  }
  return Status::Ok();
}
Status Invoke(const AttentionCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  AttentionOpArgs a;
  a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
  a.head_dim_v = c.head_dim_v;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.q_positions = p.q_pos, a.k_positions = p.k_pos;
  return b.Attention(a, t[0], t[1], t[2], t[3], c.lse ? t[4] : TensorRef());
}

Status Prepare(const DecodeAttentionCase& c, Builder& in) {
  RETURN_IF_ERROR(in.In({c.requests, c.heads * c.head_dim}));
  for (int64_t r = 0; r < c.requests; ++r) {
    const int64_t len = std::max<int64_t>(1, c.cache_rows - r);
    RETURN_IF_ERROR(in.In({len, c.kv_heads * c.head_dim}));
    RETURN_IF_ERROR(in.In({len, c.kv_heads * ValueDim(c)}));
  }
  RETURN_IF_ERROR(in.Out({c.requests, c.heads * ValueDim(c)}));
  if (c.lse) RETURN_IF_ERROR(in.Out({c.requests, c.heads}));
  return Status::Ok();
}
Status Invoke(const DecodeAttentionCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  DecodeAttentionOpArgs a;
  a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
  a.head_dim_v = c.head_dim_v;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<TensorRef> k, v;
  for (int64_t r = 0; r < c.requests; ++r) {
    k.push_back(t[static_cast<size_t>(1 + 2 * r)]);
    v.push_back(t[static_cast<size_t>(2 + 2 * r)]);
  }
  const size_t o = static_cast<size_t>(1 + 2 * c.requests);
  return b.DecodeAttention(a, t[0], k, v, t[o], c.lse ? t[o + 1] : TensorRef());
}

Status Prepare(const AttentionMergeCase& c, Builder& in) {
  for (int64_t part = 0; part < c.parts; ++part) {
    RETURN_IF_ERROR(in.In({c.rows, c.values}));
    RETURN_IF_ERROR(in.In({c.rows}));
  }
  return in.Out({c.rows, c.values});
}
Status Invoke(const AttentionMergeCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  std::vector<TensorRef> outs, lses;
  for (int64_t part = 0; part < c.parts; ++part) {
    outs.push_back(t[static_cast<size_t>(2 * part)]);
    lses.push_back(t[static_cast<size_t>(2 * part + 1)]);
  }
  return b.AttentionMerge(outs, lses, t.back());
}

Status Prepare(const RouterCase& c, Builder& in) {
  RETURN_IF_ERROR(in.In({c.tokens, c.experts}, 0.0f, 2.0f));
  if (c.score == RouterScore::kSigmoidBias) RETURN_IF_ERROR(in.In({c.experts}, 0.0f, 0.1f));
  RETURN_IF_ERROR(in.Out({c.tokens * c.top_k}));
  in.prepared().idx_out.assign(static_cast<size_t>(c.tokens * c.top_k), -1);
  return Status::Ok();
}
Status Invoke(const RouterCase& c, Backend& b, Prepared& p) {
  RouterOpArgs a;
  a.kind = c.score, a.top_k = c.top_k, a.n_group = c.n_group, a.topk_group = c.topk_group;
  a.normalize = c.score == RouterScore::kSoftmax;
  a.scale = c.score == RouterScore::kSoftmax ? 1.0 : 2.5;
  const bool bias = c.score == RouterScore::kSigmoidBias;
  return b.Router(a, p.t[0], bias ? p.t[1] : TensorRef(), p.idx_out, p.t.back());
}

Status Prepare(const PermuteCase& c, Builder& in) {
  Prepared& p = in.prepared();
  RETURN_IF_ERROR(in.In({c.tokens, c.hidden}));
  RETURN_IF_ERROR(in.Out({c.tokens * c.top_k, c.hidden}));
  std::vector<int32_t> experts(static_cast<size_t>(c.experts));
  for (int64_t t = 0; t < c.tokens; ++t) {  // k distinct experts per token
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), in.rng());
    p.ids.insert(p.ids.end(), experts.begin(), experts.begin() + c.top_k);
  }
  p.row_of_out.assign(static_cast<size_t>(c.tokens * c.top_k), -1);
  p.counts_out.assign(static_cast<size_t>(c.experts), -1);
  return Status::Ok();
}
Status Invoke(const PermuteCase& c, Backend& b, Prepared& p) {
  return b.Permute(p.t[0], p.ids, c.top_k, p.row_of_out, p.counts_out, p.t[1]);
}

Status Prepare(const UnpermuteCase& c, Builder& in) {
  Prepared& p = in.prepared();
  RETURN_IF_ERROR(in.In({c.tokens * c.top_k, c.hidden}));
  RETURN_IF_ERROR(in.In({c.tokens * c.top_k}));
  if (c.shared) RETURN_IF_ERROR(in.In({c.tokens, c.hidden}));
  RETURN_IF_ERROR(in.Out({c.tokens, c.hidden}));
  p.rows.resize(static_cast<size_t>(c.tokens * c.top_k));
  std::iota(p.rows.begin(), p.rows.end(), 0);
  std::shuffle(p.rows.begin(), p.rows.end(), in.rng());
  return Status::Ok();
}
Status Invoke(const UnpermuteCase& c, Backend& b, Prepared& p) {
  const std::vector<TensorRef>& t = p.t;
  return b.Unpermute(t[0], p.rows, t[1], c.top_k, c.shared ? t[2] : TensorRef(), t.back());
}

Status Prepare(const EmbeddingCase& c, Builder& in) {
  RETURN_IF_ERROR(in.In({c.table_rows, c.hidden}));
  RETURN_IF_ERROR(in.Out({c.tokens, c.hidden}));
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(c.table_rows + 8));
  for (int64_t t = 0; t < c.tokens; ++t) {
    in.prepared().ids.push_back(id(in.rng()));  // some not in the shard
  }
  return Status::Ok();
}
Status Invoke(const EmbeddingCase&, Backend& b, Prepared& p) {
  return b.Embedding(p.ids, p.t[0], kVocabBegin, p.t[1]);
}

// Tensors and host arguments of `c` on `b` (a fresh step of its arena).
Status PrepareCase(const OpCase& c, DType dtype, Backend& b, uint32_t seed, Prepared* p) {
  RETURN_IF_ERROR(b.ResetArena());
  *p = Prepared();
  return std::visit(
      [&](const auto& op) {
        Builder in(IsStrided(op), dtype, b, seed, p);
        return Prepare(op, in);
      },
      c);
}

Status InvokeCase(const OpCase& c, Backend& b, Prepared& p) {
  return std::visit([&](const auto& op) { return Invoke(op, b, p); }, c);
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

std::string_view Views(bool strided) { return strided ? " views" : ""; }

}  // namespace

std::string GemmCase::Name() const {
  return fmt::format("gemm m={} n={} k={}{}{}", m, n, k, trans_b ? " bᵀ" : "", Views(strided));
}

std::string RowwiseCase::Name() const {
  return fmt::format("{} m={} n={}{}", BackendOpName(kind), rows, cols, Views(strided));
}

std::string RopeCase::Name() const {
  return fmt::format("rope t={} heads={} d={} stride={} {}{}", tokens, heads, head_dim, head_stride,
                     style == RopeStyle::kHalfSplit ? "half-split" : "interleaved", Views(strided));
}

std::string AttentionCase::Name() const {
  return fmt::format("attention q={} k={} heads={}/{} d={}/{}{}{}", queries, keys, heads, kv_heads,
                     head_dim, head_dim_v, lse ? " lse" : "", Views(strided));
}

std::string DecodeAttentionCase::Name() const {
  return fmt::format("decode_attention q={} k={} heads={}/{} d={}/{}{}{}", requests, cache_rows,
                     heads, kv_heads, head_dim, head_dim_v, lse ? " lse" : "", Views(strided));
}

std::string AttentionMergeCase::Name() const {
  return fmt::format("attention_merge rows={} dv={} parts={}", rows, values, parts);
}

std::string RouterCase::Name() const {
  return fmt::format("router t={} experts={} top{} groups={}/{} {}", tokens, experts, top_k,
                     topk_group, n_group,
                     score == RouterScore::kSoftmax ? "softmax" : "sigmoid+bias");
}

std::string PermuteCase::Name() const {
  return fmt::format("permute t={} h={} experts={} top{}", tokens, hidden, experts, top_k);
}

std::string UnpermuteCase::Name() const {
  return fmt::format("unpermute t={} h={} top{}{}", tokens, hidden, top_k, shared ? " shared" : "");
}

std::string EmbeddingCase::Name() const {
  return fmt::format("embedding t={} h={} rows={}", tokens, hidden, table_rows);
}

BackendOp OpOf(const OpCase& c) {
  return std::visit([](const auto& op) { return op.op(); }, c);
}

std::string CaseName(const OpCase& c) {
  return std::visit([](const auto& op) { return op.Name(); }, c);
}

std::vector<OpCase> DefaultOpCases() {
  using B = BackendOp;
  return {
      GemmCase{.m = 7, .n = 33, .k = 64},
      GemmCase{.m = 1, .n = 130, .k = 17},
      GemmCase{.m = 5, .n = 9, .k = 12, .trans_b = true, .strided = true},
      GemmCase{.m = 1, .n = 6, .k = 10, .trans_b = true},
      GemmCase{.m = 0, .n = 6, .k = 10},
      RowwiseCase{.kind = B::kAdd, .rows = 5, .cols = 41},
      RowwiseCase{.kind = B::kAddBias, .rows = 4, .cols = 19, .strided = true},
      RowwiseCase{.kind = B::kRmsNorm, .rows = 6, .cols = 96},
      RowwiseCase{.kind = B::kRmsNorm, .rows = 3, .cols = 20, .strided = true},
      RopeCase{.tokens = 5, .heads = 3, .head_dim = 16},
      RopeCase{.tokens = 4, .heads = 2, .head_dim = 8, .style = RopeStyle::kInterleaved},
      RopeCase{.tokens = 3,  // MLA's query: the rope part of each head
               .heads = 3,
               .head_dim = 4,
               .head_stride = 10,
               .style = RopeStyle::kInterleaved,
               .strided = true},
      RowwiseCase{.kind = B::kSwiGlu, .rows = 4, .cols = 37},
      RowwiseCase{.kind = B::kGelu, .rows = 3, .cols = 50},
      AttentionCase{.queries = 9, .keys = 0, .heads = 4, .kv_heads = 2, .head_dim = 16},
      AttentionCase{.queries = 1, .keys = 0, .heads = 2, .kv_heads = 2, .head_dim = 8},
      AttentionCase{.queries = 4,  // a ring block: other keys, positions, lse, views
                    .keys = 7,
                    .heads = 4,
                    .kv_heads = 1,
                    .head_dim = 8,
                    .lse = true,
                    .strided = true},
      AttentionCase{.queries = 5,
                    .keys = 5,
                    .heads = 2,
                    .kv_heads = 2,
                    .head_dim = 12,
                    .head_dim_v = 6,
                    .lse = true},
      DecodeAttentionCase{.requests = 3, .cache_rows = 9, .heads = 4, .kv_heads = 2, .head_dim = 8},
      DecodeAttentionCase{.requests = 2,  // MLA's absorbed form: one KV head, dv < dqk, lse
                          .cache_rows = 6,
                          .heads = 3,
                          .kv_heads = 1,
                          .head_dim = 10,
                          .head_dim_v = 8,
                          .lse = true,
                          .strided = true},
      AttentionMergeCase{.rows = 12, .values = 8, .parts = 3},
      RouterCase{.tokens = 5, .experts = 8, .top_k = 2},
      RouterCase{.tokens = 4,
                 .experts = 16,
                 .top_k = 3,
                 .n_group = 4,
                 .topk_group = 2,
                 .score = RouterScore::kSigmoidBias},
      PermuteCase{.tokens = 6, .hidden = 10, .experts = 5, .top_k = 2},
      UnpermuteCase{.tokens = 6, .hidden = 10, .top_k = 2},
      UnpermuteCase{.tokens = 3, .hidden = 7, .top_k = 3, .shared = true},
      EmbeddingCase{.tokens = 9, .hidden = 12, .table_rows = 6},
      RowwiseCase{.kind = B::kArgMax, .rows = 4, .cols = 29},
      RowwiseCase{.kind = B::kCopy, .rows = 5, .cols = 13, .strided = true},
  };
}

std::vector<OpCase> BenchOpCases() {
  // A 1B-class model's shapes: hidden 2048, 32 heads of 64 (8 KV heads), FFN 8192,
  // vocabulary shard 32000, 64 experts top-6.
  using B = BackendOp;
  std::vector<OpCase> cases;
  for (int64_t t : {1, 128}) {
    cases.push_back(GemmCase{.m = t, .n = 2048, .k = 2048});
    cases.push_back(RowwiseCase{.kind = B::kAdd, .rows = t, .cols = 2048});
    cases.push_back(RowwiseCase{.kind = B::kAddBias, .rows = t, .cols = 2048});
    cases.push_back(RowwiseCase{.kind = B::kRmsNorm, .rows = t, .cols = 2048});
    cases.push_back(RopeCase{.tokens = t, .heads = 32, .head_dim = 64});
    cases.push_back(RowwiseCase{.kind = B::kSwiGlu, .rows = t, .cols = 8192});
    cases.push_back(RowwiseCase{.kind = B::kGelu, .rows = t, .cols = 8192});
    cases.push_back(RouterCase{.tokens = t, .experts = 64, .top_k = 6});
    cases.push_back(PermuteCase{.tokens = t, .hidden = 2048, .experts = 64, .top_k = 6});
    cases.push_back(UnpermuteCase{.tokens = t, .hidden = 2048, .top_k = 6});
    cases.push_back(EmbeddingCase{.tokens = t, .hidden = 2048, .table_rows = 32000});
    cases.push_back(RowwiseCase{.kind = B::kCopy, .rows = t, .cols = 2048});
  }
  cases.push_back(
      AttentionCase{.queries = 128, .keys = 0, .heads = 32, .kv_heads = 8, .head_dim = 64});
  cases.push_back(DecodeAttentionCase{
      .requests = 8, .cache_rows = 512, .heads = 32, .kv_heads = 8, .head_dim = 64});
  cases.push_back(AttentionMergeCase{.rows = 128 * 32, .values = 64, .parts = 4});
  cases.push_back(RowwiseCase{.kind = B::kArgMax, .rows = 8, .cols = 32000});
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
  if (!b.Supports(OpOf(c), dtype)) {
    return Unimplemented("not implemented: {} on {} tensors in backend '{}'",
                         BackendOpName(OpOf(c)), DTypeName(dtype), b.name());
  }
  Prepared p;
  RETURN_IF_ERROR(PrepareCase(c, dtype, b, seed, &p));
  RETURN_IF_ERROR(InvokeCase(c, b, p));
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
  RETURN_IF_ERROR(PrepareCase(c, dtype, b, 1, &p));
  RETURN_IF_ERROR(InvokeCase(c, b, p));  // warm-up
  std::unique_ptr<OpTimer> timer = b.NewTimer();
  std::vector<int64_t> ns;
  for (int r = 0; r < reps; ++r) {
    RETURN_IF_ERROR(timer->Start());
    RETURN_IF_ERROR(InvokeCase(c, b, p));
    RETURN_IF_ERROR(timer->Stop());
    ASSIGN_OR_RETURN(int64_t t, timer->ElapsedNs());
    ns.push_back(t);
  }
  if (ns.empty()) return int64_t{0};
  std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
  return ns[ns.size() / 2];
}

}  // namespace shardscope::runtime
