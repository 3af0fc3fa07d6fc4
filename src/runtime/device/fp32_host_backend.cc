#include "runtime/device/fp32_host_backend.h"

#include <chrono>
#include <string>

#include "runtime/device/dtype_convert.h"

namespace shardscope::runtime {
namespace {

int64_t HostNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class HostTimer final : public OpTimer {
 public:
  Status Start() override {
    start_ = HostNowNs();
    return Status::Ok();
  }
  Status Stop() override {
    stop_ = HostNowNs();
    return Status::Ok();
  }
  StatusOr<int64_t> ElapsedNs() override { return stop_ - start_; }

 private:
  int64_t start_ = 0, stop_ = 0;
};

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? " × " : "") + std::to_string(s[i]);
  return t + "]";
}

Status ShapeError(BackendOp op, std::string_view what, const TensorRef& t) {
  return InvalidArgument("{}: {} has shape {}", BackendOpName(op), what, ShapeText(t.shape));
}

Status NotContiguous(BackendOp op, std::string_view what) {
  return InvalidArgument("{}: {} must be contiguous", BackendOpName(op), what);
}

bool Is2d(const TensorRef& t) { return t.shape.size() == 2; }
bool IsMat(const TensorRef& t, int64_t rows, int64_t cols) {
  return Is2d(t) && t.dim(0) == rows && t.dim(1) == cols;
}

}  // namespace

Fp32HostBackend::Fp32HostBackend() : Backend(&HostMemory()), scratch_(&HostMemory()) {}

bool Fp32HostBackend::Supports(BackendOp op, DType dtype) const { return IsStorageDType(dtype); }

Status Fp32HostBackend::CopyFromHost(const float* host, const TensorRef& dst) {
  if (!dst.contiguous()) return InvalidArgument("copy from host: a view must be contiguous");
  return FromFloat(host, dst.elements(), dst.dtype, dst.data);
}

Status Fp32HostBackend::CopyToHost(const TensorRef& src, float* host) {
  if (!src.contiguous()) return InvalidArgument("copy to host: a view must be contiguous");
  return ToFloat(src.dtype, src.data, src.elements(), host);
}

std::unique_ptr<OpTimer> Fp32HostBackend::NewTimer() { return std::make_unique<HostTimer>(); }

StatusOr<F32Mat> Fp32HostBackend::Load(const TensorRef& t) {
  if (t.dtype == DType::kFp32) {
    return F32Mat{static_cast<float*>(t.data), t.rows(), t.cols(), t.ld()};
  }
  ASSIGN_OR_RETURN(F32Mat f, Stage(t));
  const int64_t size = DTypeSize(t.dtype);
  for (int64_t i = 0; i < f.rows; ++i) {
    RETURN_IF_ERROR(ToFloat(t.dtype, static_cast<const char*>(t.data) + i * t.ld() * size, f.cols,
                            f.p + i * f.ld));
  }
  return f;
}

StatusOr<F32Mat> Fp32HostBackend::Stage(const TensorRef& t) {
  if (t.dtype == DType::kFp32) {
    return F32Mat{static_cast<float*>(t.data), t.rows(), t.cols(), t.ld()};
  }
  if (!IsStorageDType(t.dtype)) {
    return Unimplemented("not implemented: {} tensors on backend '{}'", DTypeName(t.dtype), name());
  }
  ASSIGN_OR_RETURN(void* p, scratch_.Allocate(t.elements() * 4));
  return F32Mat{static_cast<float*>(p), t.rows(), t.cols(), t.cols()};
}

Status Fp32HostBackend::Store(const TensorRef& t, const F32Mat& f) {
  if (t.dtype == DType::kFp32) return Status::Ok();  // computed in place
  const int64_t size = DTypeSize(t.dtype);
  for (int64_t i = 0; i < f.rows; ++i) {
    RETURN_IF_ERROR(
        FromFloat(f.p + i * f.ld, f.cols, t.dtype, static_cast<char*>(t.data) + i * t.ld() * size));
  }
  return Status::Ok();
}

