// Calibration: the fraction of a device's peak FLOP/s and memory bandwidth
// each kind of op reaches, as the compute model uses it, and the terms the
// roofline leaves out. Defaults per device family are cited in calibration.cc;
// a measured table (YAML or JSON, docs/sim.md; fitted by `shardscope calibrate`,
// docs/calibration.md; its error, docs/fidelity.md) replaces any entry. Every
// efficiency is in (0, 1], so a simulated op is never faster than physics
// allows. Plain value type.
#ifndef SHARDSCOPE_SIM_CALIBRATION_H_
#define SHARDSCOPE_SIM_CALIBRATION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "core/status.h"
#include "program/op.h"
#include "sim/topology.h"

namespace shardscope::sim {

// Op classes that share an efficiency curve. kGemv is the one-row regime of the
// GEMM kinds (a matrix-vector kernel: its own efficiency, no row ramp);
// kSmallGemm the few-rows regime of an executor with a kernel of its own for
// them, used only where Calibration::small_gemm_rows says so (docs/sim.md,
// "Compute model", shape regimes).
enum class OpClass {
  kGemm,
  kAttention,
  kAttentionDecode,
  kElementwise,
  kGather,
  kGemv,
  kSmallGemm
};

OpClass ClassOf(OpKind kind);
// The class of an op of `kind` over `rows` rows (GEMM m; mean tokens per
// active expert): for GEMM kinds, kGemv when 0 < rows ≤ 1 and kSmallGemm when
// 1 < rows ≤ small_gemm_rows; else ClassOf(kind).
OpClass ClassOfShape(OpKind kind, double rows, double small_gemm_rows = 0);
std::string_view OpClassName(OpClass c);  // "gemm", "attention", …, "gemv", "small_gemm"
StatusOr<OpClass> ParseOpClass(std::string_view name);
// The op kind named `name` as OpKindName writes it ("ffn_up", …, "comm").
StatusOr<OpKind> ParseOpKind(std::string_view name);

struct Efficiency {
  double flops = 1.0;   // achieved / peak FLOP/s for large shapes
  double memory = 1.0;  // achieved / peak memory bandwidth
  // Rows (GEMM m, attention query tokens) at which the FLOP efficiency is half
  // of `flops`: efficiency(m) = flops · m / (m + half_rows). 0: no shape effect.
  double half_rows = 0;
  // Seconds every op of this class pays besides its roofline time (dispatch,
  // kernel launch, a library's set-up); < 0: Calibration::launch_overhead.
  double launch = -1;
  // Bytes/s this class's ops stream from the last-level cache when the run's
  // working set fits it (cache-resident runs); < 0: Calibration::cache_bandwidth.
  double cache = -1;
  // The row ramp holds from the cache too: a kernel that packs its operands
  // wherever they are (OpenBLAS sgemm). Else (default) a cache-resident op pays
  // no ramp: the CPU executor's sgemv and SmallGemm, whose few rows are slow
  // only for want of memory bandwidth.
  bool cache_ramp = false;
  // The FLOP efficiency (of the peak, before any ramp) of this class's ops with
  // their operands in the cache; ≤ 0: `flops`. From memory a small-batch
  // kernel's FLOP term is a ramp that also carries its streaming limit; from
  // the cache its inner loop's ceiling shows alone (docs/sim.md, "Compute model").
  double cache_flops = -1;
  // Seconds every op of this class takes besides its roofline when replayed
  // from a CUDA graph (no host launch): the kernel's device-side fixed cost as
  // a graph node (grid launch, its memory latency, the tail, the next node's
  // issue); < 0: none. Used without async_launch (with it, `launch` is that
  // device-side cost already). Hopper defaults: measured, calibration.cc.
  double replay = -1;
};

// The FLOP efficiency of an op of entry `e` over `rows` rows (0: unknown), its
// operands in the cache (`cached`) or not: from the cache the entry's own
// ceiling (cache_flops) where it has one, and the row ramp only where
// `ramp_from_cache` (the entry's cache_ramp; calibrate's fit passes its samples').
inline double FlopsEfficiencyAt(const Efficiency& e, double rows, bool cached,
                                bool ramp_from_cache) {
  const double ceiling = cached && e.cache_flops > 0 ? e.cache_flops : e.flops;
  if (e.half_rows <= 0 || rows <= 0 || (cached && !ramp_from_cache)) return ceiling;
  return ceiling * rows / (rows + e.half_rows);
}

// Time the serving stack adds around the kernels. Every term only adds time.
struct OverheadTerms {
  double request_overhead = 0;    // s from a request's arrival to its first scheduling (serving)
  double response_overhead = 0;   // s from its last token to the response (serving E2E)
  double iteration_overhead = 0;  // s of host scheduling per iteration / step, before its kernels
  // s of the same host time per op of the rank's iteration (an executor that
  // records and prepares each op between steps: the gap grows with the ops).
  double iteration_overhead_per_op = 0;
  // Decode iterations (decode only: no prefill, no chunk) replay a CUDA graph:
  // one graph_replay per iteration instead of a launch per kernel.
  bool cuda_graphs = false;
  double graph_replay = 0;  // s per graph replay
  double min_kernel = 0;    // s: the floor of a compute op's time (launch included)
  // Bytes moved per input activation element by the quantisation and scaling
  // ops before each FP8 GEMM (e.g. 5: amax read 2 + read 2 + write 1), at the
  // elementwise class's bandwidth; 0: not modelled.
  double fp8_quant_bytes_per_element = 0;
  // s per quantisation pass besides its bytes (its kernels' launches and the
  // amax's reduction; measured: docs/fidelity.md, "GPUs"); 0: the elementwise
  // class's launch, as one kernel.
  double fp8_quant_fixed = 0;
  double cold_start = 0;  // s added to the first iteration (prefill) only
  // The spread of the ranks' compute speed within a run, as a fraction of the
  // model's time (sim/rank_spread.h): rank r's compute ops take 1 + s·z_r of it,
  // so synchronised work waits for the slowest. 0: identical ranks.
  double rank_speed_spread = 0;
  // GPU kernels launch asynchronously: the host issues them ahead, so an op
  // takes the larger of its device time (roofline + its class's fixed cost)
  // and the device's launch_overhead (the host's issue interval), not their
  // sum. For tables fitted on device times (bench/gpu; docs/fidelity.md).
  bool async_launch = false;
  // Measured per (collective, group size), as `shardscope calibrate` fits it:
  // the latency a call takes besides its bytes (software stack, protocol) and
  // its algorithm bandwidth. A collective of that kind and size takes the
  // measured latency (plus its members' wait for the latest) instead of its
  // algorithm's steps × link latency, and moves its bytes at the measured
  // bandwidth, each only where slower than the model's (the topology's figures
  // stay floors). Send/recv: key kSend, size 2.
  MeasuredCollectives collectives;

