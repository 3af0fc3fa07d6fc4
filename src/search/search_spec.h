// SearchSpec: what `shardscope search` explores and how it ranks — the bounds of
// every parallelism dimension, the device budget, the objective and the SLOs.
// Read from an experiment's optional `search:` block (docs/search.md), then
// overridden by command-line flags. Plain value type.
#ifndef SHARDSCOPE_SEARCH_SEARCH_SPEC_H_
#define SHARDSCOPE_SEARCH_SEARCH_SPEC_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "core/yaml_reader.h"

namespace shardscope::search {

enum class Objective {
  kThroughput,  // tokens/s per GPU, higher is better (default)
  kTtft,        // time to first token, lower is better
  kTpot,        // time per output token, lower is better
  kCost,        // dollars per million tokens, lower is better
};
std::string_view ObjectiveName(Objective o);
StatusOr<Objective> ParseObjective(std::string_view name);

// Which mesh orders to try for a plan with several dimensions above 1.
enum class OrderMode {
  kDefault,    // tp, sp, ep, dp, pp (innermost first) only
  kInnermost,  // each dimension above 1 innermost once, the rest in default order
  kAll,        // every permutation of the dimensions above 1
};

struct Slo {
  double ttft_ms = 0;  // 0: no target
  double tpot_ms = 0;
  bool any() const { return ttft_ms > 0 || tpot_ms > 0; }
};

struct SearchSpec {
  // Dimension sizes to try; empty: powers of two up to the device budget (pp
  // also the model's layer count, i.e. layer-wise; ep only for MoE models).
  std::vector<int64_t> tp, pp, sp, ep, dp;
  std::vector<SpVariant> sp_variants = {SpVariant::kZigzag, SpVariant::kRing, SpVariant::kStripe};
  // Pipeline micro-batch counts as multiples of pp (1 also tried: no overlap).
  std::vector<int64_t> micro_batch_factors = {1, 2};
  // Requests per replica to try; empty: powers of two up to batch_size, and batch_size.
  std::vector<int64_t> batch_sizes;
  OrderMode orders = OrderMode::kInnermost;
  int64_t max_devices = 0;  // 0: the cluster's devices
  int64_t max_candidates = 20000;
  Objective objective = Objective::kThroughput;
  Slo slo;
  double gpu_hour_usd = 2.0;  // for the cost objective
  int64_t decode_steps = 1;   // decode steps simulated per plan (the rest extrapolated)
  int64_t top = 10;           // rows of the ranked table
};

// Reads a `search:` block (a map; null gives the defaults). Errors name the
// file, the experiment and the field ("search.tp").
StatusOr<SearchSpec> SearchSpecFromYaml(const YAML::Node& node, const YamlContext& ctx);

// An experiment to search: the resolved experiment (its parallelism is only a
// starting point and may be absent in the file), its search block, and the
// experiment's YAML as written (defaults merged) to write the best plan back.
struct SearchInput {
  Experiment experiment;
  SearchSpec spec;
  YAML::Node experiment_yaml;
};

// Loads experiment `name` from `path`. `search:` blocks are taken out of every
// experiment before the file goes through the ordinary loader, so a search file
// is an experiments file; `parallelism` may be left out. A sweep is refused: a
// search takes one model, cluster and workload.
StatusOr<SearchInput> LoadSearchInput(const std::string& path, const std::string& name);

// A file's experiments split for the commands that take experiments (check,
// plan, run): the names of those with a `search:` block, in file order, and the
// file without them (and without the defaults' `search:` block) for the
// ordinary loader (nullopt when no experiment is left).
struct SearchSplit {
  std::optional<YAML::Node> rest;
  std::vector<std::string> searches;
};
StatusOr<SearchSplit> SplitSearches(const std::string& path);

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_SEARCH_SPEC_H_
