// RunInfo: the figures the analyzer needs from a trace's metadata (workload
// sizes, device peaks, link bandwidths). Every field is optional: a metric
// that needs a missing one is reported as not available, naming the field.
// Reads the layout config/experiment_json.h writes, either at the top level or
// under "experiment" (see docs/trace_format.md, "Metadata").
#ifndef SHARDSCOPE_ANALYSIS_RUN_INFO_H_
#define SHARDSCOPE_ANALYSIS_RUN_INFO_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace shardscope::analysis {

struct RunInfo {
  std::optional<int64_t> batch_size;
  std::optional<int64_t> sequence_length;
  std::optional<int64_t> tokens_to_generate;
  std::string dtype;                          // workload dtype, e.g. "bf16"
  std::optional<double> peak_flops;           // FLOP/s of one device in `dtype`
  std::optional<double> memory_bandwidth;     // B/s of one device
  std::optional<double> scale_up_bandwidth;   // B/s one direction, per device
  std::optional<double> scale_out_bandwidth;  // B/s one direction, per device (NIC)
  std::optional<int64_t> scale_up_domain;     // devices per scale-up domain

  // Rank r lives in scale-up domain r / scale_up_domain (ranks placed in order).
  static RunInfo FromMetadata(const nlohmann::json& metadata);
};

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_RUN_INFO_H_
