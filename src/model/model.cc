#include "model/model.h"

namespace shardscope {
namespace {

// The most layers a model may have: published models have a few hundred at most,
// and every layer becomes ops on every rank (1e8 would exhaust memory).
constexpr int64_t kMaxLayers = 10'000;

// "field 'path': problem", the form every Validate error takes.
template <typename... Args>
Status FieldError(std::string_view field, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidArgument("field '{}': {}", field, fmt::format(f, std::forward<Args>(args)...));
}

Status AtLeast(std::string_view field, int64_t value, int64_t min) {
  if (value < min) return FieldError(field, "must be at least {}, got {}", min, value);
  return Status::Ok();
}

}  // namespace

bool ModelSpec::IsMoeLayer(int64_t layer) const {
  if (!is_moe() || layer < moe.first_dense_layers || layer >= num_layers) return false;
  return moe.moe_layer_freq <= 1 || layer % moe.moe_layer_freq == 0;
}

int64_t ModelSpec::NumMoeLayers() const {
  int64_t n = 0;
  for (int64_t layer = 0; layer < num_layers; ++layer) n += IsMoeLayer(layer) ? 1 : 0;
  return n;
}

int64_t ModelSpec::QkHeadDim() const {
  return attention == AttentionKind::kMla ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim;
}

int64_t ModelSpec::VHeadDim() const {
  return attention == AttentionKind::kMla ? mla.v_head_dim : head_dim;
}

int64_t ModelSpec::KvCacheValuesPerTokenPerLayer() const {
  // MLA caches the compressed latent and the shared rope key, not per-head K and V.
  if (attention == AttentionKind::kMla) return mla.kv_lora_rank + mla.qk_rope_head_dim;
  return 2 * num_kv_heads * head_dim;
}

int64_t ModelSpec::KvCacheValuesPerToken() const {
  return num_layers * KvCacheValuesPerTokenPerLayer();
}

Status ModelSpec::Validate() const {
  RETURN_IF_ERROR(AtLeast("vocab_size", vocab_size, 1));
  RETURN_IF_ERROR(AtLeast("hidden_size", hidden_size, 1));
  RETURN_IF_ERROR(AtLeast("num_layers", num_layers, 1));
  if (num_layers > kMaxLayers) {
    return FieldError("num_layers", "is {}: at most {} layers are supported", num_layers,
                      kMaxLayers);
  }
  RETURN_IF_ERROR(AtLeast("num_heads", num_heads, 1));
  if (attention == AttentionKind::kGqa) {
    RETURN_IF_ERROR(AtLeast("num_kv_heads", num_kv_heads, 1));
    if (num_heads % num_kv_heads != 0) {
      return FieldError("num_kv_heads", "{} does not divide num_heads {}", num_kv_heads, num_heads);
    }
    RETURN_IF_ERROR(AtLeast("head_dim", head_dim, 1));
  } else {
    RETURN_IF_ERROR(AtLeast("mla.q_lora_rank", mla.q_lora_rank, 0));
    RETURN_IF_ERROR(AtLeast("mla.kv_lora_rank", mla.kv_lora_rank, 1));
    RETURN_IF_ERROR(AtLeast("mla.qk_nope_head_dim", mla.qk_nope_head_dim, 1));
    RETURN_IF_ERROR(AtLeast("mla.qk_rope_head_dim", mla.qk_rope_head_dim, 0));
    RETURN_IF_ERROR(AtLeast("mla.v_head_dim", mla.v_head_dim, 1));
    if (qk_norm)
      return FieldError("qk_norm", "is a GQA option (MLA has its own q_a and kv_a norms)");
  }
  if (!(norm_eps > 0)) return FieldError("norm_eps", "must be positive, got {}", norm_eps);
  if (!(rope_theta > 0)) return FieldError("rope_theta", "must be positive, got {}", rope_theta);
  if (rope_scaling.kind != RopeScalingKind::kNone) {
    if (!(rope_scaling.factor > 0)) {
      return FieldError("rope_scaling.factor", "must be positive, got {}", rope_scaling.factor);
    }
    if (rope_scaling.kind != RopeScalingKind::kLinear) {
      RETURN_IF_ERROR(AtLeast("rope_scaling.original_max_position_embeddings",
                              rope_scaling.original_max_positions, 1));
    }
    if (rope_scaling.kind == RopeScalingKind::kLlama3 &&
        !(rope_scaling.low_freq_factor < rope_scaling.high_freq_factor)) {
      return FieldError("rope_scaling.low_freq_factor", "{} must be below high_freq_factor {}",
                        rope_scaling.low_freq_factor, rope_scaling.high_freq_factor);
    }
  }
  RETURN_IF_ERROR(AtLeast("max_position_embeddings", max_position_embeddings, 0));
  RETURN_IF_ERROR(AtLeast("num_mtp_layers", num_mtp_layers, 0));

  RETURN_IF_ERROR(AtLeast("moe.num_routed_experts", moe.num_routed_experts, 0));
  if (!is_moe()) {
    // A dense model must not carry MoE settings that would silently be ignored.
    if (moe.experts_per_token != 0 || moe.num_shared_experts != 0) {
      return FieldError(
          moe.experts_per_token != 0 ? "moe.experts_per_token" : "moe.num_shared_experts",
          "is set but moe.num_routed_experts is 0 (a dense model)");
    }
    return AtLeast("intermediate_size", intermediate_size, 1);
  }

  const int64_t experts = moe.num_routed_experts;
  RETURN_IF_ERROR(AtLeast("moe.experts_per_token", moe.experts_per_token, 1));
  if (moe.experts_per_token > experts) {
    return FieldError("moe.experts_per_token", "{} exceeds moe.num_routed_experts {}",
                      moe.experts_per_token, experts);
  }
  RETURN_IF_ERROR(AtLeast("moe.num_shared_experts", moe.num_shared_experts, 0));
  RETURN_IF_ERROR(AtLeast("moe.expert_intermediate_size", moe.expert_intermediate_size, 1));
  RETURN_IF_ERROR(AtLeast("moe.first_dense_layers", moe.first_dense_layers, 0));
  if (moe.first_dense_layers > num_layers) {
    return FieldError("moe.first_dense_layers", "{} exceeds num_layers {}", moe.first_dense_layers,
                      num_layers);
  }
  RETURN_IF_ERROR(AtLeast("moe.moe_layer_freq", moe.moe_layer_freq, 1));
  if (NumMoeLayers() == 0) {
    return FieldError("moe.first_dense_layers", "leaves no MoE layer among the {} layers",
                      num_layers);
  }
  // The dense FFN size matters only when some layer is dense.
  if (NumMoeLayers() < num_layers) {
    RETURN_IF_ERROR(AtLeast("intermediate_size", intermediate_size, 1));
  } else {
    RETURN_IF_ERROR(AtLeast("intermediate_size", intermediate_size, 0));
  }
  RETURN_IF_ERROR(AtLeast("moe.n_group", moe.n_group, 1));
  if (experts % moe.n_group != 0) {
    return FieldError("moe.n_group", "{} does not divide moe.num_routed_experts {}", moe.n_group,
                      experts);
  }
  RETURN_IF_ERROR(AtLeast("moe.topk_group", moe.topk_group, 1));
  if (!(moe.routed_scaling_factor > 0)) {
    return FieldError("moe.routed_scaling_factor", "must be positive, got {}",
                      moe.routed_scaling_factor);
  }
  if (moe.topk_group > moe.n_group) {
    return FieldError("moe.topk_group", "{} exceeds moe.n_group {}", moe.topk_group, moe.n_group);
  }
  const int64_t reachable = moe.topk_group * (experts / moe.n_group);
  if (moe.experts_per_token > reachable) {
    return FieldError("moe.experts_per_token",
                      "{} exceeds the {} experts in moe.topk_group {} groups of {}",
                      moe.experts_per_token, reachable, moe.topk_group, experts / moe.n_group);
  }
  return Status::Ok();
}

}  // namespace shardscope
