// RunInfo: the figures the analyzer needs from a trace's metadata (workload
// sizes, device peaks, link bandwidths). Every field is optional: a metric
// that needs a missing one is reported as not available, naming the field.
// Reads the layout config/experiment_json.h writes, either at the top level or
// under "experiment" (see docs/trace_format.md, "Metadata").
#ifndef SHARDSCOPE_ANALYSIS_RUN_INFO_H_
#define SHARDSCOPE_ANALYSIS_RUN_INFO_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

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

  // Fields present in the metadata but unusable (batch 1e300, sequence -5): the
  // dotted field → why, e.g. "metadata's workload.batch_size is 1e+300, not a whole
  // number from 1 to 2^53". Such a field is left empty above, and a metric that
  // needs it says this instead of "metadata lacks …".
  std::map<std::string, std::string> unusable;

  // Why a metric needing `fields` (dotted, as in `unusable`) is not available:
  // the unusable ones' reasons, else `lacks` (the caller's "metadata lacks …").
  std::string WhyNot(std::initializer_list<std::string_view> fields, std::string lacks) const;

  // Rank r lives in scale-up domain r / scale_up_domain (ranks placed in order).
  static RunInfo FromMetadata(const nlohmann::json& metadata);
};

}  // namespace shardscope::analysis

#endif  // SHARDSCOPE_ANALYSIS_RUN_INFO_H_
