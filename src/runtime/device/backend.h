// Backend: the seam a compute device plugs into, ggml style. A backend owns its
// memory (an Arena reused across steps, so the steady state allocates nothing;
// further arenas over the same memory for tensors that outlive a step, such as
// weights and KV caches), hands out typed tensors — handles to that memory with
// a dtype, a shape and a row stride, so that a view of a row or column window
// costs nothing —, copies host ↔ device, synchronises with a Status, times ops
// with its own clock (events on a GPU stream; the host clock on the CPU) and
// says which ops it supports. Every op returns a Status; outputs are
// preallocated by the caller. Index arguments and results (token ids, expert
// choices, row maps, argmax) are host arrays: the executor needs them on the
// host to size messages and to feed the next step; a device backend copies
// them. The reference backend (reference_backend.h) is the plain loops every
// backend is tested against (cpu/backend_ops_test.cc). One backend per rank;
// not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_BACKEND_H_
#define SHARDSCOPE_RUNTIME_DEVICE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "runtime/device/arena.h"
#include "runtime/device/rope.h"

namespace shardscope::runtime {

// The ops of the backend interface, listed once: X(enumerator, name) for the
// enum, the list of all ops (the harness's coverage check) and their names.
// clang-format off
#define SHARDSCOPE_BACKEND_OPS(X) \
  X(kGemm, "gemm") \
  X(kAdd, "add") \
  X(kAddBias, "add_bias") \
  X(kRmsNorm, "rms_norm") \
  X(kRope, "rope") \
  X(kSwiGlu, "swiglu") \
  X(kGelu, "gelu") \
  X(kAttention, "attention") \
  X(kDecodeAttention, "decode_attention") \
  X(kAttentionMerge, "attention_merge") \
  X(kRouter, "router") \
  X(kPermute, "permute") \
  X(kUnpermute, "unpermute") \
  X(kEmbedding, "embedding") \
  X(kArgMax, "argmax") \
  X(kCopy, "copy")
// clang-format on

#define SHARDSCOPE_BACKEND_OP_ENUMERATOR(e, name) e,
enum class BackendOp { SHARDSCOPE_BACKEND_OPS(SHARDSCOPE_BACKEND_OP_ENUMERATOR) };
#undef SHARDSCOPE_BACKEND_OP_ENUMERATOR
#define SHARDSCOPE_BACKEND_OP_VALUE(e, name) BackendOp::e,
inline constexpr BackendOp kAllBackendOps[] = {SHARDSCOPE_BACKEND_OPS(SHARDSCOPE_BACKEND_OP_VALUE)};
#undef SHARDSCOPE_BACKEND_OP_VALUE
std::string_view BackendOpName(BackendOp op);

// A typed tensor: a handle to backend memory (owned by the arena it came from,
// valid until that arena's next Reset), row-major, with the dtype it is stored
// in. A 2-D tensor may be a view with a row stride wider than its columns.
struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::kFp32;
  std::vector<int64_t> shape;
  // Elements between consecutive rows of a 2-D tensor; 0: rows are contiguous.
  int64_t row_stride = 0;

  bool empty() const { return data == nullptr; }  // "no tensor" (an absent bias)
  int64_t elements() const;
  int64_t bytes() const { return elements() * DTypeSize(dtype); }  // of the elements
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
  // Rows and columns seen as a matrix: a 2-D tensor's, [1 × n] for any other.
  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.size() == 2 ? shape[1] : elements(); }
  int64_t ld() const { return row_stride > 0 ? row_stride : cols(); }
  bool contiguous() const { return ld() == cols() || rows() <= 1; }
};

// Views, no copy. Rows [row0, row0 + rows) × columns [col0, col0 + cols) of a 2-D tensor.
TensorRef View(const TensorRef& t, int64_t row0, int64_t rows, int64_t col0, int64_t cols);
// Rows [row0, row0 + rows) of a 2-D tensor.
TensorRef RowsOf(const TensorRef& t, int64_t row0, int64_t rows);
// Elements [offset, offset + |shape|) of a contiguous tensor, as `shape`.
TensorRef Flat(const TensorRef& t, int64_t offset, std::vector<int64_t> shape);

// Times a span of ops with the backend's clock.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  virtual Status Start() = 0;
  virtual Status Stop() = 0;
  // Between Start and Stop; synchronises when the backend is asynchronous.
  virtual StatusOr<int64_t> ElapsedNs() = 0;
};

