#include "importers/trace_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

namespace shardscope::importers {
namespace {

using trace::Collective;

bool IsGroupCollective(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather ||
         c == Collective::kReduceScatter || c == Collective::kAllToAll ||
         c == Collective::kBroadcast;
}

// One collective call of a rank, as delivered.
struct CommMark {
  int64_t ts = 0, end = 0;
  Collective collective = Collective::kNone;
  std::vector<int32_t> group;
  int64_t bytes = 0;  // 0: unknown
  int64_t seq = -1;   // the call's sequence number in its group, when the trace says
};

// Keeps a file's metadata apart, notes each rank's collectives and forwards
// the rest to `out`, with `rank_offset` added to every rank (the hosts of a
// multi-host XLA profile number their devices from 0 each).
class SetSink : public trace::TraceSink {
 public:
  SetSink(trace::TraceSink* out, std::map<int32_t, std::vector<CommMark>>* marks,
          int32_t rank_offset)
      : out_(out), marks_(marks), offset_(rank_offset) {}
  void OnMetadata(const nlohmann::json& metadata) override { metadata_ = metadata; }
  void OnProcessName(int32_t rank, std::string_view name) override {
    out_->OnProcessName(rank + offset_, name);
  }
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override {
    out_->OnThreadName(rank + offset_, stream, name);
  }
  void OnOp(const trace::OpEvent& op) override {
    if (offset_ != 0) return Forward(Shifted(op));
    Forward(op);
  }
  void OnSpan(const trace::SpanEvent& span) override {
    offset_ != 0 ? out_->OnSpan(Shifted(span)) : out_->OnSpan(span);
  }
  void OnCounter(const trace::CounterEvent& counter) override {
    offset_ != 0 ? out_->OnCounter(Shifted(counter)) : out_->OnCounter(counter);
  }

  const nlohmann::json& metadata() const { return metadata_; }

 private:
  template <typename Event>
  Event Shifted(const Event& e) const {
    Event copy = e;
    copy.rank += offset_;
    return copy;
  }
  void Forward(const trace::OpEvent& op) {
    if (op.is_comm() && IsGroupCollective(op.collective)) {
      (*marks_)[op.rank].push_back(
          {op.ts_ns, op.end_ns(), op.collective, op.group, op.bytes, op.seq});
    }
    out_->OnOp(op);
  }

