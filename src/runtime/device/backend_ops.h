// The backend op harness, ggml's test-backend-ops for our Backend: each case is
// an op at a shape, one small struct per op family with fields named for what
// they mean; CompareOp runs it on a backend and on the reference backend from
// the same inputs (drawn from a seed and stored in the case's dtype) and
// returns the normalised mean squared error of the outputs (tensors and host
// results such as indices, all as floats); TimeOp times it with the backend's
// own timer. Used by cpu/backend_ops_test.cc (every op of every registered
// backend, every storage dtype) and bench/backend_ops_bench.cc.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_BACKEND_OPS_H_
#define SHARDSCOPE_RUNTIME_DEVICE_BACKEND_OPS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

// Every case: op() is its BackendOp, Name() the text tests and the benchmark
// print. `strided`: its 2-D tensors are column windows of wider ones (views).

// a [m × k] · b [k × n] (b stored [n × k] when trans_b) → [m × n].
struct GemmCase {
  int64_t m = 1, n = 1, k = 1;
  bool trans_b = false;
  bool strided = false;
  BackendOp op() const { return BackendOp::kGemm; }
  std::string Name() const;  // "gemm m=7 n=33 k=64"
};

// An op over a [rows × cols] matrix, row by row: add, add_bias (a bias of cols),
// rms_norm, gelu, argmax, copy; swiglu reads [rows × 2·cols] (gate, up) into cols.
struct RowwiseCase {
  BackendOp kind = BackendOp::kAdd;
  int64_t rows = 1, cols = 1;
  bool strided = false;
  BackendOp op() const { return kind; }
  std::string Name() const;  // "add m=5 n=41"
};

// Rope of `heads` heads of `head_dim` rotated values each, `head_stride` apart
// (0: head_dim), in each of `tokens` rows.
struct RopeCase {
  int64_t tokens = 1;
  int64_t heads = 1, head_dim = 2, head_stride = 0;
  RopeStyle style = RopeStyle::kHalfSplit;
  bool strided = false;
  BackendOp op() const { return BackendOp::kRope; }
  std::string Name() const;
};

// Causal attention of `queries` over `keys` keys at other positions (a ring
// block); keys = 0: self-attention of the queries. head_dim_v 0 is head_dim.
struct AttentionCase {
  int64_t queries = 1, keys = 0;
  int64_t heads = 1, kv_heads = 1, head_dim = 2, head_dim_v = 0;
  bool lse = false;  // with the log-sum-exp output
  bool strided = false;
  BackendOp op() const { return BackendOp::kAttention; }
  std::string Name() const;
};

// One query of each of `requests` requests over its own KV cache: request r's
// has max(1, cache_rows − r) rows. head_dim_v 0 is head_dim.
struct DecodeAttentionCase {
  int64_t requests = 1, cache_rows = 1;
  int64_t heads = 1, kv_heads = 1, head_dim = 2, head_dim_v = 0;
  bool lse = false;  // with the log-sum-exp output
  bool strided = false;
  BackendOp op() const { return BackendOp::kDecodeAttention; }
  std::string Name() const;
};

// Merges `parts` partial outputs [rows × values] by their log-sum-exps [rows].
struct AttentionMergeCase {
  int64_t rows = 1, values = 1, parts = 1;
  BackendOp op() const { return BackendOp::kAttentionMerge; }
  std::string Name() const;
};

// Top-k of `experts` router scores per token, within the best topk_group of
// n_group groups; sigmoid + bias scoring draws a bias per expert.
struct RouterCase {
  int64_t tokens = 1, experts = 4, top_k = 1, n_group = 1, topk_group = 1;
  RouterScore score = RouterScore::kSoftmax;
  BackendOp op() const { return BackendOp::kRouter; }
  std::string Name() const;
};

// Each token's [hidden] row copied to each of its top_k distinct experts' rows.
struct PermuteCase {
  int64_t tokens = 1, hidden = 1, experts = 4, top_k = 1;
  BackendOp op() const { return BackendOp::kPermute; }
  std::string Name() const;
};

// The weighted sum of each token's top_k expert rows [hidden], back in token
// order; `shared`: plus a shared expert's row per token.
struct UnpermuteCase {
  int64_t tokens = 1, hidden = 1, top_k = 1;
  bool shared = false;
  BackendOp op() const { return BackendOp::kUnpermute; }
  std::string Name() const;
};

// `tokens` ids looked up in a table shard of `table_rows` rows of [hidden]
// (some ids fall outside the shard).
struct EmbeddingCase {
  int64_t tokens = 1, hidden = 1, table_rows = 1;
  BackendOp op() const { return BackendOp::kEmbedding; }
  std::string Name() const;
};

using OpCase =
    std::variant<GemmCase, RowwiseCase, RopeCase, AttentionCase, DecodeAttentionCase,
                 AttentionMergeCase, RouterCase, PermuteCase, UnpermuteCase, EmbeddingCase>;

BackendOp OpOf(const OpCase& c);
std::string CaseName(const OpCase& c);

// Small cases covering every BackendOp (odd sizes, GQA, both rope styles, views).
std::vector<OpCase> DefaultOpCases();
// Cases at decode/prefill sizes of a small model, for timing.
std::vector<OpCase> BenchOpCases();

// Σ (out − ref)² / Σ ref² (0 when both are 0).
double Nmse(const std::vector<float>& out, const std::vector<float>& ref);
// The NMSE a backend may differ from the reference by, per storage dtype.
double NmseTolerance(DType dtype);

// Runs `c` with all tensors in `dtype` on both backends; the NMSE of the output.
StatusOr<double> CompareOp(const OpCase& c, DType dtype, Backend& backend, Backend& reference,
                           uint32_t seed);
// Runs `c` once on `backend` from the seed's inputs and returns the outputs (fp32).
StatusOr<std::vector<float>> RunOp(const OpCase& c, DType dtype, Backend& backend, uint32_t seed);
// Median time of `reps` runs (after one warm-up) by the backend's timer, in ns.
StatusOr<int64_t> TimeOp(const OpCase& c, DType dtype, Backend& backend, int reps);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_BACKEND_OPS_H_