StatusOr<F32Mat> Fp32HostBackend::LoadOptional(const TensorRef& t) {
  if (t.empty()) return F32Mat{};
  return Load(t);
}

Status Fp32HostBackend::Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c,
                             bool trans_b) {
  constexpr BackendOp op = BackendOp::kGemm;
  if (!Is2d(a)) return ShapeError(op, "a", a);
  const int64_t k = a.dim(1);
  if (!Is2d(b) || b.dim(trans_b ? 1 : 0) != k) return ShapeError(op, "b", b);
  if (!IsMat(c, a.dim(0), b.dim(trans_b ? 0 : 1))) return ShapeError(op, "c", c);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fa, Load(a));
  ASSIGN_OR_RETURN(F32Mat fb, Load(b));
  ASSIGN_OR_RETURN(F32Mat fc, Stage(c));
  GemmF32(fa, fb, trans_b, fc);
  return Store(c, fc);
}

Status Fp32HostBackend::Add(const TensorRef& x, const TensorRef& y) {
  constexpr BackendOp op = BackendOp::kAdd;
  if (x.elements() != y.elements()) return ShapeError(op, "y", y);
  if (!x.contiguous() || !y.contiguous()) return NotContiguous(op, "x and y");
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  ASSIGN_OR_RETURN(F32Mat fy, Load(y));
  AddF32(fx.p, fy.p, y.elements());
  return Store(y, fy);
}

Status Fp32HostBackend::AddBias(const TensorRef& bias, const TensorRef& y) {
  constexpr BackendOp op = BackendOp::kAddBias;
  if (!Is2d(y)) return ShapeError(op, "y", y);
  if (bias.elements() != y.dim(1) || !bias.contiguous()) return ShapeError(op, "bias", bias);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fb, Load(bias));
  ASSIGN_OR_RETURN(F32Mat fy, Load(y));
  AddBiasF32(fb.p, fy);
  return Store(y, fy);
}

Status Fp32HostBackend::RmsNorm(const TensorRef& x, const TensorRef& w, float eps,
                                const TensorRef& y) {
  constexpr BackendOp op = BackendOp::kRmsNorm;
  if (!Is2d(x)) return ShapeError(op, "x", x);
  if (w.elements() != x.dim(1) || !w.contiguous()) return ShapeError(op, "w", w);
  if (y.shape != x.shape) return ShapeError(op, "y", y);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  ASSIGN_OR_RETURN(F32Mat fw, Load(w));
  ASSIGN_OR_RETURN(F32Mat fy, Stage(y));
  RmsNormF32(fx, fw.p, eps, fy);
  return Store(y, fy);
}

Status Fp32HostBackend::Rope(const RopeOpArgs& a, const TensorRef& x) {
  const int64_t stride = a.head_stride > 0 ? a.head_stride : a.head_dim;
  if (!Is2d(x) || a.heads < 1 || a.head_dim % 2 != 0 || stride < a.head_dim ||
      x.dim(1) != (a.heads - 1) * stride + a.head_dim ||
      static_cast<int64_t>(a.positions.size()) != x.dim(0)) {
    return ShapeError(BackendOp::kRope, "x", x);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  RopeOpArgs args = a;
  args.head_stride = stride;
  RopeF32(args, fx);
  return Store(x, fx);
}

Status Fp32HostBackend::SwiGlu(const TensorRef& gate_up, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kSwiGlu;
  if (!Is2d(gate_up) || gate_up.dim(1) % 2 != 0) return ShapeError(op, "gate_up", gate_up);
  if (!IsMat(out, gate_up.dim(0), gate_up.dim(1) / 2)) return ShapeError(op, "out", out);
  if (!gate_up.contiguous() || !out.contiguous()) return NotContiguous(op, "gate_up and out");
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fg, Load(gate_up));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  SwiGluF32(fg.p, out.dim(0), out.dim(1), fo.p);
  return Store(out, fo);
}

Status Fp32HostBackend::Gelu(const TensorRef& x, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kGelu;
  if (x.elements() != out.elements()) return ShapeError(op, "out", out);
  if (!x.contiguous() || !out.contiguous()) return NotContiguous(op, "x and out");
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  GeluF32(fx.p, x.elements(), fo.p);
  return Store(out, fo);
}

