#include "runtime/cpu_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "run/op_event.h"

namespace shardscope::runtime {
namespace {

using nlohmann::json;

constexpr int kClockTag = 32001;  // above the executor's tags (1..30000)

}  // namespace

StatusOr<ClockOffset> EstimateClockOffset(Communicator& comm, int rounds) {
  const int64_t n = comm.world_size(), me = comm.rank();
  int64_t mine[2] = {0, 0};  // offset, round trip
  for (int64_t k = 1; k < n; ++k) {
    if (me == 0) {
      int64_t best_rtt = std::numeric_limits<int64_t>::max(), offset = 0;
      for (int i = 0; i < rounds; ++i) {
        int64_t t0 = NowNs(), remote = 0;
        ASSIGN_OR_RETURN(Request s, comm.Send(k, &t0, 1, DType::kInt64, kClockTag, {}));
        ASSIGN_OR_RETURN(Request r, comm.Recv(k, &remote, 1, DType::kInt64, kClockTag, {}));
        RETURN_IF_ERROR(s->Wait());
        RETURN_IF_ERROR(r->Wait());
        const int64_t t1 = NowNs();
        if (t1 - t0 < best_rtt) best_rtt = t1 - t0, offset = remote - (t0 + t1) / 2;
      }
      const int64_t result[2] = {offset, best_rtt};
      ASSIGN_OR_RETURN(Request s, comm.Send(k, result, 2, DType::kInt64, kClockTag, {}));
      RETURN_IF_ERROR(s->Wait());
    } else if (me == k) {
      for (int i = 0; i < rounds; ++i) {
        int64_t t0 = 0;
        ASSIGN_OR_RETURN(Request r, comm.Recv(0, &t0, 1, DType::kInt64, kClockTag, {}));
        RETURN_IF_ERROR(r->Wait());
        int64_t now = NowNs();
        ASSIGN_OR_RETURN(Request s, comm.Send(0, &now, 1, DType::kInt64, kClockTag, {}));
        RETURN_IF_ERROR(s->Wait());
      }
      ASSIGN_OR_RETURN(Request r, comm.Recv(0, mine, 2, DType::kInt64, kClockTag, {}));
      RETURN_IF_ERROR(r->Wait());
    }
  }
  return ClockOffset{mine[0], mine[1]};
}

RankEvents ToTraceEvents(const std::vector<OpRecord>& records, const Placement& placement,
                         int64_t rank, int64_t offset_ns, int64_t origin_ns) {
  RankEvents out;
  const int32_t r32 = static_cast<int32_t>(rank);
  // Phase index → [first start, last end].
  std::map<int32_t, std::pair<int64_t, int64_t>> extent;
  for (const OpRecord& rec : records) {
    const Op& op = rec.op;
    trace::OpEvent e;
    e.rank = r32;
    FillOpEvent(op, placement, &e);
    e.ts_ns = rec.start_ns - offset_ns - origin_ns;
    e.dur_ns = std::max<int64_t>(rec.end_ns - rec.start_ns, 0);
    e.phase = rec.phase_index == 0 ? trace::Phase::kPrefill : trace::Phase::kDecode;
    e.step = rec.phase_index == 0 ? -1 : rec.phase_index - 1;
    e.dtype = "fp32";
    if (op.is_comm()) {  // what really moved (fp32, the router's real split)
      e.bytes = rec.bytes;
      e.bytes_per_peer = rec.bytes_per_peer;
    }
    auto [it, fresh] = extent.try_emplace(rec.phase_index, e.ts_ns, e.end_ns());
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.ts_ns);
      it->second.second = std::max(it->second.second, e.end_ns());
    }
    out.ops.push_back(std::move(e));
  }
  int64_t decode_begin = std::numeric_limits<int64_t>::max(), decode_end = 0;
  for (const auto& [phase, span] : extent) {
    trace::SpanEvent s;
    s.rank = r32;
    s.kind = phase == 0 ? trace::SpanKind::kPhase : trace::SpanKind::kStep;
    s.phase = phase == 0 ? trace::Phase::kPrefill : trace::Phase::kDecode;
    s.step = phase == 0 ? -1 : phase - 1;
    s.name = phase == 0 ? "prefill" : fmt::format("step {}", phase - 1);
    s.ts_ns = span.first;
    s.dur_ns = span.second - span.first;
    out.spans.push_back(s);
    if (phase > 0) {
      decode_begin = std::min(decode_begin, span.first);
      decode_end = std::max(decode_end, span.second);
    }
  }
  if (decode_end > 0) {
    trace::SpanEvent s;
    s.rank = r32;
    s.kind = trace::SpanKind::kPhase;
    s.phase = trace::Phase::kDecode;
    s.name = "decode";
    s.ts_ns = decode_begin;
    s.dur_ns = decode_end - decode_begin;
    out.spans.push_back(s);
  }
  return out;
}

