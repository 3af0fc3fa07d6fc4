#include "sim/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "core/enum_names.h"
#include "core/yaml_reader.h"

namespace shardscope::sim {
namespace {

constexpr auto kOpClassNames =
    MakeEnumNames<OpClass>({{OpClass::kGemm, "gemm"},
                            {OpClass::kAttention, "attention"},
                            {OpClass::kAttentionDecode, "attention_decode"},
                            {OpClass::kElementwise, "elementwise"},
                            {OpClass::kGather, "gather"},
                            {OpClass::kGemv, "gemv"},
                            {OpClass::kSmallGemm, "small_gemm"}});
static_assert(kOpClassNames.InEnumOrder() &&
              kOpClassNames.entries().back().value == OpClass::kSmallGemm);

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Calibration Make(std::string source, Efficiency gemm, Efficiency attention, double memory) {
  Calibration c;
  c.source = std::move(source);
  c.classes[OpClass::kGemm] = gemm;
  c.classes[OpClass::kAttention] = attention;
  // Decode attention and elementwise kernels stream memory; their FLOP
  // efficiency only matters when they are unusually compute-heavy.
  c.classes[OpClass::kAttentionDecode] = {0.5, memory, 0};
  c.classes[OpClass::kElementwise] = {0.5, memory, 0};
  // Gathers (embedding rows, permutes) touch scattered rows: lower bandwidth.
  c.classes[OpClass::kGather] = {0.5, memory * 0.8, 0};
  // A matrix-vector product streams its weights once: the GEMM's FLOP
  // efficiency without the row ramp (there are no tiles to fill), so it is
  // bandwidth-bound wherever its 2 FLOPs per weight are below the ridge point.
  c.classes[OpClass::kGemv] = {gemm.flops, memory, 0};
  // Unused unless small_gemm_rows > 0: the GEMM's own entry.
  c.classes[OpClass::kSmallGemm] = gemm;
  return c;
}

// Graph-replayed kernels' device-side fixed costs (Efficiency::replay), from
// our own bf16 fits (bench/gpu/results/<gpu>/calibrate_bf16.txt, docs/
// fidelity.md "GPUs"). The sweep times each op as one node of a CUDA graph of R
// copies replayed back to back, and `calibrate` fits time = roofline + a fixed
// cost per class, so that cost is what a node takes besides its roofline,
// the next node's issue included (an empty kernel's interval in a graph, 0.78
// and 0.50 µs, is part of it, not added again). H100 / H200: gemm 3.16 / 3.55,
// gemv (m = 1) 2.82 / 3.98, elementwise 1.78 / 1.78, gather 2.24 / 2.51 µs.
// Attention is not measured: the elementwise figure, the smallest class's (a
// lower bound). Checked against 32 Llama-3.1-8B decode layers replayed as one
// graph (decode_layers_graph, not fitted): the default tables with these give
// −5.4 to +4.7 % (m = 1, 16, 128 on both), without them −12 to −22 %.
void SetReplayCosts(Calibration* c, bool h200) {
  const double gemm = h200 ? 3.55e-6 : 3.16e-6;
  const double elementwise = 1.78e-6;
  c->classes[OpClass::kGemm].replay = gemm;
  c->classes[OpClass::kSmallGemm].replay = gemm;
  c->classes[OpClass::kGemv].replay = h200 ? 3.98e-6 : 2.82e-6;
  c->classes[OpClass::kElementwise].replay = elementwise;
  c->classes[OpClass::kGather].replay = h200 ? 2.51e-6 : 2.24e-6;
  c->classes[OpClass::kAttention].replay = elementwise;
  c->classes[OpClass::kAttentionDecode].replay = elementwise;
}

Status ReadEfficiency(const YamlMap& m, Efficiency* e) {
  RETURN_IF_ERROR(
      m.CheckKeys({"flops_efficiency", "memory_efficiency", "half_rows", "launch_us", "replay_us",
                   "cache_bandwidth_gb_s", "ramp_from_cache", "cache_flops_efficiency"}));
  RETURN_IF_ERROR(m.Optional("ramp_from_cache", &e->cache_ramp));
  RETURN_IF_ERROR(m.Optional("flops_efficiency", &e->flops));
  RETURN_IF_ERROR(m.Optional("memory_efficiency", &e->memory));
  RETURN_IF_ERROR(m.Optional("half_rows", &e->half_rows));
  // Fixed costs in µs, finite and ≥ 0; absent: unchanged (< 0, none).
  for (const auto& [key, seconds] :
       {std::pair{"launch_us", &e->launch}, {"replay_us", &e->replay}}) {
    if (!m.Has(key)) continue;
    double us = 0;
    RETURN_IF_ERROR(m.Optional(key, &us));
    if (!(us >= 0) || !std::isfinite(us)) {
      return m.context().Error(fmt::format("{} is {}: must be finite and ≥ 0", key, us));
    }
    *seconds = us * 1e-6;
  }
  double cache_gb_s = -1;
  RETURN_IF_ERROR(m.OptionalPositive("cache_bandwidth_gb_s", &cache_gb_s));
  if (cache_gb_s > 0) e->cache = cache_gb_s * 1e9;
  RETURN_IF_ERROR(m.OptionalPositive("cache_flops_efficiency", &e->cache_flops));
  return Status::Ok();
}

Status CheckFraction(double v, std::string_view what) {
  if (!(v > 0 && v <= 1)) {
    return InvalidArgument("{} is {}: an efficiency must be in (0, 1] (nothing beats the peak)",
                           what, v);
  }
  return Status::Ok();
}

}  // namespace

OpClass ClassOf(OpKind kind) {
  switch (kind) {
    case OpKind::kQkvProj:
    case OpKind::kQProj:
    case OpKind::kKvProj:
    case OpKind::kKvUpProj:
    case OpKind::kOutProj:
    case OpKind::kRouter:
    case OpKind::kExpertGemm:
    case OpKind::kSharedExpert:
    case OpKind::kFfnUp:
    case OpKind::kFfnDown:
    case OpKind::kLmHead:
      return OpClass::kGemm;
    case OpKind::kAttention:
      return OpClass::kAttention;
    case OpKind::kAttentionDecode:
      return OpClass::kAttentionDecode;
    case OpKind::kEmbedding:
    case OpKind::kPermute:
    case OpKind::kUnpermute:
      return OpClass::kGather;
    default:
      return OpClass::kElementwise;
  }
}

OpClass ClassOfShape(OpKind kind, double rows, double small_gemm_rows) {
  const OpClass c = ClassOf(kind);
  if (c != OpClass::kGemm || !(rows > 0)) return c;
  if (rows <= 1) return OpClass::kGemv;
  return rows <= small_gemm_rows ? OpClass::kSmallGemm : c;
}

StatusOr<OpKind> ParseOpKind(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(OpKind::kComm); ++k) {
    if (OpKindName(static_cast<OpKind>(k)) == name) return static_cast<OpKind>(k);
  }
  return InvalidArgument("unknown op class or kind '{}'", name);
}

