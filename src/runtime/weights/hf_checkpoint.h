// Hugging Face checkpoints as a WeightSource: each global tensor of weights.cc
// ("L3.qkv") is the column-wise concatenation of HF tensors of the model's
// architecture (q_proj | k_proj | v_proj, each nn.Linear weight [out × in]
// transposed to our [in × out]), read block by block from the safetensors
// files, so a rank reads only its shard. Names by architecture: MLA models use
// DeepSeek-V2/V3 names, GQA MoE models Mixtral's, dense GQA models Llama's
// (Qwen2: with q/k/v biases); docs/runtime.md ("Checkpoints") has the table.
// No permutation is needed: our GQA RoPE is half-split like HF Llama's, and our
// MLA RoPE is interleaved like DeepSeek's checkpoints. Immutable; thread-safe reads.
#ifndef SHARDSCOPE_RUNTIME_WEIGHTS_HF_CHECKPOINT_H_
#define SHARDSCOPE_RUNTIME_WEIGHTS_HF_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "runtime/weights/weights.h"

namespace shardscope::runtime {

// One HF tensor as a band of columns of a global tensor.
struct HfPart {
  std::string name;            // e.g. "model.layers.0.self_attn.q_proj.weight"
  std::vector<int64_t> shape;  // as stored in the checkpoint
  std::string dims;  // the model fields behind the shape, e.g. "num_heads·head_dim, hidden_size"
  bool transposed = false;  // stored [out × in]: our columns are its rows

  // Columns it gives the global tensor.
  int64_t width() const { return transposed || shape.size() == 1 ? shape[0] : shape[1]; }
};

// The HF tensors of `model` making up global tensor `name` (weights.cc's names:
// "embedding", "final_norm", "lm_head", "L{l}.{input_norm, post_norm, qkv,
// qkv_bias, o, o_bias, q, q_a, q_a_bias, q_a_norm, q_b, kv_a, kv_a_bias,
// kv_a_norm, kv_b, router, router_bias}", "L{l}.{ffn, shared, expert{x}}.{gate_up,
// gate_up_bias, down, down_bias}"), in column order. InvalidArgument for a name
// outside that scheme; Unimplemented for GELU models (no HF convention here).
StatusOr<std::vector<HfPart>> HfPartsOf(const ModelSpec& model, const std::string& name);

// Opens the checkpoint at `path` (a .safetensors file or a checkpoint
// directory, see SafetensorsReader::Open) as the weights of `model`. Tensors are
// looked up and shape-checked when read: a missing tensor or a shape that does
// not fit the model is an error naming the file, the tensor and the model fields.
// With `shapes_only`, reads look up and check (the shapes, and every value finite
// from its raw bits) but return zeros without converting data
// (Weights::CheckCheckpoint).
StatusOr<std::unique_ptr<WeightSource>> OpenHfCheckpoint(const std::string& path,
                                                         const ModelSpec& model,
                                                         bool shapes_only = false);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_WEIGHTS_HF_CHECKPOINT_H_