std::string SerializeEvents(const RankEvents& events) {
  json ops = json::array(), spans = json::array();
  for (const trace::OpEvent& e : events.ops) {
    ops.push_back({e.rank,
                   e.stream,
                   e.name,
                   static_cast<int>(e.category),
                   e.ts_ns,
                   e.dur_ns,
                   e.kind,
                   static_cast<int>(e.phase),
                   e.step,
                   e.layer,
                   e.micro_batch,
                   e.sp_step,
                   e.flops,
                   e.bytes_read,
                   e.bytes_written,
                   static_cast<int>(e.collective),
                   static_cast<int>(e.dim),
                   e.group,
                   e.peer,
                   e.root,
                   e.seq,
                   e.bytes,
                   e.bytes_per_peer,
                   e.dtype,
                   e.experts,
                   e.expert_tokens});
  }
  for (const trace::SpanEvent& s : events.spans) {
    spans.push_back({s.rank, static_cast<int>(s.kind), static_cast<int>(s.phase), s.step, s.name,
                     s.ts_ns, s.dur_ns});
  }
  return json{{"ops", ops}, {"spans", spans}}.dump();
}

StatusOr<RankEvents> ParseEvents(const std::string& text) {
  RankEvents out;
  try {
    const json j = json::parse(text);
    for (const json& a : j.at("ops")) {
      trace::OpEvent e;
      e.rank = a[0], e.stream = a[1], e.name = a[2];
      e.category = static_cast<trace::Category>(a[3].get<int>());
      e.ts_ns = a[4], e.dur_ns = a[5], e.kind = a[6];
      e.phase = static_cast<trace::Phase>(a[7].get<int>());
      e.step = a[8], e.layer = a[9], e.micro_batch = a[10], e.sp_step = a[11];
      e.flops = a[12], e.bytes_read = a[13], e.bytes_written = a[14];
      e.collective = static_cast<trace::Collective>(a[15].get<int>());
      e.dim = static_cast<Dim>(a[16].get<int>());
      e.group = a[17].get<std::vector<int32_t>>();
      e.peer = a[18], e.root = a[19], e.seq = a[20], e.bytes = a[21];
      e.bytes_per_peer = a[22].get<std::vector<int64_t>>();
      e.dtype = a[23];
      if (a.size() > 25) {
        e.experts = a[24].get<std::vector<int32_t>>();
        e.expert_tokens = a[25].get<std::vector<int64_t>>();
      }
      out.ops.push_back(std::move(e));
    }
    for (const json& a : j.at("spans")) {
      trace::SpanEvent s;
      s.rank = a[0];
      s.kind = static_cast<trace::SpanKind>(a[1].get<int>());
      s.phase = static_cast<trace::Phase>(a[2].get<int>());
      s.step = a[3], s.name = a[4], s.ts_ns = a[5], s.dur_ns = a[6];
      out.spans.push_back(std::move(s));
    }
  } catch (const std::exception& e) {
    return DataLoss("rank events: {}", e.what());
  }
  return out;
}

}  // namespace shardscope::runtime
