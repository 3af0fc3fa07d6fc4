// Experiment: one fully resolved run description — model, cluster, parallel
// plan, workload, backend and the claims to test. Loaded from
// configs/experiments.yaml (see experiment_loader.h). Plain value type.
#ifndef SHARDSCOPE_CONFIG_EXPERIMENT_H_
#define SHARDSCOPE_CONFIG_EXPERIMENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "config/mechanisms.h"
#include "config/precision.h"
#include "config/serving.h"
#include "core/dtype.h"
#include "core/parallel_dim.h"
#include "core/trace_compression.h"
#include "model/model.h"

namespace shardscope {

// Which runner runs an experiment (its `backend:` key): the simulator, CPU ranks over MPI or
// CUDA devices (run/runner.h).
enum class RunnerKind { kSim, kCpu, kCuda };

// Ring-attention load balancing over the prompt (see docs/configuration.md).
enum class SpVariant {
  kZigzag,  // 2·sp chunks; rank r holds chunks r and 2·sp−1−r (default)
  kRing,    // sp contiguous chunks
  kStripe,  // tokens dealt round-robin
};

enum class RoutingKind { kUniform, kZipf, kFixed };

// How tokens spread over routed experts when no real router runs.
struct RoutingSpec {
  RoutingKind kind = RoutingKind::kUniform;
  double zipf_s = 1.0;                // zipf: expert of popularity rank i gets ∝ 1/i^s
  std::vector<double> fixed_weights;  // fixed: one weight per routed expert
  // fixed: per model layer, its own weights (one per routed expert), in place of
  // fixed_weights — e.g. a measured run's split (`shardscope validate`).
  std::map<int64_t, std::vector<double>> layer_weights;
};

struct ParallelSpec {
  std::string strategy;  // label used in the trace store path, e.g. "tensor", "tp8_pp2"
  int64_t tp = 1, sp = 1, ep = 1, dp = 1, pp = 1;
  std::vector<Dim> order = {Dim::kTp, Dim::kSp, Dim::kEp, Dim::kDp, Dim::kPp};
  SpVariant sp_variant = SpVariant::kZigzag;
  int64_t micro_batches = 0;                     // pipeline micro-batches; 0: one per stage (pp)
  std::vector<int64_t> layer_to_stage;           // empty: even contiguous split
  std::map<int64_t, int64_t> expert_to_ep_rank;  // empty: contiguous blocks
  // EPLB: extra expert slots holding replicas of the hottest routed experts; ep
  // must divide routed + redundant (program/expert_balancer.h places them).
  int64_t redundant_experts = 0;
  // EPLB: the measured per-expert loads it balances for (one row for every MoE
  // layer, or one per MoE layer); empty: the routing distribution's.
  std::string expert_load_path;
  std::vector<std::vector<double>> expert_load;