// Rotary embedding, in place, of `heads` heads per row of x (token t at row t):
// head h starts at column h·head_stride (0: head_dim) and its first head_dim
// columns rotate; positions[t] per token. x's columns are heads·… wide:
// (heads − 1)·head_stride + head_dim.
struct RopeOpArgs {
  int64_t heads = 1, head_dim = 0, head_stride = 0;
  std::vector<int64_t> positions;
  RopeSpec spec;
};

// Causal attention of one request's queries q [tq × hq·dqk] over a block of its
// keys k [tk × hkv·dqk] and values v [tk × hkv·dv]: key j is visible to query i
// when k_positions[j] ≤ q_positions[i] (empty: 0, 1, …). Query head h reads KV
// head h / (hq / hkv). out [tq × hq·dv]; lse [tq × hq] (may be empty): the
// natural log of the softmax denominator of the scaled scores; a query that
// sees no key gets out 0 and lse −inf.
struct AttentionOpArgs {
  int64_t heads = 1, kv_heads = 1, head_dim = 0;
  int64_t head_dim_v = 0;  // 0: head_dim
  float scale = 1.0f;
  std::vector<int64_t> q_positions, k_positions;
};

// Decode attention: row r of q [R × hq·dqk] (one query per request) over
// request r's whole cache, k[r] [len_r × hkv·dqk] and v[r] [len_r × hkv·dv]
// (no mask). out [R × hq·dv], lse [R × hq] (may be empty). MLA's absorbed decode
// is this op with hkv = 1 and v[r] a column window of k[r].
struct DecodeAttentionOpArgs {
  int64_t heads = 1, kv_heads = 1, head_dim = 0, head_dim_v = 0;  // head_dim_v 0: head_dim
  float scale = 1.0f;
};

enum class RouterScore { kSoftmax, kSigmoidBias };

// The router's top-k (the bias is a tensor of the op).
struct RouterOpArgs {
  RouterScore kind = RouterScore::kSoftmax;
  int64_t top_k = 1;
  int64_t n_group = 1, topk_group = 1;  // sigmoid + bias: expert groups, groups a token may use
  bool normalize = true;                // renormalise the k weights to sum 1
  double scale = 1.0;                   // then multiply them (DeepSeek's routed_scaling_factor)
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual std::string_view name() const = 0;
  // Whether `op` runs on tensors of `dtype`; an unsupported call is Unimplemented.
  virtual bool Supports(BackendOp op, DType dtype) const = 0;

  // A tensor of the step arena; its contents are undefined until written.
  StatusOr<TensorRef> NewTensor(DType dtype, std::vector<int64_t> shape) {
    return NewTensor(arena_, dtype, std::move(shape));
  }
  // A tensor of `arena`, which must be over this backend's memory (NewArena).
  StatusOr<TensorRef> NewTensor(Arena& arena, DType dtype, std::vector<int64_t> shape);
  // An arena of this backend's memory for tensors with another lifetime than a
  // step (weights, KV caches), with a first chunk of `initial_bytes` (may be 0);
  // it must not outlive the backend.
  std::unique_ptr<Arena> NewArena(int64_t initial_bytes = 0, MemoryUse use = MemoryUse::kScratch) {
    return std::make_unique<Arena>(memory_, initial_bytes, use);
  }
  // Starts a step: every tensor of the step arena is freed, its memory kept.
  Status ResetArena() { return arena_.Reset(); }
  const Arena& arena() const { return arena_; }
  // Memory chunks the step arena (and scratch) took from the system so far:
  // constant once a step of a given size has run.
  virtual int64_t system_allocations() const { return arena_.system_allocations(); }

  // fp32 host values → dst in its dtype (rounded to nearest even), and back.
  virtual Status CopyFromHost(const float* host, const TensorRef& dst) = 0;
  virtual Status CopyToHost(const TensorRef& src, float* host) = 0;
  // Waits for every op issued so far.
  virtual Status Synchronize() = 0;
  virtual std::unique_ptr<OpTimer> NewTimer() = 0;

