#include "importers/kineto_tokenizer.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/dtype.h"
#include "importers/kineto_args.h"
#include "importers/kineto_names.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace shardscope::importers::kineto {
namespace {

namespace od = simdjson::ondemand;
using trace::Category;

bool IsHost(Kind kind) { return kind == Kind::kHostOp || kind == Kind::kPython; }

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// What one event said, filled in as its fields are read.
struct Fields {
  std::string_view ph, cat, name;
  std::string_view args_raw;  // "args" that came before "ph"/"cat": parsed at the end
  Kind kind = Kind::kUnknown;
  HostRole role = HostRole::kNone;
  StepSource step_source = StepSource::kProfilerStep;
  bool pid_seen = false, pid_int = false, tid_seen = false, tid_int = false;
  bool has_ts = false, has_dur = false, bad_time = false, args_done = false;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0;
  EventArgs args;  // correlation, External id, a metadata event's name
};

// How reading an event's fields ended.
enum class Scan : uint8_t {
  kRead,     // every field read: the event is analysed by its kind
  kIgnored,  // its kind or name says the rest does not matter (counted as ignored)
  kFailed,   // malformed: skip_reason_ says why
};

class KinetoTokenizer final : public trace::EventParser {
 public:
  KinetoTokenizer(trace::ReadStats* stats, KinetoEvents* events) : stats_(stats), events_(events) {}

  void Parse(std::string_view raw, size_t capacity, int64_t offset) override;
  void ParseBatch(std::span<const trace::RawEvent> events, char* first, size_t capacity) override;

 private:
  // One event: true when it was kept or ignored, false when malformed.
  template <typename Root>
  bool ParseEvent(Root& root, const char* readable_end);
  // The steps of ParseEvent.
  Scan ScanFields(od::object& obj, Fields* f);
  bool Classify(Fields* f);
  bool ClassifyHostOp(Fields* f);
  bool ParseArgs(od::value& v, Fields* f) {
    return ParseEventArgs(v, f->kind == Kind::kMeta, no_escapes_, &f->args, &args_, &skip_reason_);
  }
  bool ParseDeferredArgs(Fields* f, const char* readable_end);
  bool AddMetadata(const Fields& f);
  bool AddRuntimeCall(const Fields& f);
  bool AddStep(const Fields& f);
  bool AddHostComm(const Fields& f);
  bool AddHostGemm(const Fields& f);
  bool AddGpuOp(const Fields& f);

  bool Fail(trace::Stat stat) { return skip_reason_.Set(stat); }
  Scan Failed(trace::Stat stat) {
    skip_reason_.Set(stat);
    return Scan::kFailed;
  }
  // Counts a well-formed event that is not analysed: `type` "cat"/"ph"/"metadata".
  void Ignore(std::string_view type, std::string_view value);
  void Commit(bool ok, int64_t offset);
  bool Str(od::value& v, std::string_view* out) {
    return trace::GetJsonString(v, out, no_escapes_);
  }
  int32_t InternName(std::string_view name);

  trace::ReadStats* const stats_;
  KinetoEvents* const events_;
  od::parser parser_, batch_parser_, args_parser_;
  trace::SkipReason skip_reason_;
  bool no_escapes_ = false;
  CommArgs args_;  // the current event's collective args (kept for their strings' capacity)
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> name_index_;
  size_t last_ignored_ = 0;
};

void KinetoTokenizer::Ignore(std::string_view type, std::string_view value) {
  std::vector<IgnoredCount>& counts = events_->ignored;
  if (last_ignored_ < counts.size()) {
    IgnoredCount& c = counts[last_ignored_];
    if (c.type == type && c.value == value) {
      ++c.count;
      return;
    }
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i].type == type && counts[i].value == value) {
      ++counts[i].count;
      last_ignored_ = i;
      return;
    }
  }
  counts.push_back({std::string(type), std::string(value.substr(0, 40)), 1});
  last_ignored_ = counts.size() - 1;
}

void KinetoTokenizer::Commit(bool ok, int64_t offset) {
  ++stats_->events;
  if (ok) return;
  stats_->Skip(skip_reason_, {trace::EventPlace::kByte, offset});
}

int32_t KinetoTokenizer::InternName(std::string_view name) {
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  int32_t id = static_cast<int32_t>(events_->names.size());
  events_->names.emplace_back(name);
  name_index_.emplace(events_->names.back(), id);
  return id;
}

