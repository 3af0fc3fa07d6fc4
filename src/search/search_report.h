// Renderings of a SearchResult: the text report (what was searched, how many
// candidates each rule removed, the ranked table, the Pareto front, the best
// plan or the closest ones), CSV and JSON of every evaluated candidate, and the
// best plan as a ready experiments file. Pure functions.
#ifndef SHARDSCOPE_SEARCH_SEARCH_REPORT_H_
#define SHARDSCOPE_SEARCH_SEARCH_REPORT_H_

#include <yaml-cpp/yaml.h>

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "search/search.h"

namespace shardscope::search {

std::string SearchReportText(const SearchResult& result);
// One row per candidate, enumeration order, rejected ones with their rule and reason.
std::string SearchReportCsv(const SearchResult& result);
nlohmann::json SearchReportJson(const SearchResult& result);

// The message for a search whose SLOs no plan meets, with the closest plans.
std::string SloMissMessage(const SearchResult& result);

// An experiments file holding one experiment: `experiment_yaml` (the searched
// experiment as written) with the plan and batch of `best`, named
// "<experiment>_best"; relative paths made absolute so it loads from anywhere.
// Fails when the result has no best plan.
StatusOr<std::string> BestPlanYaml(const SearchResult& result, const YAML::Node& experiment_yaml);

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_SEARCH_REPORT_H_