StatusOr<OpClass> ParseOpClass(std::string_view name) {
  if (std::optional<OpClass> c = kOpClassNames.Parse(name)) return *c;
  return InvalidArgument("unknown op class '{}'", name);
}

std::string_view OpClassName(OpClass c) { return kOpClassNames.Name(c); }

const Efficiency& Calibration::For(OpKind kind) const {
  auto k = kinds.find(kind);
  if (k != kinds.end()) return k->second;
  return classes.at(ClassOf(kind));
}

const Efficiency& Calibration::For(OpKind kind, double rows) const {
  auto k = kinds.find(kind);
  if (k != kinds.end()) return k->second;
  return classes.at(ClassOfShape(kind, rows, small_gemm_rows));
}

Status Calibration::Validate() const {
  auto check = [](const Efficiency& e, std::string_view name) -> Status {
    RETURN_IF_ERROR(CheckFraction(e.flops, fmt::format("{}.flops_efficiency", name)));
    RETURN_IF_ERROR(CheckFraction(e.memory, fmt::format("{}.memory_efficiency", name)));
    if (e.half_rows < 0) return InvalidArgument("{}.half_rows must be ≥ 0", name);
    if (!std::isfinite(e.launch)) return InvalidArgument("{}.launch_us must be finite", name);
    if (!std::isfinite(e.replay)) return InvalidArgument("{}.replay_us must be finite", name);
    if (!std::isfinite(e.cache) || e.cache == 0) {
      return InvalidArgument("{}.cache_bandwidth_gb_s must be finite and positive", name);
    }
    if (e.cache_flops > 0 || std::isnan(e.cache_flops)) {
      RETURN_IF_ERROR(CheckFraction(e.cache_flops, fmt::format("{}.cache_flops_efficiency", name)));
    }
    return Status::Ok();
  };
  for (const EnumName<OpClass>& entry : kOpClassNames.entries()) {
    const OpClass c = entry.value;
    if (!classes.count(c)) return InvalidArgument("op class '{}' has no entry", OpClassName(c));
    RETURN_IF_ERROR(check(classes.at(c), OpClassName(c)));
  }
  for (const auto& [kind, e] : kinds) RETURN_IF_ERROR(check(e, OpKindName(kind)));
  if (fp8_block_gemm) {
    RETURN_IF_ERROR(CheckFraction(fp8_block_gemm->flops, "fp8_block_gemm.flops_efficiency"));
    RETURN_IF_ERROR(CheckFraction(fp8_block_gemm->memory, "fp8_block_gemm.memory_efficiency"));
    if (!(fp8_block_gemm->half_rows >= 0) || !(fp8_block_gemm->half_k >= 0)) {
      return InvalidArgument("fp8_block_gemm.half_rows and half_k must be ≥ 0");
    }
  }
  RETURN_IF_ERROR(CheckFraction(network_efficiency, "network_efficiency"));
  if (!(small_gemm_rows >= 0) || !std::isfinite(small_gemm_rows)) {
    return InvalidArgument("small_gemm_rows is {}: must be finite and ≥ 0 (0: no small-GEMM class)",
                           small_gemm_rows);
  }
  if (!(cache_bandwidth >= 0) || !std::isfinite(cache_bandwidth)) {
    return InvalidArgument("cache_bandwidth_gb_s must be finite and ≥ 0 (0: off)");
  }
  const std::pair<double, std::string_view> times[] = {
      {terms.request_overhead, "request_overhead_us"},
      {terms.response_overhead, "response_overhead_us"},
      {terms.iteration_overhead, "iteration_overhead_us"},
      {terms.iteration_overhead_per_op, "iteration_overhead_per_op_us"},
      {terms.graph_replay, "graph_replay_us"},
      {terms.min_kernel, "min_kernel_us"},
      {terms.fp8_quant_bytes_per_element, "fp8_quant_bytes_per_element"},
      {terms.fp8_quant_fixed, "fp8_quant_fixed_us"},
      {terms.cold_start, "cold_start_us"}};
  for (const auto& [v, name] : times) {
    if (!(v >= 0) || !std::isfinite(v)) {
      return InvalidArgument("{} must be finite and ≥ 0 (0: off; a term only adds time)", name);
    }
  }
  // A spread of half the time or more is no longer a spread of one machine's ranks.
  if (!(terms.rank_speed_spread >= 0 && terms.rank_speed_spread < 0.5)) {
    return InvalidArgument("rank_speed_spread is {}: must be in [0, 0.5) (0: identical ranks)",
                           terms.rank_speed_spread);
  }
  return Status::Ok();
}