// Decides the kind once "ph" and (for X events) "cat" are known; true when the
// rest of the event does not matter (it is counted as ignored).
bool KinetoTokenizer::Classify(Fields* f) {
  if (f->kind != Kind::kUnknown || f->ph.empty()) return false;
  if (!Eq(f->ph, "X")) {
    if (Eq(f->ph, "M")) {
      f->kind = Kind::kMeta;
      return false;
    }
    f->kind = Kind::kIgnore;
    Ignore("ph", f->ph.substr(0, 8));
    return true;
  }
  if (f->cat.data() == nullptr) return false;  // no "cat" yet
  f->kind = KindOfCat(f->cat);
  if (f->kind == Kind::kIgnore) {
    Ignore("cat", f->cat);
    return true;
  }
  return false;
}

// A host op's role from its name: false (and counted as ignored) when it has none.
bool KinetoTokenizer::ClassifyHostOp(Fields* f) {
  f->role = RoleOfHostName(f->name, f->kind, f->cat, &f->step_source);
  if (f->role != HostRole::kNone) return true;
  Ignore("cat", f->cat);
  return false;
}

Scan KinetoTokenizer::ScanFields(od::object& obj, Fields* f) {
  for (auto field_result : obj) {
    if (field_result.error()) return Failed(trace::Stat::kInvalidJson);
    od::field& field = field_result.value_unsafe();
    const char* k = field.key().raw();
    od::value& v = field.value();
    switch (k[0]) {
      case 'p':
        if (KeyIs(k, "ph")) {
          if (!Str(v, &f->ph)) return Failed(trace::Stat::kPhNotString);
          if (Classify(f)) return Scan::kIgnored;
        } else if (KeyIs(k, "pid")) {
          f->pid_seen = true;
          f->pid_int = trace::GetJsonInt(v, &f->pid);
        }
        break;
      case 'c':
        if (KeyIs(k, "cat")) {
          // Present but not a string: an empty category (not "not seen").
          if (!Str(v, &f->cat) || f->cat.data() == nullptr) f->cat = std::string_view("");
          if (Classify(f)) return Scan::kIgnored;
        }
        break;
      case 'n':
        if (KeyIs(k, "name")) {
          if (!Str(v, &f->name)) return Failed(trace::Stat::kNameNotString);
          if (IsHost(f->kind) && !ClassifyHostOp(f)) return Scan::kIgnored;
        }
        break;
      case 't':
        if (KeyIs(k, "ts")) {
          f->has_ts = true;
          if (!trace::ParseMicrosToNs(trace::TrimJsonSpace(v.raw_json_token()), &f->ts)) {
            f->bad_time = true;
          }
        } else if (KeyIs(k, "tid")) {
          f->tid_seen = true;
          f->tid_int = trace::GetJsonInt(v, &f->tid);
        }
        break;
      case 'd':
        if (KeyIs(k, "dur")) {
          f->has_dur = true;
          if (!trace::ParseMicrosToNs(trace::TrimJsonSpace(v.raw_json_token()), &f->dur)) {
            f->bad_time = true;
          }
        }
        break;
      case 'a':
        if (KeyIs(k, "args")) {
          if (f->kind == Kind::kUnknown) {
            // "args" before "ph" or "cat": parsed once the kind is known.
            od::object args_object;
            if (v.get_object().get(args_object) || args_object.raw_json().get(f->args_raw)) {
              return Failed(trace::Stat::kInvalidJson);
            }
          } else if (f->kind != Kind::kIgnore) {
            if (!ParseArgs(v, f)) return Scan::kFailed;
            f->args_done = true;
          }
        }
        break;
      default:
        break;
    }
  }
  return Scan::kRead;
}

// "args" that came before the kind was known, parsed with the second parser.
bool KinetoTokenizer::ParseDeferredArgs(Fields* f, const char* readable_end) {
  od::document args_doc;
  od::value args_value;
  size_t cap = static_cast<size_t>(readable_end - f->args_raw.data());
  if (args_parser_.iterate(f->args_raw.data(), f->args_raw.size(), cap).get(args_doc) ||
      args_doc.get_value().get(args_value)) {
    return Fail(trace::Stat::kInvalidJson);
  }
  return ParseArgs(args_value, f);
}

bool KinetoTokenizer::AddMetadata(const Fields& f) {
  if (Eq(f.name, "thread_name") && f.pid_int && f.tid_int) {
    events_->thread_names[{f.pid, f.tid}] = std::string(Trim(f.args.meta_name));
  } else {
    Ignore("metadata", f.name.substr(0, 32));
  }
  return true;
}

// A runtime call is kept for the join only; it counts as ignored.
bool KinetoTokenizer::AddRuntimeCall(const Fields& f) {
  if (f.args.correlation >= 0 && f.tid_int) {
    events_->runtime.push_back({f.args.correlation, f.args.external_id, f.tid, f.ts});
  }
  Ignore("cat", f.cat);
  return true;
}

