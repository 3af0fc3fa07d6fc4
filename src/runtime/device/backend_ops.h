// The backend op harness, ggml's test-backend-ops for our Backend: each case is
// an op at a shape; CompareOp runs it on a backend and on the reference backend
// from the same inputs (drawn from a seed and stored in the case's dtype) and
// returns the normalised mean squared error of the outputs (tensors and host
// results such as indices, all as floats); TimeOp times it with the backend's
// own timer. Used by cpu/backend_ops_test.cc (every op of every registered
// backend, every storage dtype) and bench/backend_ops_bench.cc.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_BACKEND_OPS_H_
#define SHARDSCOPE_RUNTIME_DEVICE_BACKEND_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

struct OpCase {
  BackendOp op = BackendOp::kGemm;
  // gemm: m × k · k × n; elementwise, norm, bias, copy, argmax, swiglu (n = inter): m × n;
  // rope: m tokens; attention: m queries over n keys (n = 0: self-attention of the m, causal);
  // decode attention: m requests with caches of n, n − 1, … (≥ 1) rows;
  // attention merge: m rows of n values from k parts; router: m tokens;
  // permute, unpermute, embedding: m tokens of n (embedding: a table of k rows).
  int64_t m = 1, n = 1, k = 1;
  int64_t heads = 1, kv_heads = 1, head_dim = 2;
  int64_t head_dim_v = 0;   // attention: 0 is head_dim
  int64_t head_stride = 0;  // rope: 0 is head_dim
  RopeStyle rope_style = RopeStyle::kHalfSplit;
  bool trans_b = false;  // gemm
  bool strided = false;  // 2-D tensors are column windows of wider ones (views)
  bool lse = false;      // attention: with lse output; unpermute: with shared rows
  // router, permute, unpermute.
  int64_t experts = 4, top_k = 1, n_group = 1, topk_group = 1;
  RouterScore router = RouterScore::kSoftmax;

  std::string Name() const;  // "gemm m=7 n=33 k=64"
};

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
