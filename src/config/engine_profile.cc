#include "config/engine_profile.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace shardscope {
namespace {

const std::map<std::string, std::vector<std::string>>& Versions() {
  static const std::map<std::string, std::vector<std::string>> versions = {
      {"vllm", {"0.6"}}, {"sglang", {"0.4"}}, {"trtllm", {"0.17"}}};
  return versions;
}

std::vector<int64_t> Range(int64_t begin, int64_t end, int64_t step) {
  std::vector<int64_t> v;
  for (int64_t x = begin; x < end; x += step) v.push_back(x);
  return v;
}

// vLLM 0.6 (https://github.com/vllm-project/vllm/tree/v0.6.0; V0 engine).
SchedulerSpec Vllm06(const EngineInputs& in) {
  SchedulerSpec s;
  // vllm/engine/arg_utils.py EngineArgs: max_num_seqs = 256, block_size = 16,
  // gpu_memory_utilization = 0.90, num_scheduler_steps = 1.
  s.max_num_seqs = 256;
  s.block_size = 16;
  s.gpu_memory_utilization = 0.9;
  // vllm/worker/worker.py determine_num_available_blocks: KV = total memory ×
  // gpu_memory_utilization − the profiled peak (weights and activations).
  s.memory_rule = KvMemoryRule::kShareOfCapacity;
  s.num_scheduler_steps = in.num_scheduler_steps.value_or(1);
  // arg_utils.py create_engine_config: chunked prefill is on by default only
  // for max_model_len > 32K ("Chunked prefill is enabled by default for models
  // with max_model_len > 32K", v0.6.x logs).
  s.chunked_prefill = in.chunked_prefill.value_or(in.max_model_len > 32768);
  // vllm/config.py SchedulerConfig: chunked prefill → 512 tokens (multi-step
  // chunked prefill does not chunk prompts: max(max_model_len, 2048));
  // otherwise max(max_model_len, 2048).
  const int64_t whole = std::max<int64_t>(in.max_model_len, 2048);
  s.max_num_batched_tokens = s.chunked_prefill && s.num_scheduler_steps == 1 ? 512 : whole;
  // vllm/core/scheduler.py: a single-sequence request is preempted by
  // recompute (PreemptionMode.RECOMPUTE).
  s.admission = Admission::kRecompute;
  // vllm/worker/model_runner.py _BATCH_SIZES_TO_CAPTURE = [1, 2, 4] +
  // [8 * i for i in range(1, 33)]: decode batches up to 256 are padded and replayed.
  s.cuda_graph_batch_sizes = {1, 2, 4};
  for (int64_t b : Range(8, 257, 8)) s.cuda_graph_batch_sizes.push_back(b);
  return s;
}

// SGLang 0.4 (https://github.com/sgl-project/sglang/blob/v0.4.6/python/sglang/srt/server_args.py).
SchedulerSpec Sglang04(const EngineInputs& in) {
  SchedulerSpec s;
  // server_args.py: page_size = 1 (token-granular KV pool, the radix cache's pages).
  s.block_size = 1;
  // server_args.py __post_init__: mem_fraction_static by tp_size — ≥ 16: 0.79,
  // ≥ 8: 0.81, ≥ 4: 0.85, ≥ 2: 0.87, else 0.88; "the fraction of the memory
  // used for static allocation (model weights and KV cache memory pool)"
  // (server_args.py --mem-fraction-static help).
  s.gpu_memory_utilization = in.tp >= 16  ? 0.79
                             : in.tp >= 8 ? 0.81
                             : in.tp >= 4 ? 0.85
                             : in.tp >= 2 ? 0.87
                                          : 0.88;
  // model_runner.py profile_max_num_token: rest_memory = available_gpu_memory
  // (free after loading the weights) − total_gpu_memory (free before) ×
  // (1 − mem_fraction_static), i.e. pool = fraction × total − weights.
  // Activations and CUDA graphs are allocated later, from the 1 − fraction
  // left outside; they are not subtracted from the pool as in vLLM.
  s.memory_rule = KvMemoryRule::kStaticShare;
  // server_args.py: chunked_prefill_size = 8192 (2048 below 25 GB of GPU memory).
  s.max_num_batched_tokens =
      in.device_memory_bytes > 0 && in.device_memory_bytes < 25e9 ? 2048 : 8192;
  // enable_mixed_chunk = False: prefill batches and decode batches run apart,
  // a new prefill batch first (scheduler.py get_next_batch_to_run).
  s.chunked_prefill = in.chunked_prefill.value_or(false);
  // chunked_prefill_size splits the prompts themselves: PrefillAdder.add_one_req
  // (managers/schedule_policy.py) gives a prompt that does not fit what is left
  // of the batch's chunk budget that rest, and the next prefill batch leads with
  // its next chunk (scheduler.py get_new_batch_prefill, chunked_req).
  s.long_prompts = LongPrompts::kChunk;
  // max_running_requests = None → min(KV tokens / 2, the request pool:
  // clamp(KV tokens / context_len × 512, 2048, 4096)) (scheduler.py, model_runner.py).
  s.max_num_seqs = 0;
  // schedule_policy.py PrefillAdder: a prompt is admitted only when the free
  // pool less every running request's remaining max_new_tokens × new_token_ratio
  // holds it and its own output (global_config.py: ratio 0.7, decaying to
  // 0.7 × 0.14 over 600 decode steps); a full pool still retracts decode
  // requests, which recompute (scheduler.py update_running_batch).
  s.admission = Admission::kNewTokenRatio;
  // disable_overlap_schedule = False (server_args.py): event_loop_overlap
  // (scheduler.py) receives requests, schedules and launches batch N + 1, then
  // processes batch N's results, so a request arriving while N runs is first
  // scheduled into N + 2; with no batch in flight it is launched at once.
  s.overlap_schedule = true;
  // num_continuous_decode_steps = 1.
  s.num_scheduler_steps = in.num_scheduler_steps.value_or(1);
  // cuda_graph_runner.py get_batch_sizes_to_capture: [1, 2, 4, 8] +
  // range(16, 161, 8), at most cuda_graph_max_bs = 160 (server_args.py).
  s.cuda_graph_batch_sizes = {1, 2, 4, 8};
  for (int64_t b : Range(16, 161, 8)) s.cuda_graph_batch_sizes.push_back(b);
  return s;
}

// TensorRT-LLM 0.17 (https://github.com/NVIDIA/TensorRT-LLM/tree/v0.17.0), the
// TensorRT engine path that trtllm-serve runs.
SchedulerSpec Trtllm017(const EngineInputs& in) {
  SchedulerSpec s;
  // tensorrt_llm/builder.py BuildConfig: max_batch_size = 2048, max_num_tokens = 8192.
  s.max_num_seqs = 2048;
  s.max_num_batched_tokens = 8192;
  // tensorrt_llm/plugin/plugin.py PluginConfig: tokens_per_block = 32 (the
  // releases with use_paged_context_fmha on by default; 64 before).
  s.block_size = 32;
  // KvCacheConfig.free_gpu_memory_fraction = 0.9 "of free GPU memory" after
  // weights and buffers (https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html).
  s.gpu_memory_utilization = 0.9;
  s.memory_rule = KvMemoryRule::kShareOfFree;
  // CapacitySchedulerPolicy GUARANTEED_NO_EVICT is the default
  // (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html).
  s.admission = Admission::kGuaranteedNoEvict;
  // enable_chunked_context = False by default; in-flight batching runs whole
  // context requests with the generation requests in one batch
  // (https://nvidia.github.io/TensorRT-LLM/features/paged-attention-ifb-scheduler.html).
  s.chunked_prefill = in.chunked_prefill.value_or(false);
  s.mix_prompts_with_decodes = true;
  s.num_scheduler_steps = in.num_scheduler_steps.value_or(1);
  // The TensorRT engine runs without CUDA graphs unless cuda_graph_mode is set.
  s.cuda_graph_batch_sizes = {};
  return s;
}

}  // namespace

