// ProgramBuilder: turns an experiment and its placement into the per-rank
// Program of one phase — prefill, or decode step k — with every op's exact
// FLOPs, bytes, shapes, streams and dependencies, and every comm op's
// collective, group, dimension and message sizes. docs/program.md defines what
// each op counts and how each parallelism dimension (and their products) shapes
// the ops. Immutable after Create; Build is const and thread-safe.
#ifndef SHARDSCOPE_PROGRAM_PROGRAM_BUILDER_H_
#define SHARDSCOPE_PROGRAM_PROGRAM_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"
#include "plan/placement.h"
#include "plan/shard_geometry.h"  // SplitCount, for the builder's callers
#include "program/expert_balancer.h"
#include "program/expert_routing.h"
#include "program/program.h"
#include "program/sp_layout.h"

namespace shardscope {

// The ops an Update rewrote with other costs, per rank: what a consumer that
// kept its figures of the previous step (the simulator's engine) reads again.
struct UpdatedOps {
  std::vector<std::vector<int32_t>> by_rank;  // op ids, ascending
};

// Ok when every rank and group id of a placement of `world_size` ranks and
// `groups` groups fits an Op's 32-bit fields (peer, group_id); else an error
// naming the experiment. ProgramBuilder::Create calls it.
Status CheckOpRanges(std::string_view experiment, int64_t world_size, int64_t groups);

class ProgramBuilder {
 public:
  // Copies the experiment and placement. Fails when the placement does not
  // belong to the experiment's plan, or the plan asks for something the
  // builder cannot express (the message names it).
  static StatusOr<ProgramBuilder> Create(const Experiment& experiment, const Placement& placement);

  // The Program of a phase. Prefill (decode_step must be 0): sequence_length
  // tokens per request, empty context. Decode step k ≥ 0: one new token per
  // request over a context of sequence_length + k cached tokens.
  StatusOr<PhaseProgram> Build(Phase phase, int64_t decode_step) const;

  // Turns `program`, a decode Program of this builder (from Build or Update),
  // into that of decode step `decode_step` in place — equal to
  // Build(kDecode, decode_step) — without reallocating it: between decode steps
  // only the context (attention costs, KV bytes) and the expert routing change.
  // A rank whose op sequence differs between the two steps (under sp the new
  // KV is appended on one rank of the ring) is rebuilt. Fails on a program
  // that is not a decode program of this builder. `same_ops` (optional) tells
  // whether every rank was patched in place: the same ops in the same order,
  // with the same streams, deps, groups and seqs, only their costs changed.
  // `updated` (optional) gets, per rank, the ids of the ops whose costs this
  // call changed (flops, bytes, shapes, expert counts, message sizes and rows),
  // ascending; a rebuilt rank lists every op.
  Status Update(PhaseProgram& program, int64_t decode_step, bool* same_ops = nullptr,
                UpdatedOps* updated = nullptr) const;

  // Cached tokens per request before decode step `decode_step`: the prompt plus
  // one token per step, or under speculative decoding ⌊step × expected tokens
  // per step⌋ (SpeculativeSpec::TokensPerStep).
  int64_t DecodeContext(int64_t decode_step) const;

  const Experiment& experiment() const { return experiment_; }
  const Placement& placement() const { return placement_; }
  // The experiment's dtype roles (PrecisionOf), resolved once.
  const Precision& precision() const { return precision_; }
  // Micro-batches each replica's requests are split into (the same for all replicas).
  int64_t micro_batches() const { return micro_batches_; }
  // The ring-attention layout of the prompt; set when sp > 1.
  const std::optional<SpLayout>& sp_layout() const { return sp_layout_; }
  // The routing distribution; set for MoE models.
  const std::optional<ExpertRouting>& routing() const { return routing_; }
  // The routing distribution of a layer, computed once (MoE models).
  const ExpertRouting::LayerDistribution& routing_distribution(int64_t layer) const {
    return routing_distributions_[layer];
  }
  // EPLB (parallelism.redundant_experts > 0): the expert slots of a MoE layer,
  // balanced for the measured loads or the routing distribution; null without.
  const ExpertReplicas* replicas(int64_t layer) const {
    return replicas_.empty() ? nullptr : &replicas_[layer];
  }
  // Every layer's (empty without EPLB), for the trace's expert ids.
  const std::vector<ExpertReplicas>& all_replicas() const { return replicas_; }

 private:
  // Sets the program's step, context length and new tokens.
  void SetStep(PhaseProgram& program, int64_t decode_step) const;

  Experiment experiment_;
  Placement placement_;
  Precision precision_;
  int64_t micro_batches_ = 1;
  std::optional<SpLayout> sp_layout_;
  std::optional<ExpertRouting> routing_;
  std::vector<ExpertRouting::LayerDistribution> routing_distributions_;  // per layer
  std::vector<ExpertReplicas> replicas_;  // per layer (MoE layers filled); empty without EPLB
};

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_PROGRAM_BUILDER_H_
