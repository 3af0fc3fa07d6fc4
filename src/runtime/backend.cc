#include "runtime/backend.h"

#include <chrono>
#include <string>
#include <utility>

#include "runtime/dtype_convert.h"

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

bool Is2d(const TensorRef& t) { return t.shape.size() == 2; }

// The fp32 loops of a Kernels table.
class KernelsBackend final : public Fp32HostBackend {
 public:
  KernelsBackend(std::string_view name, std::unique_ptr<Kernels> kernels)
      : name_(name), k_(std::move(kernels)) {}
  std::string_view name() const override { return name_; }

 protected:
  void GemmF32(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) override {
    k_->Gemm(m, n, k, a, k, b, n, false, c, n, 0.0f);
  }
  void AddF32(const float* x, float* y, int64_t n) override { k_->Add(x, y, n); }
  void RmsNormF32(const float* x, const float* w, float* y, int64_t m, int64_t n,
                  float eps) override {
    k_->RmsNorm(x, n, w, y, n, m, n, eps);
  }
  void RopeF32(const RopeOpArgs& a, int64_t tokens, float* x) override {
    k_->Rope(x, tokens, a.heads * a.head_dim, a.heads, a.head_dim, a.head_dim, a.positions.data(),
             a.spec);
  }
  void SwiGluF32(const float* gate_up, int64_t m, int64_t inter, float* out) override {
    k_->SwiGlu(gate_up, m, inter, out);
  }
  void GeluF32(const float* x, int64_t n, float* out) override { k_->Gelu(x, n, out); }
  void AttentionF32(const AttentionOpArgs& a, int64_t tokens, const float* q, const float* k,
                    const float* v, float* out) override {
    if (static_cast<int64_t>(pos_.size()) < tokens) {
      pos_.resize(static_cast<size_t>(tokens));
      for (int64_t i = 0; i < tokens; ++i) pos_[static_cast<size_t>(i)] = i;
    }
    AttentionArgs args;
    args.q = q, args.q_stride = a.heads * a.head_dim;
    args.k = k, args.k_stride = a.kv_heads * a.head_dim;
    args.v = v, args.v_stride = a.kv_heads * a.head_dim;
    args.tq = args.tk = tokens, args.hq = a.heads, args.hkv = a.kv_heads;
    args.dqk = args.dv = a.head_dim;
    args.qpos = args.kpos = pos_.data();
    args.scale = a.scale;
    args.out = out, args.out_stride = a.heads * a.head_dim;
    k_->Attention(args);
  }

 private:
  const std::string name_;
  std::unique_ptr<Kernels> k_;
  std::vector<int64_t> pos_;  // 0, 1, …: grows to the longest sequence, then reused
};

}  // namespace

std::string_view BackendOpName(BackendOp op) {
  switch (op) {
    case BackendOp::kGemm:
      return "gemm";
    case BackendOp::kAdd:
      return "add";
    case BackendOp::kRmsNorm:
      return "rms_norm";
    case BackendOp::kRope:
      return "rope";
    case BackendOp::kSwiGlu:
      return "swiglu";
    case BackendOp::kGelu:
      return "gelu";
    case BackendOp::kAttention:
      return "attention";
  }
  return "?";
}

int64_t TensorRef::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

StatusOr<TensorRef> Backend::NewTensor(DType dtype, std::vector<int64_t> shape) {
  if (!IsStorageDType(dtype)) {
    return Unimplemented("not implemented: {} tensors on backend '{}'", DTypeName(dtype), name());
  }
  TensorRef t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape) {
    if (d < 0)
      return InvalidArgument("tensor shape {} has a negative dimension", ShapeText(t.shape));
  }
  ASSIGN_OR_RETURN(t.data, arena_.Allocate(t.bytes()));
  return t;
}

Fp32HostBackend::Fp32HostBackend() : Backend(&HostMemory()), scratch_(&HostMemory()) {}

bool Fp32HostBackend::Supports(BackendOp op, DType dtype) const { return IsStorageDType(dtype); }

Status Fp32HostBackend::CopyFromHost(const float* host, const TensorRef& dst) {
  return FromFloat(host, dst.elements(), dst.dtype, dst.data);
}

Status Fp32HostBackend::CopyToHost(const TensorRef& src, float* host) {
  return ToFloat(src.dtype, src.data, src.elements(), host);
}

std::unique_ptr<OpTimer> Fp32HostBackend::NewTimer() { return std::make_unique<HostTimer>(); }

StatusOr<float*> Fp32HostBackend::Load(const TensorRef& t) {
  if (t.dtype == DType::kFp32) return static_cast<float*>(t.data);
  ASSIGN_OR_RETURN(float* f, Stage(t));
  RETURN_IF_ERROR(ToFloat(t.dtype, t.data, t.elements(), f));
  return f;
}

StatusOr<float*> Fp32HostBackend::Stage(const TensorRef& t) {
  if (t.dtype == DType::kFp32) return static_cast<float*>(t.data);
  if (!IsStorageDType(t.dtype)) {
    return Unimplemented("not implemented: {} tensors on backend '{}'", DTypeName(t.dtype), name());
  }
  ASSIGN_OR_RETURN(void* p, scratch_.Allocate(t.elements() * 4));
  return static_cast<float*>(p);
}

