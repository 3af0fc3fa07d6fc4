#include "serve/iteration_cost.h"

#include <algorithm>
#include <bit>

#include "program/program_builder.h"

namespace shardscope::serve {

IterationCost::IterationCost(Experiment replica, Placement placement,
                             std::unique_ptr<const sim::SimSetup> setup, sim::Algorithm allreduce,
                             int64_t per_octave)
    : replica_(std::move(replica)),
      placement_(std::move(placement)),
      setup_(std::move(setup)),
      engine_(placement_, setup_->compute, setup_->topology,
              setup_->EngineOptionsFor(allreduce, placement_.world_size())),
      replay_compute_(setup_->compute.WithoutLaunch()),
      replay_engine_(placement_, replay_compute_, setup_->topology,
                     setup_->EngineOptionsFor(allreduce, placement_.world_size())),
      attention_compute_(setup_->compute.WithoutFixedCosts()),
      per_octave_(per_octave),
      align_(replica_.parallel.sp > 1
                 ? (replica_.parallel.sp_variant == SpVariant::kZigzag ? 2 * replica_.parallel.sp
                                                                       : replica_.parallel.sp)
                 : 1) {}

StatusOr<std::unique_ptr<IterationCost>> IterationCost::Create(const Experiment& experiment,
                                                               const std::string& calibration_file,
                                                               sim::Algorithm allreduce,
                                                               int64_t grid_points_per_octave) {
  Experiment replica = experiment;
  replica.parallel.dp = 1;
  replica.serving.reset();
  // The placement depends on the plan only; a batch of ep requests is valid for it.
  replica.workload.batch_size = std::max<int64_t>(replica.parallel.ep, 1);
  // One pass per iteration: with pp > 1 the replica's virtual engines pipeline
  // consecutive iterations instead (serving_simulator.cc), as vLLM does.
  replica.parallel.micro_batches = 1;
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(replica));
  ASSIGN_OR_RETURN(std::unique_ptr<const sim::SimSetup> setup,
                   sim::MakeSimSetup(experiment, calibration_file));
  return std::unique_ptr<IterationCost>(new IterationCost(std::move(replica), std::move(placement),
                                                          std::move(setup), allreduce,
                                                          grid_points_per_octave));
}

std::pair<int64_t, int64_t> IterationCost::GridPoints(int64_t x, int64_t per_octave,
                                                      int64_t align) {
  auto aligned = [&](int64_t v, bool up) {
    const int64_t a = up ? (v + align - 1) / align * align : v / align * align;
    return std::max(a, align);
  };
  if (per_octave <= 0 || x <= 2 * per_octave) {
    return {aligned(x, false) == x ? x : aligned(x, false), aligned(x, true)};
  }
  // Spacing 2^⌊log2 x⌋ / P: P points per octave.
  const int64_t octave = std::bit_floor(static_cast<uint64_t>(x));
  const int64_t step = std::max<int64_t>(octave / per_octave, 1);
  const int64_t lo = x / step * step;
  const int64_t hi = lo == x ? x : lo + step;
  return {aligned(lo, false), aligned(hi, true)};
}

StatusOr<double> IterationCost::AtGridPoint(Kind kind, int64_t requests, int64_t tokens) {
  const bool prefill = kind == Kind::kPrefill;
  const auto key = std::make_tuple(kind, requests, tokens);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Experiment e = replica_;
  e.workload.batch_size = requests;
  e.workload.sequence_length = tokens;
  e.workload.tokens_to_generate = prefill ? 1 : 2;
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, placement_));
  ASSIGN_OR_RETURN(PhaseProgram program,
                   builder.Build(prefill ? Phase::kPrefill : Phase::kDecode, 0));
  sim::Engine& engine = kind == Kind::kDecodeReplay ? replay_engine_ : engine_;
  // The per-op host time before the iteration (0 unless calibrated), per rank.
  std::vector<double> begin;
  if (setup_->calibration.terms.iteration_overhead_per_op > 0) {
    for (const RankProgram& rp : program.ranks) {
      begin.push_back(setup_->calibration.terms.PerOpSeconds(rp.ops.size()));
    }
  }
  ASSIGN_OR_RETURN(sim::PhaseResult r, engine.Run(program, begin));
  const double seconds = *std::max_element(r.rank_end.begin(), r.rank_end.end());
  ++programs_simulated_;
  ops_simulated_ += r.ops;
  cache_.emplace(key, seconds);
  return seconds;
}

