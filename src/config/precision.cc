#include "config/precision.h"

#include <charconv>
#include <optional>

#include "core/enum_names.h"

namespace shardscope {
namespace {

constexpr int64_t kFp32Scale = 4;  // bytes of an fp32 scale
constexpr int64_t kBf16Scale = 2;  // group-quantised weights (GPTQ, AWQ) keep 16-bit scales

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool EightBit(DType d) { return d == DType::kFp8 || d == DType::kInt8; }

// The scale kinds' names; block and group carry their size after an underscore ("block_128").
constexpr auto kScaleKindNames = MakeEnumNames<ScaleKind>({
    {ScaleKind::kNone, "none"},
    {ScaleKind::kTensor, "tensor"},
    {ScaleKind::kStaticTensor, "static_tensor"},
    {ScaleKind::kChannel, "channel"},
    {ScaleKind::kToken, "token"},
    {ScaleKind::kBlock, "block"},
    {ScaleKind::kGroup, "group"},
});
static_assert(kScaleKindNames.InEnumOrder() &&
              kScaleKindNames.entries().back().value == ScaleKind::kGroup);

bool Sized(ScaleKind kind) { return kind == ScaleKind::kBlock || kind == ScaleKind::kGroup; }

}  // namespace

DType Precision::GemmDType() const {
  if (EightBit(gemm_inputs) && weights == gemm_inputs && weight_bits == 8) return gemm_inputs;
  return EightBit(gemm_inputs) ? activations : gemm_inputs;
}

int64_t Precision::WeightBytes(int64_t k, int64_t n) const {
  const int64_t values = k * n * weight_bits / 8;
  switch (weight_scales.kind) {
    case ScaleKind::kNone:
    case ScaleKind::kStaticTensor:
    case ScaleKind::kToken:
      return values;
    case ScaleKind::kTensor:
      return values + kFp32Scale;
    case ScaleKind::kChannel:
      return values + n * kFp32Scale;
    case ScaleKind::kBlock:
      return values +
             CeilDiv(k, weight_scales.block) * CeilDiv(n, weight_scales.block) * kFp32Scale;
    case ScaleKind::kGroup:
      return values + CeilDiv(k, weight_scales.block) * n * kBf16Scale;
  }
  return values;
}

double Precision::WeightBytesPerParam(int64_t k) const {
  const double value = weight_bits / 8.0;
  const double b = static_cast<double>(weight_scales.block);
  switch (weight_scales.kind) {
    case ScaleKind::kNone:
    case ScaleKind::kStaticTensor:
    case ScaleKind::kToken:
    case ScaleKind::kTensor:
      return value;
    case ScaleKind::kChannel:
      return value + (k > 0 ? static_cast<double>(kFp32Scale) / static_cast<double>(k) : 0);
    case ScaleKind::kBlock:
      return value + kFp32Scale / (b * b);
    case ScaleKind::kGroup:
      return value + kBf16Scale / b;
  }
  return value;
}

int64_t Precision::InputBytes(int64_t m, int64_t k) const {
  const int64_t values = m * k * DTypeSize(gemm_inputs);
  if (!QuantisedInputs()) return values;
  switch (input_scales.kind) {
    case ScaleKind::kTensor:
    case ScaleKind::kStaticTensor:
      return values + kFp32Scale;
    case ScaleKind::kToken:
      return values + m * kFp32Scale;
    case ScaleKind::kGroup:
      return values + m * CeilDiv(k, input_scales.block) * kFp32Scale;
    case ScaleKind::kNone:
    case ScaleKind::kChannel:
    case ScaleKind::kBlock:
      return values;
  }
  return values;
}

int64_t Precision::QuantReadPasses() const {
  return input_scales.kind == ScaleKind::kTensor ? 2 : 1;
}

std::string Precision::WeightName() const {
  if (weight_bits == 4) return "int4";
  return std::string(DTypeName(weights));
}

Precision ResolvePrecision(const PrecisionSpec& spec, DType dtype, DType kv_dtype, DType lm_head,
                           DType embedding) {
  Precision p;
  p.roles = spec.given();
  p.weights = spec.weights.value_or(dtype);
  p.weight_bits = spec.weight_bits.value_or(static_cast<int>(DTypeSize(p.weights) * 8));
  p.weight_scales = spec.weight_scales.value_or(Scales{});
  p.activations = spec.activations.value_or(dtype);
  p.gemm_inputs = spec.gemm_inputs.value_or(p.activations);
  p.input_scales = spec.input_scales.value_or(Scales{});
  p.kv_cache = spec.kv_cache.value_or(kv_dtype);
  p.lm_head = spec.lm_head.value_or(lm_head);
  p.embedding = spec.embedding.value_or(embedding);
  p.all_reduce = spec.all_reduce.value_or(p.activations);
  return p;
}

const std::vector<std::string>& PrecisionPresetNames() {
  static const std::vector<std::string> kNames = {"bf16", "w8a8-fp8", "deepseek-fp8", "w4a16",
                                                  "fp8-kv"};
  return kNames;
}

Status ApplyPrecisionPreset(std::string_view name, PrecisionSpec* spec) {
  if (name == "bf16") {
    // The checkpoint's dtype everywhere: every role from the legacy fields.
  } else if (name == "w8a8-fp8") {
    // Per-tensor FP8 weights and dynamically quantised per-tensor FP8 GEMM
    // inputs (vLLM's `fp8`, llm-compressor FP8 checkpoints); the rest as the model runs.
    spec->weights = DType::kFp8;
    spec->weight_bits = 8;
    spec->weight_scales = Scales{ScaleKind::kTensor, 128};
    spec->gemm_inputs = DType::kFp8;
    spec->input_scales = Scales{ScaleKind::kTensor, 128};
  } else if (name == "deepseek-fp8") {
    // DeepSeek-V3's recipe: FP8 weights with one scale per 128 × 128 block,
    // inputs quantised per token and 128-value group, dispatch in FP8.
    spec->weights = DType::kFp8;
    spec->weight_bits = 8;
    spec->weight_scales = Scales{ScaleKind::kBlock, 128};
    spec->gemm_inputs = DType::kFp8;
    spec->input_scales = Scales{ScaleKind::kGroup, 128};
    spec->dispatch = DType::kFp8;
  } else if (name == "w4a16") {
    // GPTQ / AWQ: 4-bit weights with a 16-bit scale per 128 inputs, dequantised
    // in the GEMM kernel (Marlin); inputs stay in the activation dtype.
    spec->weights = DType::kInt8;
    spec->weight_bits = 4;
    spec->weight_scales = Scales{ScaleKind::kGroup, 128};
  } else if (name == "fp8-kv") {
    spec->kv_cache = DType::kFp8;
  } else {
    std::string known;
    for (const std::string& n : PrecisionPresetNames()) known += (known.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown precision scheme '{}' (known: {})", name, known);
  }
  spec->schemes.emplace_back(name);
  return Status::Ok();
}

StatusOr<std::pair<DType, int>> ParseWeightFormat(std::string_view name) {
  if (name == "int4") return std::pair{DType::kInt8, 4};
  StatusOr<DType> d = ParseDType(name);
  if (!d.ok()) {
    return InvalidArgument("unknown weight format '{}' (bf16, fp16, fp32, fp8, int8, int4)", name);
  }
  return std::pair{*d, static_cast<int>(DTypeSize(*d) * 8)};
}

StatusOr<Scales> ParseScales(std::string_view name) {
  std::optional<ScaleKind> kind = kScaleKindNames.Parse(name);
  if (kind && !Sized(*kind)) return Scales{*kind, 128};
  if (const size_t cut = name.rfind('_'); cut != std::string_view::npos) {
    kind = kScaleKindNames.Parse(name.substr(0, cut));
    const std::string_view digits = name.substr(cut + 1);
    int64_t block = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), block);
    if (kind && Sized(*kind) && ec == std::errc() && end == digits.data() + digits.size() &&
        block >= 1) {
      return Scales{*kind, block};
    }
  }
  return InvalidArgument(
      "unknown scales '{}' (none, tensor, static_tensor, channel, token, block_N, group_N)", name);
}

std::string ScalesName(const Scales& s) {
  std::string name(kScaleKindNames.Name(s.kind));
  if (Sized(s.kind)) name += "_" + std::to_string(s.block);
  return name;
}

}  // namespace shardscope
