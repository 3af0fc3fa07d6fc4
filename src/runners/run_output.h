// What `shardscope run` prints for its runs: the simulated ones in one table
// with their claims (sim/run_report.h), then one line per CPU run; or the same
// as a JSON array.
#ifndef SHARDSCOPE_RUNNERS_RUN_OUTPUT_H_
#define SHARDSCOPE_RUNNERS_RUN_OUTPUT_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "run/run_result.h"

namespace shardscope::runners {

std::string RunResultsText(const std::vector<run::RunResult>& results);
nlohmann::json RunResultsJson(const std::vector<run::RunResult>& results);

}  // namespace shardscope::runners

#endif  // SHARDSCOPE_RUNNERS_RUN_OUTPUT_H_