std::string_view MeasuredCollectiveName(Collective c) {
  return c == Collective::kSend ? "send_recv" : CollectiveName(c);
}

std::optional<Collective> ParseMeasuredCollective(std::string_view name) {
  if (name == "send_recv") return Collective::kSend;
  std::optional<Collective> c = ParseCollective(name);
  if (!c || *c == Collective::kNone || *c == Collective::kRecv) {
    return std::nullopt;
  }
  return c;
}

std::vector<std::string> OverheadTerms::Active(bool serving) const {
  std::vector<std::string> out;
  auto us = [&](double seconds, std::string_view name) {
    if (seconds > 0) out.push_back(fmt::format("{} {:.6g} µs", name, seconds * 1e6));
  };
  if (serving) {
    us(request_overhead, "request_overhead");
    us(response_overhead, "response_overhead");
  }
  us(iteration_overhead, "iteration_overhead");
  if (iteration_overhead_per_op > 0) {
    out.push_back(
        fmt::format("iteration_overhead {:.6g} µs per op", iteration_overhead_per_op * 1e6));
  }
  if (cuda_graphs) out.push_back(fmt::format("cuda_graphs (replay {:.6g} µs)", graph_replay * 1e6));
  us(min_kernel, "min_kernel");
  if (fp8_quant_bytes_per_element > 0) {
    out.push_back(fmt::format("fp8_quant {:.6g} B/element{}", fp8_quant_bytes_per_element,
                              fp8_quant_fixed > 0
                                  ? fmt::format(" + {:.6g} µs per pass", fp8_quant_fixed * 1e6)
                                  : std::string()));
  }
  us(cold_start, "cold_start");
  if (rank_speed_spread > 0) {
    out.push_back(fmt::format("rank_speed_spread {:.3g} %", 100 * rank_speed_spread));
  }
  if (async_launch) out.push_back("async_launch (an op takes max(device time, launch))");
  for (const auto& [key, m] : collectives) {
    out.push_back(fmt::format("{} over {}: latency {:.6g} µs{}{}{}",
                              MeasuredCollectiveName(key.first), key.second, m.latency * 1e6,
                              m.wait > 0 ? fmt::format(" + wait {:.4g} µs", m.wait * 1e6) : "",
                              m.algbw > 0 ? fmt::format(", {:.4g} GB/s", m.algbw * 1e-9) : "",
                              m.exact ? " (nccl-tests: its time)" : ""));
  }
  return out;
}