bool KinetoTokenizer::AddStep(const Fields& f) {
  StepMark m{f.ts, f.dur, -1, f.step_source};
  if (f.step_source == StepSource::kProfilerStep) {
    int64_t n = 0;
    std::string_view digits = f.name.substr(std::strlen("ProfilerStep#"));
    bool ok = !digits.empty() && digits.size() <= 9;
    for (size_t i = 0; ok && i < digits.size(); ++i) {  // ≤ 9 digits: no overflow
      const char c = digits[i];
      ok = c >= '0' && c <= '9';
      n = n * 10 + (c - '0');
    }
    if (!ok) return Fail(trace::Stat::kStepWithoutNumber);
    m.step = static_cast<int32_t>(n);
  }
  events_->steps.push_back(m);
  return true;
}

// A host collective call is kept for the join only; it counts as ignored.
bool KinetoTokenizer::AddHostComm(const Fields& f) {
  HostComm hc;
  hc.tid = f.tid_int ? f.tid : -1;
  hc.ts = f.ts;
  hc.end = f.ts + f.dur;
  hc.external_id = f.args.external_id;
  if (Eq(f.name, "record_param_comms")) {
    if (args_.any) {
      hc.args = static_cast<int32_t>(events_->comm_args.size());
      events_->comm_args.push_back(args_);
      hc.collective = CollectiveFromPytorchName(args_.collective);
    }
  } else {
    hc.collective = CollectiveFromPytorchName(f.name);
    if (args_.any && hc.collective) {  // nccl:<collective> recorded with shapes
      hc.args = static_cast<int32_t>(events_->comm_args.size());
      events_->comm_args.push_back(args_);
    }
  }
  if (hc.args >= 0 || hc.collective) events_->host_comms.push_back(hc);
  Ignore("cat", f.cat);
  return true;
}

// A host matrix product is kept for the join only; it counts as ignored. Its
// FLOPs and bytes come from the operands' dims (aten::mm: [m,k],[k,n]; addmm:
// bias,[m,k],[k,n]; bmm: [b,m,k],[b,k,n]; baddbmm: bias first) at the first
// operand's element size; an op whose dims do not say is not kept.
bool KinetoTokenizer::AddHostGemm(const Fields& f) {
  Ignore("cat", f.cat);
  const bool bias = Eq(f.name, "aten::addmm") || Eq(f.name, "aten::baddbmm");
  const std::vector<int64_t>& a = args_.inputs[bias ? 1 : 0];
  const std::vector<int64_t>& b = args_.inputs[bias ? 2 : 1];
  const bool batched = Eq(f.name, "aten::bmm") || Eq(f.name, "aten::baddbmm");
  const size_t rank = batched ? 3 : 2;
  if (a.size() != rank || b.size() != rank) return true;
  const int64_t batch = batched ? a[0] : 1;
  const int64_t m = a[rank - 2], k = a[rank - 1], n = b[rank - 1];
  if (b[rank - 2] != k || (batched && b[0] != batch) || m <= 0 || k <= 0 || n <= 0) return true;
  // The first operand's type ("Input type" lists the bias first for addmm: the same type).
  const std::string_view type = args_.shape_dtype;
  std::optional<DType> dtype;
  if (type == "float") dtype = DType::kFp32;
  if (type == "c10::BFloat16") dtype = DType::kBf16;
  if (type == "c10::Half") dtype = DType::kFp16;
  if (type.starts_with("c10::Float8_")) dtype = DType::kFp8;
  if (!dtype) return true;
  const int64_t s = DTypeSize(*dtype);
  HostGemm g;
  g.tid = f.tid_int ? f.tid : -1;
  g.ts = f.ts;
  g.end = f.ts + f.dur;
  g.external_id = f.args.external_id;
  g.flops = 2 * batch * m * n * k;
  g.bytes_read = batch * (m * k + k * n) * s;
  g.bytes_written = batch * m * n * s;
  g.dtype = std::string(DTypeName(*dtype));
  events_->host_gemms.push_back(std::move(g));
  return true;
}

bool KinetoTokenizer::AddGpuOp(const Fields& f) {
  if (!f.pid_seen) return Fail(trace::Stat::kGpuEventWithoutPid);
  if (!f.pid_int) return Fail(trace::Stat::kGpuPidNotInteger);
  if (!f.tid_seen || !f.tid_int) return Fail(trace::Stat::kGpuTidNotInteger);
  if (f.pid < 0 || f.pid > std::numeric_limits<int32_t>::max() ||
      f.tid < std::numeric_limits<int32_t>::min() || f.tid > std::numeric_limits<int32_t>::max()) {
    return Fail(trace::Stat::kIdOutOfRange);
  }
  GpuOp op;
  op.ts = f.ts;
  op.dur = f.dur;
  op.correlation = f.args.correlation;
  op.external_id = f.args.external_id;
  op.device = static_cast<int32_t>(f.pid);
  op.stream = static_cast<int32_t>(f.tid);
  op.name = InternName(f.name);
  if (f.kind == Kind::kKernel) {
    op.comm = IsCommKernelName(f.name, &op.name_collective) || !args_.collective.empty();
    op.category = op.comm ? Category::kComm : Category::kCompute;
    if (op.comm && args_.any) {
      op.args = static_cast<int32_t>(events_->comm_args.size());
      events_->comm_args.push_back(args_);
    }
  } else {
    op.category = Category::kOther;
  }
  events_->ops.push_back(op);
  return true;
}

