// Backend: the seam a compute device plugs into, ggml style. A backend owns its
// memory (an Arena reused across steps, so the steady state allocates nothing),
// hands out typed tensors — handles to that memory with a dtype and a shape —,
// copies host ↔ device, synchronises with a Status, times ops with its own
// clock (events on a GPU stream; the host clock on the CPU) and says which ops
// it supports. Every op returns a Status; outputs are preallocated by the
// caller. The reference backend (reference_backend.h) is the plain loops every
// backend is tested against (cpu/backend_ops_test.cc). One backend per rank;
// not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_BACKEND_H_
#define SHARDSCOPE_RUNTIME_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "runtime/arena.h"
#include "runtime/kernels.h"

namespace shardscope::runtime {

// The ops of the backend interface.
enum class BackendOp { kGemm, kAdd, kRmsNorm, kRope, kSwiGlu, kGelu, kAttention };
inline constexpr BackendOp kAllBackendOps[] = {
    BackendOp::kGemm,   BackendOp::kAdd,  BackendOp::kRmsNorm,  BackendOp::kRope,
    BackendOp::kSwiGlu, BackendOp::kGelu, BackendOp::kAttention};
std::string_view BackendOpName(BackendOp op);

// A typed tensor: a handle to backend memory (owned by the backend's arena,
// valid until its next ResetArena), row-major, with the dtype it is stored in.
struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::kFp32;
  std::vector<int64_t> shape;

  int64_t elements() const;
  int64_t bytes() const { return elements() * DTypeSize(dtype); }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
};

// Times a span of ops with the backend's clock.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  virtual Status Start() = 0;
  virtual Status Stop() = 0;
  // Between Start and Stop; synchronises when the backend is asynchronous.
  virtual StatusOr<int64_t> ElapsedNs() = 0;
};

// Rotary embedding of x [tokens × heads·head_dim], in place; positions[t] per token.
struct RopeOpArgs {
  int64_t heads = 1, head_dim = 0;
  std::vector<int64_t> positions;
  RopeSpec spec;
};

// Causal self-attention of one sequence: q [T × hq·d], k and v [T × hkv·d],
// out [T × hq·d]; query head h reads KV head h / (hq / hkv).
struct AttentionOpArgs {
  int64_t heads = 1, kv_heads = 1, head_dim = 0;
  float scale = 1.0f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual std::string_view name() const = 0;
  // Whether `op` runs on tensors of `dtype`; an unsupported call is Unimplemented.
  virtual bool Supports(BackendOp op, DType dtype) const = 0;

  // A tensor of the arena; its contents are undefined until written.
  StatusOr<TensorRef> NewTensor(DType dtype, std::vector<int64_t> shape);
  // Starts a step: every tensor of the arena is freed, its memory kept.
  Status ResetArena() { return arena_.Reset(); }
  const Arena& arena() const { return arena_; }
  // Memory chunks taken from the system so far, scratch included: constant
  // once a step of a given size has run.
  virtual int64_t system_allocations() const { return arena_.system_allocations(); }

  // fp32 host values → dst in its dtype (rounded to nearest even), and back.
  virtual Status CopyFromHost(const float* host, const TensorRef& dst) = 0;
  virtual Status CopyToHost(const TensorRef& src, float* host) = 0;
  // Waits for every op issued so far.
  virtual Status Synchronize() = 0;
  virtual std::unique_ptr<OpTimer> NewTimer() = 0;

  // c [m × n] = a [m × k] · b [k × n].
  virtual Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c) = 0;
  // y += x (same shape).
  virtual Status Add(const TensorRef& x, const TensorRef& y) = 0;
  // y [m × n] = x / rms(x) · w [n], row by row.
  virtual Status RmsNorm(const TensorRef& x, const TensorRef& w, float eps, const TensorRef& y) = 0;
  virtual Status Rope(const RopeOpArgs& args, const TensorRef& x) = 0;
  // out [m × inter] = silu(gate) · up of gate_up [m × 2·inter].
  virtual Status SwiGlu(const TensorRef& gate_up, const TensorRef& out) = 0;
  // tanh-approximated GELU, elementwise.
  virtual Status Gelu(const TensorRef& x, const TensorRef& out) = 0;
  virtual Status Attention(const AttentionOpArgs& args, const TensorRef& q, const TensorRef& k,
                           const TensorRef& v, const TensorRef& out) = 0;

 protected:
  // `memory` is borrowed and must outlive the backend.
  explicit Backend(MemorySource* memory) : arena_(memory) {}

 private:
  Arena arena_;
};

// A backend that computes in fp32 and stores any storage dtype: inputs that are
// not fp32 are converted into scratch memory (an arena of its own, so no op
// allocates in the steady state), outputs converted back. Subclasses give the
// fp32 loops; host memory, the host clock, synchronous.
class Fp32HostBackend : public Backend {
 public:
  bool Supports(BackendOp op, DType dtype) const override;
  Status CopyFromHost(const float* host, const TensorRef& dst) override;
  Status CopyToHost(const TensorRef& src, float* host) override;
  Status Synchronize() override { return Status::Ok(); }
  std::unique_ptr<OpTimer> NewTimer() override;

  Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c) override;
  Status Add(const TensorRef& x, const TensorRef& y) override;
  Status RmsNorm(const TensorRef& x, const TensorRef& w, float eps, const TensorRef& y) override;
  Status Rope(const RopeOpArgs& args, const TensorRef& x) override;
  Status SwiGlu(const TensorRef& gate_up, const TensorRef& out) override;
  Status Gelu(const TensorRef& x, const TensorRef& out) override;
  Status Attention(const AttentionOpArgs& args, const TensorRef& q, const TensorRef& k,
                   const TensorRef& v, const TensorRef& out) override;

  int64_t system_allocations() const override {
    return Backend::system_allocations() + scratch_.system_allocations();
  }

 protected:
  Fp32HostBackend();

  // The fp32 loops, on host memory, shapes already checked.
  virtual void GemmF32(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       float* c) = 0;
  virtual void AddF32(const float* x, float* y, int64_t n) = 0;
  virtual void RmsNormF32(const float* x, const float* w, float* y, int64_t m, int64_t n,
                          float eps) = 0;
  virtual void RopeF32(const RopeOpArgs& args, int64_t tokens, float* x) = 0;
  virtual void SwiGluF32(const float* gate_up, int64_t m, int64_t inter, float* out) = 0;
  virtual void GeluF32(const float* x, int64_t n, float* out) = 0;
  virtual void AttentionF32(const AttentionOpArgs& args, int64_t tokens, const float* q,
                            const float* k, const float* v, float* out) = 0;

 private:
  StatusOr<float*> Load(const TensorRef& t);         // fp32 view of t's values
  StatusOr<float*> Stage(const TensorRef& t);        // fp32 room for t's new values
  Status Store(const TensorRef& t, const float* f);  // back into t's dtype

  Arena scratch_;
};

// A backend over a table of fp32 Kernels (cpu/: OpenBLAS), named `name`.
std::unique_ptr<Backend> NewKernelsBackend(std::string_view name, std::unique_ptr<Kernels> kernels);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_BACKEND_H_
