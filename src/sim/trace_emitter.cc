#include "sim/trace_emitter.h"

#include <cmath>

#include "core/dtype.h"

namespace shardscope::sim {
namespace {

trace::Collective ToTrace(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return trace::Collective::kAllReduce;
    case Collective::kAllGather:
      return trace::Collective::kAllGather;
    case Collective::kReduceScatter:
      return trace::Collective::kReduceScatter;
    case Collective::kAllToAll:
      return trace::Collective::kAllToAll;
    case Collective::kSend:
      return trace::Collective::kSend;
    case Collective::kRecv:
      return trace::Collective::kRecv;
    case Collective::kBroadcast:
      return trace::Collective::kBroadcast;
    case Collective::kNone:
      break;
  }
  return trace::Collective::kNone;
}

trace::GroupDim ToTrace(Dim d) {
  switch (d) {
    case Dim::kTp:
      return trace::GroupDim::kTp;
    case Dim::kSp:
      return trace::GroupDim::kSp;
    case Dim::kEp:
      return trace::GroupDim::kEp;
    case Dim::kDp:
      return trace::GroupDim::kDp;
    case Dim::kPp:
      return trace::GroupDim::kPp;
  }
  return trace::GroupDim::kNone;
}

trace::Phase ToTrace(Phase p) {
  return p == Phase::kPrefill ? trace::Phase::kPrefill : trace::Phase::kDecode;
}

}  // namespace

int64_t ToNs(double seconds) { return std::llround(seconds * 1e9); }

TraceEmitter::TraceEmitter(trace::TraceWriter* writer, const Experiment& experiment,
                           const Placement& placement)
    : writer_(writer),
      experiment_(experiment),
      placement_(placement),
      dtype_(DTypeName(experiment.workload.dtype)) {}

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
  const trace::Phase phase = ToTrace(program.phase);
  const int32_t step = program.phase == Phase::kDecode ? static_cast<int32_t>(program.step) : -1;
  trace::OpEvent& e = event_;
  for (const RankProgram& rp : program.ranks) {
    const int32_t rank = static_cast<int32_t>(rp.rank);
    const auto& timings = result.timings[rp.rank];
    for (const Op& op : rp.ops) {
      const OpTiming& t = timings[op.id];
      e.rank = rank;
      e.stream = static_cast<int32_t>(op.stream);
      e.name = OpName(op);
      e.category = op.is_comm() ? trace::Category::kComm : trace::Category::kCompute;
      // A comm op spans from its post (as a real NCCL kernel that spins until
      // its peers arrive) to the end of its transfer.
      e.ts_ns = ToNs(t.post);
      e.dur_ns = ToNs(t.end) - e.ts_ns;
      e.phase = phase;
      e.step = step;
      e.layer = op.layer;
      e.micro_batch = op.micro_batch;
      e.sp_step = op.sp_step;
      e.flops = op.flops;
      e.bytes_read = op.bytes_read;
      e.bytes_written = op.bytes_written;
      e.dtype = dtype_;
      e.group.clear();
      e.bytes_per_peer.clear();
      e.peer = -1;
      e.root = -1;
      if (op.is_comm()) {
        e.collective = ToTrace(op.collective);
        e.kind = std::string(trace::CollectiveName(e.collective));
        e.dim = ToTrace(op.dim);
        e.seq = op.seq;
        e.bytes = op.bytes;
        if (op.collective == Collective::kSend || op.collective == Collective::kRecv) {
          e.peer = static_cast<int32_t>(op.peer);
        } else if (op.group_id >= 0) {
          for (int64_t r : placement_.groups()[op.group_id].ranks) {
            e.group.push_back(static_cast<int32_t>(r));
          }
          if (op.collective == Collective::kBroadcast) e.root = static_cast<int32_t>(op.peer);
        }
        e.bytes_per_peer = op.bytes_per_peer;
      } else {
        e.collective = trace::Collective::kNone;
        e.kind = std::string(OpKindName(op.kind));
        e.dim = trace::GroupDim::kNone;
        e.seq = -1;
        e.bytes = 0;
      }
      writer_->AddOp(e);
      if (op.is_comm() && ToNs(t.start) > ToNs(t.post)) {
        // The wait for the last peer, on a track of its own.
        trace::OpEvent w;
        w.rank = rank;
        w.stream = kWaitTrackBase + static_cast<int32_t>(op.stream);
        w.name = "wait." + e.name;
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
    span.dur_ns = ToNs(end[r]) - span.ts_ns;
    writer_->AddSpan(span);
  }
}

}  // namespace shardscope::sim
