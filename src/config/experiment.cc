#include "config/experiment.h"

namespace shardscope {

int64_t ParallelSpec::Size(Dim d) const {
  switch (d) {
    case Dim::kTp:
      return tp;
    case Dim::kSp:
      return sp;
    case Dim::kEp:
      return ep;
    case Dim::kDp:
      return dp;
    case Dim::kPp:
      return pp;
  }
  return 1;
}

std::string_view DimName(Dim d) {
  switch (d) {
    case Dim::kTp:
      return "tp";
    case Dim::kSp:
      return "sp";
    case Dim::kEp:
      return "ep";
    case Dim::kDp:
      return "dp";
    case Dim::kPp:
      return "pp";
  }
  return "?";
}

StatusOr<Dim> ParseDim(std::string_view name) {
  for (int i = 0; i < kNumDims; ++i) {
    Dim d = static_cast<Dim>(i);
    if (DimName(d) == name) return d;
  }
  return InvalidArgument("unknown parallelism dimension '{}' (expected tp, sp, ep, dp or pp)",
                         name);
}

std::string_view BackendName(Backend b) {
  switch (b) {
    case Backend::kSim:
      return "sim";
    case Backend::kCpu:
      return "cpu";
    case Backend::kCuda:
      return "cuda";
  }
  return "?";
}

StatusOr<Backend> ParseBackend(std::string_view name) {
  if (name == "sim") return Backend::kSim;
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  return InvalidArgument("unknown backend '{}' (expected sim, cpu or cuda)", name);
}

std::string_view SpVariantName(SpVariant v) {
  switch (v) {
    case SpVariant::kZigzag:
      return "zigzag";
    case SpVariant::kRing:
      return "ring";
    case SpVariant::kStripe:
      return "stripe";
  }
  return "?";
}

StatusOr<SpVariant> ParseSpVariant(std::string_view name) {
  if (name == "zigzag") return SpVariant::kZigzag;
  if (name == "ring") return SpVariant::kRing;
  if (name == "stripe") return SpVariant::kStripe;
  return InvalidArgument("unknown ring-attention variant '{}' (expected zigzag, ring or stripe)",
                         name);
}

std::string_view RoutingKindName(RoutingKind k) {
  switch (k) {
    case RoutingKind::kUniform:
      return "uniform";
    case RoutingKind::kZipf:
      return "zipf";
    case RoutingKind::kFixed:
      return "fixed";
  }
  return "?";
}

const std::vector<std::string>& KnownClaimKeys() {
  static const std::vector<std::string> kKeys = {"tps", "tpot_ms", "ttft_ms", "memory_per_gpu_gb",
                                                 "decode_tokens_per_s"};
  return kKeys;
}

namespace {

// Bytes of `hidden` values of `dtype` on the wire; 8-bit types with their block scales.
int64_t PayloadBytes(DType dtype, int64_t hidden) {
  const bool scaled = dtype == DType::kFp8 || dtype == DType::kInt8;
  return hidden * DTypeSize(dtype) + (scaled ? (hidden + 127) / 128 * 4 : 0);
}

}  // namespace

Precision PrecisionOf(const Experiment& e) {
  const Workload& w = e.workload;
  Precision p =
      ResolvePrecision(e.precision, w.dtype, w.kv_dtype, w.LmHeadDType(), w.EmbeddingDType());
  if (e.model.tie_embeddings) p.lm_head = p.embedding;  // one matrix
  return p;
}

int64_t DispatchBytesPerToken(const Experiment& e, int64_t hidden) {
  return PayloadBytes(e.communication.dispatch_dtype.value_or(e.workload.dtype), hidden);
}

int64_t CombineBytesPerToken(const Experiment& e, int64_t hidden) {
  const DType dispatch = e.communication.dispatch_dtype.value_or(e.workload.dtype);
  const bool eight_bit = dispatch == DType::kFp8 || dispatch == DType::kInt8;
  const DType fallback = eight_bit ? DType::kBf16 : e.workload.dtype;
  return PayloadBytes(e.communication.combine_dtype.value_or(fallback), hidden);
}

AllToAllKind ResolvedAllToAll(const Experiment& e, bool decode) {
  const AllToAllKind kind =
      decode ? e.communication.decode_all_to_all : e.communication.prefill_all_to_all;
  if (kind != AllToAllKind::kAuto) return kind;
  const bool kernels =
      e.cluster.collectives.modelled && e.cluster.scale_up.kind == ScaleUpKind::kSwitched;
  if (!kernels) return AllToAllKind::kNccl;
  return decode ? AllToAllKind::kLowLatency : AllToAllKind::kHierarchical;
}

}  // namespace shardscope