  // c [m × n] = a [m × k] · b, b [k × n] (trans_b: [n × k] read transposed).
  virtual Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c, bool trans_b) = 0;
  Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c) {
    return Gemm(a, b, c, false);
  }
  // y += x (same shape; contiguous).
  virtual Status Add(const TensorRef& x, const TensorRef& y) = 0;
  // y [m × n] += bias [n], row by row.
  virtual Status AddBias(const TensorRef& bias, const TensorRef& y) = 0;
  // y [m × n] = x / rms(x) · w [n], row by row (y may be x).
  virtual Status RmsNorm(const TensorRef& x, const TensorRef& w, float eps, const TensorRef& y) = 0;
  virtual Status Rope(const RopeOpArgs& args, const TensorRef& x) = 0;
  // out [m × inter] = silu(gate) · up of gate_up [m × 2·inter] (contiguous).
  virtual Status SwiGlu(const TensorRef& gate_up, const TensorRef& out) = 0;
  // tanh-approximated GELU, elementwise (contiguous).
  virtual Status Gelu(const TensorRef& x, const TensorRef& out) = 0;
  virtual Status Attention(const AttentionOpArgs& args, const TensorRef& q, const TensorRef& k,
                           const TensorRef& v, const TensorRef& out, const TensorRef& lse) = 0;
  Status Attention(const AttentionOpArgs& args, const TensorRef& q, const TensorRef& k,
                   const TensorRef& v, const TensorRef& out) {
    return Attention(args, q, k, v, out, TensorRef());
  }
  virtual Status DecodeAttention(const DecodeAttentionOpArgs& args, const TensorRef& q,
                                 std::span<const TensorRef> k, std::span<const TensorRef> v,
                                 const TensorRef& out, const TensorRef& lse) = 0;
  // Merges P partial attention results of the same rows, outs[p] [rows × dv] and
  // lses[p] [rows] (contiguous): out = Σ_p exp(lse_p − lse) · out_p, lse = log Σ_p exp(lse_p).
  virtual Status AttentionMerge(std::span<const TensorRef> outs, std::span<const TensorRef> lses,
                                const TensorRef& out) = 0;
  // Per token of logits [T × E]: idx[t·k + j] (host) and weight [T·k] of its
  // top-k experts, best first; bias [E] (sigmoid + bias only; may be empty).
  virtual Status Router(const RouterOpArgs& args, const TensorRef& logits, const TensorRef& bias,
                        std::span<int32_t> idx, const TensorRef& weight) = 0;
  // Groups the rows of x [T × h] by expert (idx: T·k choices among `experts`):
  // out [T·k × h] ordered by expert, stable in token order; row_of[a] = the out
  // row of assignment a; counts[e] = rows of expert e (host arrays).
  virtual Status Permute(const TensorRef& x, std::span<const int32_t> idx, int64_t k,
                         std::span<int64_t> row_of, std::span<int64_t> counts,
                         const TensorRef& out) = 0;
  // out [T × h] = shared (or 0 when empty) + Σ_j weight[t·k + j] · y[row_of[t·k + j]].
  virtual Status Unpermute(const TensorRef& y, std::span<const int64_t> row_of,
                           const TensorRef& weight, int64_t k, const TensorRef& shared,
                           const TensorRef& out) = 0;
  // Vocab-parallel lookup: out row t = table row ids[t] − vocab_begin when that
  // is a row of table [vocab_count × h], else 0.
  virtual Status Embedding(std::span<const int32_t> ids, const TensorRef& table,
                           int64_t vocab_begin, const TensorRef& out) = 0;
  // Greedy sampling: per row of x the largest value and its first index (+ index_offset).
  virtual Status ArgMax(const TensorRef& x, int64_t index_offset, std::span<float> max_value,
                        std::span<int32_t> index) = 0;
  // dst = src (same shape; views; converts between dtypes).
  virtual Status Copy(const TensorRef& src, const TensorRef& dst) = 0;

 protected:
  // `memory` is borrowed and must outlive the backend.
  explicit Backend(MemorySource* memory) : memory_(memory), arena_(memory) {}

 private:
  MemorySource* const memory_;
  Arena arena_;
};

// The CPU backend (cpu/: OpenBLAS kernels computing in fp32); defined only in
// builds with OpenBLAS (the runtime_cpu layer), declared here so that code
// below that layer can run on it, as tests and the launcher do.
std::unique_ptr<Backend> NewCpuBackend();

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_BACKEND_H_
