// Precision: the dtype of each role an experiment's tensors play — weights,
// GEMM inputs (activation quantisation), activations (elementwise ops, norms,
// the residual stream, attention's Q and output), the KV cache, the vocabulary
// matrices and the TP all-reduces — with the scales of quantised ones. The
// experiment's `precision:` block (docs/configuration.md) names presets and
// overrides; a role it leaves out keeps the workload's legacy fields (`dtype`,
// `kv_dtype`, `lm_head_dtype`, `embedding_dtype`), so an experiment without one
// is costed exactly as before. Plain value types.
#ifndef SHARDSCOPE_CONFIG_PRECISION_H_
#define SHARDSCOPE_CONFIG_PRECISION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace shardscope {

// How a quantised tensor carries its scales.
enum class ScaleKind {
  kNone,          // not quantised (or one scale nobody counts)
  kTensor,        // one fp32 scale per tensor; GEMM inputs: dynamic (an amax pass, then the cast)
  kStaticTensor,  // GEMM inputs: one calibrated fp32 scale, a single cast pass
  kChannel,       // weights: one fp32 scale per output channel
  kToken,         // GEMM inputs: one fp32 scale per token (row), one pass
  kBlock,         // weights: one fp32 scale per block × block tile (DeepSeek-V3: 128 × 128)
  kGroup,         // one scale per `block` values along k (weights: bf16 scales, W4A16;
                  // GEMM inputs: fp32 per token and group, DeepSeek-V3's 1 × 128)
};

struct Scales {
  ScaleKind kind = ScaleKind::kNone;
  int64_t block = 128;  // kBlock and kGroup: values per block along each blocked axis
  bool operator==(const Scales&) const = default;
};

// The `precision:` block as written: presets expanded into the roles they set,
// every role optional (absent: the workload's legacy field).
struct PrecisionSpec {
  std::vector<std::string> schemes;  // preset names, in the order applied
  std::optional<DType> weights;      // transformer-layer matrices (not the vocabulary ones)
  std::optional<int> weight_bits;    // 4 for int4; else the dtype's
  std::optional<Scales> weight_scales;
  std::optional<DType> gemm_inputs;  // what each GEMM's input is quantised to
  std::optional<Scales> input_scales;
  std::optional<DType> activations;
  std::optional<DType> kv_cache;
  std::optional<DType> lm_head;
  std::optional<DType> embedding;
  std::optional<DType> all_reduce;
  // Set by presets that dispatch expert-parallel tokens in FP8 (deepseek-fp8);
  // the loader applies it to communication.dispatch_dtype when that is not given.
  std::optional<DType> dispatch;

  bool given() const {
    return !schemes.empty() || weights || weight_bits || weight_scales || gemm_inputs ||
           input_scales || activations || kv_cache || lm_head || embedding || all_reduce;
  }
  bool operator==(const PrecisionSpec&) const = default;
};

// Every role resolved (ResolvePrecision).
struct Precision {
  bool roles = false;  // a `precision:` block was given; false: the legacy fields alone
  DType weights = DType::kBf16;
  int weight_bits = 16;
  Scales weight_scales;
  DType gemm_inputs = DType::kBf16;
  Scales input_scales;
  DType activations = DType::kBf16;
  DType kv_cache = DType::kBf16;
  DType lm_head = DType::kBf16;
  DType embedding = DType::kBf16;
  DType all_reduce = DType::kBf16;

  // Whether each GEMM's input is cast to another dtype first (a quantisation op).
  bool QuantisedInputs() const { return gemm_inputs != activations; }
  // The dtype a GEMM computes in: FP8 (INT8) only when both operands are FP8
  // (INT8); otherwise its input's — W4A16 and W8A16 dequantise their weights
  // in the kernel and run at the input's peak.
  DType GemmDType() const;
  // Bytes of a k × n weight matrix in the weight dtype, with its scales.
  int64_t WeightBytes(int64_t k, int64_t n) const;
  // The same per weight parameter, for the memory plan (`k`: the input width
  // per-channel and group scales are counted over).
  double WeightBytesPerParam(int64_t k) const;
  // Bytes of an m × k GEMM input in gemm_inputs, with its scales.
  int64_t InputBytes(int64_t m, int64_t k) const;
  // Passes a quantisation op reads its m × k input in (dynamic per-tensor: 2).
  int64_t QuantReadPasses() const;
  std::string WeightName() const;  // "fp8", "int4", …
};

// The roles of a workload's legacy fields overridden by `spec`'s.
Precision ResolvePrecision(const PrecisionSpec& spec, DType dtype, DType kv_dtype, DType lm_head,
                           DType embedding);

// Applies the preset `name` ("bf16", "w8a8-fp8", "deepseek-fp8", "w4a16",
// "fp8-kv") to `spec`: sets the roles it names. Fails naming the known presets.
Status ApplyPrecisionPreset(std::string_view name, PrecisionSpec* spec);
const std::vector<std::string>& PrecisionPresetNames();

// Weight formats: "bf16", "fp16", "fp32", "fp8", "int8", "int4" → dtype and bits.
StatusOr<std::pair<DType, int>> ParseWeightFormat(std::string_view name);
// "none", "tensor", "static_tensor", "channel", "token", "block_128", "group_128"
// (any block or group size ≥ 1 after the underscore).
StatusOr<Scales> ParseScales(std::string_view name);
std::string ScalesName(const Scales& s);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_PRECISION_H_