StatusOr<double> IterationCost::Interpolated(Kind kind, int64_t requests, int64_t tokens) {
  const auto [n0, n1] = GridPoints(requests, per_octave_, 1);
  const auto [t0, t1] = GridPoints(tokens, per_octave_, align_);
  auto weight = [](int64_t x, int64_t lo, int64_t hi) {
    return hi == lo ? 0.0 : static_cast<double>(x - lo) / static_cast<double>(hi - lo);
  };
  // Below the first aligned point (x < align) the weight is clamped to the point itself.
  const double wn = std::clamp(weight(requests, n0, n1), 0.0, 1.0);
  const double wt = std::clamp(weight(tokens, t0, t1), 0.0, 1.0);
  ASSIGN_OR_RETURN(const double c00, AtGridPoint(kind, n0, t0));
  double c01 = c00, c10 = c00, c11 = c00;
  if (t1 != t0) {
    ASSIGN_OR_RETURN(c01, AtGridPoint(kind, n0, t1));
  }
  if (n1 != n0) {
    ASSIGN_OR_RETURN(c10, AtGridPoint(kind, n1, t0));
  }
  if (n1 != n0 && t1 != t0) {
    ASSIGN_OR_RETURN(c11, AtGridPoint(kind, n1, t1));
  }
  return (1 - wn) * ((1 - wt) * c00 + wt * c01) + wn * ((1 - wt) * c10 + wt * c11);
}

StatusOr<double> IterationCost::Prefill(int64_t requests, int64_t tokens) {
  return Interpolated(Kind::kPrefill, requests, tokens);
}

StatusOr<double> IterationCost::PriorContextExtra(int64_t prior, int64_t chunk) {
  if (prior <= 0) return 0.0;
  if (attention_ranks() > 1) {
    ASSIGN_OR_RETURN(const double whole, AttentionSeconds(prior + chunk));
    ASSIGN_OR_RETURN(const double before, AttentionSeconds(prior));
    ASSIGN_OR_RETURN(const double alone, AttentionSeconds(chunk));
    return std::max(0.0, whole - before - alone);
  }
  ASSIGN_OR_RETURN(const double whole, Prefill(1, prior + chunk));
  ASSIGN_OR_RETURN(const double before, Prefill(1, prior));
  ASSIGN_OR_RETURN(const double alone, Prefill(1, chunk));
  return std::max(0.0, whole - before - alone);
}

StatusOr<double> IterationCost::AttentionSeconds(int64_t tokens) {
  if (auto it = attention_cache_.find(tokens); it != attention_cache_.end()) return it->second;
  Experiment e = replica_;
  e.workload.batch_size = attention_ranks();
  e.workload.sequence_length = tokens;
  e.workload.tokens_to_generate = 1;
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, placement_));
  ASSIGN_OR_RETURN(PhaseProgram program, builder.Build(Phase::kPrefill, 0));
  double sum = 0;
  for (const RankProgram& rp : program.ranks) {
    for (const Op& op : rp.ops) {
      if (op.role == OpRole::kAttention) sum += attention_compute_.Seconds(op);
    }
  }
  // Per rank, over the pipeline's stages one after another.
  const double seconds =
      sum * static_cast<double>(replica_.parallel.pp) / static_cast<double>(program.ranks.size());
  ++programs_simulated_;
  attention_cache_.emplace(tokens, seconds);
  return seconds;
}

StatusOr<double> IterationCost::PriorContextSeconds(
    std::span<const std::pair<int64_t, int64_t>> chunks) {
  std::vector<double> per_rank(static_cast<size_t>(attention_ranks()), 0.0);
  for (size_t i = 0; i < chunks.size(); ++i) {
    ASSIGN_OR_RETURN(const double extra, PriorContextExtra(chunks[i].first, chunks[i].second));
    per_rank[i % per_rank.size()] += extra;
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

StatusOr<double> IterationCost::Mixed(int64_t chunks, int64_t tokens, int64_t requests,
                                      int64_t context) {
  // Under speculative decoding each decoding request verifies k + 1 tokens.
  const int64_t verify = replica_.speculative.enabled() ? replica_.speculative.draft_tokens + 1 : 1;
  ASSIGN_OR_RETURN(const double fused,
                   Prefill(chunks, (tokens + requests * verify + chunks - 1) / chunks));
  ASSIGN_OR_RETURN(const double decode, Decode(requests, context));
  ASSIGN_OR_RETURN(const double no_context, Decode(requests, 1));
  return fused + std::max(0.0, decode - no_context);
}

StatusOr<double> IterationCost::Decode(int64_t requests, int64_t context, bool replay) {
  return Interpolated(replay ? Kind::kDecodeReplay : Kind::kDecode, requests, context);
}

}  // namespace shardscope::serve