Calibration DefaultCalibration(const DeviceSpec& device) {
  const std::string name = Lower(device.name);
  if (device.kind == DeviceKind::kTpu) {
    // Assumption: PaLM (Chowdhery et al. 2022, §4) reports 57.8 % hardware FLOPs
    // utilisation of TPU v4 for a whole training step; large inference matmuls
    // alone run higher on the MXUs: 0.7. Attention 0.5 (softmax on the VPU).
    // HBM streaming ≈ 0.85 of peak. Calibrate with a measured table.
    return Make("default: tpu (assumed from PaLM MFU; calibrate)", {0.70, 0.85, 64},
                {0.50, 0.85, 128}, 0.85);
  }
  if (device.kind == DeviceKind::kCpu) {
    // Measured on the local-cpu host (configs/hardware/local-cpu.yaml) with the
    // CPU executor: `shardscope calibrate --shape-time mean` on the calibration
    // runs of bench/fidelity_cpu.yaml (docs/history/fidelity-series.md, series 25), rounded.
    // Against the one-core peaks (105 GFLOP/s, 30 GB/s): sgemm (prefill, more
    // than 32 rows) reaches 0.99 of the peak with a row ramp (half at 24 rows);
    // the executor's SmallGemm (2–32 rows, its own class) streams the weights at
    // ~0.68 of the bandwidth, its FLOP rate ramping with the rows (half at 11:
    // 2 rows run at ~16 GFLOP/s); sgemv (m = 1) streams at 0.84; ops pay a fixed
    // cost per class (dispatch, a library's set-up: prefill attention allocates
    // its score matrix); a working set that fits the cache streams at 39 GB/s.
    Calibration c = Make("default: cpu (measured on local-cpu; calibrate)", {0.99, 0.6, 24, 1e-6},
                         {0.17, 0.7, 0, 60e-6}, 0.79);
    c.small_gemm_rows = 32;  // runtime::kSmallGemmMaxRows
    c.classes[OpClass::kSmallGemm] = {0.99, 0.68, 11, 1.26e-6};
    // From the cache SmallGemm runs at half the peak (2–4 rows: ~50 GFLOP/s)
    // and streams at 33 GB/s (`calibrate` on series 25–27, docs/history/fidelity-series.md).
    c.classes[OpClass::kSmallGemm].cache = 33e9;
    c.classes[OpClass::kSmallGemm].cache_flops = 0.5;
    // sgemm packs its operands from the cache too (a cache-resident model's
    // prefill GEMMs run at 0.65–0.85 of the peak, docs/history/fidelity-series.md).
    c.classes[OpClass::kGemm].cache_ramp = true;
    c.classes[OpClass::kAttentionDecode] = {0.5, 0.22, 0, 5e-6};
    c.classes[OpClass::kElementwise] = {0.019, 0.79, 0, 0.5e-6};
    c.classes[OpClass::kGather] = {0.5, 0.33, 0, 0.5e-6};
    c.classes[OpClass::kGemv] = {1.0, 0.84, 0, 0};
    c.cache_bandwidth = 39e9;
    return c;
  }
  if (name.find("a100") != std::string::npos) {
    // cuBLAS BF16 GEMM on A100 SXM reaches ~250–270 of 312 TFLOP/s for large
    // shapes (NVIDIA Deep Learning Performance guide, "Matrix multiplication"
    // background: ~0.8). FlashAttention-2 (Dao 2023, arXiv:2307.08691): forward
    // "up to 73 % of the theoretical maximum FLOPs/s", 50–73 % by shape: 0.6.
    // BabelStream on A100 80GB: ~1.7–1.8 of 2.04 TB/s: 0.85.
    Calibration c =
        Make("default: a100 (published measurements)", {0.80, 0.85, 32}, {0.60, 0.85, 128}, 0.85);
    // Graph-replay costs: not measured on an A100; the H100's, the closest
    // part we measured (the A100's lower clock likely makes them larger).
    SetReplayCosts(&c, false);
    return c;
  }
  // H100 / H200 (Hopper) and any other GPU. Large BF16 GEMMs reach ~700–750 of
  // 989 TFLOP/s (Luo et al. 2024, "Benchmarking and Dissecting the Nvidia
  // Hopper GPU Architecture", arXiv:2402.13499, wgmma dense: ~0.75); wgmma
  // tiles are 64 rows, so small m wastes the tensor cores (half at ~32 rows).
  // FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608): BF16 forward "up to
  // 740 TFLOPs/s (75 % utilization)", 0.5–0.75 by shape: 0.6. Streaming
  // kernels reach ~0.85–0.9 of HBM3 peak (nvbandwidth / BabelStream): 0.85.
  Calibration c =
      Make("default: hopper (published measurements)", {0.75, 0.85, 32}, {0.60, 0.85, 128}, 0.85);
  // Decode attention is FLOP-bound only where many query heads share one KV
  // head: MLA's absorbed decode (128 heads over one latent: ~2·h_q·s_q FLOPs
  // per cached byte). FlashMLA (deepseek-ai/FlashMLA README, 2025-02 release,
  // CUDA 12.8): "580 TFLOPS in computation-bound configuration on H800 SXM5"
  // (GH100: the H100's SMs and clocks), FLOPs counted as ours (2·h_q·s_q·s_k·
  // (576 + 512)): 580 / 989.4 = 0.586. Its 2025-04 kernel reaches 660 (0.667).
  c.classes[OpClass::kAttentionDecode].flops = 0.586;
  // DeepGEMM's FP8 block-scaled GEMMs, fitted (log-time least squares, the
  // memory roofline included) to the 28 rows of its README's tables
  // (deepseek-ai/DeepGEMM, 2025-02 release, H800, NVCC 12.8: dense M 64/128/4096,
  // contiguous grouped 4-8 × 4096-8192 rows, masked grouped 1-4 × 256-1024 rows,
  // at DeepSeek-V3's N and K): 0.71 of the FP8 peak, half at 96 rows and at
  // K = 640, weights streamed at 0.66 of the bandwidth; rms error 11 % (5 % over
  // the rows ≥ 256), against 27 % for the GEMM class at fp8_gemm_efficiency.
  // E.g. K = 512 runs at 590 TFLOP/s, K = 16384 at 1,358. Later kernels (PR #74,
  // 2025-03) run 8-23 % faster at M ≥ 4096 (bench/serving/SOURCES.md).
  c.fp8_block_gemm = BlockScaledGemm{0.71, 0.66, 96, 640};
  // Graph-replay costs measured on the H200 for it, on the H100 for the rest
  // (the H800 is the H100's silicon; another GPU, e.g. a B200, is not measured:
  // the H100's, the closest part).
  SetReplayCosts(&c, name.find("h200") != std::string::npos);
  return c;
}

