#include "importers/trace_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

#include "core/enum_names.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

using trace::Collective;

bool IsGroupCollective(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather ||
         c == Collective::kReduceScatter || c == Collective::kAllToAll ||
         c == Collective::kBroadcast;
}

// Collectives whose members all finish together by construction (no member can
// leave before the last one's data is in): their ends on two ranks are one
// moment, so they measure the ranks' clocks. An all-to-all's, a broadcast's or a
// send/recv's members may finish apart by the other members' work: not used.
bool EndsCoincide(const trace::OpEvent& op) {
  return op.collective == Collective::kAllReduce || op.collective == Collective::kAllGather ||
         op.collective == Collective::kReduceScatter ||
         (op.collective == Collective::kNone && op.kind == "barrier");
}

// One collective call of a rank whose end measures its clock, as delivered.
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
  // `held`: where collectives without a group wait for the set's group
  // inference (null: forwarded at once).
  SetSink(trace::TraceSink* out, std::map<int32_t, std::vector<CommMark>>* marks,
          int32_t rank_offset, std::vector<trace::OpEvent>* held)
      : out_(out), marks_(marks), offset_(rank_offset), held_(held) {}
  void OnMetadata(const nlohmann::json& metadata) override { metadata_ = metadata; }
  void OnProcessName(int32_t rank, std::string_view name) override {
    out_->OnProcessName(rank + offset_, name);
  }
  void OnThreadName(int32_t rank, int32_t stream, std::string_view name) override {
    out_->OnThreadName(rank + offset_, stream, name);
  }
  void OnOp(const trace::OpEvent& op) override {
    if (held_ != nullptr && op.is_comm() && op.group.empty() && IsGroupCollective(op.collective)) {
      held_->push_back(offset_ != 0 ? Shifted(op) : op);
      return;
    }
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

  // Delivers `op` (ranks already offset), noting it for the clocks.
  void Forward(const trace::OpEvent& op) {
    if (op.is_comm() && EndsCoincide(op)) {
      (*marks_)[op.rank].push_back(
          {op.ts_ns, op.end_ns(), op.collective, op.group, op.bytes, op.seq});
    }
    out_->OnOp(op);
  }

 private:
  template <typename Event>
  Event Shifted(const Event& e) const {
    Event copy = e;
    copy.rank += offset_;
    return copy;
  }

  trace::TraceSink* const out_;
  std::map<int32_t, std::vector<CommMark>>* const marks_;
  const int32_t offset_;
  std::vector<trace::OpEvent>* const held_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

// The set in messages: its one file, or its first file and how many more.
std::string SetName(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return paths[0];
  return fmt::format("{} (and {} more file(s) of the set)", paths[0], paths.size() - 1);
}

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

// What identifies one collective call across ranks: kind, group, size and,
// where the trace numbers the calls, sequence number.
struct CallKey {
  Collective collective;
  std::vector<int32_t> group;
  int64_t bytes;
  int64_t seq;
  // clang-tidy 14 reads the defaulted <=>'s comparison with 0 as a null pointer.
  auto operator<=>(const CallKey&) const = default;  // NOLINT(modernize-use-nullptr)
};

CallKey KeyOf(const CommMark& m, bool by_seq) {
  return {m.collective, m.group, m.bytes, by_seq ? m.seq : -1};
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
      *why = fmt::format(
          "rank {} ran no all-reduce, all-gather, reduce-scatter or barrier, the only "
          "collectives whose members finish together (an all-to-all's, a broadcast's or a "
          "send/recv's ends say nothing about clocks)",
          rank);
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
      if (it == index[i].end() || (!by_seq && it->second.second != count0)) {
        ends.clear();
      } else {
        ends[ranks[i]] = it->second.first->end;
      }
    }
    if (!ends.empty()) return ends;
  }
  *why = by_seq ? "no all-reduce, all-gather, reduce-scatter or barrier call has the same kind, "
                  "group, size and sequence number on every rank"
                : "no all-reduce, all-gather, reduce-scatter or barrier call can be paired "
                  "across ranks with confidence: no kind, group and size occurs equally often "
                  "on every rank (ranks profiled over different windows?)";
  return {};
}