template <typename Root>
bool KinetoTokenizer::ParseEvent(Root& root, const char* readable_end) {
  od::object obj;
  if (root.get_object().get(obj)) return Fail(trace::Stat::kNotAnObject);
  args_.Clear();
  Fields f;
  switch (ScanFields(obj, &f)) {
    case Scan::kIgnored:
      return true;
    case Scan::kFailed:
      return false;
    case Scan::kRead:
      break;
  }
  if (f.ph.empty()) return Fail(trace::Stat::kMissingPh);
  if (f.kind == Kind::kUnknown) {  // an X event without "cat"
    Ignore("cat", "");
    return true;
  }
  if (!f.args_done && !f.args_raw.empty() && f.kind != Kind::kIgnore &&
      !ParseDeferredArgs(&f, readable_end)) {
    return false;
  }
  if (f.kind == Kind::kMeta) return AddMetadata(f);
  // "name" came after "args", or is missing.
  if (IsHost(f.kind) && f.role == HostRole::kNone && !ClassifyHostOp(&f)) return true;
  if (!f.has_ts) return Fail(trace::Stat::kMissingTs);
  if (f.bad_time) return Fail(trace::Stat::kTimeNotNumber);
  if (f.kind == Kind::kRuntime) return AddRuntimeCall(f);
  if (!f.has_dur) return Fail(trace::Stat::kMissingDur);
  if (f.dur < 0) return Fail(trace::Stat::kNegativeDur);
  if (IsHost(f.kind)) {
    if (f.role == HostRole::kStep) return AddStep(f);
    return f.role == HostRole::kGemm ? AddHostGemm(f) : AddHostComm(f);
  }
  return AddGpuOp(f);
}

void KinetoTokenizer::Parse(std::string_view raw, size_t capacity, int64_t offset) {
  od::document doc;
  bool ok = parser_.iterate(raw.data(), raw.size(), capacity).get(doc) == simdjson::SUCCESS
                ? ParseEvent(doc, raw.data() + capacity)
                : Fail(trace::Stat::kInvalidJson);
  Commit(ok, offset);
}

// As trace::EventParser documents: the run wrapped in '[' ']' in place and
// parsed as one document; an event that fails there goes through Parse with
// the ones after it.
void KinetoTokenizer::ParseBatch(std::span<const trace::RawEvent> events, char* first,
                                 size_t capacity) {
  if (events.empty()) return;
  const trace::RawEvent& last = events.back();
  size_t span = static_cast<size_t>(last.json.data() + last.json.size() - events[0].json.data());
  size_t done = 0;
  if (events.size() > 1 && span + 1 + simdjson::SIMDJSON_PADDING <= capacity) {
    char* open = first - 1;
    char* close = first + span;
    const char saved_open = *open, saved_close = *close;
    *open = '[';
    *close = ']';
    const char* readable_end = first + capacity;
    no_escapes_ = true;  // the scanner batches backslash-free events only
    od::document doc;
    od::array array;
    if (batch_parser_.iterate(open, span + 2, capacity + 1).get(doc) == simdjson::SUCCESS &&
        doc.get_array().get(array) == simdjson::SUCCESS) {
      for (auto element : array) {
        od::value value;
        if (done == events.size() || element.get(value) ||
            value.raw_json_token().data() != events[done].json.data()) {
          break;
        }
        if (!ParseEvent(value, readable_end)) break;  // counted nothing: retried alone below
        Commit(true, events[done].offset);
        ++done;
      }
    }
    no_escapes_ = false;
    *open = saved_open;
    *close = saved_close;
  }
  for (; done < events.size(); ++done) {
    const trace::RawEvent& e = events[done];
    Parse(e.json, capacity - static_cast<size_t>(e.json.data() - events[0].json.data()), e.offset);
  }
}

}  // namespace

std::unique_ptr<trace::EventParser> MakeKinetoTokenizer(trace::ReadStats* stats,
                                                        KinetoEvents* events) {
  return std::make_unique<KinetoTokenizer>(stats, events);
}

}  // namespace shardscope::importers::kineto