Status Fp32HostBackend::Attention(const AttentionOpArgs& a, const TensorRef& q, const TensorRef& k,
                                  const TensorRef& v, const TensorRef& out, const TensorRef& lse) {
  constexpr BackendOp op = BackendOp::kAttention;
  if (a.kv_heads < 1 || a.heads % a.kv_heads != 0) {
    return InvalidArgument("attention: {} heads over {} KV heads", a.heads, a.kv_heads);
  }
  const int64_t dv = a.head_dim_v > 0 ? a.head_dim_v : a.head_dim;
  if (!Is2d(q) || q.dim(1) != a.heads * a.head_dim) return ShapeError(op, "q", q);
  const int64_t tq = q.dim(0);
  if (!Is2d(k) || k.dim(1) != a.kv_heads * a.head_dim) return ShapeError(op, "k", k);
  const int64_t tk = k.dim(0);
  if (!IsMat(v, tk, a.kv_heads * dv)) return ShapeError(op, "v", v);
  if (!IsMat(out, tq, a.heads * dv)) return ShapeError(op, "out", out);
  if (!lse.empty() && !IsMat(lse, tq, a.heads)) return ShapeError(op, "lse", lse);
  if ((!a.q_positions.empty() && static_cast<int64_t>(a.q_positions.size()) != tq) ||
      (!a.k_positions.empty() && static_cast<int64_t>(a.k_positions.size()) != tk)) {
    return InvalidArgument("attention: {} query and {} key positions for {} × {} rows",
                           a.q_positions.size(), a.k_positions.size(), tq, tk);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fq, Load(q));
  ASSIGN_OR_RETURN(F32Mat fk, Load(k));
  ASSIGN_OR_RETURN(F32Mat fv, Load(v));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  F32Mat fl;
  if (!lse.empty()) {
    ASSIGN_OR_RETURN(fl, Stage(lse));
  }
  const bool fill_q = a.q_positions.empty(), fill_k = a.k_positions.empty();
  if (fill_q || fill_k) {
    const int64_t n = std::max(tq, tk);
    for (int64_t i = static_cast<int64_t>(iota_.size()); i < n; ++i) iota_.push_back(i);
    AttentionOpArgs args = a;
    if (fill_q) args.q_positions.assign(iota_.begin(), iota_.begin() + tq);
    if (fill_k) args.k_positions.assign(iota_.begin(), iota_.begin() + tk);
    args.head_dim_v = dv;
    AttentionF32(args, fq, fk, fv, fo, fl);
  } else if (a.head_dim_v != dv) {
    AttentionOpArgs args = a;
    args.head_dim_v = dv;
    AttentionF32(args, fq, fk, fv, fo, fl);
  } else {
    AttentionF32(a, fq, fk, fv, fo, fl);
  }
  RETURN_IF_ERROR(Store(out, fo));
  return lse.empty() ? Status::Ok() : Store(lse, fl);
}