namespace {

// The `collectives:` list: entries {collective, group_size, latency_us,
// algbw_gb_s, wait_us, …}; an entry whose latency_us is null (one message
// size: no line) gives nothing. The other fields are the fit's report, not
// read.
Status ReadMeasuredCollectives(const YamlMap& top, MeasuredCollectives* out) {
  if (!top.Has("collectives")) return Status::Ok();
  const YAML::Node list = top.Get("collectives");
  const YamlContext ctx = top.context().Child("collectives");
  if (!list.IsSequence()) {
    return ctx.Error("expected a list of {collective, group_size, latency_us, algbw_gb_s}");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YamlContext at = ctx.Index(i);
    ASSIGN_OR_RETURN(YamlMap entry, YamlMap::From(list[i], at));
    RETURN_IF_ERROR(
        entry.CheckKeys({"collective", "group_size", "latency_us", "algbw_gb_s", "wait_us",
                         "busbw_gb_s", "calls", "rows", "sizes", "rms_error", "source"}));
    std::string name;
    RETURN_IF_ERROR(entry.Required("collective", &name));
    const std::optional<Collective> kind = ParseMeasuredCollective(name);
    if (!kind) {
      return at.Child("collective")
          .Error(fmt::format("unknown collective '{}' (all_reduce, all_gather, reduce_scatter, "
                             "all_to_all, broadcast, send_recv)",
                             name));
    }
    int64_t group = 0;
    RETURN_IF_ERROR(entry.RequiredAtLeast("group_size", 2, &group));
    if (*kind == Collective::kSend && group != 2) {
      return at.Child("group_size").Error("send_recv is between 2 ranks");
    }
    MeasuredCollective m;
    // Where the line came from: traces (default; it only slows the model) or
    // nccl-tests (the collective measured on its own: its time, both ways).
    std::string source = "traces";
    RETURN_IF_ERROR(entry.Optional("source", &source));
    if (source != "traces" && source != "nccl-tests") {
      return at.Child("source").Error(
          fmt::format("is '{}': expected traces or nccl-tests", source));
    }
    m.exact = source == "nccl-tests";
    if (entry.Has("wait_us")) {
      double wait_us = 0;
      RETURN_IF_ERROR(entry.Optional("wait_us", &wait_us));
      if (!(wait_us >= 0) || !std::isfinite(wait_us)) {
        return at.Child("wait_us").Error(
            fmt::format("is {}: must be a finite number ≥ 0", wait_us));
      }
      m.wait = wait_us * 1e-6;
    }
    if (!entry.Has("latency_us") || entry.Get("latency_us").IsNull()) continue;
    double us = 0;
    RETURN_IF_ERROR(entry.Optional("latency_us", &us));
    if (!(us >= 0) || !std::isfinite(us)) {
      return at.Child("latency_us").Error(fmt::format("is {}: must be a finite number ≥ 0", us));
    }
    m.latency = us * 1e-6;
    if (entry.Has("algbw_gb_s") && !entry.Get("algbw_gb_s").IsNull()) {
      double gb_s = 0;
      RETURN_IF_ERROR(entry.OptionalPositive("algbw_gb_s", &gb_s));
      m.algbw = gb_s * 1e9;
    }
    (*out)[{*kind, static_cast<int32_t>(group)}] = m;
  }
  return Status::Ok();
}

// The `exchange:` block: {normal: {latency_us, scale_up_efficiency,
// scale_out_efficiency}, low_latency: {…}}, every field optional.
Status ReadExchange(const YamlMap& top, Calibration* c) {
  if (!top.Has("exchange")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap block, top.Map("exchange"));
  RETURN_IF_ERROR(block.CheckKeys({"normal", "low_latency"}));
  const std::pair<const char*, ExchangeOverride*> kernels[] = {
      {"normal", &c->exchange_normal}, {"low_latency", &c->exchange_low_latency}};
  for (const auto& [name, out] : kernels) {
    if (!block.Has(name)) continue;
    ASSIGN_OR_RETURN(YamlMap k, block.Map(name));
    RETURN_IF_ERROR(k.CheckKeys({"latency_us", "scale_up_efficiency", "scale_out_efficiency"}));
    if (k.Has("latency_us")) {
      double us = 0;
      RETURN_IF_ERROR(k.Optional("latency_us", &us));
      if (!(us >= 0) || !std::isfinite(us)) {
        return k.context()
            .Child("latency_us")
            .Error(fmt::format("is {}: must be a finite number ≥ 0", us));
      }
      out->latency = us * 1e-6;
    }
    for (const auto& [key, field] : {std::pair<const char*, std::optional<double>*>{
                                         "scale_up_efficiency", &out->scale_up_efficiency},
                                     {"scale_out_efficiency", &out->scale_out_efficiency}}) {
      if (!k.Has(key)) continue;
      double v = 0;
      RETURN_IF_ERROR(k.Optional(key, &v));
      if (!(v > 0 && v <= 1)) {
        return k.context().Child(key).Error(
            fmt::format("is {}: an efficiency must be in (0, 1]", v));
      }
      *field = v;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Calibration> LoadCalibration(const std::string& path, const Calibration& base) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path));
  ASSIGN_OR_RETURN(YamlMap top, YamlMap::From(root, YamlContext{path, "", ""}));
  // "device" is informational. "collectives" (the per-collective fits
  // `shardscope calibrate` writes) gives each collective's measured latency.
  RETURN_IF_ERROR(top.CheckKeys({"device",
                                 "ops",
                                 "network_efficiency",
                                 "launch_overhead_us",
                                 "collectives",
                                 "exchange",
                                 "node_memory_bandwidth_gb_s",
                                 "cache_bandwidth_gb_s",
                                 "small_gemm_rows",
                                 "request_overhead_us",
                                 "response_overhead_us",
                                 "iteration_overhead_us",
                                 "iteration_overhead_per_op_us",
                                 "cuda_graphs",
                                 "graph_replay_us",
                                 "async_launch",
                                 "min_kernel_us",
                                 "fp8_quant_bytes_per_element",
                                 "fp8_quant_fixed_us",
                                 "cold_start_us",
                                 "rank_speed_spread"}));
  Calibration c = base;
  c.source = path;
  // A file's launch_overhead_us is every class's fixed cost, except where the
  // file gives a class or kind its own (launch_us).
  if (top.Has("launch_overhead_us")) {
    for (auto& [cls, e] : c.classes) e.launch = -1;
    for (auto& [kind, e] : c.kinds) e.launch = -1;
  }
  ASSIGN_OR_RETURN(YamlMap ops, top.Map("ops"));
  if (ops.node().IsMap()) {
    for (const auto& item : ops.node()) {
      const std::string key = item.first.as<std::string>();
      ASSIGN_OR_RETURN(YamlMap entry, ops.Map(key));
      if (auto cls = ParseOpClass(key); cls.ok()) {
        RETURN_IF_ERROR(ReadEfficiency(entry, &c.classes[*cls]));
        continue;
      }
      auto kind = ParseOpKind(key);
      if (!kind.ok()) return entry.context().Error(kind.status().message());
      Efficiency e = c.For(*kind);
      RETURN_IF_ERROR(ReadEfficiency(entry, &e));
      c.kinds[*kind] = e;
    }
  }
  RETURN_IF_ERROR(top.Optional("network_efficiency", &c.network_efficiency));
  double launch_us = -1;
  RETURN_IF_ERROR(top.Optional("launch_overhead_us", &launch_us));
  if (launch_us >= 0) c.launch_overhead = launch_us * 1e-6;
  double node_gb_s = -1;
  RETURN_IF_ERROR(top.Optional("node_memory_bandwidth_gb_s", &node_gb_s));
  if (top.Has("node_memory_bandwidth_gb_s") && !(node_gb_s > 0)) {
    return InvalidArgument("{}: node_memory_bandwidth_gb_s is {}: must be positive", path,
                           node_gb_s);
  }
  if (node_gb_s > 0) c.node_memory_bandwidth = node_gb_s * 1e9;
  if (top.Has("cache_bandwidth_gb_s")) {
    double cache_gb_s = 0;
    RETURN_IF_ERROR(top.Optional("cache_bandwidth_gb_s", &cache_gb_s));
    c.cache_bandwidth = cache_gb_s * 1e9;
  }
  RETURN_IF_ERROR(top.Optional("small_gemm_rows", &c.small_gemm_rows));
  // The terms the roofline leaves out, in µs in the file (0 or absent: off).
  const std::pair<const char*, double*> terms_us[] = {
      {"request_overhead_us", &c.terms.request_overhead},
      {"response_overhead_us", &c.terms.response_overhead},
      {"iteration_overhead_us", &c.terms.iteration_overhead},
      {"iteration_overhead_per_op_us", &c.terms.iteration_overhead_per_op},
      {"graph_replay_us", &c.terms.graph_replay},
      {"min_kernel_us", &c.terms.min_kernel},
      {"fp8_quant_fixed_us", &c.terms.fp8_quant_fixed},
      {"cold_start_us", &c.terms.cold_start}};
  for (const auto& [key, field] : terms_us) {
    if (!top.Has(key)) continue;
    double us = 0;
    RETURN_IF_ERROR(top.Optional(key, &us));
    *field = us * 1e-6;
  }
  RETURN_IF_ERROR(
      top.Optional("fp8_quant_bytes_per_element", &c.terms.fp8_quant_bytes_per_element));
  RETURN_IF_ERROR(top.Optional("rank_speed_spread", &c.terms.rank_speed_spread));
  RETURN_IF_ERROR(top.Optional("cuda_graphs", &c.terms.cuda_graphs));
  RETURN_IF_ERROR(top.Optional("async_launch", &c.terms.async_launch));
  RETURN_IF_ERROR(ReadMeasuredCollectives(top, &c.terms.collectives));
  RETURN_IF_ERROR(ReadExchange(top, &c));
  Status valid = c.Validate();
  if (!valid.ok()) return valid.WithPrefix(path);
  return c;
}

}  // namespace shardscope::sim
