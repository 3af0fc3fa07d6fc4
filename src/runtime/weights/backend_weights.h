// BackendWeights: one rank's weight shard (weights.h) copied into backend
// memory once, as typed tensors of a persistent arena the executor owns — what
// the op families read. Same fields as LayerWeights; an absent tensor (a bias
// the model lacks) is an empty TensorRef. Immutable after Upload.
#ifndef SHARDSCOPE_RUNTIME_WEIGHTS_BACKEND_WEIGHTS_H_
#define SHARDSCOPE_RUNTIME_WEIGHTS_BACKEND_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "runtime/device/backend.h"
#include "runtime/weights/weights.h"

namespace shardscope::runtime {

struct BackendExpertWeights {
  TensorRef gate_up, gate_up_bias, down, down_bias;
};

struct BackendLayerWeights {
  int64_t layer = 0;
  TensorRef input_norm, post_norm, qkv, qkv_bias;
  TensorRef q_a, q_a_bias, q_a_norm, q_b, q, kv_a, kv_a_bias, kv_a_norm, kv_b, o, o_bias;
  BackendExpertWeights ffn;
  TensorRef router, router_bias;
  std::vector<BackendExpertWeights> experts;
  BackendExpertWeights shared;
};

class BackendWeights {
 public:
  // Copies `w` into `arena` (over `backend`'s memory: Backend::NewArena) as
  // `dtype` tensors. The arena must outlive the result.
  static StatusOr<BackendWeights> Upload(const Weights& w, Backend& backend, Arena& arena,
                                         DType dtype);
  // Bytes Upload takes from an arena (each tensor aligned), to size it first.
  static int64_t UploadBytes(const Weights& w, DType dtype);

  bool has_layer(int64_t l) const;
  const BackendLayerWeights& layer(int64_t l) const;         // has_layer(l) must hold
  const TensorRef& embedding() const { return embedding_; }  // [vocab_local × h]
  const TensorRef& final_norm() const { return final_norm_; }
  const TensorRef& lm_head() const { return lm_head_; }  // [h × vocab_local]
  Slice vocab() const { return vocab_; }

 private:
  std::vector<BackendLayerWeights> layers_;
  TensorRef embedding_, final_norm_, lm_head_;
  Slice vocab_;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_WEIGHTS_BACKEND_WEIGHTS_H_