Status Fp32HostBackend::DecodeAttention(const DecodeAttentionOpArgs& a, const TensorRef& q,
                                        std::span<const TensorRef> k, std::span<const TensorRef> v,
                                        const TensorRef& out, const TensorRef& lse) {
  constexpr BackendOp op = BackendOp::kDecodeAttention;
  if (a.kv_heads < 1 || a.heads % a.kv_heads != 0) {
    return InvalidArgument("decode attention: {} heads over {} KV heads", a.heads, a.kv_heads);
  }
  const int64_t dv = a.head_dim_v > 0 ? a.head_dim_v : a.head_dim;
  if (!Is2d(q) || q.dim(1) != a.heads * a.head_dim) return ShapeError(op, "q", q);
  const int64_t requests = q.dim(0);
  if (static_cast<int64_t>(k.size()) != requests || static_cast<int64_t>(v.size()) != requests) {
    return InvalidArgument("decode attention: {} queries, {} key and {} value caches", requests,
                           k.size(), v.size());
  }
  if (!IsMat(out, requests, a.heads * dv)) return ShapeError(op, "out", out);
  if (!lse.empty() && !IsMat(lse, requests, a.heads)) return ShapeError(op, "lse", lse);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fq, Load(q));
  std::vector<F32Mat> fk, fv;
  for (int64_t r = 0; r < requests; ++r) {
    const TensorRef& kr = k[static_cast<size_t>(r)];
    const TensorRef& vr = v[static_cast<size_t>(r)];
    if (!Is2d(kr) || kr.dim(1) != a.kv_heads * a.head_dim) return ShapeError(op, "k", kr);
    if (!IsMat(vr, kr.dim(0), a.kv_heads * dv)) return ShapeError(op, "v", vr);
    ASSIGN_OR_RETURN(F32Mat mk, Load(kr));
    ASSIGN_OR_RETURN(F32Mat mv, Load(vr));
    if (r > 0 && (mk.ld != fk[0].ld || mv.ld != fv[0].ld)) {
      return InvalidArgument("decode attention: the caches have different row strides");
    }
    fk.push_back(mk);
    fv.push_back(mv);
  }
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  F32Mat fl;
  if (!lse.empty()) {
    ASSIGN_OR_RETURN(fl, Stage(lse));
  }
  DecodeAttentionOpArgs args = a;
  args.head_dim_v = dv;
  DecodeAttentionF32(args, fq, fk, fv, fo, fl);
  RETURN_IF_ERROR(Store(out, fo));
  return lse.empty() ? Status::Ok() : Store(lse, fl);
}

Status Fp32HostBackend::AttentionMerge(std::span<const TensorRef> outs,
                                       std::span<const TensorRef> lses, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kAttentionMerge;
  if (!Is2d(out) || !out.contiguous()) return ShapeError(op, "out", out);
  if (outs.size() != lses.size()) {
    return InvalidArgument("attention merge: {} outputs, {} lse", outs.size(), lses.size());
  }
  RETURN_IF_ERROR(scratch_.Reset());
  std::vector<const float*> fo, fl;
  for (size_t p = 0; p < outs.size(); ++p) {
    if (outs[p].shape != out.shape || !outs[p].contiguous()) return ShapeError(op, "outs", outs[p]);
    if (lses[p].elements() != out.dim(0) || !lses[p].contiguous()) {
      return ShapeError(op, "lses", lses[p]);
    }
    ASSIGN_OR_RETURN(F32Mat o, Load(outs[p]));
    ASSIGN_OR_RETURN(F32Mat l, Load(lses[p]));
    fo.push_back(o.p);
    fl.push_back(l.p);
  }
  ASSIGN_OR_RETURN(F32Mat f, Stage(out));
  AttentionMergeF32(fo, fl, f);
  return Store(out, f);
}

Status Fp32HostBackend::Router(const RouterOpArgs& a, const TensorRef& logits,
                               const TensorRef& bias, std::span<int32_t> idx,
                               const TensorRef& weight) {
  constexpr BackendOp op = BackendOp::kRouter;
  if (!Is2d(logits) || !logits.contiguous()) return ShapeError(op, "logits", logits);
  const int64_t tokens = logits.dim(0), experts = logits.dim(1);
  if (a.top_k < 1 || a.top_k > experts || a.n_group < 1 || experts % a.n_group != 0 ||
      a.topk_group < 1 || a.topk_group > a.n_group) {
    return InvalidArgument("router: top {} of {} experts in {} groups ({} used)", a.top_k, experts,
                           a.n_group, a.topk_group);
  }
  if (!bias.empty() && bias.elements() != experts) return ShapeError(op, "bias", bias);
  if (static_cast<int64_t>(idx.size()) != tokens * a.top_k) {
    return InvalidArgument("router: {} index slots for {} × {} choices", idx.size(), tokens,
                           a.top_k);
  }
  if (weight.elements() != tokens * a.top_k || !weight.contiguous()) {
    return ShapeError(op, "weight", weight);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fl, Load(logits));
  ASSIGN_OR_RETURN(F32Mat fb, LoadOptional(bias));
  ASSIGN_OR_RETURN(F32Mat fw, Stage(weight));
  RouterF32(a, fl, fb.p, idx, fw.p);
  return Store(weight, fw);
}

