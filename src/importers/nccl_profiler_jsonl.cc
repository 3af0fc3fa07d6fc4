// The NCCL minimal plugin's JSONL, one record per line (nccl_profiler_importer.h).
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "importers/file_bytes.h"
#include "importers/nccl_profiler_calls.h"
#include "importers/nccl_profiler_importer.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {
namespace nccl_profiler {
namespace {

namespace od = simdjson::ondemand;
using trace::Collective;

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
}  // namespace nccl_profiler

StatusOr<trace::ReadStats> ImportNcclProfilerJsonl(const std::string& path,
                                                   trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  RETURN_IF_ERROR(nccl_profiler::JsonlDecoder(path, &stats).Decode(data, sink));
  return stats;
}

}  // namespace shardscope::importers
