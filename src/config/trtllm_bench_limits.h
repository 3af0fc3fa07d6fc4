// The scheduler limits trtllm-bench picks for itself when it is not given
// max_batch_size and max_num_tokens (TensorRT-LLM's benchmark tool, which
// produced the "Performance Overview" tables): an optimistic estimate of how
// many requests of the dataset's mean ISL + OSL fit in the KV cache, rounded up
// by its fine-tuning steps; without chunked prefill the token budget is raised
// to hold the longest prompt beside a full batch. After NVIDIA/TensorRT-LLM
// tensorrt_llm/bench/build/tuning.py (calc_engine_setting, finetune_setting)
// and tensorrt_llm/bench/benchmark/utils/general.py (get_settings); sources in
// bench/serving/SOURCES.md, "trtllm-bench limits". Pure function.
#ifndef SHARDSCOPE_CONFIG_TRTLLM_BENCH_LIMITS_H_
#define SHARDSCOPE_CONFIG_TRTLLM_BENCH_LIMITS_H_

#include <cstdint>

#include "core/status.h"

namespace shardscope {

// What trtllm-bench reads of the deployment: the device (NVML's total memory),
// the parallel mapping, the checkpoint (parameter count, bytes per weight of its
// quantisation) and the KV cache's shape and dtype.
struct TrtllmBenchDeployment {
  double device_memory_bytes = 0;  // one device, as NVML reports it
  int64_t tp = 1, pp = 1;
  double param_count = 0;         // parameters in the checkpoint
  double bytes_per_weight = 2;    // FP8 checkpoints 1, unquantised 2
  double bytes_per_kv_value = 2;  // FP8 KV cache 1
  int64_t attention_layers = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

// ... and of the dataset and the KV fraction (--kv_cache_free_gpu_mem_fraction).
struct TrtllmBenchInputs : TrtllmBenchDeployment {
  double mean_input = 0, mean_output = 0;  // the dataset's average ISL and OSL
  int64_t max_input = 0;                   // its longest prompt
  double kv_fraction = 0.9;
  bool chunked_prefill = false;
};

struct TrtllmBenchLimits {
  int64_t max_batch_size = 0;        // → scheduler.max_num_seqs
  int64_t max_num_tokens = 0;        // → scheduler.max_num_batched_tokens
  double kv_cache_max_requests = 0;  // its estimate before rounding
};

// Fails, as trtllm-bench does, when the weights exceed the devices' memory or
// not one request of ISL + OSL fits in the KV share.
StatusOr<TrtllmBenchLimits> TrtllmBenchLimitsFor(const TrtllmBenchInputs& in);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_TRTLLM_BENCH_LIMITS_H_