Status Fp32HostBackend::Store(const TensorRef& t, const float* f) {
  if (t.dtype == DType::kFp32) return Status::Ok();  // computed in place
  return FromFloat(f, t.elements(), t.dtype, t.data);
}

Status Fp32HostBackend::Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c) {
  constexpr BackendOp op = BackendOp::kGemm;
  if (!Is2d(a)) return ShapeError(op, "a", a);
  if (!Is2d(b) || b.dim(0) != a.dim(1)) return ShapeError(op, "b", b);
  if (!Is2d(c) || c.dim(0) != a.dim(0) || c.dim(1) != b.dim(1)) return ShapeError(op, "c", c);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fa, Load(a));
  ASSIGN_OR_RETURN(float* fb, Load(b));
  ASSIGN_OR_RETURN(float* fc, Stage(c));
  GemmF32(a.dim(0), b.dim(1), a.dim(1), fa, fb, fc);
  return Store(c, fc);
}

Status Fp32HostBackend::Add(const TensorRef& x, const TensorRef& y) {
  if (x.elements() != y.elements()) return ShapeError(BackendOp::kAdd, "y", y);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fx, Load(x));
  ASSIGN_OR_RETURN(float* fy, Load(y));
  AddF32(fx, fy, y.elements());
  return Store(y, fy);
}

Status Fp32HostBackend::RmsNorm(const TensorRef& x, const TensorRef& w, float eps,
                                const TensorRef& y) {
  constexpr BackendOp op = BackendOp::kRmsNorm;
  if (!Is2d(x)) return ShapeError(op, "x", x);
  if (w.elements() != x.dim(1)) return ShapeError(op, "w", w);
  if (y.shape != x.shape) return ShapeError(op, "y", y);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fx, Load(x));
  ASSIGN_OR_RETURN(float* fw, Load(w));
  ASSIGN_OR_RETURN(float* fy, Stage(y));
  RmsNormF32(fx, fw, fy, x.dim(0), x.dim(1), eps);
  return Store(y, fy);
}

Status Fp32HostBackend::Rope(const RopeOpArgs& a, const TensorRef& x) {
  if (!Is2d(x) || x.dim(1) != a.heads * a.head_dim || a.head_dim % 2 != 0 ||
      static_cast<int64_t>(a.positions.size()) != x.dim(0)) {
    return ShapeError(BackendOp::kRope, "x", x);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fx, Load(x));
  RopeF32(a, x.dim(0), fx);
  return Store(x, fx);
}

Status Fp32HostBackend::SwiGlu(const TensorRef& gate_up, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kSwiGlu;
  if (!Is2d(gate_up) || gate_up.dim(1) % 2 != 0) return ShapeError(op, "gate_up", gate_up);
  if (!Is2d(out) || out.dim(0) != gate_up.dim(0) || 2 * out.dim(1) != gate_up.dim(1)) {
    return ShapeError(op, "out", out);
  }
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fg, Load(gate_up));
  ASSIGN_OR_RETURN(float* fo, Stage(out));
  SwiGluF32(fg, out.dim(0), out.dim(1), fo);
  return Store(out, fo);
}

Status Fp32HostBackend::Gelu(const TensorRef& x, const TensorRef& out) {
  if (x.elements() != out.elements()) return ShapeError(BackendOp::kGelu, "out", out);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fx, Load(x));
  ASSIGN_OR_RETURN(float* fo, Stage(out));
  GeluF32(fx, x.elements(), fo);
  return Store(out, fo);
}

Status Fp32HostBackend::Attention(const AttentionOpArgs& a, const TensorRef& q, const TensorRef& k,
                                  const TensorRef& v, const TensorRef& out) {
  constexpr BackendOp op = BackendOp::kAttention;
  if (a.kv_heads < 1 || a.heads % a.kv_heads != 0) {
    return InvalidArgument("attention: {} heads over {} KV heads", a.heads, a.kv_heads);
  }
  if (!Is2d(q) || q.dim(1) != a.heads * a.head_dim) return ShapeError(op, "q", q);
  const std::vector<int64_t> kv_shape = {q.dim(0), a.kv_heads * a.head_dim};
  if (k.shape != kv_shape) return ShapeError(op, "k", k);
  if (v.shape != kv_shape) return ShapeError(op, "v", v);
  if (out.shape != q.shape) return ShapeError(op, "out", out);
  RETURN_IF_ERROR(scratch_.Reset());
  ASSIGN_OR_RETURN(float* fq, Load(q));
  ASSIGN_OR_RETURN(float* fk, Load(k));
  ASSIGN_OR_RETURN(float* fv, Load(v));
  ASSIGN_OR_RETURN(float* fo, Stage(out));
  AttentionF32(a, q.dim(0), fq, fk, fv, fo);
  return Store(out, fo);
}

std::unique_ptr<Backend> NewKernelsBackend(std::string_view name,
                                           std::unique_ptr<Kernels> kernels) {
  return std::make_unique<KernelsBackend>(name, std::move(kernels));
}

}  // namespace shardscope::runtime