const std::vector<std::string>& EngineNames() {
  static const std::vector<std::string> names = {"vllm", "sglang", "trtllm"};
  return names;
}

const std::vector<std::string>& EngineVersions(const std::string& name) {
  static const std::vector<std::string> none;
  auto it = Versions().find(name);
  return it == Versions().end() ? none : it->second;
}

StatusOr<std::string> ResolveEngineVersion(const std::string& name, const std::string& version) {
  const std::vector<std::string>& known = EngineVersions(name);
  if (known.empty()) {
    return InvalidArgument("unknown engine '{}' (expected vllm, sglang or trtllm)", name);
  }
  if (version.empty()) return known.back();
  for (const std::string& v : known) {
    if (version == v || version.starts_with(v + ".")) return v;
  }
  return InvalidArgument("{} {} has no profile (profiled: {})", name, version,
                         fmt::join(known, ", "));
}

SchedulerSpec EngineSchedulerDefaults(const EngineSpec& engine, const EngineInputs& in) {
  SchedulerSpec s = engine.name == "sglang"   ? Sglang04(in)
                    : engine.name == "trtllm" ? Trtllm017(in)
                                              : Vllm06(in);
  s.max_model_len = in.max_model_len;
  return s;
}

// Serving-path terms from component measurements only (bench/serving/SOURCES.md,
// "Serving-path terms"); a term no measurement covers stays 0.
ServingPathSpec EngineServingPath(const EngineSpec& engine) {
  ServingPathSpec p;
  if (engine.name == "vllm") {
    // vLLM RFC #6854 (https://github.com/vllm-project/vllm/issues/6854, the
    // multi-step design that shipped in 0.6.0): its Nsight profiles show a
    // ~4 ms GPU bubble per scheduler call, both single-step and multi-step-8
    // (there once per 8 steps): scheduling, input preparation, the sampled
    // tokens' transfer and their pythonisation (its PR #7000 benchmarks
    // Llama-3-8B at TP1). For single-step 0.6 an upper bound (its async output
    // processor overlaps the output part). Per request and per worker: not
    // measured, 0.
    p.iteration = 4e-3;
  }
  // SGLang 0.4: its overlap scheduler leaves no GPU idle time between five
  // consecutive decode batches in the v0.4 announcement's Nsight profile
  // (https://lmsys.org/blog/2024-12-04-sglang-v0-4/#zero-overhead-batch-scheduler):
  // a measured 0 per iteration. TensorRT-LLM 0.17: no component measurement of
  // its C++ executor's host time found, 0 (1.0's PyTorch backend overlaps it by
  // design: docs "Overlap Scheduler"). Detokenising per token and the API
  // server per request: no measurement found for any engine, 0.
  return p;
}

}  // namespace shardscope
