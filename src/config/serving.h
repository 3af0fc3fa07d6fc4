// ServingSpec: a served workload — requests arriving over time (Poisson,
// gamma-distributed bursts, a closed loop of fixed concurrency, or a request
// file), their prompt and output lengths, the continuous-batching scheduler of
// each replica and the latency objectives (docs/configuration.md, "Served
// workloads"). Read from an experiment's `workload:`, `engine:` (an engine
// profile's defaults, config/engine_profile.h), `scheduler:` and `slo:` keys.
// Plain value types.
#ifndef SHARDSCOPE_CONFIG_SERVING_H_
#define SHARDSCOPE_CONFIG_SERVING_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/trtllm_bench_limits.h"
#include "core/status.h"
#include "model/model.h"

namespace shardscope {

class YamlMap;  // core/yaml_reader.h

enum class ArrivalProcess { kPoisson, kGamma, kClosedLoop, kFile };

// How request lengths (tokens) are drawn; all draws are clamped to [min, max].
struct LengthDist {
  enum class Kind { kFixed, kUniform, kNormal, kLognormal };
  Kind kind = Kind::kFixed;
  int64_t value = 0;               // kFixed
  double mean = 0, stddev = 0;     // kNormal, kLognormal (of the length itself)
  int64_t min = 1, max = 1 << 30;  // kUniform bounds; clamp for the others
};

// One request of a request file (or drawn): when it arrives and its lengths.
struct RequestSpec {
  double arrival = 0;  // seconds from the start of the run
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
};

struct ArrivalSpec {
  ArrivalProcess process = ArrivalProcess::kPoisson;
  double rate = 0;  // poisson, gamma: requests per second
  double cv = 1;    // gamma: coefficient of variation of the inter-arrival time (> 1: bursts)
  int64_t concurrency = 0;                 // closed loop: requests in the system at all times
  std::string path;                        // file: the request file as given
  std::vector<RequestSpec> file_requests;  // file: its requests, read at load time
};

enum class RouterPolicy { kRoundRobin, kLeastOutstanding };

// How a scheduler keeps running requests in KV memory: vLLM's and SGLang's
// recompute preemption (TensorRT-LLM's MAX_UTILIZATION pauses the same way),
// or TensorRT-LLM's GUARANTEED_NO_EVICT: a request is admitted only when the
// blocks of its whole prompt + output fit beside every running request's, so
// nothing is ever preempted. Or SGLang's new-token-ratio admission: a prompt is
// admitted only when the free KV pool also holds every running request's
// remaining output × a ratio that decays over decode iterations (recompute
// preemption as before when a decode still runs out).
enum class Admission { kRecompute, kGuaranteedNoEvict, kNewTokenRatio };

// How gpu_memory_utilization sizes the KV cache: a share of the device's
// usable capacity less weights, activations and buffers (vLLM's
// gpu_memory_utilization); a share of what weights, activations and buffers
// leave free (TensorRT-LLM's kv_cache_free_gpu_memory_fraction); or a share of
// the capacity for weights and the KV pool only, activations and buffers
// living in the rest (SGLang's mem_fraction_static).
enum class KvMemoryRule { kShareOfCapacity, kShareOfFree, kStaticShare };

// Without chunked prefill, what becomes of a prompt longer than the token
// budget: refused (vLLM refuses the setting at startup, TensorRT-LLM's PyTorch
// backend refuses the request; both an error at load here), or split (SGLang's
// chunked_prefill_size: a prompt that does not fit what is left of a prefill
// iteration's budget takes the rest of it, its next chunk leading the next one).
enum class LongPrompts { kRefuse, kChunk };

// Where max_num_seqs and max_num_batched_tokens come from: the experiment (or
// its engine profile), or trtllm-bench's own sizing (config/trtllm_bench_limits.h).
enum class SchedulerLimits { kGiven, kTrtllmBench };

// The vLLM-like scheduler of one replica (docs/sim.md, "Serving"). An
// `engine:` profile (config/engine_profile.h) sets its defaults.
struct SchedulerSpec {
  int64_t max_num_batched_tokens = 8192;  // tokens per iteration
  // Requests per iteration; 0: SGLang's rule from the KV pool of T tokens,
  // min(T / 2, clamp(T / max_model_len × 512, 2048, 4096)).
  int64_t max_num_seqs = 256;
  int64_t block_size = 16;              // tokens per KV-cache block
  double gpu_memory_utilization = 0.9;  // share of device memory the server may use
  int64_t kv_blocks = 0;                // > 0: KV blocks per replica, overriding the plan
  bool chunked_prefill = true;
  // Without chunked prefill: whole prompts join the decodes' iterations
  // (TensorRT-LLM's in-flight batching) instead of iterations of their own.
  bool mix_prompts_with_decodes = false;
  LongPrompts long_prompts = LongPrompts::kRefuse;
  SchedulerLimits limits_from = SchedulerLimits::kGiven;
  Admission admission = Admission::kRecompute;
  KvMemoryRule memory_rule = KvMemoryRule::kShareOfCapacity;
  // Multi-step scheduling (vLLM 0.6 `num_scheduler_steps`): a decode-only
  // batch runs this many steps per scheduler call; requests arriving meanwhile
  // wait for the next call, finished ones leave at its end.
  int64_t num_scheduler_steps = 1;
  // An overlap scheduler (SGLang's event_loop_overlap): the engine launches
  // iteration N + 1 before it takes in the requests that arrived while N ran,
  // so those join N + 2; an idle replica takes an arrival at once.
  bool overlap_schedule = false;
  // CUDA-graph capture sizes, ascending: a decode-only batch of n requests is
  // padded to the smallest size ≥ n and replayed (no kernel launches); above
  // the largest it runs eagerly. Empty: no graphs beyond the calibration's.
  std::vector<int64_t> cuda_graph_batch_sizes;
  int64_t max_model_len = 0;  // the model's context (max_num_seqs' SGLang rule)
  RouterPolicy router = RouterPolicy::kRoundRobin;
  // Iteration costs are cached on a grid (serve/iteration_cost.h): 0 makes
  // every token count and context length its own grid point (exact, slower).
  int64_t grid_points_per_octave = 8;
};

// The serving path around the kernels, per engine (config/engine_profile.h):
// seconds added besides the calibration's overhead terms. 0 where unsourced.
struct ServingPathSpec {
  double request = 0;    // per request: API server, tokenisation, to the scheduler
  double token = 0;      // per streamed token: detokenise and stream (in the engine loop)
  double iteration = 0;  // per scheduler call: scheduling, input preparation
  double iteration_per_request = 0;  // … per request in the batch
  double iteration_per_worker = 0;   // … per worker process beyond the first (tp × sp × ep)
  bool any() const {
    return request > 0 || token > 0 || iteration > 0 || iteration_per_request > 0 ||
           iteration_per_worker > 0;
  }
  // Host seconds of one scheduler call of `batch` requests producing `tokens`
  // tokens on `workers` worker processes.
  double IterationSeconds(int64_t batch, int64_t tokens, int64_t workers) const;
};

// `engine: {name, version}`: whose defaults the scheduler and the serving path take.
struct EngineSpec {
  std::string name;  // vllm, sglang, trtllm
  std::string version;
};

// Latency objectives: a request meets them when its own TTFT and TPOT are
// within these limits (0: no objective); goodput counts such requests.
struct SloSpec {
  double ttft = 0;  // seconds
  double tpot = 0;  // seconds
};

// Disaggregated prefill/decode: requests are prefilled on prefill instances
// and decoded on decode instances, each instance its own plan (dp = 1); the KV
// cache of each request crosses the scale-out network between them.
struct InstanceSpec {
  int64_t tp = 1, sp = 1, ep = 1, pp = 1;
  int64_t instances = 1;
  int64_t world_size() const { return tp * sp * ep * pp; }
};
struct DisaggregationSpec {
  InstanceSpec prefill, decode;
};

struct ServingSpec {
  ArrivalSpec arrivals;
  LengthDist prompt_tokens, output_tokens;  // ignored for a request file
  int64_t requests = 0;                     // 0: until `duration` (file: all of it)
  double duration = 0;                      // seconds of arrivals; 0: `requests` decide
  int64_t warmup_requests = 0;              // the first N are served but not counted
  // Decode-only study: each request arrives with its prompt already in its KV
  // cache (a context length, its blocks held) and only decodes: no prefill, no TTFT.
  bool decode_only = false;
  // Prefix caching: the share of each prompt found in the cache. Those tokens
  // skip prefill compute but hold KV blocks (CachedPrefixTokens).
  double prefix_cache_hit_rate = 0;
  SchedulerSpec scheduler;
  std::optional<EngineSpec> engine;  // none: the scheduler's own defaults
  ServingPathSpec path;
  SloSpec slo;
  std::optional<DisaggregationSpec> disaggregation;  // none: every replica does both
};

// What an engine profile's defaults depend on besides the engine: tp, pp and
// the device's usable memory, and (scheduler.limits_from) what trtllm-bench's
// sizing reads of the model; mla: no GQA shape for it.
struct EngineContext : TrtllmBenchDeployment {
  bool mla = false;
};

// Reads `workload`, `engine`, `scheduler` and `slo` from an experiment's map; nullopt when
// it has no `workload`. A relative request-file path is taken from
// `config_path`'s folder; requests longer than the model's context are errors
// naming the file, line and field. Every other error names the field.
StatusOr<std::optional<ServingSpec>> ReadServing(const YamlMap& experiment, const ModelSpec& model,
                                                 const std::string& config_path,
                                                 const EngineContext& engine_context = {});

// Prompt tokens a request finds in the prefix cache at hit rate `hit_rate`:
// ⌊hit_rate × prompt⌋, at most prompt − 1 (the last prompt token is always
// computed, to sample the first output token), rounded down to whole blocks
// (caches share whole blocks), as vLLM's automatic prefix caching does.
int64_t CachedPrefixTokens(int64_t prompt, double hit_rate, int64_t block_size);

// TensorRT-LLM's PyTorch backend keeps the CUDA-graph batch sizes up to its
// largest pure-decode batch, min(max_num_seqs, max_num_batched_tokens / (1 +
// draft_tokens)), and, when a larger size was given, captures that batch too so
// padding still has a graph (pyexecutor/model_engine.py,
// _filter_cuda_graph_batch_sizes). Applies to `engine: trtllm` only.
void FitTrtllmGraphSizes(int64_t draft_tokens, ServingSpec* s);

// The experiment keys ReadServing reads.
const std::vector<std::string>& ServingKeys();

std::string_view ArrivalProcessName(ArrivalProcess p);
std::string_view RouterPolicyName(RouterPolicy p);
std::string_view LongPromptsName(LongPrompts p);
std::string_view AdmissionName(Admission a);
std::string_view KvMemoryRuleName(KvMemoryRule r);  // capacity, free or static

nlohmann::json ServingToJson(const ServingSpec& spec);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_SERVING_H_
