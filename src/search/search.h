// RunSearch: the whole search for one experiment — enumerate the candidates,
// screen each (evaluation.h), simulate the survivors most promising first in
// waves, skipping those whose bounds a simulated plan already beats, then rank
// the simulated ones by the objective subject to the SLOs and find the Pareto
// front of tokens/s per GPU vs tokens/s per user. The work of each step is
// spread by a Mapper (this process, or MPI ranks: distributed.h).
// Deterministic: the same inputs give the same result, however it is spread.
#ifndef SHARDSCOPE_SEARCH_SEARCH_H_
#define SHARDSCOPE_SEARCH_SEARCH_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "search/candidate.h"
#include "search/evaluation.h"
#include "search/search_spec.h"

namespace shardscope::search {

// Applies `step` to every input and returns the results in the inputs' order.
// Every process calls it with the same inputs. MapHere runs them one after
// another in this process.
using Step = std::function<StatusOr<Evaluation>(const Evaluation&)>;
using Mapper =
    std::function<StatusOr<std::vector<Evaluation>>(const std::vector<Evaluation>&, const Step&)>;
StatusOr<std::vector<Evaluation>> MapHere(const std::vector<Evaluation>& inputs, const Step& step);

// Screened candidates are simulated in waves of this many, most promising
// (best bound on the objective) first; a fixed size, so the result does not
// depend on how many ranks share a wave.
inline constexpr size_t kWave = 16;

struct SearchResult {
  Experiment base;
  SearchSpec spec;
  int64_t enumerated = 0;
  std::array<int64_t, kNumOutcomes> counts{};  // candidates per outcome
  std::vector<Evaluation> evaluations;         // every candidate, enumeration order
  std::vector<int64_t> ranked;  // indices of simulated plans meeting the SLOs, best first
  std::vector<int64_t> pareto;  // indices on the front, tokens/s per user ascending
  // When no simulated plan meets the SLOs: the closest ones (smallest worst
  // ratio of figure to target), best first.
  std::vector<int64_t> closest;
  const Evaluation* best() const { return ranked.empty() ? nullptr : &evaluations[ranked[0]]; }
};

// Counts the candidates of the space (cheap: nothing is evaluated).
int64_t CountCandidates(const Experiment& base, const SearchSpec& spec);

// Fails, naming the file, the experiment and the limit, when the space holds
// more than spec.max_candidates candidates (before evaluating any), and when
// no candidate survives the plan, budget and memory rules, naming the rule that
// removed the last ones and one of their reasons. When no plan meets the SLOs
// the result has no ranking and lists the closest plans instead.
StatusOr<SearchResult> RunSearch(const Experiment& base, const SearchSpec& spec,
                                 const Mapper& map = MapHere);

}  // namespace shardscope::search

#endif  // SHARDSCOPE_SEARCH_SEARCH_H_
