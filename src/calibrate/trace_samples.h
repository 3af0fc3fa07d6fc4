// TraceSamples: what calibration takes from measured traces — every compute op
// with a ShardScope op kind, FLOPs or bytes, and a duration; every comm call
// with a collective, group size and message size; and the device the run says
// it ran on. Reads through importers::ImportTrace, so our traces and foreign
// ones (Kineto, NCCL profiler, XLA) go through the same importers as
// `analyze`. Events that cannot be used are counted by reason, not fatal;
// malformed numbers (negative durations, FLOPs, bytes) are errors. Value types.
#ifndef SHARDSCOPE_CALIBRATE_TRACE_SAMPLES_H_
#define SHARDSCOPE_CALIBRATE_TRACE_SAMPLES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cluster/cluster.h"
#include "core/collective.h"
#include "core/dtype.h"
#include "core/status.h"
#include "program/op.h"

namespace shardscope::calibrate {

struct ComputeOpSample {
  OpKind kind = OpKind::kNorm;
  double flops = 0;
  double bytes = 0;  // read + written
  double rows = 0;   // GEMM m (or mean tokens per routed expert); 0: unknown
  // A GEMM whose k, or whose m or n of 16 or more, is not a multiple of 16
  // bytes (GemmMisaligned): tensor-core libraries run it on slower kernels.
  bool misaligned = false;
  double seconds = 0;
  double shared_bandwidth = 0;  // the run's sim::SharedBandwidthPerDevice; 0: none
  // The rank's working set fits the device's last-level cache: the median
  // bytes its decode steps' compute ops move ≤ DeviceSpec::l2_cache_bytes (the
  // trace's view of sim::CacheResident). False without decode steps or a cache size.
  bool resident = false;
  // Its share of its phase's compute time in its trace (seconds ÷ Σ seconds of
  // the file's samples of that phase): the fit weighs every run and phase
  // (prefill: TTFT, decode: TPOT) alike, and within one by time.
  double weight = 0;
};

struct CommCallSample {
  Collective collective = Collective::kNone;  // send and recv both as kSend
  int32_t group_size = 0;
  double bytes = 0;    // nccl-tests size
  double seconds = 0;  // the shortest member's time: the transfer without sync wait
  // The mean over its members of (member's time − the shortest's): how long a
  // member waited for the later ones. 0 for a call with one member in the traces.
  double wait = 0;
  int32_t members = 1;  // members matched in the traces
};

struct TraceSamples {
  std::vector<std::string> files;
  std::vector<ComputeOpSample> compute;
  std::vector<CommCallSample> comm;
  // From the traces' metadata (cluster), when they carry it; all files agree.
  std::optional<ClusterSpec> cluster;
  std::optional<DType> dtype;             // the workload's, which the ops' FLOPs and bytes assume
  std::map<std::string, int64_t> unused;  // events not used: reason → count
  // What the overhead terms (sim::OverheadTerms) are fitted from: every compute
  // kernel's duration, foreign ones included (the shortest bounds the minimum
  // kernel time), and each host gap between consecutive decode steps of a rank
  // (the next step's first op start − the previous step's last op end: the
  // iteration cost, which runs before a step's kernels).
  std::vector<double> kernel_seconds;
  std::vector<double> step_gaps;
  std::vector<double> step_gap_ops;  // the ops (compute and comm) of each gap's next step
  // What the rank spread (sim/rank_spread.h) is fitted from: per file and phase
  // that ≥ 2 ranks computed, how far the slowest rank ran above the ranks' mean
  // on the same ops (RankSpreadOf), and how many ranks there were.
  struct RankSpread {
    double excess = 0;  // slowest ÷ mean − 1
    int32_t ranks = 0;
  };
  std::vector<RankSpread> rank_spread;
};

// One phase's rank spread from its compute ops, given as (rank, key, seconds)
// with equal keys for equal ops (kind, FLOPs, bytes): each rank's time over the
// time its ops take at their mean over the ranks that ran them (ops that one
// rank alone ran are left out), and the slowest's ratio over the ranks' mean,
// − 1. None with fewer than 2 ranks of `min_ops` matched ops each.
struct RankOpTime {
  int32_t rank = 0;
  std::tuple<int, double, double> key;
  double seconds = 0;
};
std::optional<TraceSamples::RankSpread> RankSpreadOf(const std::vector<RankOpTime>& ops,
                                                     int64_t min_ops);

// Reads every file. Errors: the importers' (missing file, unknown format,
// malformed JSON; each names the file), a negative duration, FLOPs or bytes
// (naming file, event and field), files whose metadata names different devices.
StatusOr<TraceSamples> CollectSamples(const std::vector<std::string>& paths);

// GEMM rows m from an op's FLOPs 2mnk, bytes read (mk + kn)·s and written
// mn·s with s bytes per element: the smaller root of x² − (m+n)x + mn. 0 when
// the figures are not those of a GEMM.
double GemmRows(double flops, double bytes_read, double bytes_written, double elem_bytes);

// Whether a GEMM of these figures has a dimension tensor-core kernels cannot
// take: k, or m or n of at least 16 elements, not a multiple of 16 bytes
// (cuBLAS runs an LM-head shard of n = 6 283 bf16 columns at 1/8 the speed;
// docs/fidelity.md). m and n are told apart only as the two roots of the
// shape (GemmRows), so both are checked (m < 16, decode, is exempt);
// `k_only`: k alone, for GEMMs whose m is arbitrary (foreign traces' batches).
// False for elements wider than 2 bytes (fp32 GEMMs run on the FMA units) and
// when the figures are not those of a GEMM.
bool GemmMisaligned(double flops, double bytes_read, double bytes_written, double elem_bytes,
                    bool k_only = false);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_TRACE_SAMPLES_H_
