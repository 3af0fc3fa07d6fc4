#include "config/trtllm_bench_limits.h"

#include <algorithm>
#include <cmath>

namespace shardscope {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

int64_t RoundUp(double x, int64_t step) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(step))) * step;
}

}  // namespace

StatusOr<TrtllmBenchLimits> TrtllmBenchLimitsFor(const TrtllmBenchInputs& in) {
  if (!(in.mean_input > 0 && in.mean_output > 0)) {
    return InvalidArgument("trtllm-bench limits need positive mean input and output lengths");
  }
  // calc_engine_setting: every TP rank holds at least one KV head; sizes in GiB.
  const double kv_heads = static_cast<double>(std::max(in.tp, in.kv_heads));
  const double gib_per_token = 2.0 * static_cast<double>(in.attention_layers) * kv_heads *
                               static_cast<double>(in.head_dim) * in.bytes_per_kv_value / kGiB;
  const double gpus = static_cast<double>(in.tp * in.pp);
  const double engine_gib = in.param_count * in.bytes_per_weight / kGiB;
  const double total_gib = in.device_memory_bytes / kGiB * gpus;
  if (total_gib < engine_gib) {
    return InvalidArgument(
        "trtllm-bench: the model needs {:.2f} GiB, more than the {:.2f} GiB of {} devices",
        engine_gib, total_gib, in.tp * in.pp);
  }
  const double cache_gib = (total_gib - engine_gib) * in.kv_fraction;
  const double max_requests = cache_gib / (gib_per_token * (in.mean_input + in.mean_output));
  if (max_requests < 1) {
    return InvalidArgument(
        "trtllm-bench: the KV cache ({:.2f} GiB) holds {:.2f} requests of {:g} + {:g} tokens, "
        "fewer than one",
        cache_gib, max_requests, in.mean_input, in.mean_output);
  }
  // finetune_setting (optimistic tuning): batch capped at 4096 over the
  // pipeline stages, tokens at 32768, each rounded up by its steps.
  const double raw_bs = std::min(max_requests, 4096.0) / static_cast<double>(in.pp);
  const double raw_tokens = std::min(raw_bs * (1 + in.mean_input / in.mean_output), 32768.0);
  TrtllmBenchLimits out;
  out.kv_cache_max_requests = max_requests;
  out.max_batch_size = raw_bs < 256    ? std::max<int64_t>(64, RoundUp(raw_bs, 32))
                       : raw_bs < 1024 ? RoundUp(raw_bs, 128)
                                       : RoundUp(raw_bs, 256);
  out.max_num_tokens = raw_tokens < 4096   ? std::max<int64_t>(2048, RoundUp(raw_tokens, 256))
                       : raw_tokens < 8192 ? RoundUp(raw_tokens, 512)
                                           : RoundUp(raw_tokens, 1024);
  // get_settings: without chunked prefill the budget holds the longest prompt
  // beside a full batch (PR #5625, merged before v1.0).
  if (!in.chunked_prefill) {
    out.max_num_tokens = std::max(out.max_num_tokens, in.max_input + out.max_batch_size);
  }
  return out;
}

}  // namespace shardscope
