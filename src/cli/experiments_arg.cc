#include "cli/experiments_arg.h"

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "plan/plan_loader.h"
#include "search/candidate.h"
#include "search/search.h"
#include "search/search_spec.h"

namespace shardscope::cli {
namespace {

std::string SearchCommand(const ExperimentsArg& arg, const std::string& name) {
  return fmt::format("shardscope search --config {} --experiment {}", arg.config, name);
}

// A long load says how far it is on stderr: a file that expands to kProgressFrom
// experiments or more, every kProgressEvery read (on a terminal, one line rewritten
// and cleared at the end). Shorter loads say nothing.
constexpr int64_t kProgressFrom = 2000;
constexpr int64_t kProgressEvery = 1000;

std::function<void(int64_t, int64_t)> LoadProgress(const std::string& path) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  return [path, tty](int64_t read, int64_t total) {
    if (total < kProgressFrom || (read % kProgressEvery != 0 && read != total)) return;
    const std::string line =
        fmt::format("shardscope: reading {}: {} of {} experiments", path, read, total);
    if (!tty) {
      std::cerr << line << "\n";
    } else {
      std::cerr << "\r\033[K" << (read == total ? "" : line) << std::flush;
    }
  };
}

}  // namespace

void AddSkipInvalidFlag(CLI::App* cmd, ExperimentsArg* arg) {
  cmd->add_flag("--skip-invalid", arg->skip_invalid,
                "Leave out experiments whose plan is invalid (one warning each) and go on "
                "with the rest");
}

StatusOr<Selection> LoadSelection(const ExperimentsArg& arg) {
  LoaderOptions options;
  options.only = arg.experiment;
  options.progress = LoadProgress(arg.config);
  std::vector<Status> skipped;
  std::vector<Status>* skip = arg.skip_invalid ? &skipped : nullptr;
  Selection out;
  auto split = search::SplitSearches(arg.config);
  if (!split.ok() || split->searches.empty()) {  // the loader says what is wrong, or no searches
    ASSIGN_OR_RETURN(out.experiments, LoadValidExperiments(arg.config, options, skip));
  } else if (std::find(split->searches.begin(), split->searches.end(), arg.experiment) !=
             split->searches.end()) {
    out.searches = {arg.experiment};
  } else {
    if (arg.experiment.empty()) out.searches = split->searches;
    if (split->rest) {
      ASSIGN_OR_RETURN(out.experiments,
                       ValidExperimentsFromYaml(*split->rest, arg.config, options, skip));
    } else if (!arg.experiment.empty()) {
      return InvalidArgument("{}: no experiment named '{}' (the file holds only searches: {})",
                             arg.config, arg.experiment, fmt::join(split->searches, ", "));
    }
  }
  for (const Status& s : skipped) std::cerr << "shardscope: skipped: " << s.message() << "\n";
  return out;
}

StatusOr<std::vector<Experiment>> LoadSelectedExperiments(const ExperimentsArg& arg) {
  ASSIGN_OR_RETURN(Selection selection, LoadSelection(arg));
  if (selection.experiments.empty() && selection.searches.size() > 1) {
    return InvalidArgument(
        "{}: every selected experiment is a search ({}): `{}` runs one; check and plan count "
        "their candidate plans",
        arg.config, fmt::join(selection.searches, ", "), SearchCommand(arg, "NAME"));
  }
  for (const std::string& name : selection.searches) {
    const std::string why = fmt::format(
        "{}: experiment '{}' is a search (it has a search: block): `{}` runs it; check and plan "
        "count its candidate plans",
        arg.config, name, SearchCommand(arg, name));
    if (selection.experiments.empty()) return InvalidArgument("{}", why);
    std::cerr << "shardscope: skipped: " << why << "\n";
  }
  return std::move(selection.experiments);
}

StatusOr<std::vector<nlohmann::json>> DescribeSearches(const ExperimentsArg& arg,
                                                       const std::vector<std::string>& names) {
  std::vector<nlohmann::json> out;
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(search::SearchInput in, search::LoadSearchInput(arg.config, name));
    out.push_back({{"experiment", in.experiment.name},
                   {"search",
                    {{"candidates", search::CountCandidates(in.experiment, in.spec)},
                     {"device_budget", search::DeviceBudget(in.experiment, in.spec)},
                     {"objective", search::ObjectiveName(in.spec.objective)}}},
                   {"command", SearchCommand(arg, name)}});
  }
  return out;
}

std::string SearchDescriptionText(const nlohmann::json& d) {
  const nlohmann::json& s = d["search"];
  return fmt::format(
      "{}: a search of {} candidate plans on up to {} devices (objective: {}); `{}` screens, "
      "simulates and ranks them\n",
      d["experiment"].get<std::string>(), s["candidates"].get<int64_t>(),
      s["device_budget"].get<int64_t>(), s["objective"].get<std::string>(),
      d["command"].get<std::string>());
}

}  // namespace shardscope::cli
