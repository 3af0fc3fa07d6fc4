// The NCCL example plugin's Chrome-style array of "b"/"e" events (nccl_profiler_importer.h).
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

}  // namespace
}  // namespace nccl_profiler

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

StatusOr<trace::ReadStats> ImportNcclProfiler(const std::string& path, trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  RETURN_IF_ERROR(nccl_profiler::ExampleDecoder(path, &stats).Decode(data, sink));
  return stats;
}

}  // namespace shardscope::importers
