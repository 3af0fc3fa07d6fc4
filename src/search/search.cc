#include "search/search.h"

#include <algorithm>
#include <numeric>

namespace shardscope::search {

StatusOr<std::vector<Evaluation>> MapHere(const std::vector<Evaluation>& inputs, const Step& step) {
  std::vector<Evaluation> out;
  out.reserve(inputs.size());
  for (const Evaluation& in : inputs) {
    ASSIGN_OR_RETURN(Evaluation e, step(in));
    out.push_back(std::move(e));
  }
  return out;
}

int64_t CountCandidates(const Experiment& base, const SearchSpec& spec) {
  return EnumerateCandidates(base, spec, [](const Candidate&) { return true; });
}

namespace {

// The simulated plan (meeting the SLOs) that beats `c`'s bounds on tokens/s
// per GPU, per user and the objective — so `c` can be neither the best plan
// nor on the front — or null.
const Evaluation* Dominator(const Evaluation& c, const std::vector<const Evaluation*>& simulated,
                            Objective objective) {
  const Figures& b = c.figures;
  for (const Evaluation* s : simulated) {
    const Figures& f = s->figures;
    if (f.per_gpu >= b.bound_per_gpu && f.per_user >= b.bound_per_user &&
        Score(f, objective) >= Score(b, objective, /*bound=*/true)) {
      return s;
    }
  }
  return nullptr;
}

// How far a plan misses the SLOs: the largest ratio of figure to target (≤ 1: met).
double SloMiss(const Figures& f, const Slo& slo, bool use_bounds) {
  const double ttft = use_bounds ? f.bound_ttft : f.ttft;
  const double tpot = use_bounds ? f.bound_tpot : f.tpot;
  double miss = 0;
  if (slo.ttft_ms > 0) miss = std::max(miss, ttft * 1e3 / slo.ttft_ms);
  if (slo.tpot_ms > 0 && tpot > 0) miss = std::max(miss, tpot * 1e3 / slo.tpot_ms);
  return miss;
}

std::vector<int64_t> ClosestPlans(const std::vector<Evaluation>& evs, const SearchSpec& spec) {
  for (bool use_bounds : {false, true}) {
    const Outcome want = use_bounds ? Outcome::kSloBound : Outcome::kSimulated;
    std::vector<int64_t> idx;
    for (const auto& e : evs) {
      if (e.outcome == want) idx.push_back(e.candidate.index);
    }
    if (idx.empty()) continue;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return SloMiss(evs[a].figures, spec.slo, use_bounds) <
             SloMiss(evs[b].figures, spec.slo, use_bounds);
    });
    if (static_cast<int64_t>(idx.size()) > spec.top) idx.resize(spec.top);
    return idx;
  }
  return {};
}

// Plans no other plan matches or beats on both tokens/s per GPU and per user.
std::vector<int64_t> ParetoFront(const std::vector<Evaluation>& evs,
                                 const std::vector<int64_t>& pool) {
  std::vector<int64_t> idx = pool;
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const Figures &fa = evs[a].figures, &fb = evs[b].figures;
    if (fa.per_user != fb.per_user) return fa.per_user > fb.per_user;
    return fa.per_gpu > fb.per_gpu;
  });
  // Sweep from the fastest per user: a plan joins when it beats every faster one per GPU.
  std::vector<int64_t> front;
  double best_gpu = -1;
  for (int64_t i : idx) {
    if (evs[i].figures.per_gpu > best_gpu) {
      front.push_back(i);
      best_gpu = evs[i].figures.per_gpu;
    }
  }
  std::reverse(front.begin(), front.end());
  return front;
}

}  // namespace