  int64_t Size(Dim d) const;
  int64_t world_size() const { return tp * sp * ep * dp * pp; }
};

struct Workload {
  int64_t batch_size = 1;
  int64_t sequence_length = 1;  // prompt tokens per request
  int64_t tokens_to_generate = 1;
  DType dtype = DType::kBf16;     // weights and activations
  DType kv_dtype = DType::kBf16;  // KV cache
  // Per-tensor dtypes of the vocabulary matrices (real FP8 checkpoints keep
  // them in bf16); none: dtype. Tied embeddings use the embedding's.
  std::optional<DType> lm_head_dtype;
  std::optional<DType> embedding_dtype;
  DType LmHeadDType() const { return lm_head_dtype.value_or(dtype); }
  DType EmbeddingDType() const { return embedding_dtype.value_or(dtype); }
  uint64_t seed = 0;
  RoutingSpec routing;
  int64_t warmup_iterations = 10;
  int64_t measured_iterations = 100;
  // Real backends: a Hugging Face safetensors checkpoint (a .safetensors file or a
  // directory) to take the weights from; empty: weights drawn from `seed`.
  std::string checkpoint;
  // Real backends: the prompt token ids of each request (config/prompts.h);
  // empty: drawn from `seed`. When given, batch_size × sequence_length.
  std::vector<std::vector<int32_t>> prompts;
};

// Claims from a paper or a seed, checked against physical bounds. Units are in
// the key: tps (tokens/s, the seeds' batch·sequence/time), tpot_ms, ttft_ms,
// memory_per_gpu_gb, decode_tokens_per_s.
using Claims = std::map<std::string, double>;

// How the experiment's collectives run (docs/configuration.md
// "communication"; the model in docs/sim.md "Collectives").
struct CommunicationSpec {
  Algorithm algorithm = Algorithm::kAuto;  // forced where a collective has it (NCCL_ALGO)
  Protocol protocol = Protocol::kAuto;     // forced where the algorithm has it (NCCL_PROTO)
  AllToAllKind prefill_all_to_all = AllToAllKind::kAuto;
  AllToAllKind decode_all_to_all = AllToAllKind::kAuto;
  // Expert-parallel payloads; none: dispatch in the workload dtype (FP8 with
  // one fp32 scale per 128 values), combine in it too, or in BF16 after an
  // FP8 or INT8 dispatch (as DeepEP and the engines combine).
  std::optional<DType> dispatch_dtype;
  std::optional<DType> combine_dtype;
  bool operator==(const CommunicationSpec&) const = default;
};

struct Experiment {
  std::string name;
  std::string sweep_name;  // the name before sweep expansion (== name without a sweep)
  std::string description;
  std::string source_file;  // the YAML it came from
  ModelSpec model;
  ClusterSpec cluster;
  ParallelSpec parallel;
  Workload workload;
  RunnerKind backend = RunnerKind::kSim;
  bool enable_profiling = true;
  // Decode steps written to the trace in full (the first N); the rest are
  // simulated and counted in the run's summary but leave no events. -1: all.
  int64_t trace_steps = -1;
  // The trace file's compression (gzip: `<name>.trace.gz`).
  TraceCompression trace_compression = TraceCompression::kNone;
  Claims claims;
  CommunicationSpec communication;
  // Dtype roles (`precision:`); empty: every role from the workload's dtype fields.
  PrecisionSpec precision;
  // A served workload (requests over time, a scheduler per replica); none: the
  // fixed batch above. The simulator serves it (serve/serving_simulator.h).
  std::optional<ServingSpec> serving;
  // Speculative decoding / MTP and two-batch overlap (config/mechanisms.h).
  SpeculativeSpec speculative;
  bool two_batch_overlap = false;
};

std::string_view RunnerKindName(RunnerKind b);
StatusOr<RunnerKind> ParseRunnerKind(std::string_view name);
std::string_view SpVariantName(SpVariant v);
StatusOr<SpVariant> ParseSpVariant(std::string_view name);
std::string_view RoutingKindName(RoutingKind k);

// The experiment's dtype roles: its `precision:` block over the workload's
// dtype, kv_dtype, lm_head_dtype and embedding_dtype (tied embeddings: the
// LM head is the embedding's matrix, at its dtype).
Precision PrecisionOf(const Experiment& e);

// Bytes on the wire per token of an expert-parallel dispatch / combine of
// `hidden` values (CommunicationSpec's defaults applied; FP8 and INT8 carry
// one fp32 scale per 128 values).
int64_t DispatchBytesPerToken(const Experiment& e, int64_t hidden);
int64_t CombineBytesPerToken(const Experiment& e, int64_t hidden);

// The kernels an expert-parallel all-to-all runs in a phase (decode or not):
// the spec's kind, or for kAuto the MoE exchange kernels on a tuned NVSwitch
// cluster (hierarchical for prefill, low-latency for decode) and NCCL's
// pairwise exchange elsewhere.
AllToAllKind ResolvedAllToAll(const Experiment& e, bool decode);

// The claim keys ShardScope knows how to check.
const std::vector<std::string>& KnownClaimKeys();

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_EXPERIMENT_H_
