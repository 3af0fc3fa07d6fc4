#include "importers/nccl_profiler_importer.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "importers/file_bytes.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {
namespace {

namespace od = simdjson::ondemand;
using trace::Collective;

constexpr int32_t kNcclStream = 0;
// Sanity bounds on values read from the file: a count's bytes must fit int64 whatever the
// communicator size, and a communicator must be small enough to list.
constexpr int64_t kMaxCount = int64_t{1} << 40;
constexpr int64_t kMaxRanks = 1 << 20;

struct NcclType {
  std::string_view nccl;
  int64_t size;
  std::string_view dtype;  // our name (trace_format.md)
};
constexpr std::array<NcclType, 17> kTypes = {{
    {"ncclInt8", 1, "int8"},
    {"ncclChar", 1, "int8"},
    {"ncclUint8", 1, "uint8"},
    {"ncclInt32", 4, "int32"},
    {"ncclInt", 4, "int32"},
    {"ncclUint32", 4, "uint32"},
    {"ncclInt64", 8, "int64"},
    {"ncclUint64", 8, "uint64"},
    {"ncclFloat16", 2, "fp16"},
    {"ncclHalf", 2, "fp16"},
    {"ncclFloat32", 4, "fp32"},
    {"ncclFloat", 4, "fp32"},
    {"ncclFloat64", 8, "fp64"},
    {"ncclDouble", 8, "fp64"},
    {"ncclBfloat16", 2, "bf16"},
    {"ncclFloat8e4m3", 1, "fp8"},
    {"ncclFloat8e5m2", 1, "fp8"},
}};

const NcclType* FindType(std::string_view name) {
  for (const NcclType& t : kTypes) {
    if (t.nccl == name) return &t;
  }
  return nullptr;
}

// The collective of an NCCL function name, and whether its count is per rank (so that the
// nccl-tests size is count × element size × ranks).
struct NcclFunc {
  Collective collective = Collective::kNone;
  bool per_rank_count = false;
};

NcclFunc FuncOf(std::string_view func) {
  if (func == "AllReduce") return {Collective::kAllReduce, false};
  if (func == "AllGather") return {Collective::kAllGather, true};
  if (func == "ReduceScatter") return {Collective::kReduceScatter, true};
  if (func == "Broadcast") return {Collective::kBroadcast, false};
  if (func == "AllToAll" || func == "AlltoAll") return {Collective::kAllToAll, true};
  if (func == "Send") return {Collective::kSend, false};
  if (func == "Recv") return {Collective::kRecv, false};
  return {};  // Reduce, Gather, Scatter, …: time only
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One COLL or P2P call of one rank, with what the trace says about it.
struct NcclCall {
  int32_t rank = -1;
  std::string func;  // "AllReduce", "Send", …
  int64_t count = -1;
  std::string datatype;
  int32_t peer = -1;
  int32_t root = -1;
  int64_t seq = -1;
  std::vector<int32_t> group;  // the communicator's ranks, for collectives
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
};

// Turns calls into comm ops: see "Foreign traces: NCCL profiler" in docs/trace_format.md.
class CallEmitter {
 public:
  CallEmitter(trace::TraceSink* sink, trace::ReadStats* stats) : sink_(sink), stats_(stats) {}

  void Emit(const NcclCall& call) {
    if (named_.insert(call.rank).second) {
      sink_->OnProcessName(call.rank, fmt::format("rank {}", call.rank));
      sink_->OnThreadName(call.rank, kNcclStream, "NCCL");
      stats_->names += 2;
    }
    trace::OpEvent op;
    op.rank = call.rank;
    op.stream = kNcclStream;
    op.name = call.func;
    op.category = trace::Category::kComm;
    op.ts_ns = call.ts_ns;
    op.dur_ns = call.dur_ns;
    op.seq = call.seq;
    const NcclFunc f = FuncOf(call.func);
    op.kind = f.collective != Collective::kNone ? std::string(trace::CollectiveName(f.collective))
                                                : Lower(call.func);
    const NcclType* type = FindType(call.datatype);
    const bool p2p = f.collective == Collective::kSend || f.collective == Collective::kRecv;
    if (type == nullptr) {
      stats_->Count(trace::Stat::kNcclUnknownDatatype, call.datatype, call.func);
    } else if (f.collective == Collective::kNone) {
      op.bytes = call.count * type->size;
      op.dtype = std::string(type->dtype);
      stats_->Count(trace::Stat::kNcclCollectiveNotModelled, call.func);
    } else if (p2p && call.peer < 0) {
      stats_->Count(trace::Stat::kNcclP2pWithoutPeer, call.func);
    } else if (!p2p && call.group.empty()) {
      stats_->Count(trace::Stat::kNcclRanksUnknown, call.func);
    } else {
      op.collective = f.collective;
      op.dtype = std::string(type->dtype);
      op.bytes = call.count * type->size *
                 (f.per_rank_count ? static_cast<int64_t>(call.group.size()) : 1);
      if (p2p) {
        op.peer = call.peer;
      } else {
        op.group = call.group;
        if (f.collective == Collective::kBroadcast) op.root = call.root;
      }
    }
    sink_->OnOp(op);
    ++stats_->ops;
  }

 private:
  trace::TraceSink* const sink_;
  trace::ReadStats* const stats_;
  std::set<int32_t> named_;
};

// An integer's text (trace/json_value.h), also when the file wrote it as a string.
bool ToInt(std::string_view s, int64_t* out) { return trace::ParseJsonIntText(s, out); }
bool ToUint(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

// A flat JSON object's members as text; nested objects as their JSON.
using Fields = std::map<std::string, std::string, std::less<>>;

// Reads the members of `object` into `fields` as text, those of its member object `nested`
// ("args", "details") into `inner`, and those of its "start" and "stop" objects into
// `fields` as "start.ts", "stop.pid", ….
simdjson::error_code ReadObject(od::object object, Fields* fields, std::string_view nested,
                                Fields* inner) {
  for (auto field : object) {
    std::string_view key;
    od::value value;
    if (auto err = field.unescaped_key().get(key)) return err;
    if (auto err = field.value().get(value)) return err;
    std::string k(key);
    od::json_type type;
    if (auto err = value.type().get(type)) return err;
    if (type == od::json_type::object && inner != nullptr &&
        (key == nested || key == "start" || key == "stop")) {
      od::object obj;
      if (auto err = value.get_object().get(obj)) return err;
      for (auto f : obj) {
        std::string_view ik;
        od::value iv;
        std::string text;
        if (auto err = f.unescaped_key().get(ik)) return err;
        if (auto err = f.value().get(iv)) return err;
        if (!trace::GetJsonText(iv, &text)) return simdjson::TAPE_ERROR;
        if (key == nested) {
          (*inner)[std::string(ik)] = std::move(text);
        } else {
          (*fields)[k + "." + std::string(ik)] = std::move(text);
        }
      }
      continue;
    }
    std::string text;
    if (!trace::GetJsonText(value, &text)) return simdjson::TAPE_ERROR;
    (*fields)[k] = std::move(text);
  }
  return simdjson::SUCCESS;
}

const std::string* Get(const Fields& f, std::string_view key) {
  auto it = f.find(key);
  return it == f.end() ? nullptr : &it->second;
}
int64_t GetInt(const Fields& f, std::string_view key, int64_t missing) {
  const std::string* v = Get(f, key);
  int64_t out = 0;
  return v != nullptr && ToInt(*v, &out) ? out : missing;
}
bool GetNs(const Fields& f, std::string_view key, int64_t* ns) {
  const std::string* v = Get(f, key);
  return v != nullptr && trace::ParseMicrosToNs(*v, ns);
}

// ---------------------------------------------------------------------------
// The example plugin's Chrome-style array.

class ExampleDecoder {
 public:
  ExampleDecoder(const std::string& name, trace::ReadStats* stats) : name_(name), stats_(stats) {}

  Status Decode(std::string_view data, trace::TraceSink* sink) {
    if (data.empty()) return InvalidArgument("{}: empty file", name_);
    simdjson::padded_string json(QuoteBareJsonValues(data));
    od::parser parser;
    od::document doc;
    od::array events;
    simdjson::error_code err = parser.iterate(json).get(doc);
    if (!err) err = doc.get_array().get(events);
    if (err == simdjson::UNCLOSED_STRING || err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
      return DataLoss("{}: truncated JSON ({})", name_, simdjson::error_message(err));
    }
    if (err) {
      return InvalidArgument("{}: not the NCCL example profiler's JSON array of events ({})", name_,
                             simdjson::error_message(err));
    }
    for (auto element : events) {
      od::value value;
      od::json_type type;
      od::object object;
      Fields fields, args;
      if (element.get(value) || value.type().get(type)) {
        return DataLoss("{}: truncated or invalid JSON in event #{}", name_, index_);
      }
      if (type != od::json_type::object) {
        ++stats_->events;
        Skip(trace::Stat::kNotAnObject);
      } else if (value.get_object().get(object) || ReadObject(object, &fields, "args", &args)) {
        return DataLoss("{}: truncated or invalid JSON in event #{}", name_, index_);
      } else if (!fields.empty()) {
        Event(fields, args);
      }
      ++index_;
    }
    for (const auto& [key, open] : open_) {
      if (!open.empty()) {
        stats_->CountN(trace::Stat::kNcclBeginWithoutEnd, static_cast<int64_t>(open.size()));
      }
    }
    stats_->bytes += static_cast<int64_t>(data.size());
    Emit(sink);
    return Status::Ok();
  }

 private:
  // A COLL or P2P call between its 'b' and 'e', and the GPU clocks of its channels.
  struct Pending {
    NcclCall call;
    std::string comm;
    bool ended = false;
    int64_t end_ns = 0;
    int channels = 0;
    bool clocks_valid = true;
    uint64_t gpu_start = std::numeric_limits<uint64_t>::max();
    uint64_t gpu_stop = 0;
  };

  template <typename... Detail>
  void Skip(trace::Stat stat, const Detail&... detail) {
    stats_->Skip(stat, {trace::EventPlace::kEvent, index_}, detail...);
  }

  void Event(const Fields& f, const Fields& args) {
    ++stats_->events;
    const std::string* ph = Get(f, "ph");
    const std::string* cat = Get(f, "cat");
    if (ph == nullptr || cat == nullptr || (*ph != "b" && *ph != "e")) {
      if (ph == nullptr) {
        stats_->Count(trace::Stat::kNcclEventWithoutPh);
      } else {
        stats_->Count(trace::Stat::kForeignPh, *ph);
      }
      return;
    }
    const bool call = *cat == "COLL" || *cat == "P2P";
    if (*cat == "GPU" && *ph == "b") {
      KernelChannel(args);
    } else if (!call && *ph == "b") {
      stats_->Count(trace::Stat::kNcclCategory, *cat);
    }
    // Pair by category, id, pid and tid, innermost first (as the plugin nests them).
    std::string key = fmt::format("{}/{}/{}/{}", *cat, GetInt(f, "id", -1), GetInt(f, "pid", -1),
                                  GetInt(f, "tid", -1));
    int64_t ts = 0;
    if (!GetNs(f, "ts", &ts)) {
      Skip(trace::Stat::kNcclTsNotNumber, *cat);
      return;
    }
    if (*ph == "b") {
      size_t index = pending_.size();
      if (call) {
        Pending p;
        p.call.ts_ns = ts;
        p.call.func = Get(f, "name") != nullptr ? *Get(f, "name") : "";
        p.call.rank = static_cast<int32_t>(GetInt(args, "Rank", -1));
        p.call.peer = static_cast<int32_t>(GetInt(args, "Peer", -1));
        p.call.count = GetInt(args, "Count", -1);
        p.call.seq = GetInt(args, "SeqNum", -1);
        if (const std::string* dt = Get(args, "Datatype")) p.call.datatype = *dt;
        if (const std::string* comm = Get(args, "CommHash")) p.comm = *comm;
        pending_.push_back(std::move(p));
        open_calls_.push_back(index);
      }
      open_[key].push_back(call ? index : kNotACall);
      return;
    }
    auto it = open_.find(key);
    if (it == open_.end() || it->second.empty()) {
      Skip(trace::Stat::kNcclEndWithoutBegin, *cat);
      return;
    }
    size_t index = it->second.back();
    it->second.pop_back();
    if (index == kNotACall) return;
    pending_[index].ended = true;
    pending_[index].end_ns = ts;
    open_calls_.erase(std::remove(open_calls_.begin(), open_calls_.end(), index),
                      open_calls_.end());
  }

  // A KernelCh inside a COLL/P2P: its GPU clocks (ns) time the call on the GPU when every
  // channel has both.
  void KernelChannel(const Fields& args) {
    if (open_calls_.empty()) {
      stats_->Count(trace::Stat::kNcclKernelChOutside);
      return;
    }
    stats_->Count(trace::Stat::kNcclKernelCh);
    Pending& p = pending_[open_calls_.back()];
    uint64_t start = 0, stop = 0;
    const std::string* a = Get(args, "StartGpuClk");
    const std::string* b = Get(args, "StopGpuClk");
    ++p.channels;
    if (a == nullptr || b == nullptr || !ToUint(*a, &start) || !ToUint(*b, &stop) || start == 0 ||
        stop < start) {
      p.clocks_valid = false;
      return;
    }
    p.gpu_start = std::min(p.gpu_start, start);
    p.gpu_stop = std::max(p.gpu_stop, stop);
  }

  void Emit(trace::TraceSink* sink) {
    // A communicator's ranks: those its calls name.
    std::map<std::string, std::set<int32_t>> comm_ranks;
    for (const Pending& p : pending_) {
      if (p.call.rank >= 0) comm_ranks[p.comm].insert(p.call.rank);
    }
    CallEmitter emitter(sink, stats_);
    for (Pending& p : pending_) {
      if (!p.ended) continue;  // counted as a 'b' without its 'e'
      if (p.call.rank < 0) {
        Skip(trace::Stat::kNcclCallWithoutRank);
        continue;
      }
      if (p.call.count < 0 || p.call.count > kMaxCount) {
        Skip(trace::Stat::kNcclCallWithoutCount);
        continue;
      }
      if (p.channels > 0 && p.clocks_valid) {
        p.call.dur_ns = static_cast<int64_t>(p.gpu_stop - p.gpu_start);
      } else {
        p.call.dur_ns = p.end_ns - p.call.ts_ns;
      }
      if (p.call.dur_ns < 0) {
        Skip(trace::Stat::kNcclCallEndsEarly);
        continue;
      }
      const std::set<int32_t>& ranks = comm_ranks[p.comm];
      p.call.group.assign(ranks.begin(), ranks.end());
      emitter.Emit(p.call);
    }
  }

  static constexpr size_t kNotACall = std::numeric_limits<size_t>::max();
  const std::string& name_;
  trace::ReadStats* const stats_;
  int64_t index_ = 0;
  std::vector<Pending> pending_;
  std::vector<size_t> open_calls_;  // COLL/P2P calls between 'b' and 'e', innermost last
  std::map<std::string, std::vector<size_t>> open_;  // per pairing key, innermost last
};

// ---------------------------------------------------------------------------
// The minimal plugin's JSONL.

class JsonlDecoder {
 public:
  JsonlDecoder(const std::string& name, trace::ReadStats* stats) : name_(name), stats_(stats) {}

  Status Decode(std::string_view data, trace::TraceSink* sink) {
    if (data.empty()) return InvalidArgument("{}: empty file", name_);
    od::parser parser;
    size_t pos = 0;
    while (pos < data.size()) {
      size_t end = data.find('\n', pos);
      if (end == std::string_view::npos) end = data.size();
      std::string_view line = data.substr(pos, end - pos);
      pos = end + 1;
      ++line_no_;
      if (trace::TrimJsonSpace(line).empty()) continue;
      ++stats_->events;
      simdjson::padded_string padded(line);
      od::document doc;
      od::object object;
      Fields fields, details;
      if (parser.iterate(padded).get(doc) || doc.get_object().get(object) ||
          ReadObject(object, &fields, "details", &details)) {
        Skip(trace::Stat::kNcclLineNotObject);
        continue;
      }
      Record(fields, details);
    }
    stats_->bytes += static_cast<int64_t>(data.size());
    if (records_ == 0) {
      return InvalidArgument("{}: no NCCL profiler record (\"type\": \"ncclProfile…\")", name_);
    }
    Emit(sink);
    return Status::Ok();
  }

 private:
  struct Pending {
    NcclCall call;
    uint64_t comm = 0;
    int32_t comm_rank = -1;
    int32_t comm_peer = -1;
    int32_t comm_root = -1;
    int64_t stop_ns = 0;
    std::optional<int64_t> launch;  // extCorrId of its kernel launch
    int channels = 0;
    bool clocks_valid = true;
    uint64_t gpu_start = std::numeric_limits<uint64_t>::max();
    uint64_t gpu_stop = 0;
  };

  void Skip(trace::Stat stat) { stats_->Skip(stat, {trace::EventPlace::kLine, line_no_}); }

  void Record(const Fields& f, const Fields& details) {
    const std::string* type = Get(f, "type");
    const std::string* record = Get(f, "recordType");
    const std::string* addr = Get(f, "eventAddr");
    const std::string* parent = Get(f, "parentObj");
    if (type != nullptr && type->substr(0, 11) == "ncclProfile") ++records_;
    if (record != nullptr && *record == "state") {
      const std::string* state = Get(f, "name");
      uint64_t timer = 0;
      if (state != nullptr && *state == "KernelChStop" && addr != nullptr &&
          Get(f, "pTimer") != nullptr && ToUint(*Get(f, "pTimer"), &timer)) {
        channel_stop_[*addr] = timer;
      }
      stats_->Count(trace::Stat::kNcclStateRecords);
      return;
    }
    if (type == nullptr) {
      stats_->Count(trace::Stat::kNcclUntypedRecords);
      return;
    }
    uint64_t comm_u = 0;
    if (const std::string* c = Get(f, "commId")) ToUint(*c, &comm_u);
    const int32_t rank = static_cast<int32_t>(GetInt(f, "rank", -1));
    if (*type == "ProfilerLifecycle") {
      const std::string* func = Get(f, "func");
      const std::string* uuid = Get(f, "gpuUuid");
      if (func != nullptr && *func == "ProfilerInit") {
        int64_t nranks = GetInt(details, "nranks", -1);
        if (nranks > 0 && nranks <= kMaxRanks && !comm_size_.count(comm_u)) {
          comm_size_[comm_u] = nranks;
          comm_order_.push_back(comm_u);
        }
        if (uuid != nullptr && rank >= 0) uuid_of_[{comm_u, rank}] = *uuid;
      }
      return;
    }
    if (*type == "ncclProfileCollApi" || *type == "ncclProfileP2pApi") {
      if (addr != nullptr && parent != nullptr) api_parent_[*addr] = *parent;
      stats_->Count(trace::Stat::kNcclRecordType, *type);
    } else if (*type == "ncclProfileKernelLaunch") {
      int64_t corr = GetInt(f, "extCorrId", -1);
      if (parent != nullptr && corr >= 0) launch_of_[{comm_u, rank, *parent}] = corr;
      stats_->Count(trace::Stat::kNcclRecordType, *type);
    } else if (*type == "ncclProfileColl" || *type == "ncclProfileP2p") {
      Call(*type == "ncclProfileP2p", f, details, comm_u, rank);
    } else if (*type == "ncclProfileKernelCh") {
      KernelChannel(f, details);
    } else if (*type == "KERNEL") {
      int64_t corr = GetInt(f, "extCorrId", -1);
      int64_t start = 0, stop = 0;
      if (corr >= 0 && GetNs(f, "start.ts", &start) && GetNs(f, "stop.ts", &stop)) {
        kernels_[corr] = {start, stop};
      }
      stats_->Count(trace::Stat::kNcclCuptiKernel);
    } else {
      stats_->Count(trace::Stat::kNcclRecordType, *type);
    }
  }

  void Call(bool p2p, const Fields& f, const Fields& details, uint64_t comm, int32_t rank) {
    Pending p;
    p.comm = comm;
    p.comm_rank = rank;
    const std::string* func = Get(details, "func");
    p.call.func = func != nullptr ? *func : "";
    p.call.count = GetInt(details, "count", -1);
    if (const std::string* dt = Get(details, "dtype")) p.call.datatype = *dt;
    p.call.seq = GetInt(details, "seq", -1);
    p.comm_peer = p2p ? static_cast<int32_t>(GetInt(details, "peer", -1)) : -1;
    p.comm_root = p2p ? -1 : static_cast<int32_t>(GetInt(details, "root", -1));
    if (rank < 0) {
      Skip(trace::Stat::kNcclRecordWithoutRank);
      return;
    }
    if (p.call.count < 0 || p.call.count > kMaxCount) {
      Skip(trace::Stat::kNcclRecordWithoutCount);
      return;
    }
    if (!GetNs(f, "start.ts", &p.call.ts_ns) || !GetNs(f, "stop.ts", &p.stop_ns)) {
      Skip(trace::Stat::kNcclRecordWithoutTime);
      return;
    }
    // Its kernel launch: the one under the same group API call as its API call.
    const std::string* parent = Get(f, "parentObj");
    if (parent != nullptr) {
      auto api = api_parent_.find(*parent);
      if (api != api_parent_.end()) {
        auto launch = launch_of_.find({comm, rank, api->second});
        if (launch != launch_of_.end()) p.launch = launch->second;
      }
    }
    if (const std::string* addr = Get(f, "eventAddr")) call_at_[*addr] = pending_.size();
    pending_.push_back(std::move(p));
  }

  void KernelChannel(const Fields& f, const Fields& details) {
    const std::string* parent = Get(f, "parentObj");
    const std::string* addr = Get(f, "eventAddr");
    auto call = parent != nullptr ? call_at_.find(*parent) : call_at_.end();
    if (call == call_at_.end()) {
      stats_->Count(trace::Stat::kNcclProfileKernelChOutside);
      return;
    }
    stats_->Count(trace::Stat::kNcclProfileKernelCh);
    Pending& p = pending_[call->second];
    ++p.channels;
    uint64_t start = 0;
    const std::string* timer = Get(details, "pTimer");
    auto stop = addr != nullptr ? channel_stop_.find(*addr) : channel_stop_.end();
    if (timer == nullptr || !ToUint(*timer, &start) || stop == channel_stop_.end() ||
        stop->second < start) {
      p.clocks_valid = false;
      return;
    }
    p.gpu_start = std::min(p.gpu_start, start);
    p.gpu_stop = std::max(p.gpu_stop, stop->second);
  }

  // Global ranks: a rank of a smaller communicator is the rank its GPU has in the largest
  // communicator of the file; without GPU ids, its rank as is.
  int32_t Global(uint64_t comm, int32_t rank) const {
    if (world_ == comm || rank < 0) return rank;
    auto uuid = uuid_of_.find({comm, rank});
    if (uuid == uuid_of_.end()) return rank;
    auto global = world_rank_.find(uuid->second);
    return global == world_rank_.end() ? rank : global->second;
  }

  void Emit(trace::TraceSink* sink) {
    int64_t largest = 0;
    for (uint64_t comm : comm_order_) {
      if (comm_size_[comm] > largest) {
        largest = comm_size_[comm];
        world_ = comm;
      }
    }
    for (const auto& [key, uuid] : uuid_of_) {
      if (key.first == world_) world_rank_[uuid] = key.second;
    }
    // Communicators whose size the file does not give: the ranks their calls name.
    std::map<uint64_t, std::set<int32_t>> seen;
    for (const Pending& p : pending_) seen[p.comm].insert(p.comm_rank);
    CallEmitter emitter(sink, stats_);
    for (Pending& p : pending_) {
      NcclCall& call = p.call;
      call.rank = Global(p.comm, p.comm_rank);
      call.peer = p.comm_peer >= 0 ? Global(p.comm, p.comm_peer) : -1;
      call.root = p.comm_root >= 0 ? Global(p.comm, p.comm_root) : -1;
      auto size = comm_size_.find(p.comm);
      if (size != comm_size_.end()) {
        for (int32_t r = 0; r < size->second; ++r) call.group.push_back(Global(p.comm, r));
      } else {
        for (int32_t r : seen[p.comm]) call.group.push_back(Global(p.comm, r));
      }
      // Placed at the start of its kernel when known, timed by its channels' GPU timer.
      auto kernel = p.launch ? kernels_.find(*p.launch) : kernels_.end();
      if (kernel != kernels_.end()) call.ts_ns = kernel->second.first;
      if (p.channels > 0 && p.clocks_valid) {
        call.dur_ns = static_cast<int64_t>(p.gpu_stop - p.gpu_start);
      } else if (kernel != kernels_.end()) {
        call.dur_ns = kernel->second.second - kernel->second.first;
      } else {
        call.dur_ns = p.stop_ns - call.ts_ns;
      }
      if (call.dur_ns < 0) {
        Skip(trace::Stat::kNcclRecordEndsEarly);
        continue;
      }
      emitter.Emit(call);
    }
  }

  const std::string& name_;
  trace::ReadStats* const stats_;
  int64_t line_no_ = 0;
  int64_t records_ = 0;
  // Latest record at each event address (the plugin reuses addresses once freed).
  std::unordered_map<std::string, std::string> api_parent_;
  std::unordered_map<std::string, size_t> call_at_;
  std::unordered_map<std::string, uint64_t> channel_stop_;
  std::map<std::tuple<uint64_t, int32_t, std::string>, int64_t> launch_of_;
  std::map<int64_t, std::pair<int64_t, int64_t>> kernels_;  // extCorrId → start, stop (ns)
  std::map<uint64_t, int64_t> comm_size_;
  std::vector<uint64_t> comm_order_;
  std::map<std::pair<uint64_t, int32_t>, std::string> uuid_of_;
  uint64_t world_ = 0;
  std::map<std::string, int32_t> world_rank_;
  std::vector<Pending> pending_;
};

}  // namespace

std::string QuoteBareJsonValues(std::string_view in) {
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  bool quoted = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    out += c;
    if (quoted) {
      if (c == '\\' && i + 1 < in.size()) {
        out += in[++i];
      } else if (c == '"') {
        quoted = false;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      continue;
    }
    if (c != ':') continue;
    size_t j = i + 1;  // the value: after blanks, up to the next , } ] or line end
    while (j < in.size() && (in[j] == ' ' || in[j] == '\t')) out += in[j++];
    size_t k = j;
    if (k < in.size() && (in[k] == '"' || in[k] == '{' || in[k] == '[')) {
      i = j - 1;
      continue;
    }
    while (k < in.size() && in[k] != ',' && in[k] != '}' && in[k] != ']' && in[k] != '\n' &&
           in[k] != '\r') {
      ++k;
    }
    std::string_view token = trace::TrimJsonSpace(in.substr(j, k - j));
    if (token.empty() || token == "true" || token == "false" || token == "null" ||
        trace::IsJsonNumber(token)) {
      i = j - 1;
      continue;
    }
    out += '"';
    for (char t : token) {
      if (t == '"' || t == '\\') out += '\\';
      out += t;
    }
    out += '"';
    out.append(in.substr(j + token.size(), k - j - token.size()));
    i = k - 1;
  }
  return out;
}

std::optional<int64_t> NcclDatatypeSize(std::string_view name) {
  const NcclType* t = FindType(name);
  if (t == nullptr) return std::nullopt;
  return t->size;
}

StatusOr<trace::ReadStats> ImportNcclProfiler(const std::string& path, trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  RETURN_IF_ERROR(ExampleDecoder(path, &stats).Decode(data, sink));
  return stats;
}

StatusOr<trace::ReadStats> ImportNcclProfilerJsonl(const std::string& path,
                                                   trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  RETURN_IF_ERROR(JsonlDecoder(path, &stats).Decode(data, sink));
  return stats;
}

}  // namespace shardscope::importers