StatusOr<SearchResult> RunSearch(const Experiment& base, const SearchSpec& spec,
                                 const Mapper& map) {
  const int64_t count = CountCandidates(base, spec);
  if (count > spec.max_candidates) {
    return InvalidArgument(
        "{}: experiment '{}': field 'search.max_candidates': the space holds {} candidate plans, "
        "more than the limit of {}; narrow the search (search.tp, pp, sp, ep, dp, batch_sizes) "
        "or raise --max-candidates",
        base.source_file, base.name, count, spec.max_candidates);
  }
  if (count == 0) {
    return InvalidArgument(
        "{}: experiment '{}': the search space is empty (no size list fits the "
        "budget of {} devices)",
        base.source_file, base.name, DeviceBudget(base, spec));
  }
  std::vector<Candidate> candidates;
  candidates.reserve(count);
  EnumerateCandidates(base, spec, [&](const Candidate& c) {
    candidates.push_back(c);
    return true;
  });
  SearchResult r;
  r.base = base;
  r.spec = spec;
  r.enumerated = count;
  std::vector<Evaluation> inputs(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) inputs[i].candidate = candidates[i];
  ASSIGN_OR_RETURN(r.evaluations, map(inputs, [&](const Evaluation& e) {
                     return Screen(base, spec, e.candidate);
                   }));
  if (r.evaluations.size() != candidates.size()) {
    return InternalError("search: {} evaluations for {} candidates", r.evaluations.size(),
                         candidates.size());
  }
  for (size_t i = 0; i < candidates.size(); ++i) r.evaluations[i].candidate = candidates[i];
  // Simulate the survivors, best bound first, in waves of a fixed size.
  std::vector<int64_t> pending;
  for (const auto& e : r.evaluations) {
    if (e.outcome == Outcome::kSimulated) pending.push_back(e.candidate.index);
  }
  std::stable_sort(pending.begin(), pending.end(), [&](int64_t a, int64_t b) {
    return Score(r.evaluations[a].figures, spec.objective, true) >
           Score(r.evaluations[b].figures, spec.objective, true);
  });
  std::vector<const Evaluation*> simulated;  // meeting the SLOs
  for (size_t start = 0; start < pending.size(); start += kWave) {
    std::vector<int64_t> wave;
    for (size_t k = start; k < std::min(pending.size(), start + kWave); ++k) {
      Evaluation& e = r.evaluations[pending[k]];
      if (const Evaluation* d = Dominator(e, simulated, spec.objective)) {
        e.outcome = Outcome::kDominated;
        e.reason = fmt::format(
            "its bounds ({:.1f} tokens/s per GPU, {:.1f} per user) are below simulated {} "
            "({:.1f}, {:.1f})",
            e.figures.bound_per_gpu, e.figures.bound_per_user, PlanLabel(d->candidate),
            d->figures.per_gpu, d->figures.per_user);
        continue;
      }
      wave.push_back(pending[k]);
    }
    std::vector<Evaluation> in;
    for (int64_t i : wave) in.push_back(r.evaluations[i]);
    ASSIGN_OR_RETURN(std::vector<Evaluation> out,
                     map(in, [&](const Evaluation& e) { return Simulate(base, spec, e); }));
    if (out.size() != wave.size()) return InternalError("search: a wave lost results");
    for (size_t k = 0; k < wave.size(); ++k) {
      Evaluation& e = r.evaluations[wave[k]];
      out[k].candidate = e.candidate;
      e = std::move(out[k]);
      if (e.outcome == Outcome::kSimulated && e.meets_slo) simulated.push_back(&e);
    }
  }
  for (const auto& e : r.evaluations) ++r.counts[static_cast<int>(e.outcome)];
  if (r.counts[static_cast<int>(Outcome::kSimulated)] == 0 &&
      r.counts[static_cast<int>(Outcome::kSloBound)] == 0) {  // (dominated needs a simulated plan)
    // The rules run in order, so the last one that removed anything removed the last candidate.
    Outcome last = Outcome::kInvalidPlan;
    for (Outcome o : {Outcome::kInvalidPlan, Outcome::kOverBudget, Outcome::kNoMemoryFit}) {
      if (r.counts[static_cast<int>(o)] > 0) last = o;
    }
    const Evaluation* example = nullptr;
    for (const auto& e : r.evaluations) {
      if (e.outcome == last) {
        example = &e;
        break;
      }
    }
    return InvalidArgument(
        "{}: experiment '{}': no valid plan among {} candidates (plan {}, device budget {}, "
        "memory {}); the {} rule removed the last {}, e.g. {}: {}",
        base.source_file, base.name, count, r.counts[0], r.counts[1], r.counts[2],
        OutcomeName(last), r.counts[static_cast<int>(last)], PlanLabel(example->candidate),
        example->reason);
  }
  for (const auto& e : r.evaluations) {
    if (e.outcome == Outcome::kSimulated && e.meets_slo) r.ranked.push_back(e.candidate.index);
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [&](int64_t a, int64_t b) {
    const Evaluation &ea = r.evaluations[a], &eb = r.evaluations[b];
    const double sa = Score(ea.figures, spec.objective), sb = Score(eb.figures, spec.objective);
    if (sa != sb) return sa > sb;
    return ea.candidate.devices() < eb.candidate.devices();
  });
  r.pareto = ParetoFront(r.evaluations, r.ranked);
  if (r.ranked.empty()) r.closest = ClosestPlans(r.evaluations, spec);
  return r;
}

}  // namespace shardscope::search
