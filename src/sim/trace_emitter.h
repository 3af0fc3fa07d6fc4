// TraceEmitter: writes one simulated phase into a trace — an "X" event per op
// (its Program fields as args), a sync-wait event per comm op that waited for
// its peers (on its own track, tid = 100 + stream), phase and step spans, and
// process/thread names. Events are written rank by rank in op order, so the
// same simulation always yields the same bytes. Not thread-safe.
#ifndef SHARDSCOPE_SIM_TRACE_EMITTER_H_
#define SHARDSCOPE_SIM_TRACE_EMITTER_H_

#include <string>
#include <vector>

#include "config/experiment.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/expert_balancer.h"
#include "program/program.h"
#include "sim/engine.h"
#include "trace/trace_writer.h"

namespace shardscope::sim {

// Track of the sync-wait events of comm stream s.
inline constexpr int32_t kWaitTrackBase = 100;

class TraceEmitter {
 public:
  // Borrows the writer and placement; they must outlive the emitter.
  TraceEmitter(trace::TraceWriter* writer, const Experiment& experiment,
               const Placement& placement);

  // Process and thread names, and the memory counter of every rank at t = 0.
  void WriteHeader(const MemoryPlan& memory);
  // The ops and the phase/step span of one simulated phase. Decode steps at or
  // past the experiment's trace_steps (when set) are left out.
  void WritePhase(const PhaseProgram& program, const PhaseResult& result,
                  const std::vector<double>& rank_start);
  // The "decode" span of each rank, from its first step's start to its last
  // written step's end.
  void WriteDecodeSpans(const std::vector<double>& start, const std::vector<double>& end);
  // EPLB: each layer's expert slots (borrowed), so the trace names their experts.
  void SetExpertReplicas(const std::vector<ExpertReplicas>* replicas) { replicas_ = replicas; }

 private:
  trace::TraceWriter* const writer_;
  const Experiment& experiment_;
  const Placement& placement_;
  std::string dtype_;       // every op's, without dtype roles
  bool roles_ = false;      // a `precision:` block: layer GEMMs and the LM head carry their own
  std::string gemm_dtype_;  // Precision::GemmDType
  std::string head_dtype_;
  const std::vector<ExpertReplicas>* replicas_ = nullptr;
  trace::OpEvent event_;  // reused: keeps its strings' and vectors' capacity
  trace::OpEvent wait_;   // the sync-wait event, likewise
  // Per rank: end of the last decode step written; empty until one is written.
  std::vector<double> written_decode_end_;
};

// Seconds → trace nanoseconds (rounded).
int64_t ToNs(double seconds);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_TRACE_EMITTER_H_