Status Fp32HostBackend::Permute(const TensorRef& x, std::span<const int32_t> idx, int64_t k,
                                std::span<int64_t> row_of, std::span<int64_t> counts,
                                const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kPermute;
  if (!Is2d(x) || !x.contiguous()) return ShapeError(op, "x", x);
  const int64_t n = x.dim(0) * k;
  if (static_cast<int64_t>(idx.size()) != n || static_cast<int64_t>(row_of.size()) != n) {
    return InvalidArgument("permute: {} choices and {} row slots for {} × {}", idx.size(),
                           row_of.size(), x.dim(0), k);
  }
  for (int32_t e : idx) {
    if (e < 0 || e >= static_cast<int64_t>(counts.size())) {
      return InvalidArgument("permute: expert {} of {}", e, counts.size());
    }
  }
  if (!IsMat(out, n, x.dim(1)) || !out.contiguous()) return ShapeError(op, "out", out);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  PermuteF32(fx, idx, k, row_of, counts, fo);
  return Store(out, fo);
}

Status Fp32HostBackend::Unpermute(const TensorRef& y, std::span<const int64_t> row_of,
                                  const TensorRef& weight, int64_t k, const TensorRef& shared,
                                  const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kUnpermute;
  if (!Is2d(out) || !out.contiguous()) return ShapeError(op, "out", out);
  const int64_t tokens = out.dim(0), h = out.dim(1);
  if (!Is2d(y) || y.dim(1) != h || !y.contiguous()) return ShapeError(op, "y", y);
  if (static_cast<int64_t>(row_of.size()) != tokens * k) {
    return InvalidArgument("unpermute: {} rows for {} × {}", row_of.size(), tokens, k);
  }
  for (int64_t r : row_of) {
    if (r < 0 || r >= y.dim(0)) return InvalidArgument("unpermute: row {} of {}", r, y.dim(0));
  }
  if (weight.elements() != tokens * k || !weight.contiguous()) {
    return ShapeError(op, "weight", weight);
  }
  if (!shared.empty() && (shared.shape != out.shape || !shared.contiguous())) {
    return ShapeError(op, "shared", shared);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fy, Load(y));
  ASSIGN_OR_RETURN(F32Mat fw, Load(weight));
  ASSIGN_OR_RETURN(F32Mat fs, LoadOptional(shared));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  UnpermuteF32(fy, row_of, fw.p, k, fs.p, fo);
  return Store(out, fo);
}

Status Fp32HostBackend::Embedding(std::span<const int32_t> ids, const TensorRef& table,
                                  int64_t vocab_begin, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kEmbedding;
  if (!Is2d(table) || !table.contiguous()) return ShapeError(op, "table", table);
  if (!IsMat(out, static_cast<int64_t>(ids.size()), table.dim(1))) {
    return ShapeError(op, "out", out);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat ft, Load(table));
  ASSIGN_OR_RETURN(F32Mat fo, Stage(out));
  EmbeddingF32(ids, ft, vocab_begin, fo);
  return Store(out, fo);
}

Status Fp32HostBackend::ArgMax(const TensorRef& x, int64_t index_offset, std::span<float> max_value,
                               std::span<int32_t> index) {
  if (!Is2d(x)) return ShapeError(BackendOp::kArgMax, "x", x);
  if (static_cast<int64_t>(max_value.size()) != x.dim(0) ||
      static_cast<int64_t>(index.size()) != x.dim(0)) {
    return InvalidArgument("argmax: {} and {} result slots for {} rows", max_value.size(),
                           index.size(), x.dim(0));
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fx, Load(x));
  ArgMaxF32(fx, index_offset, max_value, index);
  return Status::Ok();
}

Status Fp32HostBackend::Copy(const TensorRef& src, const TensorRef& dst) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols()) {
    return ShapeError(BackendOp::kCopy, "dst", dst);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(F32Mat fs, Load(src));
  ASSIGN_OR_RETURN(F32Mat fd, Stage(dst));
  CopyF32(fs, fd);
  return Store(dst, fd);
}

}  // namespace shardscope::runtime
