#include "importers/kineto_importer.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <unordered_map>
#include <utility>

#include "trace/event_parser.h"
#include "trace/event_scanner.h"

namespace shardscope::importers {
namespace {

namespace od = simdjson::ondemand;
using trace::Category;
using trace::Collective;
using trace::GroupDim;

constexpr size_t kMaxExamples = 5;

bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// True when the raw key `k` (just past its opening quote) is exactly `lit`.
template <size_t N>
inline bool KeyIs(const char* k, const char (&lit)[N]) {
  return std::memcmp(k, lit, N - 1) == 0 && k[N - 1] == '"';
}

template <size_t N>
inline bool Eq(std::string_view s, const char (&lit)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// Plain decimal integers straight from the token; else simdjson (integral floats too).
bool GetInt(od::value& v, int64_t* out) {
  std::string_view t = v.raw_json_token();
  size_t n = t.size();
  while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == '\t')) {
    --n;
  }
  size_t i = n > 0 && t[0] == '-' ? 1 : 0;
  if (i < n && n - i <= 18) {
    int64_t x = 0;
    size_t j = i;
    for (; j < n; ++j) {
      unsigned d = static_cast<unsigned char>(t[j]) - '0';
      if (d > 9) break;
      x = x * 10 + d;
    }
    if (j == n) {
      *out = i == 1 ? -x : x;
      return true;
    }
  }
  int64_t x;
  if (v.get_int64().get(x) == simdjson::SUCCESS) {
    *out = x;
    return true;
  }
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9.2e18 &&
      d == std::floor(d)) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// A string straight from the buffer when it has no escapes, else unescaped by simdjson.
bool GetString(od::value& v, std::string_view* out, bool no_escapes) {
  std::string_view t = TrimRight(v.raw_json_token());
  if (t.size() >= 2 && t[0] == '"' && t.back() == '"') {
    std::string_view inner = t.substr(1, t.size() - 2);
    if (no_escapes || inner.find('\\') == std::string_view::npos) {
      *out = inner;
      return true;
    }
  }
  return v.get_string().get(*out) == simdjson::SUCCESS;
}

// What an event is, from its "cat" (and "ph" for metadata).
enum class Kind : uint8_t {
  kUnknown,
  kKernel,    // a GPU kernel
  kGpuOther,  // GPU memcpy / memset
  kRuntime,   // CUDA/HIP runtime or driver call: joins kernels to host ops
  kHostOp,    // cpu_op, user_annotation: steps and collective args
  kPython,    // python_function: SGLang's run_batch
  kMeta,      // ph "M"
  kIgnore,
};

Kind KindOfCat(std::string_view cat) {
  if (cat.empty()) return Kind::kIgnore;
  switch (cat[0]) {
    case 'k':
      return Eq(cat, "kernel") ? Kind::kKernel : Kind::kIgnore;
    case 'K':
      return Eq(cat, "Kernel") ? Kind::kKernel : Kind::kIgnore;
    case 'g':
      return Eq(cat, "gpu_memcpy") || Eq(cat, "gpu_memset") ? Kind::kGpuOther : Kind::kIgnore;
    case 'M':
      return Eq(cat, "Memcpy") || Eq(cat, "Memset") ? Kind::kGpuOther : Kind::kIgnore;
    case 'c':
      if (Eq(cat, "cpu_op")) return Kind::kHostOp;
      return Eq(cat, "cuda_runtime") || Eq(cat, "cuda_driver") ? Kind::kRuntime : Kind::kIgnore;
    case 'R':
      return Eq(cat, "Runtime") ? Kind::kRuntime : Kind::kIgnore;
    case 'D':
      return Eq(cat, "Driver") ? Kind::kRuntime : Kind::kIgnore;
    case 'u':
      return Eq(cat, "user_annotation") ? Kind::kHostOp : Kind::kIgnore;
    case 'O':
      return Eq(cat, "Operator") ? Kind::kHostOp : Kind::kIgnore;
    case 'p':
      return Eq(cat, "python_function") ? Kind::kPython : Kind::kIgnore;
    default:
      return Kind::kIgnore;
  }
}

enum class StepSource : uint8_t { kProfilerStep = 0, kVllmExecute, kSglangRunBatch };

// A host op the importer keeps: a step annotation or a collective call.
enum class HostRole : uint8_t { kNone, kStep, kComm };

HostRole RoleOfHostName(std::string_view name, Kind kind, std::string_view cat, StepSource* step) {
  if (kind == Kind::kPython) {
    // "…/scheduler.py(1095): run_batch"
    if (EndsWith(name, ": run_batch") || Eq(name, "run_batch")) {
      *step = StepSource::kSglangRunBatch;
      return HostRole::kStep;
    }
    return HostRole::kNone;
  }
  switch (name.empty() ? '\0' : name[0]) {
    case 'P':
      if (StartsWith(name, "ProfilerStep#")) {
        *step = StepSource::kProfilerStep;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    case 'r':
      if (Eq(name, "record_param_comms")) return HostRole::kComm;
      if (StartsWith(name, "run_batch")) {
        *step = StepSource::kSglangRunBatch;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    case 'n':
      return StartsWith(name, "nccl:") ? HostRole::kComm : HostRole::kNone;
    case 'c':
      return StartsWith(name, "c10d::") ? HostRole::kComm : HostRole::kNone;
    case 'e':
      if (StartsWith(name, "execute_") && Eq(cat, "user_annotation")) {
        *step = StepSource::kVllmExecute;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    default:
      return HostRole::kNone;
  }
}

// The collective args PyTorch writes on record_param_comms (and, in newer
// versions, on the NCCL kernels themselves).
struct CommArgs {
  std::string collective;  // "Collective name"
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t group_size = -1;
  int64_t rank = -1;  // "Rank": the caller for collectives, the peer for send/recv (group-local)
  int64_t rank_start = -1, rank_stride = -1;  // "Global rank start" / "Global rank stride"
  std::string dtype, in_split, out_split, pg_ranks, pg_name, pg_desc;
  bool any = false;

  void Clear() {  // keeps the strings' capacity: called for every event
    in_nelems = out_nelems = group_size = rank = rank_start = rank_stride = -1;
    for (std::string* str :
         {&collective, &dtype, &in_split, &out_split, &pg_ranks, &pg_name, &pg_desc}) {
      str->clear();
    }
    any = false;
  }
};

struct GpuOp {
  int64_t ts = 0, dur = 0;
  int64_t correlation = -1;
  int64_t external_id = -1;
  int32_t device = 0, stream = 0;
  int32_t name = 0;   // index into names_
  int32_t args = -1;  // index into comm_args_: the kernel's own collective args
  Category category = Category::kCompute;
  bool comm = false;
  Collective name_collective = Collective::kNone;  // what the kernel name says
};

struct RuntimeCall {
  int64_t correlation = 0, external_id = -1, tid = 0, ts = 0;
};

struct HostComm {
  int64_t tid = 0, ts = 0, end = 0, external_id = -1;
  int32_t args = -1;                     // record_param_comms: index into comm_args_
  std::optional<Collective> collective;  // from the name (nccl:…, c10d::…) or the args
};

struct StepMark {
  int64_t ts = 0, dur = 0;
  int32_t step = -1;  // ProfilerStep#N; -1: numbered by start order
  StepSource source = StepSource::kProfilerStep;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Parses Kineto events, keeps what the import needs, and delivers it at the end.
class KinetoParser final : public trace::EventParser {
 public:
  explicit KinetoParser(trace::ReadStats* stats) : stats_(stats) {}

  void Parse(std::string_view raw, size_t capacity, int64_t offset) override;
  void ParseBatch(std::span<const trace::RawEvent> events, char* first, size_t capacity) override;

  // Resolves ranks, clocks and joins, then hands everything to `sink`.
  void Deliver(const std::string& name, const std::map<std::string, std::string>& top_level,
               trace::TraceSink* sink, KinetoInfo* info);

 private:
  template <typename Root>
  bool ParseEvent(Root& root, const char* readable_end);
  bool ParseArgs(od::value& v, Kind kind);
  bool Fail(std::string_view reason) {
    skip_reason_.assign(reason);
    return false;
  }
  // Counts a well-formed event that is not analysed: `type` "cat"/"ph"/"metadata".
  void Ignore(std::string_view type, std::string_view value);
  void Commit(bool ok, int64_t offset);
  bool Str(od::value& v, std::string_view* out) { return GetString(v, out, no_escapes_); }
  int32_t InternName(std::string_view name);

  // Delivery helpers.
  void ResolveComm(const GpuOp& op, trace::OpEvent* ev);
  const CommArgs* FindHostArgs(const GpuOp& op, std::optional<Collective>* name_collective);
  void FillFromArgs(const CommArgs& a, Collective c, trace::OpEvent* ev);
  std::vector<int32_t> GroupOf(const CommArgs& a, std::string* why_unknown);
  void Note(const std::string& what) { ++stats_->notes[what]; }

  trace::ReadStats* const stats_;
  od::parser parser_, batch_parser_, args_parser_;
  std::string skip_reason_;
  bool no_escapes_ = false;
  // Per event.
  CommArgs args_;
  int64_t correlation_ = -1, external_id_ = -1;
  std::string_view meta_name_;
  bool ignored_ = false;
  // The import so far.
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> name_index_;
  std::vector<std::string> names_;
  std::vector<GpuOp> ops_;
  std::vector<CommArgs> comm_args_;
  std::vector<RuntimeCall> runtime_;
  std::vector<HostComm> host_comms_;
  std::vector<StepMark> steps_;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;  // (pid, tid)
  struct IgnoredCount {
    std::string type, value;
    int64_t count = 0;
  };
  std::vector<IgnoredCount> ignored_counts_;
  size_t last_ignored_ = 0;
  // Delivery state.
  int32_t rank_ = 0;
  std::optional<int32_t> world_size_;
  std::map<std::string, std::vector<int32_t>> pg_ranks_;  // pg_config: name → complete rank list
  bool runtime_sorted_ = false;
  std::unordered_map<int64_t, int32_t> host_by_external_id_;  // record_param_comms with args
};

void KinetoParser::Ignore(std::string_view type, std::string_view value) {
  ignored_ = true;
  if (last_ignored_ < ignored_counts_.size()) {
    IgnoredCount& c = ignored_counts_[last_ignored_];
    if (c.type == type && c.value == value) {
      ++c.count;
      return;
    }
  }
  for (size_t i = 0; i < ignored_counts_.size(); ++i) {
    if (ignored_counts_[i].type == type && ignored_counts_[i].value == value) {
      ++ignored_counts_[i].count;
      last_ignored_ = i;
      return;
    }
  }
  ignored_counts_.push_back({std::string(type), std::string(value.substr(0, 40)), 1});
  last_ignored_ = ignored_counts_.size() - 1;
}

void KinetoParser::Commit(bool ok, int64_t offset) {
  ++stats_->events;
  if (ok) return;
  ++stats_->skipped[skip_reason_];
  if (stats_->examples.size() < kMaxExamples) {
    stats_->examples.push_back(fmt::format("byte {}: {}", offset, skip_reason_));
  }
}

int32_t KinetoParser::InternName(std::string_view name) {
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  int32_t id = static_cast<int32_t>(names_.size());
  names_.emplace_back(name);
  name_index_.emplace(names_.back(), id);
  return id;
}

// A string, or the raw JSON of an array ("In split size" is either).
bool GetStringOrArray(od::value& v, std::string* out, bool no_escapes) {
  std::string_view s;
  if (GetString(v, &s, no_escapes)) {
    out->assign(s);
    return true;
  }
  od::array arr;
  if (v.get_array().get(arr) == simdjson::SUCCESS && arr.raw_json().get(s) == simdjson::SUCCESS) {
    out->assign(s);
    return true;
  }
  return false;
}

bool KinetoParser::ParseArgs(od::value& value, Kind kind) {
  od::object args;
  if (value.get_object().get(args)) return Fail("args is not an object");
  for (auto field_result : args) {
    if (field_result.error()) return Fail("invalid JSON");
    od::field& field = field_result.value_unsafe();
    const char* k = field.key().raw();
    od::value& v = field.value();
    bool ok = true;
    std::string_view s;
    switch (k[0]) {
      case 'n':  // metadata args
        if (kind == Kind::kMeta && KeyIs(k, "name")) ok = Str(v, &meta_name_);
        break;
      case 'c':
        if (KeyIs(k, "correlation")) ok = GetInt(v, &correlation_);
        break;
      case 'E':
        if (KeyIs(k, "External id")) ok = GetInt(v, &external_id_);
        break;
      case 'C':
        if (KeyIs(k, "Collective name")) {
          ok = Str(v, &s);
          if (ok) args_.collective.assign(s);
          args_.any = true;
        }
        break;
      case 'I':
        if (KeyIs(k, "In msg nelems")) {
          ok = GetInt(v, &args_.in_nelems);
          args_.any = true;
        } else if (KeyIs(k, "In split size")) {
          ok = GetStringOrArray(v, &args_.in_split, no_escapes_);
        }
        break;
      case 'O':
        if (KeyIs(k, "Out msg nelems")) {
          ok = GetInt(v, &args_.out_nelems);
          args_.any = true;
        } else if (KeyIs(k, "Out split size")) {
          ok = GetStringOrArray(v, &args_.out_split, no_escapes_);
        }
        break;
      case 'G':
        if (KeyIs(k, "Group size")) {
          ok = GetInt(v, &args_.group_size);
        } else if (KeyIs(k, "Global rank start")) {
          ok = GetInt(v, &args_.rank_start);
        } else if (KeyIs(k, "Global rank stride")) {
          ok = GetInt(v, &args_.rank_stride);
        }
        break;
      case 'd':
        if (KeyIs(k, "dtype")) {
          ok = Str(v, &s);
          if (ok) args_.dtype.assign(s);
        }
        break;
      case 'P':
        if (KeyIs(k, "Process Group Ranks")) {
          ok = GetStringOrArray(v, &args_.pg_ranks, no_escapes_);
        } else if (KeyIs(k, "Process Group Name")) {
          ok = Str(v, &s);
          if (ok) args_.pg_name.assign(s);
        } else if (KeyIs(k, "Process Group Description")) {
          ok = Str(v, &s);
          if (ok) args_.pg_desc.assign(s);
        }
        break;
      case 'R':
        if (KeyIs(k, "Rank")) ok = GetInt(v, &args_.rank);
        break;
      default:
        break;
    }
    if (!ok) {
      size_t n = 0;
      while (n < 32 && k[n] != '"') ++n;
      return Fail(fmt::format("bad value of args.{}", std::string_view(k, n)));
    }
  }
  return true;
}

template <typename Root>
bool KinetoParser::ParseEvent(Root& root, const char* readable_end) {
  od::object obj;
  if (root.get_object().get(obj)) return Fail("event is not a JSON object");
  ignored_ = false;
  args_.Clear();
  correlation_ = external_id_ = -1;
  meta_name_ = {};
  std::string_view ph, cat, name, args_raw;
  Kind kind = Kind::kUnknown;
  HostRole role = HostRole::kNone;
  StepSource step_source = StepSource::kProfilerStep;
  bool pid_seen = false, pid_int = false, tid_seen = false, tid_int = false;
  bool has_ts = false, has_dur = false, bad_time = false, args_done = false;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0;
  // Decides the kind once "ph" and (for X events) "cat" are known; true when
  // the rest of the event does not matter (it is counted as ignored).
  auto decide = [&]() -> bool {
    if (kind != Kind::kUnknown || ph.empty()) return false;
    if (!Eq(ph, "X")) {
      if (Eq(ph, "M")) {
        kind = Kind::kMeta;
        return false;
      }
      kind = Kind::kIgnore;
      Ignore("ph", ph.substr(0, 8));
      return true;
    }
    if (cat.data() == nullptr) return false;
    kind = KindOfCat(cat);
    if (kind == Kind::kIgnore) {
      Ignore("cat", cat);
      return true;
    }
    return false;
  };
  for (auto field_result : obj) {
    if (field_result.error()) return Fail("invalid JSON");
    od::field& field = field_result.value_unsafe();
    const char* k = field.key().raw();
    od::value& v = field.value();
    switch (k[0]) {
      case 'p':
        if (KeyIs(k, "ph")) {
          if (!Str(v, &ph)) return Fail("ph is not a string");
          if (decide()) return true;
        } else if (KeyIs(k, "pid")) {
          pid_seen = true;
          pid_int = GetInt(v, &pid);
        }
        break;
      case 'c':
        if (KeyIs(k, "cat")) {
          if (!Str(v, &cat)) cat = std::string_view("", 0);
          if (cat.data() == nullptr) cat = std::string_view("", 0);
          if (decide()) return true;
        }
        break;
      case 'n':
        if (KeyIs(k, "name")) {
          if (!Str(v, &name)) return Fail("name is not a string");
          if (kind == Kind::kHostOp || kind == Kind::kPython) {
            role = RoleOfHostName(name, kind, cat, &step_source);
            if (role == HostRole::kNone) {
              Ignore("cat", cat);
              return true;
            }
          }
        }
        break;
      case 't':
        if (KeyIs(k, "ts")) {
          has_ts = true;
          if (!trace::ParseMicrosToNs(TrimRight(v.raw_json_token()), &ts)) bad_time = true;
        } else if (KeyIs(k, "tid")) {
          tid_seen = true;
          tid_int = GetInt(v, &tid);
        }
        break;
      case 'd':
        if (KeyIs(k, "dur")) {
          has_dur = true;
          if (!trace::ParseMicrosToNs(TrimRight(v.raw_json_token()), &dur)) bad_time = true;
        }
        break;
      case 'a':
        if (KeyIs(k, "args")) {
          if (kind == Kind::kUnknown) {
            // "args" before "ph" or "cat": parse it once the kind is known.
            od::object args_object;
            if (v.get_object().get(args_object) || args_object.raw_json().get(args_raw)) {
              return Fail("invalid JSON");
            }
          } else if (kind != Kind::kIgnore) {
            if (!ParseArgs(v, kind)) return false;
            args_done = true;
          }
        }
        break;
      default:
        break;
    }
  }
  if (ph.empty()) return Fail("missing ph");
  if (kind == Kind::kUnknown) {
    // An X event without "cat".
    Ignore("cat", "");
    return true;
  }
  if (!args_done && !args_raw.empty() && kind != Kind::kIgnore) {
    od::document args_doc;
    od::value args_value;
    size_t cap = static_cast<size_t>(readable_end - args_raw.data());
    if (args_parser_.iterate(args_raw.data(), args_raw.size(), cap).get(args_doc) ||
        args_doc.get_value().get(args_value)) {
      return Fail("invalid JSON");
    }
    if (!ParseArgs(args_value, kind)) return false;
  }
  if (kind == Kind::kMeta) {
    if (Eq(name, "thread_name") && pid_int && tid_int) {
      thread_names_[{pid, tid}] = std::string(Trim(meta_name_));
    } else {
      Ignore("metadata", name.substr(0, 32));
    }
    return true;
  }
  if ((kind == Kind::kHostOp || kind == Kind::kPython) && role == HostRole::kNone) {
    // "name" came after "args", or is missing.
    role = RoleOfHostName(name, kind, cat, &step_source);
    if (role == HostRole::kNone) {
      Ignore("cat", cat);
      return true;
    }
  }
  if (!has_ts) return Fail("missing ts");
  if (bad_time) return Fail("ts or dur is not a number");
  if (kind == Kind::kRuntime) {
    if (correlation_ >= 0 && tid_int) {
      runtime_.push_back({correlation_, external_id_, tid, ts});
    }
    Ignore("cat", cat);
    return true;
  }
  if (!has_dur) return Fail("X event without dur");
  if (dur < 0) return Fail("negative dur");
  if (kind == Kind::kHostOp || kind == Kind::kPython) {
    if (role == HostRole::kStep) {
      StepMark m{ts, dur, -1, step_source};
      if (step_source == StepSource::kProfilerStep) {
        int64_t n = 0;
        std::string_view digits = name.substr(std::strlen("ProfilerStep#"));
        bool ok = !digits.empty() && digits.size() <= 9;
        for (char c : digits) {
          if (c < '0' || c > '9') ok = false;
          n = n * 10 + (c - '0');
        }
        if (!ok) return Fail("ProfilerStep# without a step number");
        m.step = static_cast<int32_t>(n);
      }
      steps_.push_back(m);
      return true;
    }
    HostComm hc;
    hc.tid = tid_int ? tid : -1;
    hc.ts = ts;
    hc.end = ts + dur;
    hc.external_id = external_id_;
    if (Eq(name, "record_param_comms")) {
      if (args_.any) {
        hc.args = static_cast<int32_t>(comm_args_.size());
        comm_args_.push_back(args_);
        hc.collective = CollectiveFromPytorchName(args_.collective);
      }
    } else {
      hc.collective = CollectiveFromPytorchName(name);
    }
    if (hc.args >= 0 || hc.collective) host_comms_.push_back(hc);
    Ignore("cat", cat);
    return true;
  }
  // A GPU activity.
  if (!pid_seen) return Fail("GPU event without pid");
  if (!pid_int) return Fail("GPU event pid is not an integer (the device)");
  if (!tid_seen || !tid_int) return Fail("GPU event tid is not an integer (the stream)");
  if (pid < 0 || pid > std::numeric_limits<int32_t>::max() ||
      tid < std::numeric_limits<int32_t>::min() || tid > std::numeric_limits<int32_t>::max()) {
    return Fail("pid or tid out of range");
  }
  GpuOp op;
  op.ts = ts;
  op.dur = dur;
  op.correlation = correlation_;
  op.external_id = external_id_;
  op.device = static_cast<int32_t>(pid);
  op.stream = static_cast<int32_t>(tid);
  op.name = InternName(name);
  if (kind == Kind::kKernel) {
    op.comm = IsCommKernelName(name, &op.name_collective) || !args_.collective.empty();
    op.category = op.comm ? Category::kComm : Category::kCompute;
    if (op.comm && args_.any) {
      op.args = static_cast<int32_t>(comm_args_.size());
      comm_args_.push_back(args_);
    }
  } else {
    op.category = Category::kOther;
  }
  ops_.push_back(op);
  return true;
}

void KinetoParser::Parse(std::string_view raw, size_t capacity, int64_t offset) {
  od::document doc;
  bool ok = parser_.iterate(raw.data(), raw.size(), capacity).get(doc) == simdjson::SUCCESS
                ? ParseEvent(doc, raw.data() + capacity)
                : Fail("invalid JSON");
  Commit(ok, offset);
}

// As trace::EventParser documents: the run wrapped in '[' ']' in place and
// parsed as one document; an event that fails there goes through Parse with
// the ones after it.
void KinetoParser::ParseBatch(std::span<const trace::RawEvent> events, char* first,
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

// ---- Name rules ----

bool IsCommKernelName(std::string_view name, Collective* collective) {
  *collective = Collective::kNone;
  std::string_view n = name;
  if (StartsWith(n, "void ")) n.remove_prefix(5);
  // vLLM / SGLang / TensorRT-LLM custom all-reduce kernels (their names carry namespaces).
  static constexpr std::array<std::string_view, 6> kCustomAllReduce = {
      "cross_device_reduce_1stage", "cross_device_reduce_2stage", "quickreduce::allreduce",
      "allreduce_fusion_kernel",    "oneShotAllReduceKernel",     "twoShotAllReduceKernel"};
  for (std::string_view k : kCustomAllReduce) {
    if (Contains(n, k)) {
      *collective = Collective::kAllReduce;
      return true;
    }
  }
  static constexpr std::array<std::string_view, 5> kPrefixes = {
      "ncclKernel_", "ncclDevKernel_", "mscclKernel_", "rcclKernel_", "ncclDevFunc_"};
  std::string_view rest;
  bool found = false;
  for (std::string_view p : kPrefixes) {
    if (StartsWith(n, p)) {
      rest = n.substr(p.size());
      found = true;
      break;
    }
  }
  if (!found) {
    // Other RCCL/NCCL entry points ("ncclKernel(…)", "rcclGenericKernel…").
    return StartsWith(n, "nccl") || StartsWith(n, "rccl");
  }
  size_t end = rest.find_first_of("_(<");
  std::string_view op = rest.substr(0, end);
  if (op == "AllReduce") {
    *collective = Collective::kAllReduce;
  } else if (op == "AllGather") {
    *collective = Collective::kAllGather;
  } else if (op == "ReduceScatter") {
    *collective = Collective::kReduceScatter;
  } else if (op == "Broadcast") {
    *collective = Collective::kBroadcast;
  } else if (op == "AllToAll" || op == "AlltoAll") {
    *collective = Collective::kAllToAll;
  } else if (op == "Send") {
    *collective = Collective::kSend;
  } else if (op == "Recv") {
    *collective = Collective::kRecv;
  }
  // SendRecv (point-to-point or all-to-all), Reduce, Generic: the name does not say.
  return true;
}

std::optional<Collective> CollectiveFromPytorchName(std::string_view name) {
  std::string_view n = Trim(name);
  for (std::string_view p : {std::string_view("nccl:"), std::string_view("c10d::"),
                             std::string_view("gloo:"), std::string_view("rccl:")}) {
    if (StartsWith(n, p)) {
      n.remove_prefix(p.size());
      break;
    }
  }
  n = n.substr(0, n.find_first_of(" ("));
  std::string s;
  for (char c : n) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  while (!s.empty() && s.front() == '_') s.erase(s.begin());
  while (!s.empty() && s.back() == '_') s.pop_back();
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view suffix : {"_coalesced", "_into_tensor", "_tensor", "_base", "_single"}) {
      if (s.size() > suffix.size() && EndsWith(s, suffix)) {
        s.resize(s.size() - suffix.size());
        stripped = true;
      }
    }
  }
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s == "allreduce") return Collective::kAllReduce;
  if (s == "allgather") return Collective::kAllGather;
  if (s == "reducescatter") return Collective::kReduceScatter;
  if (s == "alltoall" || s == "alltoallv") return Collective::kAllToAll;
  if (s == "broadcast") return Collective::kBroadcast;
  if (s == "send") return Collective::kSend;
  if (s == "recv" || s == "recvanysource") return Collective::kRecv;
  if (s == "reduce" || s == "gather" || s == "scatter" || s == "barrier" || s == "wait" ||
      s == "coalesced" || s == "monitoredbarrier") {
    return Collective::kNone;
  }
  return std::nullopt;
}

int64_t KinetoDtypeSize(std::string_view dtype, std::string* ours) {
  struct Entry {
    std::string_view c10, ours;
    int64_t size;
  };
  static constexpr std::array<Entry, 32> kTable = {{
      {"Float", "fp32", 4},
      {"BFloat16", "bf16", 2},
      {"Half", "fp16", 2},
      {"Double", "fp64", 8},
      {"Byte", "uint8", 1},
      {"Char", "int8", 1},
      {"Short", "int16", 2},
      {"Int", "int32", 4},
      {"Long", "int64", 8},
      {"Bool", "bool", 1},
      {"ComplexHalf", "complex32", 4},
      {"ComplexFloat", "complex64", 8},
      {"ComplexDouble", "complex128", 16},
      {"QInt8", "qint8", 1},
      {"QUInt8", "quint8", 1},
      {"QInt32", "qint32", 4},
      {"Float8_e5m2", "fp8", 1},
      {"Float8_e4m3fn", "fp8", 1},
      {"Float8_e5m2fnuz", "fp8", 1},
      {"Float8_e4m3fnuz", "fp8", 1},
      {"UInt16", "uint16", 2},
      {"UInt32", "uint32", 4},
      {"UInt64", "uint64", 8},
      {"float32", "fp32", 4},
      {"float", "fp32", 4},
      {"bfloat16", "bf16", 2},
      {"float16", "fp16", 2},
      {"half", "fp16", 2},
      {"int8", "int8", 1},
      {"uint8", "uint8", 1},
      {"int32", "int32", 4},
      {"int64", "int64", 8},
  }};
  for (const Entry& e : kTable) {
    if (e.c10 == dtype) {
      if (ours) ours->assign(e.ours);
      return e.size;
    }
  }
  if (ours) {
    ours->clear();
    for (char c : dtype) {
      ours->push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return 0;
}

bool ParseRankList(std::string_view s, std::vector<int64_t>* out, bool* truncated) {
  out->clear();
  *truncated = false;
  s = Trim(s);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  std::string_view inner = s.substr(1, s.size() - 2);
  size_t pos = 0;
  while (pos <= inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string_view tok = Trim(
        inner.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    bool last = comma == std::string_view::npos;
    if (tok == "..." || tok == "…") {
      *truncated = true;
      return true;  // what follows the ellipsis is not a rank ("..., ]")
    }
    if (tok.empty()) {
      if (last) return true;  // "[]" or a trailing ", ]"
      return false;
    }
    int64_t v = 0;
    for (char c : tok) {
      if (c < '0' || c > '9' || v > (int64_t{1} << 40)) return false;
      v = v * 10 + (c - '0');
    }
    out->push_back(v);
    if (last) return true;
    pos = comma + 1;
  }
  return true;
}

namespace {

// A parallelism dimension from a process-group description ("mesh_tp", "tp",
// "default_pg"): only when one of its words is exactly a dimension's name.
GroupDim DimOfDescription(std::string_view desc) {
  std::string word;
  GroupDim found = GroupDim::kNone;
  auto check = [&] {
    if (word == "tp") found = GroupDim::kTp;
    if (word == "pp") found = GroupDim::kPp;
    if (word == "dp") found = GroupDim::kDp;
    if (word == "ep") found = GroupDim::kEp;
    if (word == "sp" || word == "cp") found = GroupDim::kSp;
    word.clear();
  };
  for (char c : desc) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      check();
    }
  }
  check();
  return found;
}

std::vector<int32_t> KinetoParser::GroupOf(const CommArgs& a, std::string* why) {
  std::vector<int32_t> group;
  std::vector<int64_t> ranks;
  bool truncated = false;
  if (!a.pg_ranks.empty() && ParseRankList(a.pg_ranks, &ranks, &truncated) && !truncated &&
      !ranks.empty()) {
    group.assign(ranks.begin(), ranks.end());
    return group;
  }
  if (!a.pg_name.empty()) {
    auto it = pg_ranks_.find(a.pg_name);
    if (it != pg_ranks_.end() && (a.group_size < 0 || a.group_size == int64_t(it->second.size()))) {
      return it->second;
    }
  }
  if (a.group_size > 0 && a.rank_start >= 0 && a.rank_stride > 0) {
    for (int64_t i = 0; i < a.group_size; ++i) {
      group.push_back(static_cast<int32_t>(a.rank_start + i * a.rank_stride));
    }
    return group;
  }
  if (a.group_size > 0 && world_size_ && a.group_size == *world_size_) {
    for (int32_t r = 0; r < *world_size_; ++r) group.push_back(r);
    return group;
  }
  *why = truncated ? "group unknown: \"Process Group Ranks\" truncated and no other source"
                   : "group unknown: no \"Process Group Ranks\" or process-group config";
  return group;
}

void KinetoParser::FillFromArgs(const CommArgs& a, Collective c, trace::OpEvent* ev) {
  std::string why;
  std::vector<int32_t> group = GroupOf(a, &why);
  if (group.empty()) Note(why);
  ev->dim = DimOfDescription(a.pg_desc);
  std::string ours;
  int64_t size = a.dtype.empty() ? 0 : KinetoDtypeSize(a.dtype, &ours);
  ev->dtype = ours;
  if (size == 0) {
    Note(a.dtype.empty() ? "communication kernel without dtype: bytes unknown"
                         : fmt::format("unknown dtype '{}': bytes unknown", a.dtype.substr(0, 24)));
  }
  int64_t n = static_cast<int64_t>(group.size());
  int64_t gs = a.group_size > 0 ? a.group_size : n;
  int64_t in = a.in_nelems, out = a.out_nelems;
  int64_t elems = -1;
  switch (c) {
    case Collective::kAllGather:  // the full output buffer
      elems = out >= 0 ? out : (in >= 0 && gs > 0 ? in * gs : -1);
      break;
    case Collective::kReduceScatter:  // the full input buffer
      elems = in >= 0 ? in : (out >= 0 && gs > 0 ? out * gs : -1);
      break;
    case Collective::kRecv:
      elems = out >= 0 ? out : in;
      break;
    default:  // all-reduce, broadcast, all-to-all (everything sent), send
      elems = in >= 0 ? in : out;
      break;
  }
  if (elems < 0 && size > 0) Note("communication kernel without message size: bytes unknown");
  if (elems >= 0 && size > 0) ev->bytes = elems * size;
  if (c == Collective::kSend || c == Collective::kRecv) {
    if (a.rank >= 0 && a.rank < n) ev->peer = group[a.rank];
    if (ev->peer < 0) Note("send/recv without a known peer");
    return;  // point to point: the pair is the group
  }
  ev->group = std::move(group);
  if (c == Collective::kAllToAll && ev->bytes > 0 && !ev->group.empty()) {
    std::vector<int64_t> split;
    bool truncated = false;
    if (ParseRankList(a.in_split, &split, &truncated) && !truncated &&
        split.size() == ev->group.size()) {
      int64_t rows = 0;
      for (int64_t r : split) rows += r;
      if (rows > 0 && in > 0 && in % rows == 0) {
        int64_t row_bytes = in / rows * size;
        for (int64_t r : split) ev->bytes_per_peer.push_back(r * row_bytes);
      }
    }
  }
}

const CommArgs* KinetoParser::FindHostArgs(const GpuOp& op,
                                           std::optional<Collective>* name_collective) {
  if (op.correlation < 0 || runtime_.empty()) return nullptr;
  if (!runtime_sorted_) {
    std::sort(runtime_.begin(), runtime_.end(), [](const RuntimeCall& a, const RuntimeCall& b) {
      return a.correlation < b.correlation;
    });
    std::sort(host_comms_.begin(), host_comms_.end(), [](const HostComm& a, const HostComm& b) {
      return a.tid < b.tid || (a.tid == b.tid && a.ts < b.ts);
    });
    for (size_t i = 0; i < host_comms_.size(); ++i) {
      if (host_comms_[i].external_id >= 0 && host_comms_[i].args >= 0) {
        host_by_external_id_.emplace(host_comms_[i].external_id, static_cast<int32_t>(i));
      }
    }
    runtime_sorted_ = true;
  }
  auto rt = std::lower_bound(runtime_.begin(), runtime_.end(), op.correlation,
                             [](const RuntimeCall& r, int64_t c) { return r.correlation < c; });
  if (rt == runtime_.end() || rt->correlation != op.correlation) return nullptr;
  // Newer PyTorch: the launch carries the External id of the record_param_comms
  // around it (older versions write the correlation there: the enclosure check
  // keeps a coincidence from joining).
  if (rt->external_id >= 0) {
    auto h = host_by_external_id_.find(rt->external_id);
    if (h != host_by_external_id_.end()) {
      const HostComm& hc = host_comms_[h->second];
      if (hc.tid == rt->tid && hc.ts <= rt->ts && rt->ts <= hc.end) {
        *name_collective = hc.collective;
        return &comm_args_[hc.args];
      }
    }
  }
  // Else the innermost collective call on the launching thread that encloses the launch.
  auto it =
      std::upper_bound(host_comms_.begin(), host_comms_.end(), std::make_pair(rt->tid, rt->ts),
                       [](const std::pair<int64_t, int64_t>& key, const HostComm& h) {
                         return key.first < h.tid || (key.first == h.tid && key.second < h.ts);
                       });
  const CommArgs* args = nullptr;
  int looked = 0;
  while (it != host_comms_.begin() && looked++ < 64) {
    --it;
    if (it->tid != rt->tid) break;
    if (it->ts <= rt->ts && rt->ts <= it->end) {
      if (!*name_collective && it->collective) *name_collective = it->collective;
      if (args == nullptr && it->args >= 0) args = &comm_args_[it->args];
      if (args != nullptr && *name_collective) break;
    }
  }
  return args;
}

void KinetoParser::ResolveComm(const GpuOp& op, trace::OpEvent* ev) {
  const CommArgs* args = op.args >= 0 ? &comm_args_[op.args] : nullptr;
  std::optional<Collective> coll;
  if (args != nullptr && !args->collective.empty())
    coll = CollectiveFromPytorchName(args->collective);
  if (args == nullptr || args->collective.empty()) {
    std::optional<Collective> host_coll;
    const CommArgs* host = FindHostArgs(op, &host_coll);
    if (host != nullptr && args == nullptr) args = host;
    if (!coll && args != nullptr && !args->collective.empty()) {
      coll = CollectiveFromPytorchName(args->collective);
    }
    if (!coll) coll = host_coll;
  }
  if (!coll && op.name_collective != Collective::kNone) coll = op.name_collective;
  if (!coll) {
    Note("communication kernel whose collective is unknown (name and args do not say)");
    return;
  }
  ev->collective = *coll;
  ev->kind = std::string(trace::CollectiveName(*coll));
  if (*coll == Collective::kNone) {
    // reduce, gather, barrier, …: kept as communication time, named in `kind`.
    ev->kind = args && !args->collective.empty() ? args->collective : "other_collective";
    Note(fmt::format("collective '{}' has no counterpart in the trace model",
                     ev->kind.substr(0, 24)));
    return;
  }
  if (args == nullptr) {
    Note("communication kernel without collective args: bytes and group unknown");
    return;
  }
  FillFromArgs(*args, *coll, ev);
}

void KinetoParser::Deliver(const std::string& name,
                           const std::map<std::string, std::string>& top_level,
                           trace::TraceSink* sink, KinetoInfo* info) {
  auto top = [&](const char* key) -> nlohmann::json {
    auto it = top_level.find(key);
    if (it == top_level.end()) return nullptr;
    nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (j.is_discarded()) {
      ++stats_->skipped[fmt::format("top-level \"{}\" is not valid JSON", key)];
      return nullptr;
    }
    return j;
  };
  nlohmann::json dist = top("distributedInfo");
  nlohmann::json devices = top("deviceProperties");
  nlohmann::json base = top("baseTimeNanoseconds");
  std::optional<int32_t> rank;
  if (dist.is_object()) {
    if (dist.contains("rank") && dist["rank"].is_number_integer() &&
        dist["rank"].get<int64_t>() >= 0 &&
        dist["rank"].get<int64_t>() < std::numeric_limits<int32_t>::max()) {
      rank = dist["rank"].get<int32_t>();
    }
    if (dist.contains("world_size") && dist["world_size"].is_number_integer() &&
        dist["world_size"].get<int64_t>() > 0 &&
        dist["world_size"].get<int64_t>() < std::numeric_limits<int32_t>::max()) {
      world_size_ = dist["world_size"].get<int32_t>();
    }
    if (dist.contains("pg_config") && dist["pg_config"].is_array()) {
      for (const auto& pg : dist["pg_config"]) {
        if (!pg.is_object() || !pg.contains("pg_name") || !pg.contains("ranks")) continue;
        std::string pg_name =
            pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump();
        std::vector<int32_t> ranks;
        bool ok = true;
        if (pg["ranks"].is_array()) {
          for (const auto& r : pg["ranks"]) {
            if (!r.is_number_integer()) ok = false;
            if (ok) ranks.push_back(r.get<int32_t>());
          }
        } else if (pg["ranks"].is_string()) {
          std::vector<int64_t> parsed;
          bool truncated = false;
          ok = ParseRankList(pg["ranks"].get<std::string>(), &parsed, &truncated) && !truncated;
          ranks.assign(parsed.begin(), parsed.end());
        } else {
          ok = false;
        }
        if (pg.contains("pg_size") && pg["pg_size"].is_number_integer() &&
            pg["pg_size"].get<int64_t>() != static_cast<int64_t>(ranks.size())) {
          ok = false;
        }
        if (ok && !ranks.empty()) pg_ranks_[pg_name] = std::move(ranks);
      }
    }
  }
  int64_t base_ns = 0;
  if (base.is_number_integer()) base_ns = base.get<int64_t>();
  std::vector<std::string> device_names;
  if (devices.is_array()) {
    for (const auto& d : devices) {
      device_names.push_back(d.is_object() && d.contains("name") && d["name"].is_string()
                                 ? d["name"].get<std::string>()
                                 : "");
    }
  }
  // Rank: distributedInfo.rank; without it, each GPU's ops are the rank of its device id.
  std::map<int32_t, int64_t> ops_per_device;
  for (const GpuOp& op : ops_) ++ops_per_device[op.device];
  auto rank_of = [&](int32_t device) { return rank ? *rank : device; };
  if (rank && ops_per_device.size() > 1) {
    int64_t others = 0;
    int64_t most = 0;
    for (const auto& [d, n] : ops_per_device) {
      others += n;
      most = std::max(most, n);
    }
    stats_->notes[fmt::format("GPU ops on {} devices, all attributed to rank {}",
                              ops_per_device.size(), *rank)] += others - most;
  }
  rank_ = rank.value_or(0);
  // Metadata first, so a collector has it before the ops.
  nlohmann::json meta = nlohmann::json::object();
  nlohmann::json source = {{"format", "kineto"}, {"file", name}};
  if (auto tn = top("traceName"); tn.is_string()) source["trace_name"] = tn;
  if (auto sv = top("schemaVersion"); !sv.is_null()) source["schema_version"] = sv;
  meta["source"] = source;
  nlohmann::json kineto = nlohmann::json::object();
  if (dist.is_object()) kineto["distributedInfo"] = dist;
  if (!device_names.empty()) kineto["devices"] = device_names;
  kineto["clock"] =
      base.is_number_integer()
          ? fmt::format("ts relative to baseTimeNanoseconds {}; made absolute", base_ns)
          : std::string("ts absolute as recorded (no baseTimeNanoseconds)");
  meta["kineto"] = kineto;
  if (world_size_) meta["world_size"] = *world_size_;
  if (rank) meta["rank"] = *rank;
  if (!ops_per_device.empty()) {
    int32_t device = ops_per_device.begin()->first;
    if (device >= 0 && static_cast<size_t>(device) < device_names.size() &&
        !device_names[device].empty()) {
      meta["cluster"] = {{"device", {{"name", device_names[device]}}}};
    }
  }
  sink->OnMetadata(meta);
  std::map<int32_t, bool> ranks_seen;
  for (const auto& [device, n] : ops_per_device) {
    int32_t r = rank_of(device);
    if (ranks_seen.emplace(r, true).second) {
      std::string dev = device >= 0 && static_cast<size_t>(device) < device_names.size()
                            ? device_names[device]
                            : std::string();
      sink->OnProcessName(
          r, fmt::format("rank {} · device {}{}{}", r, device, dev.empty() ? "" : " · ", dev));
      ++stats_->names;
    }
  }
  std::map<std::pair<int32_t, int32_t>, bool> streams_seen;
  for (const GpuOp& op : ops_) {
    if (!streams_seen.emplace(std::make_pair(op.device, op.stream), true).second) continue;
    auto it = thread_names_.find({op.device, op.stream});
    std::string tname = it != thread_names_.end() && !it->second.empty()
                            ? it->second
                            : fmt::format("stream {}", op.stream);
    sink->OnThreadName(rank_of(op.device), op.stream, tname);
    ++stats_->names;
  }
  trace::OpEvent ev;
  for (const GpuOp& op : ops_) {
    ev = trace::OpEvent();
    ev.rank = rank_of(op.device);
    ev.stream = op.stream;
    ev.name = names_[op.name];
    ev.category = op.category;
    ev.ts_ns = op.ts + base_ns;
    ev.dur_ns = op.dur;
    if (op.comm) ResolveComm(op, &ev);
    sink->OnOp(ev);
    ++stats_->ops;
  }
  // Steps: ProfilerStep#N when the trace has them, else vLLM's execute_*, else SGLang's run_batch.
  for (StepSource src :
       {StepSource::kProfilerStep, StepSource::kVllmExecute, StepSource::kSglangRunBatch}) {
    std::vector<StepMark> marks;
    for (const StepMark& m : steps_) {
      if (m.source == src) marks.push_back(m);
    }
    if (marks.empty()) continue;
    std::stable_sort(marks.begin(), marks.end(),
                     [](const StepMark& a, const StepMark& b) { return a.ts < b.ts; });
    int32_t index = 0;
    std::vector<int32_t> rank_list;
    for (const auto& [r, unused] : ranks_seen) rank_list.push_back(r);
    if (rank_list.empty()) rank_list.push_back(rank_);
    for (const StepMark& m : marks) {
      trace::SpanEvent span;
      span.kind = trace::SpanKind::kStep;
      span.phase = trace::Phase::kNone;
      span.step = m.step >= 0 ? m.step : index;
      span.name = fmt::format("step {}", span.step);
      span.ts_ns = m.ts + base_ns;
      span.dur_ns = m.dur;
      ++index;
      // Host annotations belong to the process: to its rank (each device's rank without
      // distributedInfo).
      for (int32_t r : rank_list) {
        span.rank = r;
        sink->OnSpan(span);
        ++stats_->spans;
      }
    }
    break;
  }
  for (const IgnoredCount& c : ignored_counts_) {
    std::string key = c.type == "ph"         ? fmt::format("ph '{}'", c.value)
                      : c.type == "metadata" ? fmt::format("metadata '{}'", c.value)
                      : c.value.empty()      ? std::string("X event without cat")
                                             : fmt::format("host/other cat '{}'", c.value);
    stats_->ignored[key] += c.count;
  }
  if (info) {
    info->rank = rank;
    info->world_size = world_size_;
    if (base.is_number_integer()) info->base_time_ns = base_ns;
    info->devices = device_names;
    info->ranks.clear();
    for (const auto& [r, unused] : ranks_seen) info->ranks.push_back(r);
    if (info->ranks.empty() && !steps_.empty()) info->ranks.push_back(rank_);
  }
}

}  // namespace

StatusOr<trace::ReadStats> ImportKinetoFrom(trace::ByteSource* source, const std::string& name,
                                            trace::TraceSink* sink, KinetoInfo* info,
                                            const trace::ReadOptions& options) {
  trace::ReadStats stats;
  trace::EventScanner scanner(source, name, options.chunk_bytes);
  scanner.set_kept_keys(
      {"distributedInfo", "deviceProperties", "baseTimeNanoseconds", "traceName", "schemaVersion"});
  KinetoParser parser(&stats);
  RETURN_IF_ERROR(trace::ParseEvents(&scanner, &parser, options));
  parser.Deliver(name, scanner.top_level(), sink, info);
  stats.bytes = scanner.bytes_scanned();
  stats.array_form = scanner.array_form();
  stats.unclosed_array = scanner.unclosed_array();
  return stats;
}

StatusOr<trace::ReadStats> ImportKineto(const std::string& path, trace::TraceSink* sink,
                                        KinetoInfo* info, const trace::ReadOptions& options) {
  ASSIGN_OR_RETURN(auto source, trace::OpenByteSource(path));
  return ImportKinetoFrom(source.get(), path, sink, info, options);
}

}  // namespace shardscope::importers