// Gives collectives without a group (held back by SetSink) the whole world as
// their group when the set shows that consistently: the declared world is
// complete and every rank ran the same sequence of such calls (kind by kind in
// time order, and for all-reduce, all-gather and reduce-scatter, whose members
// move equal buffers, size by size). A trace that names no process group (older
// PyTorch) runs them on the default one. Returns what was done, or why not.
std::string InferWorldGroups(const std::vector<int32_t>& ranks, std::optional<int32_t> world,
                             std::vector<trace::OpEvent>* held) {
  if (held->empty()) return "";
  const std::string what = fmt::format("{} collective(s) without a group", held->size());
  if (!world || *world < 2 || static_cast<int32_t>(ranks.size()) != *world) {
    return what + ": no group inferred, the set does not hold every rank of a declared world";
  }
  std::stable_sort(held->begin(), held->end(), [](const auto& a, const auto& b) {
    return a.rank < b.rank || (a.rank == b.rank && a.ts_ns < b.ts_ns);
  });
  std::map<int32_t, std::vector<trace::OpEvent*>> by_rank;
  for (trace::OpEvent& op : *held) by_rank[op.rank].push_back(&op);
  const std::vector<trace::OpEvent*>& first = by_rank.begin()->second;
  for (const auto& [rank, ops] : by_rank) {
    bool same = by_rank.size() == ranks.size() && ops.size() == first.size();
    for (size_t i = 0; same && i < ops.size(); ++i) {
      same = ops[i]->collective == first[i]->collective &&
             (ops[i]->collective == Collective::kAllToAll ||
              ops[i]->collective == Collective::kBroadcast || ops[i]->bytes == first[i]->bytes);
    }
    if (!same) {
      return what + fmt::format(
                        ": no group inferred, rank {} did not run the same sequence of "
                        "them (kind and size) as rank {}",
                        by_rank.size() == ranks.size() ? rank : ranks.back(),
                        by_rank.begin()->first);
    }
  }
  std::vector<int32_t> all(static_cast<size_t>(*world));
  for (int32_t r = 0; r < *world; ++r) all[r] = r;
  for (trace::OpEvent& op : *held) op.group = all;
  return what + fmt::format(
                    " given the whole world (ranks 0–{}) as their group: the traces name no "
                    "process group, and every rank ran the same {} such calls in the same order",
                    *world - 1, first.size());
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

constexpr auto kClockAlignmentNames = MakeEnumNames<ClockAlignment>({
    {ClockAlignment::kAsRecorded, "as-recorded"},
    {ClockAlignment::kFirstCollectiveEnd, "collective-end"},
});
static_assert(kClockAlignmentNames.InEnumOrder() &&
              kClockAlignmentNames.entries().back().value == ClockAlignment::kFirstCollectiveEnd);

std::string_view ClockAlignmentName(ClockAlignment a) { return kClockAlignmentNames.Name(a); }

StatusOr<ClockAlignment> ParseClockAlignment(std::string_view name) {
  if (std::optional<ClockAlignment> a = kClockAlignmentNames.Parse(name)) return *a;
  return InvalidArgument("unknown clock alignment '{}' ({})", name, kClockAlignmentNames.List());
}

namespace {

// Each file's probe (`options.probes`, else probed here), checking that no two
// files declare the same rank. `hosts`: whether the files are the hosts of one
// XLA run (several XLA profiles, each numbering its devices from 0).
StatusOr<std::vector<TraceProbe>> ProbeSet(const std::vector<std::string>& paths,
                                           const TraceSetOptions& options, bool* hosts) {
  // Declared ranks first, so a duplicate is found before anything is read in full.
  std::map<int32_t, std::string> declared;
  *hosts = paths.size() > 1;
  std::vector<TraceProbe> probes = options.probes;
  if (!probes.empty() && probes.size() != paths.size()) {
    return InvalidArgument("a trace set of {} files given {} probes", paths.size(), probes.size());
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (probes.size() < paths.size()) {
      ASSIGN_OR_RETURN(TraceProbe probed, ProbeTrace(path, options.format));
      probes.push_back(probed);
    }
    const TraceProbe& probe = probes[i];
    *hosts = *hosts && IsXla(probe.format);
    if (!probe.rank) continue;
    auto [it, inserted] = declared.emplace(*probe.rank, path);
    if (!inserted) {
      return InvalidArgument("{} and {}: both are rank {} (a trace set needs one file per rank)",
                             it->second, path, *probe.rank);
    }
  }
  return probes;
}

// The ranks below the world size that no file holds, with a warning.
void NoteMissingRanks(TraceSetResult* result) {
  if (!result->world_size) return;
  std::set<int32_t> present(result->ranks.begin(), result->ranks.end());
  for (int32_t r = 0; r < *result->world_size; ++r) {
    if (!present.count(r)) result->missing_ranks.push_back(r);
  }
  if (!result->missing_ranks.empty()) {
    result->warnings.push_back(fmt::format(
        "world size {}, but no trace for rank {} ({} of {} ranks missing): metrics cover the {} "
        "rank(s) present",
        *result->world_size, RankList(result->missing_ranks), result->missing_ranks.size(),
        *result->world_size, result->ranks.size()));
  }
}

// The clocks: the spread of the first common collective's end over ranks, and
// with `align` each rank's shift onto the lowest rank's clock.
Status MeasureClocks(const std::vector<std::string>& paths, bool align,
                     std::map<int32_t, std::vector<CommMark>>* marks, TraceSetResult* result) {
  std::map<int32_t, int64_t> ends =
      FirstCommonCollectiveEnds(marks, result->ranks, &result->alignment_note);
  if (!ends.empty()) {
    auto [lo, hi] = std::minmax_element(
        ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    result->collective_end_spread_ns = hi->second - lo->second;
    if (align) {
      const int64_t reference = ends.begin()->second;  // the lowest rank's clock
      for (const auto& [rank, end] : ends) result->clock_shift_ns[rank] = reference - end;
    } else if (*result->collective_end_spread_ns > kClockSkewWarningNs) {
      result->warnings.push_back(fmt::format(
          "the end of the first collective all ranks ran differs by {:.1f} us across ranks "
          "(clock skew?); --align-clocks collective-end aligns the ranks on it",
          static_cast<double>(*result->collective_end_spread_ns) / 1e3));
    }
  } else if (align && result->ranks.size() > 1) {
    // No measurement of the clocks: refuse rather than shift by a guess (one rank has
    // nothing to align).
    return InvalidArgument(
        "{}: --align-clocks collective-end cannot align these ranks' clocks: {}; analyse them "
        "as recorded (--align-clocks as-recorded)",
        SetName(paths), result->alignment_note);
  }
  return Status::Ok();
}

// One metadata object for the run: the first file's, with the set's files,
// ranks, clocks and warnings under "trace_set".
nlohmann::json SetMetadata(const std::vector<std::string>& paths, const TraceSetOptions& options,
                           const nlohmann::json& first_metadata, const nlohmann::json& files,
                           const std::string& group_note, const TraceSetResult& result) {
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
  if (!group_note.empty()) set["groups"] = group_note;
  if (!result.warnings.empty()) set["warnings"] = result.warnings;
  meta["trace_set"] = set;
  return meta;
}

}  // namespace

StatusOr<TraceSetResult> ImportTraceSet(const std::vector<std::string>& paths,
                                        const TraceSetOptions& options, trace::TraceSink* sink) {
  TraceSetResult result;
  result.paths = paths;
  if (paths.empty()) return InvalidArgument("a trace set needs at least one file");
  bool hosts = false;
  ASSIGN_OR_RETURN(std::vector<TraceProbe> probes, ProbeSet(paths, options, &hosts));
  const bool align = options.alignment == ClockAlignment::kFirstCollectiveEnd;
  trace::Trace buffer;  // aligned: everything waits here for the shifts
  trace::TraceBuilder builder(&buffer);
  trace::TraceSink* target = align ? static_cast<trace::TraceSink*>(&builder) : sink;
  std::map<int32_t, std::vector<CommMark>> marks;
  std::vector<trace::OpEvent> held;      // collectives without a group, for InferWorldGroups
  std::map<int32_t, std::string> owner;  // rank → file
  std::optional<std::string> world_file;
  nlohmann::json files = nlohmann::json::array();
  nlohmann::json first_metadata;
  int32_t next_rank = 0;  // hosts: the first rank of the next file
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    const int32_t offset = hosts ? next_rank : 0;
    SetSink set_sink(target, &marks, offset, paths.size() > 1 ? &held : nullptr);
    ASSIGN_OR_RETURN(ImportResult r, ImportTrace(path, probes[i].format, &set_sink));
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
  NoteMissingRanks(&result);
  // Groups the files leave out, from the set as a whole.
  const std::string group_note = InferWorldGroups(result.ranks, result.world_size, &held);
  if (!held.empty() && !held.front().group.empty()) {
    result.stats.CountN(trace::Stat::kWorldGroupAssumed, static_cast<int64_t>(held.size()));
  }
  SetSink release(target, &marks, 0, nullptr);
  for (const trace::OpEvent& op : held) release.Forward(op);
  held = {};
  RETURN_IF_ERROR(MeasureClocks(paths, align, &marks, &result));
  if (align) Replay(buffer, result.clock_shift_ns, sink);
  nlohmann::json meta = SetMetadata(paths, options, first_metadata, files, group_note, result);
  sink->OnMetadata(meta);
  result.metadata = std::move(meta);
  return result;
}

StatusOr<std::vector<std::vector<std::string>>> GroupTraceFiles(
    const std::vector<std::string>& files, std::optional<TraceFormat> forced,
    std::vector<std::vector<TraceProbe>>* probes) {
  std::vector<std::vector<std::string>> runs;
  std::vector<std::vector<TraceProbe>> run_probes;                   // in step with runs
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
        run_probes.push_back({probe});
      } else {
        runs[it->second].push_back(file);
        run_probes[it->second].push_back(probe);
      }
      continue;
    }
    if (probe.format != TraceFormat::kShardScope && probe.rank && probe.world_size &&
        *probe.world_size > 1) {
      auto key = std::make_pair(probe.format, *probe.world_size);
      auto it = set_index.find(key);
      if (it != set_index.end()) {
        runs[it->second].push_back(file);
        run_probes[it->second].push_back(probe);
        continue;
      }
      set_index[key] = runs.size();
    }
    runs.push_back({file});
    run_probes.push_back({probe});
  }
  if (probes != nullptr) *probes = std::move(run_probes);
  return runs;
}

}  // namespace shardscope::importers
