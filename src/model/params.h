// Exact parameter counts and per-token forward FLOPs of a ModelSpec, counted the
// way the Hugging Face implementations lay out their weights (docs/models.md
// gives the definitions). Pure functions of the spec; thread-safe.
#ifndef SHARDSCOPE_MODEL_PARAMS_H_
#define SHARDSCOPE_MODEL_PARAMS_H_

#include <cstdint>

#include "model/model.h"

namespace shardscope {

struct ParamCounts {
  int64_t total = 0;           // every parameter of the main model (MTP excluded)
  int64_t embedding = 0;       // vocab × hidden token embedding
  int64_t lm_head = 0;         // hidden × vocab output matrix; 0 when tied to the embedding
  int64_t attention = 0;       // attention projections and their biases, all layers
  int64_t dense_ffn = 0;       // FFNs of the dense layers
  int64_t routed_experts = 0;  // all routed experts of all MoE layers
  int64_t shared_experts = 0;  // all shared experts of all MoE layers
  int64_t router = 0;          // router weights (and DeepSeek-V3's score-correction bias)
  int64_t norms = 0;           // every norm: per layer, MLA latent norms, final norm
  // Parameters a token's forward pass uses: total minus the routed experts it is not
  // sent to (the whole embedding table and LM head included, DeepSeek's convention).
  int64_t activated = 0;
  // Weights of the matrices one token's activations are multiplied by (attention
  // projections, the FFN or chosen experts, router, LM head; no embedding lookup, no
  // norms, no biases): 2 × activated_matrix is the per-token GEMM FLOPs.
  int64_t activated_matrix = 0;
  // DeepSeek-V3 multi-token-prediction modules as stored in the checkpoint (with their
  // own embedding and head copies). Not in total.
  int64_t mtp = 0;
};

// Attention weights and biases of one layer (no norms).
int64_t AttentionParamsPerLayer(const ModelSpec& m);
// Weights of the matrices in one layer's attention (AttentionParamsPerLayer minus biases).
int64_t AttentionMatrixParamsPerLayer(const ModelSpec& m);
// Norm weights of one layer: the two block norms plus MLA's latent norms.
int64_t NormParamsPerLayer(const ModelSpec& m);
// One dense-layer FFN (gated: 3 matrices; GELU: 2).
int64_t DenseFfnParams(const ModelSpec& m);
// One routed expert (a shared expert has the same size).
int64_t ExpertParams(const ModelSpec& m);
// One MoE layer's router (weight, plus the correction bias for sigmoid_bias).
int64_t RouterParamsPerLayer(const ModelSpec& m);
// Every parameter of one decoder layer (0-based), for placing layers on stages.
int64_t LayerParams(const ModelSpec& m, int64_t layer);

ParamCounts CountParameters(const ModelSpec& m);

// FLOPs of one token's forward pass attending to context_len tokens (itself included):
// 2 × activated_matrix + Σ_layers 2·heads·context_len·(QkHeadDim + VHeadDim).
// MLA uses the non-absorbed (prefill) form. Norms, activations, softmax and rope are
// not counted (O(hidden) per token).
int64_t ForwardFlopsPerToken(const ModelSpec& m, int64_t context_len);

}  // namespace shardscope

#endif  // SHARDSCOPE_MODEL_PARAMS_H_