  bool any() const {
    return request_overhead > 0 || response_overhead > 0 || iteration_overhead > 0 ||
           iteration_overhead_per_op > 0 || cuda_graphs || min_kernel > 0 ||
           fp8_quant_bytes_per_element > 0 || fp8_quant_fixed > 0 || cold_start > 0 ||
           rank_speed_spread > 0 || async_launch || !collectives.empty();
  }
  // Each term that is on, as "name value" ("iteration_overhead 30 us"); empty:
  // all off. `serving`: with the request and response overheads (served runs only).
  std::vector<std::string> Active(bool serving = true) const;
  // Seconds of host time before an iteration's kernels: iteration_overhead, plus
  // graph_replay for a decode-only iteration under cuda_graphs.
  double IterationSeconds(bool decode_only) const {
    return iteration_overhead + (cuda_graphs && decode_only ? graph_replay : 0);
  }
  // The per-op part for an iteration of `ops` ops on a rank.
  double PerOpSeconds(size_t ops) const {
    return iteration_overhead_per_op * static_cast<double>(ops);
  }
};

// A MoE exchange kernel's terms as measured (DeepEP's tests, `shardscope
// calibrate --deepep`): each given field replaces the cluster's
// (CommTuning::normal or low_latency; NetworkCluster applies them).
struct ExchangeOverride {
  std::optional<double> latency;  // seconds per call
  std::optional<double> scale_up_efficiency;
  std::optional<double> scale_out_efficiency;
  bool any() const { return latency || scale_up_efficiency || scale_out_efficiency; }
};

// FP8 GEMMs with block-scaled weights and per-token-group inputs (DeepSeek's
// recipe, `precision: deepseek-fp8`; DeepGEMM on Hopper): their own curve
// against the device's FP8 peak (not fp8_gemm_efficiency, which is cuBLASLt's
// per-tensor path). The CUDA-core promotion of each 128-deep K block costs a
// fixed share per block, so the FLOP efficiency ramps with K as well as rows:
// flops · rows / (rows + half_rows) · k / (k + half_k).
struct BlockScaledGemm {
  double flops = 1.0;   // of the FP8 peak, large rows and K
  double memory = 1.0;  // of the memory bandwidth (small-row GEMMs stream weights)
  double half_rows = 0;
  double half_k = 0;
};

struct Calibration {
  std::string source;  // "default: h100" or the file it came from
  std::map<OpClass, Efficiency> classes;
  std::map<OpKind, Efficiency> kinds;  // per-kind overrides (take precedence)
  // Network: achieved / link bandwidth for bulk transfers (NCCL reaches ~0.9+).
  double network_efficiency = 1.0;
  // Seconds added per compute op (kernel launch); < 0: the device's figure.
  double launch_overhead = -1;
  // GEMMs of 2 to this many rows are the kSmallGemm class; 0: none (they are
  // kGemm). The executor's kernel boundary: 32 for the CPU executor.
  double small_gemm_rows = 0;
  // Bytes/s the devices of a node share (ClusterSpec::node_memory_bandwidth),
  // as measured; < 0: the cluster's figure.
  double node_memory_bandwidth = -1;
  // Bytes/s one device's ops stream at when the rank's working set (weights and
  // KV cache) fits its last-level cache (DeviceSpec::l2_cache_bytes): the data
  // stays on chip between steps, so neither the memory efficiency nor the
  // node's shared bus applies. 0: off (every byte comes from memory).
  double cache_bandwidth = 0;
  // The terms the roofline leaves out (docs/fidelity.md), each off at 0.
  OverheadTerms terms;
  // The file's `exchange:` block: the dispatch/combine kernels' terms.
  ExchangeOverride exchange_normal, exchange_low_latency;
  // Block-scaled FP8 layer GEMMs; none: the GEMM class at fp8_gemm_efficiency.
  std::optional<BlockScaledGemm> fp8_block_gemm;

  const Efficiency& For(OpKind kind) const;
  // A per-kind override, else the entry of ClassOfShape(kind, rows, small_gemm_rows).
  const Efficiency& For(OpKind kind, double rows) const;
  Status Validate() const;
};

// The calibration file's name of a measured collective (`collectives:`):
// CollectiveName, and "send_recv" for point-to-point pairs (kSend).
std::string_view MeasuredCollectiveName(Collective c);
// Its inverse (also any spelling ParseCollective takes); nullopt for other
// names and for "none" and "recv".
std::optional<Collective> ParseMeasuredCollective(std::string_view name);

// Defaults for the device family of `device` (H100/H200, A100, TPU, CPU).
Calibration DefaultCalibration(const DeviceSpec& device);

// Loads a table (YAML or JSON) on top of `base`: entries it names replace
// base's. Errors name the file and the field.
StatusOr<Calibration> LoadCalibration(const std::string& path, const Calibration& base);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_CALIBRATION_H_
