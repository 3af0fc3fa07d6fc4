#include "importers/xla_device_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "importers/hlo_ops.h"

namespace shardscope::importers {
namespace {

using trace::Category;
using trace::OpEvent;

// Streams (tids) of a device's tracks.
constexpr int32_t kOpsStream = 0;       // "XLA Ops"
constexpr int32_t kAsyncStream = 1;     // "Async XLA Ops"
constexpr int32_t kInFlightStream = 2;  // asynchronous collectives, -start to -done

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// An event with its start and end rounded to the nearest ns (halves up), so that adjacent
// events stay adjacent.
struct Timed {
  const XlaEvent* event = nullptr;
  int64_t start = 0;
  int64_t end = 0;
};

// False when the times overflow int64 (a corrupt file).
bool TimeOf(const XlaEvent& e, Timed* t) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() - 1000;
  int64_t end_ps = 0;
  if (e.offset_ps > kMax || e.offset_ps < -kMax ||
      __builtin_add_overflow(e.offset_ps, e.duration_ps, &end_ps) || end_ps > kMax ||
      end_ps < -kMax ||
      __builtin_add_overflow(e.base_ns, FloorDiv(e.offset_ps + 500, 1000), &t->start) ||
      __builtin_add_overflow(e.base_ns, FloorDiv(end_ps + 500, 1000), &t->end)) {
    return false;
  }
  t->event = &e;
  return true;
}

// A stat as a number: integers exactly, others through double; nullopt when not a number.
std::optional<double> StatNumber(const XlaStats& stats, std::string_view name) {
  const std::string* v = FindXlaStat(stats, name);
  if (v == nullptr || v->empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (end != v->c_str() + v->size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

int64_t StatInt(const XlaStats& stats, std::string_view name) {
  const std::string* v = FindXlaStat(stats, name);
  if (v == nullptr) return 0;
  int64_t i = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), i);
  if (ec == std::errc() && ptr == v->data() + v->size()) return i;
  std::optional<double> d = StatNumber(stats, name);
  return d && *d > 0 && *d < 9.2e18 ? std::llround(*d) : 0;
}

// Data movement that is neither compute nor communication.
bool IsDataMovement(std::string_view opcode) {
  for (std::string_view m :
       {"copy-start", "copy-done", "send", "send-done", "recv", "recv-done", "infeed", "outfeed"}) {
    if (opcode == m) return true;
  }
  return false;
}

// An event's HLO, if its text has one, and what kind of op it is.
struct ParsedOp {
  std::optional<HloInstruction> hlo;
  std::string_view inst_name;  // "all-reduce.1", else the display name
  std::string_view opcode;     // from the HLO, else the display name
  std::optional<HloCollectiveOp> collective;
};

ParsedOp Parse(const XlaEvent& e) {
  ParsedOp p;
  p.hlo = ParseHloInstruction(!e.long_name.empty() ? e.long_name : e.name);
  p.inst_name = p.hlo ? p.hlo->name : std::string_view(e.name);
  p.opcode = p.hlo ? p.hlo->opcode : std::string_view(e.name);
  p.collective = ClassifyHloCollective(p.opcode);
  // Collectives wrapped in generic async ops are known by their instruction name.
  if (!p.collective && p.hlo && (p.opcode == "async-start" || p.opcode == "async-done")) {
    p.collective = ClassifyHloCollective(p.hlo->name);
  }
  return p;
}

// Maps one device plane; see EmitXlaDevices.
class DeviceEmitter {
 public:
  DeviceEmitter(const XlaDevice& device, const std::vector<int32_t>& ordinals,
                trace::TraceSink* sink, trace::ReadStats* stats)
      : device_(device), ordinals_(ordinals), sink_(sink), stats_(stats) {}

  void Run() {
    sink_->OnProcessName(device_.ordinal, device_.name);
    ++stats_->names;
    for (const XlaLine& line : device_.lines) {
      if (line.events.empty()) continue;
      if (line.name == "XLA Ops") {
        Name(kOpsStream, line.name);
        OpsLine(line);
      } else if (line.name == "Async XLA Ops") {
        Name(kAsyncStream, line.name);
        AsyncLine(line);
      } else if (line.name == "Steps") {
        Name(trace::kSpanStream, line.name);
        StepsLine(line);
      } else {
        stats_->CountN(trace::Stat::kXlaLine, static_cast<int64_t>(line.events.size()), line.name);
      }
    }
  }

 private:
  void Name(int32_t stream, std::string_view name) {
    sink_->OnThreadName(device_.ordinal, stream, name);
    ++stats_->names;
  }
  template <typename... Detail>
  void Note(trace::Stat stat, const Detail&... detail) {
    stats_->Count(stat, detail...);
  }
  void Deliver(const OpEvent& op) {
    sink_->OnOp(op);
    ++stats_->ops;
  }

  // The line's events in start order (ties keep file order); those with a negative
  // duration or times out of range are skipped and counted.
  std::vector<Timed> Sorted(const XlaLine& line) {
    std::vector<Timed> events;
    for (const XlaEvent& e : line.events) {
      Timed t;
      if (!TimeOf(e, &t)) {
        stats_->Count(trace::Stat::kXlaTimeOverflow);
      } else if (t.end < t.start) {
        stats_->Count(trace::Stat::kXlaNegativeDuration);
      } else {
        events.push_back(t);
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Timed& a, const Timed& b) { return a.start < b.start; });
    return events;
  }

  OpEvent BaseOp(const ParsedOp& p, int32_t stream, int64_t start, int64_t end) const {
    OpEvent op;
    op.rank = device_.ordinal;
    op.stream = stream;
    op.name = std::string(p.inst_name);
    op.ts_ns = start;
    op.dur_ns = end - start;
    return op;
  }

  void OpsLine(const XlaLine& line) {
    std::map<std::string, std::pair<Timed, ParsedOp>, std::less<>> started;
    for (const Timed& t : Sorted(line)) {
      const XlaEvent* e = t.event;
      const int64_t start = t.start, end = t.end;
      ParsedOp p = Parse(*e);
      OpEvent op = BaseOp(p, kOpsStream, start, end);
      op.flops = StatInt(e->stats, "flops");
      if (op.flops == 0) op.flops = StatInt(e->stats, "model_flops");
      op.bytes_read = StatInt(e->stats, "bytes_accessed");  // XLA gives reads + writes as one
      const std::string* category = FindXlaStat(e->stats, "hlo_category");
      op.kind = category != nullptr ? *category : std::string(p.opcode);
      if (!p.collective) {
        op.category = IsDataMovement(p.opcode) ? Category::kOther : Category::kCompute;
        Deliver(op);
        continue;
      }
      if (p.collective->part == AsyncPart::kSync) {
        EmitCollective(std::move(op), p);
        continue;
      }
      // The two halves of an asynchronous collective are other work; the collective itself
      // is the in-flight op from the start of -start to the end of -done.
      const bool is_start = p.collective->part == AsyncPart::kStart;
      op.category = Category::kOther;
      op.kind =
          fmt::format("{}-{}", HloCollectiveName(p.collective->op), is_start ? "start" : "done");
      Deliver(op);
      if (is_start) {
        // A copy, not a move: the key reads p, and ParsedOp is views into the event.
        started[std::string(p.inst_name)] = {t, p};
        continue;
      }
      std::string start_name = StartNameOf(p);
      auto it = started.find(start_name);
      if (it == started.end()) {
        Note(trace::Stat::kXlaDoneWithoutStart);
        continue;
      }
      const ParsedOp& sp = it->second.second;
      OpEvent flight = BaseOp(sp, kInFlightStream, it->second.first.start, end);
      if (!named_in_flight_) {
        Name(kInFlightStream, "XLA collectives in flight");
        named_in_flight_ = true;
      }
      EmitCollective(std::move(flight), sp);
      started.erase(it);
    }
    if (!started.empty()) {
      stats_->CountN(trace::Stat::kXlaStartWithoutDone, static_cast<int64_t>(started.size()));
    }
  }

  // The -start a -done completes: its operand, else its own name with -done → -start.
  static std::string StartNameOf(const ParsedOp& done) {
    if (done.hlo) {
      std::vector<std::string_view> names = HloOperandNames(done.hlo->operands);
      if (!names.empty()) return std::string(names.front());
    }
    std::string name(done.inst_name);
    size_t pos = name.rfind("-done");
    if (pos != std::string::npos) name.replace(pos, 5, "-start");
    return name;
  }

  void AsyncLine(const XlaLine& line) {
    for (const Timed& t : Sorted(line)) {
      ParsedOp p = Parse(*t.event);
      if (p.collective) {
        stats_->Count(trace::Stat::kXlaAsyncInFlight);
        continue;
      }
      OpEvent op = BaseOp(p, kAsyncStream, t.start, t.end);
      const std::string* category = FindXlaStat(t.event->stats, "hlo_category");
      op.kind = category != nullptr ? *category : std::string(p.opcode);
      op.category = Category::kOther;  // in-flight copies: neither compute nor communication
      Deliver(op);
    }
  }

  void StepsLine(const XlaLine& line) {
    int32_t index = 0;
    for (const Timed& t : Sorted(line)) {
      const XlaEvent* e = t.event;
      trace::SpanEvent span;
      span.rank = device_.ordinal;
      span.kind = trace::SpanKind::kStep;
      int32_t step = index;
      auto [ptr, ec] = std::from_chars(e->name.data(), e->name.data() + e->name.size(), step);
      if (ec != std::errc() || ptr != e->name.data() + e->name.size()) step = index;
      span.step = step;
      span.name = fmt::format("step {}", step);
      span.ts_ns = t.start;
      span.dur_ns = t.end - t.start;
      sink_->OnSpan(span);
      ++stats_->spans;
      ++index;
    }
  }

  // The device's group in a replica_groups value: all devices of the trace when absent or
  // "{}"; empty (noted) when unparsable or when no group names the device.
  std::vector<int32_t> GroupOf(std::string_view replica_groups) {
    if (replica_groups.empty()) return ordinals_;
    StatusOr<std::vector<std::vector<int32_t>>> groups = ParseReplicaGroups(replica_groups);
    if (!groups.ok()) {
      Note(trace::Stat::kXlaGroupUnreadable, groups.status().message());
      return {};
    }
    if (groups->empty()) return ordinals_;
    for (const std::vector<int32_t>& g : *groups) {
      if (std::find(g.begin(), g.end(), device_.ordinal) != g.end()) return g;
    }
    Note(trace::Stat::kXlaGroupWithoutDevice);
    return {};
  }

  // Fills the communication fields of `op` from the collective's HLO and delivers it. A
  // collective whose size is unknown is kept as communication time only (no collective).
  void EmitCollective(OpEvent op, const ParsedOp& p) {
    const HloCollective kind = p.collective->op;
    op.category = Category::kComm;
    op.kind = kind == HloCollective::kCollectivePermute
                  ? "collective_permute"
                  : std::string(trace::CollectiveName(ToTraceCollective(kind)));
    if (!p.hlo) {
      Note(trace::Stat::kXlaWithoutHlo);
      Deliver(op);
      return;
    }
    if (kind == HloCollective::kCollectivePermute) {
      EmitPermute(std::move(op), p);
      return;
    }
    op.group = GroupOf(HloAttribute(p.hlo->attributes, "replica_groups"));
    StatusOr<int64_t> bytes =
        HloCollectiveBytes(*p.hlo, *p.collective, static_cast<int64_t>(op.group.size()));
    if (!bytes.ok()) {
      Note(trace::Stat::kXlaSizeUnreadable, bytes.status().message());
      op.group.clear();
      Deliver(op);
      return;
    }
    op.collective = ToTraceCollective(kind);
    op.bytes = *bytes;
    op.dtype = std::string(HloElementType(p.hlo->shape));
    Deliver(op);
  }

  // A collective-permute moves its operand along source_target_pairs: this device sends to
  // its targets and receives from its sources, each a send or recv op over the same time.
  void EmitPermute(OpEvent op, const ParsedOp& p) {
    StatusOr<std::vector<std::vector<int32_t>>> pairs =
        ParseReplicaGroups(HloAttribute(p.hlo->attributes, "source_target_pairs"));
    StatusOr<int64_t> bytes = HloCollectiveBytes(*p.hlo, *p.collective, 1);
    if (!pairs.ok() || !bytes.ok()) {
      Note(trace::Stat::kXlaSizeUnreadable,
           (!pairs.ok() ? pairs.status() : bytes.status()).message());
      Deliver(op);
      return;
    }
    bool any = false;
    for (bool send : {true, false}) {  // sends first, then receives
      for (const std::vector<int32_t>& pair : *pairs) {
        if (pair.size() != 2 || pair[send ? 0 : 1] != device_.ordinal) continue;
        OpEvent half = op;
        half.collective = send ? trace::Collective::kSend : trace::Collective::kRecv;
        half.peer = pair[send ? 1 : 0];
        half.bytes = *bytes;
        half.dtype = std::string(HloElementType(p.hlo->shape));
        Deliver(half);
        any = true;
      }
    }
    if (!any) Deliver(op);  // the device takes no part: time only
  }

  const XlaDevice& device_;
  const std::vector<int32_t>& ordinals_;
  trace::TraceSink* const sink_;
  trace::ReadStats* const stats_;
  bool named_in_flight_ = false;
};

// cluster.device peaks from plane stats, for MFU and memory-bandwidth utilisation.
std::optional<nlohmann::json> DeviceMetadata(const std::vector<XlaDevice>& devices) {
  for (const XlaDevice& d : devices) {
    nlohmann::json device = nlohmann::json::object();
    if (auto tflops = StatNumber(d.stats, "peak_teraflops_per_second"); tflops && *tflops > 0) {
      device["peak_flops"] = *tflops * 1e12;
    }
    if (auto gbps = StatNumber(d.stats, "peak_hbm_bw_gigabytes_per_second"); gbps && *gbps > 0) {
      device["memory_bandwidth"] = *gbps * 1e9;
    }
    if (const std::string* type = FindXlaStat(d.stats, "device_type_string")) {
      device["name"] = *type;
    }
    if (!device.empty()) return nlohmann::json{{"cluster", {{"device", device}}}};
  }
  return std::nullopt;
}

}  // namespace

const std::string* FindXlaStat(const XlaStats& stats, std::string_view name) {
  for (const auto& [key, value] : stats) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::optional<int32_t> XlaDeviceOrdinal(std::string_view plane_name) {
  for (std::string_view prefix : {"/device:TPU:", "/device:GPU:"}) {
    if (plane_name.substr(0, prefix.size()) != prefix) continue;
    std::string_view digits = plane_name.substr(prefix.size());
    int32_t n = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty() && n >= 0) {
      return n;
    }
  }
  return std::nullopt;
}

void EmitXlaDevices(const std::vector<XlaDevice>& devices, trace::TraceSink* sink,
                    trace::ReadStats* stats) {
  if (std::optional<nlohmann::json> meta = DeviceMetadata(devices)) sink->OnMetadata(*meta);
  std::vector<const XlaDevice*> sorted;
  std::vector<int32_t> ordinals;
  for (const XlaDevice& d : devices) {
    sorted.push_back(&d);
    ordinals.push_back(d.ordinal);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const XlaDevice* a, const XlaDevice* b) { return a->ordinal < b->ordinal; });
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  for (const XlaDevice* d : sorted) DeviceEmitter(*d, ordinals, sink, stats).Run();
}

}  // namespace shardscope::importers