  trace::TraceSink* const out_;
  std::map<int32_t, std::vector<CommMark>>* const marks_;
  const int32_t offset_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

bool IsXla(TraceFormat f) { return f == TraceFormat::kXspace || f == TraceFormat::kXlaJson; }

std::string RankList(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    if (i == 8 && ranks.size() > 10) {
      out += fmt::format("… ({} more)", ranks.size() - 8);
      break;
    }
    out += std::to_string(ranks[i]);
  }
  return out;
}

// What identifies one collective call across ranks: kind, group and size. An
// all-to-all(v)'s size is each rank's own (uneven routing), so it is left out
// there and checked loosely instead (SizesAgree).
struct CallKey {
  Collective collective;
  std::vector<int32_t> group;
  int64_t bytes;
  int64_t seq;
  auto operator<=>(const CallKey&) const = default;
};

bool IsAllToAll(Collective c) { return c == Collective::kAllToAll; }

CallKey KeyOf(const CommMark& m, bool by_seq) {
  return {m.collective, m.group, IsAllToAll(m.collective) ? 0 : m.bytes, by_seq ? m.seq : -1};
}

// Two ranks' parts of one all-to-all may differ, but not by orders of magnitude.
bool SizesAgree(const CommMark& a, const CommMark& b) {
  if (a.bytes <= 0 || b.bytes <= 0) return true;
  const double ratio = static_cast<double>(std::max(a.bytes, b.bytes)) /
                       static_cast<double>(std::min(a.bytes, b.bytes));
  return ratio <= 100;
}

// The end, on every rank, of the earliest collective call that can be paired across
// all ranks with confidence; empty with *why set when none can. With sequence numbers
// on every call, a call is paired by (kind, group, size, sequence). Without, by (kind,
// group, size) and its first occurrence, and only for a key that occurs equally often
// on every rank — ranks profiled over different windows (a few hundred bytes on one
// rank's first all-to-all, 340 MB on another's) give no pair rather than a false skew.
std::map<int32_t, int64_t> FirstCommonCollectiveEnds(
    std::map<int32_t, std::vector<CommMark>>* marks, const std::vector<int32_t>& ranks,
    std::string* why) {
  if (ranks.size() < 2) {
    *why = "fewer than two ranks";
    return {};
  }
  bool by_seq = true;
  for (int32_t rank : ranks) {
    auto it = marks->find(rank);
    if (it == marks->end() || it->second.empty()) {
      *why = fmt::format("rank {} has no collective with a known kind", rank);
      return {};
    }
    std::stable_sort(it->second.begin(), it->second.end(),
                     [](const CommMark& a, const CommMark& b) { return a.ts < b.ts; });
    for (const CommMark& m : it->second) by_seq = by_seq && m.seq >= 0;
  }
  // Per rank: each key's first call and how many calls have it.
  std::vector<std::map<CallKey, std::pair<const CommMark*, int64_t>>> index(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (const CommMark& m : marks->at(ranks[i])) {
      auto [it, fresh] = index[i].try_emplace(KeyOf(m, by_seq), &m, 0);
      ++it->second.second;
    }
  }
  for (const CommMark& m : marks->at(ranks[0])) {  // the lowest rank's calls, earliest first
    const CallKey key = KeyOf(m, by_seq);
    const auto& [first0, count0] = index[0].at(key);
    if (first0 != &m) continue;  // only a key's first call is a candidate
    std::map<int32_t, int64_t> ends = {{ranks[0], m.end}};
    for (size_t i = 1; i < ranks.size() && !ends.empty(); ++i) {
      auto it = index[i].find(key);
      if (it == index[i].end() || (!by_seq && it->second.second != count0) ||
          (IsAllToAll(key.collective) && !SizesAgree(m, *it->second.first))) {
        ends.clear();
      } else {
        ends[ranks[i]] = it->second.first->end;
      }
    }
    if (!ends.empty()) return ends;
  }
  *why = by_seq ? "no collective call has the same kind, group, size and sequence number on "
                  "every rank"
                : "no collective call can be paired across ranks with confidence: no kind, "
                  "group and size occurs equally often on every rank (ranks profiled over "
                  "different windows?)";
  return {};
}

// Replays a buffered trace into `sink` with each rank's times shifted.
void Replay(const trace::Trace& t, const std::map<int32_t, int64_t>& shift,
            trace::TraceSink* sink) {
  auto shift_of = [&](int32_t rank) {
    auto it = shift.find(rank);
    return it == shift.end() ? int64_t{0} : it->second;
  };
  for (const auto& [rank, name] : t.process_names) sink->OnProcessName(rank, name);
  for (const auto& [key, name] : t.thread_names) sink->OnThreadName(key.first, key.second, name);
  trace::OpEvent op;
  for (const trace::OpEvent& o : t.ops) {
    op = o;
    op.ts_ns += shift_of(o.rank);
    sink->OnOp(op);
  }
  for (trace::SpanEvent s : t.spans) {
    s.ts_ns += shift_of(s.rank);
    sink->OnSpan(s);
  }
  for (trace::CounterEvent c : t.counters) {
    c.ts_ns += shift_of(c.rank);
    sink->OnCounter(c);
  }
}

}  // namespace

std::string_view ClockAlignmentName(ClockAlignment a) {
  return a == ClockAlignment::kAsRecorded ? "as-recorded" : "collective-end";
}

StatusOr<ClockAlignment> ParseClockAlignment(std::string_view name) {
  if (name == "as-recorded") return ClockAlignment::kAsRecorded;
  if (name == "collective-end") return ClockAlignment::kFirstCollectiveEnd;
  return InvalidArgument("unknown clock alignment '{}' (as-recorded or collective-end)", name);
}

StatusOr<TraceSetResult> ImportTraceSet(const std::vector<std::string>& paths,
                                        const TraceSetOptions& options, trace::TraceSink* sink) {
  TraceSetResult result;
  result.paths = paths;
  if (paths.empty()) return InvalidArgument("a trace set needs at least one file");
  // Declared ranks first, so a duplicate is found before anything is read in full.
  std::map<int32_t, std::string> declared;
  // Several XLA profiles (XSpace, trace-viewer JSON) are the hosts of one run,
  // each numbering its devices from 0: host k's ranks follow host k − 1's.
  bool hosts = paths.size() > 1;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(TraceProbe probe, ProbeTrace(path, options.format));
    hosts = hosts && IsXla(probe.format);
    if (!probe.rank) continue;
    auto [it, inserted] = declared.emplace(*probe.rank, path);
    if (!inserted) {
      return InvalidArgument("{} and {}: both are rank {} (a trace set needs one file per rank)",
                             it->second, path, *probe.rank);
    }
  }
  const bool align = options.alignment == ClockAlignment::kFirstCollectiveEnd;
  trace::Trace buffer;  // aligned: everything waits here for the shifts
  trace::TraceBuilder builder(&buffer);
  trace::TraceSink* target = align ? static_cast<trace::TraceSink*>(&builder) : sink;
  std::map<int32_t, std::vector<CommMark>> marks;
  std::map<int32_t, std::string> owner;  // rank → file
  std::optional<std::string> world_file;
  nlohmann::json files = nlohmann::json::array();
  nlohmann::json first_metadata;
  int32_t next_rank = 0;  // hosts: the first rank of the next file
  for (const std::string& path : paths) {
    const int32_t offset = hosts ? next_rank : 0;
    SetSink set_sink(target, &marks, offset);
    ASSIGN_OR_RETURN(ImportResult r, ImportTrace(path, options.format, &set_sink));
    for (int32_t& rank : r.ranks) rank += offset;
    if (!r.ranks.empty()) next_rank = r.ranks.back() + 1;
    for (int32_t rank : r.ranks) {
      auto [it, inserted] = owner.emplace(rank, path);
      if (!inserted) {
        return InvalidArgument(
            "{} and {}: both hold events of rank {} (a trace set needs one file "
            "per rank)",
            it->second, path, rank);
      }
    }
    if (r.world_size) {
      if (result.world_size && *result.world_size != *r.world_size) {
        return InvalidArgument("{}: world size {}, but {} says {}: not one run", path,
                               *r.world_size, *world_file, *result.world_size);
      }
      result.world_size = r.world_size;
      world_file = path;
    }
    trace::ReadStats stats = r.stats;
    for (std::string& e : stats.examples) e = fmt::format("{} {}", path, e);
    MergeReadStats(stats, &result.stats);
    if (first_metadata.is_null()) first_metadata = set_sink.metadata();
    files.push_back({{"path", path},
                     {"format", TraceFormatName(r.format)},
                     {"ranks", r.ranks},
                     {"rank_offset", offset},
                     {"clock", r.clock},
                     {"metadata", set_sink.metadata()}});
    result.files.push_back(std::move(r));
  }
  for (const auto& [rank, path] : owner) result.ranks.push_back(rank);
  if (result.world_size) {
    std::set<int32_t> present(result.ranks.begin(), result.ranks.end());
    for (int32_t r = 0; r < *result.world_size; ++r) {
      if (!present.count(r)) result.missing_ranks.push_back(r);
    }
    if (!result.missing_ranks.empty()) {
      result.warnings.push_back(fmt::format(
          "world size {}, but no trace for rank {} ({} of {} ranks missing): metrics cover the {} "
          "rank(s) present",
          *result.world_size, RankList(result.missing_ranks), result.missing_ranks.size(),
          *result.world_size, result.ranks.size()));
    }
  }
  // Clocks.
  std::map<int32_t, int64_t> ends =
      FirstCommonCollectiveEnds(&marks, result.ranks, &result.alignment_note);
  if (!ends.empty()) {
    auto [lo, hi] = std::minmax_element(
        ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    result.collective_end_spread_ns = hi->second - lo->second;
    if (align) {
      const int64_t reference = ends.begin()->second;  // the lowest rank's clock
      for (const auto& [rank, end] : ends) result.clock_shift_ns[rank] = reference - end;
    } else if (*result.collective_end_spread_ns > kClockSkewWarningNs) {
      result.warnings.push_back(fmt::format(
          "the end of the first collective all ranks ran differs by {:.1f} us across ranks "
          "(clock skew?); --align-clocks collective-end aligns the ranks on it",
          static_cast<double>(*result.collective_end_spread_ns) / 1e3));
    }
  } else if (align) {
    result.warnings.push_back(
        fmt::format("clocks not aligned (kept as recorded): {}", result.alignment_note));
  }
  if (align) Replay(buffer, result.clock_shift_ns, sink);
  // One metadata object for the run.
  nlohmann::json meta = first_metadata.is_object() ? first_metadata : nlohmann::json::object();
  if (paths.size() > 1) {
    meta.erase("rank");
    meta.erase("kineto");
    nlohmann::json source = {{"format", files[0]["format"]}, {"files", paths}};
    meta["source"] = source;
  }
  if (result.world_size) meta["world_size"] = *result.world_size;
  nlohmann::json set = {{"ranks", result.ranks},
                        {"missing_ranks", result.missing_ranks},
                        {"clock_alignment", ClockAlignmentName(options.alignment)},
                        {"files", files}};
  if (result.collective_end_spread_ns) {
    set["collective_end_spread_ns"] = *result.collective_end_spread_ns;
  } else {
    set["collective_end_spread"] = "not available: " + result.alignment_note;
  }
  if (!result.clock_shift_ns.empty()) {
    nlohmann::json shifts = nlohmann::json::object();
    for (const auto& [rank, shift] : result.clock_shift_ns) shifts[std::to_string(rank)] = shift;
    set["clock_shift_ns"] = shifts;
  }
  if (!result.warnings.empty()) set["warnings"] = result.warnings;
  meta["trace_set"] = set;
  sink->OnMetadata(meta);
  result.metadata = std::move(meta);
  return result;
}

StatusOr<std::vector<std::vector<std::string>>> GroupTraceFiles(
    const std::vector<std::string>& files, std::optional<TraceFormat> forced) {
  std::vector<std::vector<std::string>> runs;
  std::map<std::pair<TraceFormat, int32_t>, size_t> set_index;       // (format, world) → run
  std::map<std::pair<TraceFormat, std::string>, size_t> host_index;  // (format, directory) → run
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(TraceProbe probe, ProbeTrace(file, forced));
    if (IsXla(probe.format)) {
      // A JAX profile directory (plugins/profile/<run>/<host>.xplane.pb) holds
      // one file per host of one run.
      auto key = std::make_pair(
          probe.format, std::filesystem::path(file).parent_path().lexically_normal().string());
      auto [it, inserted] = host_index.emplace(key, runs.size());
      if (inserted) {
        runs.push_back({file});
      } else {
        runs[it->second].push_back(file);
      }
      continue;
    }
    if (probe.format != TraceFormat::kShardScope && probe.rank && probe.world_size &&
        *probe.world_size > 1) {
      auto key = std::make_pair(probe.format, *probe.world_size);
      auto it = set_index.find(key);
      if (it != set_index.end()) {
        runs[it->second].push_back(file);
        continue;
      }
      set_index[key] = runs.size();
    }
    runs.push_back({file});
  }
  return runs;
}

}  // namespace shardscope::importers
