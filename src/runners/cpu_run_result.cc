// The parts of the CPU backend's interface that need neither MPI nor OpenBLAS:
// the experiment digest the ranks check and the run result's JSON form.
#include <nlohmann/json.hpp>

#include "config/experiment_json.h"
#include "runners/cpu_run.h"

namespace shardscope::runtime {

using nlohmann::json;

std::string ExperimentDigest(const Experiment& experiment) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : ExperimentToJson(experiment).dump()) {
    h = (h ^ c) * 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

json CpuRunResultToJson(const CpuRunResult& r) {
  return {{"ranks", r.ranks},
          {"trace_path", r.trace_path},
          {"metadata_path", r.metadata_path},
          {"generation_seconds", r.generation_seconds},
          {"ttft_seconds", r.ttft_seconds},
          {"tpot_seconds", r.tpot_seconds},
          {"tokens", r.tokens}};
}

StatusOr<CpuRunResult> CpuRunResultFromJson(const json& j) {
  CpuRunResult r;
  try {
    r.ranks = j.at("ranks");
    r.trace_path = j.at("trace_path");
    r.metadata_path = j.at("metadata_path");
    r.generation_seconds = j.at("generation_seconds").get<std::vector<double>>();
    r.ttft_seconds = j.at("ttft_seconds");
    r.tpot_seconds = j.at("tpot_seconds");
    r.tokens = j.at("tokens").get<std::vector<std::vector<int32_t>>>();
  } catch (const std::exception& e) {
    return DataLoss("cpu run result: {}", e.what());
  }
  return r;
}

}  // namespace shardscope::runtime
