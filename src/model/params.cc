#include "model/params.h"

namespace shardscope {
namespace {

// A norm over `width` values: RMSNorm has a weight, LayerNorm a weight and a bias.
int64_t NormParams(const ModelSpec& m, int64_t width) {
  return width * (m.norm == NormKind::kLayerNorm ? 2 : 1);
}

// FFN of the given inner width: gated has gate, up and down matrices; GELU up and down.
int64_t FfnMatrixParams(const ModelSpec& m, int64_t inner) {
  return (m.activation == Activation::kSwiGlu ? 3 : 2) * m.hidden_size * inner;
}

int64_t FfnBiasParams(const ModelSpec& m, int64_t inner) {
  if (!m.mlp_bias) return 0;
  return (m.activation == Activation::kSwiGlu ? 2 : 1) * inner + m.hidden_size;
}

int64_t AttentionBiasParams(const ModelSpec& m) {
  int64_t bias = m.o_bias ? m.hidden_size : 0;
  if (!m.qkv_bias) return bias;
  if (m.attention == AttentionKind::kMla) {
    // HF DeepSeek: attention_bias puts biases on q_a_proj and kv_a_proj_with_mqa only.
    return bias + (m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : 0) + m.mla.kv_lora_rank +
           m.mla.qk_rope_head_dim;
  }
  return bias + m.num_heads * m.head_dim + 2 * m.num_kv_heads * m.head_dim;
}

int64_t ExpertMatrixParams(const ModelSpec& m) {
  return FfnMatrixParams(m, m.moe.expert_intermediate_size);
}

int64_t RouterMatrixParams(const ModelSpec& m) { return m.moe.num_routed_experts * m.hidden_size; }

// Every parameter of one MoE decoder layer.
int64_t MoeLayerParams(const ModelSpec& m) {
  return AttentionParamsPerLayer(m) + NormParamsPerLayer(m) +
         (m.moe.num_routed_experts + m.moe.num_shared_experts) * ExpertParams(m) +
         RouterParamsPerLayer(m);
}

}  // namespace

int64_t AttentionMatrixParamsPerLayer(const ModelSpec& m) {
  const int64_t h = m.hidden_size;
  if (m.attention == AttentionKind::kMla) {
    const MlaSpec& a = m.mla;
    const int64_t q_out = m.num_heads * m.QkHeadDim();
    // q_a_proj + q_b_proj, or q_proj when q_lora_rank is 0.
    const int64_t q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * q_out : h * q_out;
    const int64_t kv_a = h * (a.kv_lora_rank + a.qk_rope_head_dim);  // kv_a_proj_with_mqa
    const int64_t kv_b = a.kv_lora_rank * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim);
    const int64_t o = m.num_heads * a.v_head_dim * h;
    return q + kv_a + kv_b + o;
  }
  const int64_t q = h * m.num_heads * m.head_dim;
  const int64_t kv = 2 * h * m.num_kv_heads * m.head_dim;
  const int64_t o = m.num_heads * m.head_dim * h;
  return q + kv + o;
}

int64_t AttentionParamsPerLayer(const ModelSpec& m) {
  return AttentionMatrixParamsPerLayer(m) + AttentionBiasParams(m);
}

int64_t NormParamsPerLayer(const ModelSpec& m) {
  int64_t n = 2 * NormParams(m, m.hidden_size);  // input and post-attention norms
  if (m.attention == AttentionKind::kMla) {
    if (m.mla.q_lora_rank > 0) n += NormParams(m, m.mla.q_lora_rank);  // q_a_layernorm
    n += NormParams(m, m.mla.kv_lora_rank);                            // kv_a_layernorm
  } else if (m.qk_norm) {
    n += 2 * NormParams(m, m.head_dim);  // q_norm and k_norm, shared by the heads
  }
  return n;
}

int64_t DenseFfnParams(const ModelSpec& m) {
  return FfnMatrixParams(m, m.intermediate_size) + FfnBiasParams(m, m.intermediate_size);
}

int64_t ExpertParams(const ModelSpec& m) {
  return ExpertMatrixParams(m) + FfnBiasParams(m, m.moe.expert_intermediate_size);
}

int64_t RouterParamsPerLayer(const ModelSpec& m) {
  if (!m.is_moe()) return 0;
  // DeepSeek-V3's e_score_correction_bias: one value per routed expert.
  const int64_t bias = m.moe.router == RouterKind::kSigmoidBias ? m.moe.num_routed_experts : 0;
  return RouterMatrixParams(m) + bias;
}

int64_t LayerParams(const ModelSpec& m, int64_t layer) {
  if (m.IsMoeLayer(layer)) return MoeLayerParams(m);
  return AttentionParamsPerLayer(m) + NormParamsPerLayer(m) + DenseFfnParams(m);
}

ParamCounts CountParameters(const ModelSpec& m) {
  ParamCounts c;
  const int64_t moe_layers = m.NumMoeLayers();
  const int64_t dense_layers = m.num_layers - moe_layers;
  const int64_t head_matrix = m.vocab_size * m.hidden_size;

  c.embedding = m.vocab_size * m.hidden_size;
  c.lm_head = m.tie_embeddings ? 0 : head_matrix;
  c.attention = m.num_layers * AttentionParamsPerLayer(m);
  c.dense_ffn = dense_layers * DenseFfnParams(m);
  c.routed_experts = moe_layers * m.moe.num_routed_experts * ExpertParams(m);
  c.shared_experts = moe_layers * m.moe.num_shared_experts * ExpertParams(m);
  c.router = moe_layers * RouterParamsPerLayer(m);
  c.norms = m.num_layers * NormParamsPerLayer(m) + NormParams(m, m.hidden_size);  // + final
  c.total = c.embedding + c.lm_head + c.attention + c.dense_ffn + c.routed_experts +
            c.shared_experts + c.router + c.norms;

  const int64_t unused_experts = m.moe.num_routed_experts - m.moe.experts_per_token;
  c.activated = c.total - moe_layers * unused_experts * ExpertParams(m);
  c.activated_matrix =
      m.num_layers * AttentionMatrixParamsPerLayer(m) +
      dense_layers * FfnMatrixParams(m, m.intermediate_size) +
      moe_layers * ((m.moe.experts_per_token + m.moe.num_shared_experts) * ExpertMatrixParams(m) +
                    RouterMatrixParams(m)) +
      head_matrix;  // the LM head multiplies even when tied to the embedding

  // An MTP module (HF DeepSeek-V3 checkpoint, layer num_layers + i): its own embedding
  // and head copies, enorm, hnorm, eh_proj (2·hidden → hidden), one MoE decoder layer,
  // and the shared head's norm.
  if (m.num_mtp_layers > 0) {
    const int64_t h = m.hidden_size;
    const int64_t block = m.is_moe() ? MoeLayerParams(m) : LayerParams(m, 0);
    c.mtp = m.num_mtp_layers * (2 * head_matrix + 3 * NormParams(m, h) + 2 * h * h + block);
  }
  return c;
}

int64_t ForwardFlopsPerToken(const ModelSpec& m, int64_t context_len) {
  const int64_t gemm = 2 * CountParameters(m).activated_matrix;
  // QK^T: 2·heads·qk_dim·context; AV: 2·heads·v_dim·context, per layer.
  const int64_t attention =
      m.num_layers * 2 * m.num_heads * context_len * (m.QkHeadDim() + m.VHeadDim());
  return gemm + attention;
}

}  // namespace shardscope
