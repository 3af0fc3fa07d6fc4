#include "config/experiment.h"

#include "core/enum_names.h"

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
    case Dim::kNone:
      break;
  }
  return 1;
}

constexpr auto kRunnerKindNames = MakeEnumNames<RunnerKind>(
    {{RunnerKind::kSim, "sim"}, {RunnerKind::kCpu, "cpu"}, {RunnerKind::kCuda, "cuda"}});

std::string_view RunnerKindName(RunnerKind b) { return kRunnerKindNames.Name(b); }

StatusOr<RunnerKind> ParseRunnerKind(std::string_view name) {
  return kRunnerKindNames.ParseOrError(name, "backend");
}

namespace {

constexpr auto kSpVariantNames = MakeEnumNames<SpVariant>(
    {{SpVariant::kZigzag, "zigzag"}, {SpVariant::kRing, "ring"}, {SpVariant::kStripe, "stripe"}});
constexpr auto kRoutingKindNames = MakeEnumNames<RoutingKind>({{RoutingKind::kUniform, "uniform"},
                                                               {RoutingKind::kZipf, "zipf"},
                                                               {RoutingKind::kFixed, "fixed"}});

}  // namespace

std::string_view SpVariantName(SpVariant v) { return kSpVariantNames.Name(v); }

StatusOr<SpVariant> ParseSpVariant(std::string_view name) {
  return kSpVariantNames.ParseOrError(name, "ring-attention variant");
}

std::string_view RoutingKindName(RoutingKind k) { return kRoutingKindNames.Name(k); }

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
