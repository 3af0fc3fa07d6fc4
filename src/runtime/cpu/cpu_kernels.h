// The CPU backend's kernels (runtime::cpu): fp32 operations on host pointers
// (cpu_kernels.cc: OpenBLAS, SmallGemm) that cpu_backend.cc implements
// runtime::Backend (runtime/device/backend.h) with. A private helper, not an
// op interface: the executor and the op harness run on the Backend; only
// runtime/cpu/ and the GEMM benchmark call these. Matrices are row-major with
// explicit row strides, so a kernel can read one head or one half of a fused
// projection in place. Stateless. Tested against plain loops in
// cpu_kernels_test.cc.
#ifndef SHARDSCOPE_RUNTIME_CPU_CPU_KERNELS_H_
#define SHARDSCOPE_RUNTIME_CPU_CPU_KERNELS_H_

#include <cstdint>
#include <vector>

#include "runtime/device/backend.h"
#include "runtime/device/rope.h"

namespace shardscope::runtime::cpu {

// Causal attention of one request's queries over a block of its keys: key j is
// visible to query i when kpos[j] ≤ qpos[i]. Heads are contiguous inside a row
// (head h at column h·d); query head h reads KV head h / (hq / hkv). Writes out
// [tq, hq·dv] and lse [tq, hq] (natural log of the softmax denominator of the
// scaled scores); a query that sees no key gets out 0 and lse −inf.
struct AttentionArgs {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float* k = nullptr;
  int64_t k_stride = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  int64_t tq = 0, tk = 0, hq = 1, hkv = 1, dqk = 0, dv = 0;
  const int64_t* qpos = nullptr;
  const int64_t* kpos = nullptr;
  float scale = 1.0f;
  float* out = nullptr;
  int64_t out_stride = 0;
  float* lse = nullptr;  // may be null
};

// Decode attention: one query row per request over that request's whole cache
// (no mask: every cached key precedes the query). k[r], v[r] point at request
// r's cache rows (len[r] rows of k_stride / v_stride floats). Same head mapping
// and outputs as AttentionArgs. MLA's absorbed decode is this kernel with
// hkv = 1, k = v = the latent cache rows, dqk = kv_lora_rank + rope, dv = kv_lora_rank.
struct DecodeAttentionArgs {
  const float* q = nullptr;
  int64_t q_stride = 0;
  std::vector<const float*> k, v;
  std::vector<int64_t> len;
  int64_t k_stride = 0, v_stride = 0;
  int64_t hq = 1, hkv = 1, dqk = 0, dv = 0;
  float scale = 1.0f;
  float* out = nullptr;
  int64_t out_stride = 0;
  float* lse = nullptr;  // [requests, hq]; may be null
};

// c[m×n] = a[m×k] · b (+ beta · c); b is [k×n], or [n×k] read transposed when trans_b.
void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          bool trans_b, float* c, int64_t ldc, float beta = 0.0f);
// x[m×n] += bias[n] broadcast over rows.
void AddBias(float* x, const float* bias, int64_t m, int64_t n);
// y = x + y over n elements.
void Add(const float* x, float* y, int64_t n);
// y[m×n] = x / rms(x) · w, row by row (x may alias y); strides in floats.
void RmsNorm(const float* x, int64_t x_stride, const float* w, float* y, int64_t y_stride,
             int64_t m, int64_t n, float eps);
// Rotates, in place, rot_dim elements of each of `heads` heads of each token:
// token t head h starts at x + t·token_stride + h·head_stride.
void Rope(float* x, int64_t tokens, int64_t token_stride, int64_t heads, int64_t head_stride,
          int64_t rot_dim, const int64_t* positions, const RopeSpec& spec);
void Attention(const AttentionArgs& args);
void DecodeAttention(const DecodeAttentionArgs& args);
// Merges P partial attention results of the same rows (out_p [rows, dv], lse_p [rows]):
// out = Σ_p exp(lse_p − lse) · out_p with lse = log Σ_p exp(lse_p). lse_out may be null.
void AttentionMerge(const std::vector<const float*>& outs, const std::vector<const float*>& lses,
                    int64_t rows, int64_t dv, float* out, float* lse_out);
// out[m×inter] = silu(gate) · up; gate_up rows are [gate | up] (2·inter wide).
void SwiGlu(const float* gate_up, int64_t m, int64_t inter, float* out);
// tanh-approximated GELU, elementwise (may alias).
void Gelu(const float* x, int64_t n, float* out);
// Per token of logits [tokens × experts]: idx[t·k + j] and weight[t·k + j] of its
// top-k experts, best first (k = args.top_k). bias: the sigmoid router's correction
// bias per expert, used for selection only (may be null).
void Router(const float* logits, int64_t tokens, int64_t experts, const RouterOpArgs& args,
            const float* bias, int32_t* idx, float* weight);
// Groups rows of x[tokens×h] by expert: out[tokens·k × h] ordered by expert
// (stable in token order); row_of[t·k + j] = the out row of that assignment;
// counts[e] = rows for expert e (experts entries).
void Permute(const float* x, int64_t tokens, int64_t h, const int32_t* idx, int64_t k,
             int64_t experts, float* out, int64_t* row_of, int64_t* counts);
// out[t] = Σ_j weight[t·k + j] · y[row_of[t·k + j]] (+ shared[t] when not null).
void Unpermute(const float* y, int64_t tokens, int64_t h, const int64_t* row_of,
               const float* weight, int64_t k, const float* shared, float* out);
// Vocab-parallel lookup: rows of ids in [vocab_begin, vocab_begin + vocab_count)
// come from table (vocab_count × h), the others are 0 (the TP all-reduce fills them).
void Embedding(const int32_t* ids, int64_t tokens, const float* table, int64_t vocab_begin,
               int64_t vocab_count, int64_t h, float* out);
// Greedy sampling: per row the largest value and its first index (+ index_offset).
void ArgMax(const float* x, int64_t rows, int64_t n, int64_t index_offset, float* max_value,
            int32_t* index);
// Copies rows×cols floats between strided matrices (KV-cache append, gathers).
void CopyRows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
              int64_t cols);

// The LM head: logits[tokens×vocab_local] = x · w (w: h × vocab_local), a GEMM.
inline void LmHead(const float* x, int64_t tokens, int64_t h, const float* w, int64_t vocab_local,
                   float* logits) {
  Gemm(tokens, vocab_local, h, x, h, w, vocab_local, false, logits, vocab_local);
}

}  // namespace shardscope::runtime::cpu

#endif  // SHARDSCOPE_RUNTIME_CPU_CPU_KERNELS_H_
