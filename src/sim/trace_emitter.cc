#include "sim/trace_emitter.h"

#include <cmath>

#include "core/dtype.h"
#include "run/op_event.h"
#include "sim/compute_model.h"

namespace shardscope::sim {
namespace {

// How a simulated comm op ran, in its trace args: the algorithm, NCCL's
// protocol where one applies (tuned links, not the MoE exchange kernels) and
// an all-to-all's kind.
void SetCommChoice(const Op& op, const OpTiming& t, trace::OpEvent* e) {
  if (t.algorithm == Algorithm::kAuto) return;  // no plan (e.g. a zero-byte op)
  e->algorithm = AlgorithmName(t.algorithm);
  const bool exchange_kernel =
      t.algorithm == Algorithm::kHierarchical || t.algorithm == Algorithm::kLowLatency;
  if (op.collective == Collective::kAllToAll) {
    e->all_to_all = exchange_kernel ? AlgorithmName(t.algorithm) : "nccl";
    if (exchange_kernel) return;
  }
  if (t.protocol != Protocol::kAuto) e->protocol = ProtocolName(t.protocol);
}

}  // namespace

int64_t ToNs(double seconds) { return std::llround(seconds * 1e9); }

TraceEmitter::TraceEmitter(trace::TraceWriter* writer, const Experiment& experiment,
                           const Placement& placement)
    : writer_(writer),
      experiment_(experiment),
      placement_(placement),
      dtype_(DTypeName(experiment.workload.dtype)) {
  if (experiment.precision.given()) {
    const Precision p = PrecisionOf(experiment);
    roles_ = true;
    dtype_ = DTypeName(p.activations);
    gemm_dtype_ = DTypeName(p.GemmDType());
    head_dtype_ = DTypeName(p.lm_head);
  }
}

void TraceEmitter::WriteHeader(const MemoryPlan& memory) {
  const bool tpu = experiment_.cluster.device.kind == DeviceKind::kTpu;
  for (int64_t r = 0; r < placement_.world_size(); ++r) {
    const DeviceLocation& loc = placement_.Location(r);
    const int32_t rank = static_cast<int32_t>(r);
    writer_->NameProcess(rank, fmt::format("rank {} · node {} · {} {}", r, loc.node,
                                           tpu ? "chip" : "gpu", loc.local));
    for (int s = 0; s < kNumStreams; ++s) {
      writer_->NameThread(rank, s, StreamName(static_cast<Stream>(s)));
      if (s > 0) {
        writer_->NameThread(rank, kWaitTrackBase + s,
                            fmt::format("{} sync wait", StreamName(static_cast<Stream>(s))));
      }
    }
    writer_->NameThread(rank, trace::kSpanStream, "phases");
    if (static_cast<size_t>(r) < memory.ranks.size()) {
      const RankMemory& m = memory.ranks[r];
      writer_->AddCounter(trace::CounterEvent{rank,
                                              "memory",
                                              0,
                                              {{"weights", m.weights},
                                               {"kv_cache", m.kv_cache},
                                               {"activations", m.activations},
                                               {"buffers", m.comm_buffers}}});
    }
  }
}

void TraceEmitter::WritePhase(const PhaseProgram& program, const PhaseResult& result,
                              const std::vector<double>& rank_start) {
  const Phase phase = program.phase;
  const int32_t step = program.phase == Phase::kDecode ? static_cast<int32_t>(program.step) : -1;
  if (step >= 0 && experiment_.trace_steps >= 0 && step >= experiment_.trace_steps) return;
  if (step >= 0) written_decode_end_ = result.rank_end;
  trace::OpEvent& e = event_;
  for (const RankProgram& rp : program.ranks) {
    const int32_t rank = static_cast<int32_t>(rp.rank);
    const auto& timings = result.timings[rp.rank];
    for (const Op& op : rp.ops) {
      const OpTiming& t = timings[op.id];
      e.rank = rank;
      FillOpEvent(op, placement_, &e, replicas_);
      // A comm op spans from its post (as a real NCCL kernel that spins until
      // its peers arrive) to the end of its transfer.
      e.ts_ns = ToNs(t.post);
      e.dur_ns = ToNs(t.end) - e.ts_ns;
      e.phase = phase;
      e.step = step;
      e.dtype = dtype_;
      if (op.is_comm()) SetCommChoice(op, t, &e);
      if (roles_ && ClassOf(op.kind) == OpClass::kGemm) {
        // The dtype the GEMM computes in (the compute model's peak; calibrate reads it).
        if (op.kind == OpKind::kLmHead) {
          e.dtype = head_dtype_;
        } else if (op.kind != OpKind::kRouter && op.role != OpRole::kAbsorbUk &&
                   op.role != OpRole::kAbsorbUv) {
          e.dtype = gemm_dtype_;
        }
      }
      writer_->AddOp(e);
      if (op.is_comm() && ToNs(t.start) > ToNs(t.post)) {
        // The wait for the last peer, on a track of its own.
        trace::OpEvent& w = wait_;
        w.rank = rank;
        w.stream = kWaitTrackBase + static_cast<int32_t>(op.stream);
        w.name.assign("wait.");
        w.name += e.name;
        w.category = trace::Category::kOther;
        w.kind = "sync_wait";
        w.ts_ns = ToNs(t.post);
        w.dur_ns = ToNs(t.start) - w.ts_ns;
        w.phase = phase;
        w.step = step;
        w.layer = op.layer;
        w.micro_batch = op.micro_batch;
        writer_->AddOp(w);
      }
    }
    trace::SpanEvent span;
    span.rank = rank;
    span.kind = program.phase == Phase::kPrefill ? trace::SpanKind::kPhase : trace::SpanKind::kStep;
    span.phase = phase;
    span.step = step;
    span.name = program.phase == Phase::kPrefill ? "prefill" : fmt::format("step {}", step);
    const double start = static_cast<size_t>(rp.rank) < rank_start.size() ? rank_start[rp.rank] : 0;
    span.ts_ns = ToNs(start);
    span.dur_ns = ToNs(result.rank_end[rp.rank]) - span.ts_ns;
    writer_->AddSpan(span);
  }
}

void TraceEmitter::WriteDecodeSpans(const std::vector<double>& start,
                                    const std::vector<double>& end) {
  for (size_t r = 0; r < start.size(); ++r) {
    trace::SpanEvent span;
    span.rank = static_cast<int32_t>(r);
    span.kind = trace::SpanKind::kPhase;
    span.phase = trace::Phase::kDecode;
    span.name = "decode";
    span.ts_ns = ToNs(start[r]);
    const bool bounded = experiment_.trace_steps >= 0;
    if (bounded && r >= written_decode_end_.size()) continue;  // no decode step written
    span.dur_ns = ToNs(bounded ? written_decode_end_[r] : end[r]) - span.ts_ns;
    writer_->AddSpan(span);
  }
}

}  // namespace shardscope::sim
