// ModelSpec: the architecture of a transformer language model, as far as
// performance and memory are concerned (no weights). Built from the zoo
// (configs/models/*.yaml) or a Hugging Face config.json. Plain value type.
#ifndef SHARDSCOPE_MODEL_MODEL_H_
#define SHARDSCOPE_MODEL_MODEL_H_

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace shardscope {

enum class AttentionKind {
  kGqa,  // multi-head (num_kv_heads == num_heads) or grouped-query attention
  kMla,  // DeepSeek multi-head latent attention
};

enum class Activation {
  kSwiGlu,  // gated: gate, up and down matrices
  kGelu,    // plain: up and down matrices
};

enum class RouterKind {
  kSoftmax,      // softmax over all experts, top-k
  kSigmoidBias,  // DeepSeek-V3: sigmoid scores + bias, group-limited top-k
};

enum class NormKind { kRmsNorm, kLayerNorm };

// How RoPE frequencies are rescaled for contexts beyond the pre-training length
// (HF config.json `rope_scaling`).
enum class RopeScalingKind {
  kNone,
  kLinear,  // every frequency divided by the factor
  kLlama3,  // Llama 3.1: low frequencies divided, high kept, a smooth band between
  kYarn,    // DeepSeek-V2/V3: YaRN ramp plus an attention mscale
};

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  double factor = 1.0;
  int64_t original_max_positions = 0;  // pre-training context (llama3, yarn)
  double low_freq_factor = 1.0;        // llama3
  double high_freq_factor = 4.0;       // llama3
  double beta_fast = 32.0;             // yarn
  double beta_slow = 1.0;              // yarn
  double mscale = 1.0;                 // yarn
  double mscale_all_dim = 0.0;         // yarn

  bool operator==(const RopeScaling&) const = default;
};

// Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank == 0 means the
// query is projected directly from the hidden state (DeepSeek-V2-Lite).
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool operator==(const MlaSpec&) const = default;
};

struct MoeSpec {
  int64_t num_routed_experts = 0;  // 0: dense model
  int64_t experts_per_token = 0;
  int64_t num_shared_experts = 0;
  int64_t expert_intermediate_size = 0;  // per routed (and shared) expert
  int64_t first_dense_layers = 0;        // leading layers with a dense FFN
  // After those, layer i is MoE when i % moe_layer_freq == 0 (as in HF DeepSeek).
  int64_t moe_layer_freq = 1;
  RouterKind router = RouterKind::kSoftmax;
  int64_t n_group = 1;                 // expert groups for group-limited routing
  int64_t topk_group = 1;              // groups a token may route to
  bool norm_topk_prob = false;         // renormalise the top-k weights to sum to 1
  double routed_scaling_factor = 1.0;  // routed-expert output multiplier (DeepSeek)

  bool operator==(const MoeSpec&) const = default;
};

struct ModelSpec {
  std::string name;
  std::string architecture;  // e.g. "LlamaForCausalLM", or "zoo" notes
  std::string description;   // free text (zoo files), e.g. the source of the numbers
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  // GQA only. The loaders set num_kv_heads = num_heads and head_dim = 0 for MLA, whose
  // widths are in `mla` (use QkHeadDim() and VHeadDim() for either kind).
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  AttentionKind attention = AttentionKind::kGqa;
  MlaSpec mla;
  bool qkv_bias = false;  // biases on q, k, v (MLA: on q_a_proj and kv_a_proj_with_mqa)
  bool o_bias = false;    // bias on the attention output projection (Llama attention_bias)
  // GQA: an RMSNorm over each query and each key head (head_dim wide, one weight vector
  // each, shared by the heads) before RoPE: Qwen3's q_norm / k_norm.
  bool qk_norm = false;
  bool tie_embeddings = false;
  Activation activation = Activation::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  double norm_eps = 1e-6;         // the norms' epsilon (HF rms_norm_eps)
  int64_t intermediate_size = 0;  // dense FFN
  bool mlp_bias = false;          // biases on the FFN and expert matrices
  MoeSpec moe;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 0;
  DType dtype = DType::kBf16;  // the checkpoint's native dtype
  // DeepSeek-V3 multi-token-prediction modules (num_nextn_predict_layers). Not part of
  // the main forward pass; CountParameters reports them apart from the total.
  int64_t num_mtp_layers = 0;

  bool is_moe() const { return moe.num_routed_experts > 0; }
  // True when layer (0-based) has a routed-expert FFN.
  bool IsMoeLayer(int64_t layer) const;
  int64_t NumMoeLayers() const;

  // Per-head query/key width used by attention scores (MLA: nope + rope).
  int64_t QkHeadDim() const;
  // Per-head value width.
  int64_t VHeadDim() const;
  // Values cached per token per layer: GQA 2·kv_heads·head_dim; MLA kv_lora_rank + rope dim.
  int64_t KvCacheValuesPerTokenPerLayer() const;
  // The same over all layers.
  int64_t KvCacheValuesPerToken() const;

  // Checks internal consistency (positive sizes, divisibility). Names the field at fault.
  Status Validate() const;

  bool operator==(const ModelSpec&) const = default;
};

}  // namespace shardscope

#endif  // SHARDSCOPE_MODEL_MODEL_H_
