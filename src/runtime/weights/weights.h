// Weights: one rank's shard of a model's parameters, fp32, so that every plan
// sees the same global weights and a rank builds only the rows or columns of
// its shard (docs/runtime.md lists the tensors and how each is split). The
// values come from a WeightSource: by default initialised deterministically
// from a seed (element (i, j) of global tensor "name" is a pure function of
// (seed, name, i, j)), or read from a Hugging Face safetensors checkpoint
// (hf_checkpoint.h). Matrices are [in × out] (y = x · W). Immutable after
// Create; thread-compatible.
#ifndef SHARDSCOPE_RUNTIME_WEIGHTS_WEIGHTS_H_
#define SHARDSCOPE_RUNTIME_WEIGHTS_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "plan/placement.h"
#include "plan/shard_geometry.h"
#include "runtime/weights/tensor.h"

namespace shardscope::runtime {

// A contiguous [begin, begin + count) slice of one dimension (ShardGeometry's ranges).
using Slice = Range;

// Value of element `index` of global tensor `name`: uniform in [−scale, scale).
float InitValue(uint64_t seed, const std::string& name, int64_t index, float scale);

// Rows × column-slices of a global [rows × cols] matrix, concatenated column-wise.
Tensor InitColumns(uint64_t seed, const std::string& name, int64_t rows, int64_t cols,
                   const std::vector<Slice>& slices, float scale, float offset = 0.0f);
// A row slice of a global [rows × cols] matrix.
Tensor InitRows(uint64_t seed, const std::string& name, int64_t rows, int64_t cols, Slice slice,
                float scale, float offset = 0.0f);

// Where the values of the global tensors come from. Tensors are named as the
// seeded scheme names them ("embedding", "L3.qkv", "L1.expert5.gate_up"; a
// vector is a matrix of one row); `init` is how the seed draws them (uniform in
// offset ± scale) and is ignored by other sources. Errors name the source, the
// tensor and the field.
class WeightSource {
 public:
  struct Init {
    float scale = 1.0f, offset = 0.0f;
  };
  virtual ~WeightSource() = default;
  // Column slices of global [rows × cols] tensor `name`, concatenated column-wise
  // (shape [width] when rows is 1, else [rows × width]).
  virtual StatusOr<Tensor> Columns(const std::string& name, int64_t rows, int64_t cols,
                                   const std::vector<Slice>& slices, Init init) const = 0;
  // A row slice of global [rows × cols] tensor `name`: [slice.count × cols].
  virtual StatusOr<Tensor> Rows(const std::string& name, int64_t rows, int64_t cols, Slice slice,
                                Init init) const = 0;
};

// The seeded source (InitColumns / InitRows with `seed`).
std::unique_ptr<WeightSource> SeededWeightSource(uint64_t seed);

struct ExpertWeights {
  Tensor gate_up, gate_up_bias;  // [h × (2)·I_local]: gate columns then up columns
  Tensor down, down_bias;        // [I_local × h]; bias only on tp coordinate 0
};

struct LayerWeights {
  int64_t layer = 0;
  Tensor input_norm, post_norm;  // [h]
  // GQA: fused [h × (hq + 2·hkv)·d] = local q heads | local k heads | local v heads.
  Tensor qkv, qkv_bias;
  // MLA.
  Tensor q_a, q_a_bias, q_a_norm, q_b;  // q_lora_rank > 0
  Tensor q;                             // [h × hq·(nope + rope)] when q_lora_rank = 0
  Tensor kv_a, kv_a_bias, kv_a_norm;    // [h × (r + rope)], replicated over tp
  Tensor kv_b;                          // [r × hq·(nope + v)]: per head k_nope | v
  Tensor o, o_bias;                     // [hq·v × h]; bias on tp coordinate 0
  // FFN: dense, or MoE (router, local experts, shared experts).
  ExpertWeights ffn;
  Tensor router, router_bias;          // [h × E], [E]
  std::vector<ExpertWeights> experts;  // Placement::ExpertsOfEpRank order
  ExpertWeights shared;                // all shared experts as one FFN
};

class Weights {
 public:
  // Builds the shard of global rank `rank` (its stage's layers; embedding on the
  // first stage, final norm and LM head on the last) from the experiment's
  // checkpoint (workload.checkpoint), or from its seed when it names none.
  static StatusOr<Weights> Create(const Experiment& experiment, const Placement& placement,
                                  int64_t rank);
  // The same from an explicit source.
  static StatusOr<Weights> Create(const Experiment& experiment, const Placement& placement,
                                  int64_t rank, const WeightSource& source);
  // Checks, without reading tensor data, that the experiment's checkpoint holds
  // every tensor any rank will read, with the shape the model needs: what the
  // launcher runs before starting the ranks. OK when it names no checkpoint.
  static Status CheckCheckpoint(const Experiment& experiment, const Placement& placement);

  const LayerWeights& layer(int64_t l) const;
  const std::vector<LayerWeights>& layers() const { return layers_; }
  bool has_layer(int64_t l) const;
  const Tensor& embedding() const { return embedding_; }  // [vocab_local × h]
  const Tensor& final_norm() const { return final_norm_; }
  const Tensor& lm_head() const { return lm_head_; }  // [h × vocab_local]
  Slice vocab() const { return vocab_; }
  // Parameters held by this rank (floats).
  int64_t num_parameters() const;

 private:
  std::vector<LayerWeights> layers_;  // this stage's layers
  Tensor embedding_, final_norm_, lm_head_;
  Slice vocab_;
};

// Token id of prompt position `pos` of global request `request` (uniform over the vocabulary).
int32_t PromptToken(uint64_t seed, int64_t request, int64_t pos, int64_t vocab);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_WEIGHTS_WEIGHTS_H_
