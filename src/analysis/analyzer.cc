#include "analysis/analyzer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "analysis/metric_families.h"
#include "analysis/workload_card.h"
#include "trace/tee_sink.h"
#include "trace/trace_reader.h"
#include "trace/trace_store.h"

namespace shardscope::analysis {
namespace fs = std::filesystem;
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Ascending runs of consecutive ranks collapse to "a-b".
std::string RankList(const std::vector<int32_t>& ranks) {
  std::string out;
  size_t i = 0;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    if (j - i >= 2) {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
    } else {
      for (size_t k = i; k <= j; ++k) out += fmt::format("{}{}", k > i ? "," : "", ranks[k]);
    }
    i = j + 1;
  }
  return out;
}

// "dir (N files)" when the files share a directory, else "first + N more".
std::string SetLabel(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return paths[0];
  fs::path dir = fs::path(paths[0]).parent_path();
  bool same = std::all_of(paths.begin(), paths.end(),
                          [&](const std::string& p) { return fs::path(p).parent_path() == dir; });
  if (same) return fmt::format("{} ({} files)", dir.empty() ? "." : dir.string(), paths.size());
  return fmt::format("{} + {} more", paths[0], paths.size() - 1);
}

// A format forced with --trace-format that read nothing from files whose content is
// another format: an error, not a silent run of 0 ops.
Status CheckForcedFormat(const AnalysisResult& r, const AnalyzeOptions& options) {
  if (!options.format || r.stats.ops > 0 || r.stats.spans > 0) return Status::Ok();
  for (const std::string& path : r.trace_paths) {
    auto detected = importers::DetectFormat(path);
    if (detected.ok() && *detected != *options.format) {
      return InvalidArgument(
          "{}: read 0 ops as --trace-format {}, but its content is a {} trace; leave "
          "--trace-format at auto or name the format it is",
          path, importers::TraceFormatName(*options.format), importers::TraceFormatName(*detected));
    }
  }
  return Status::Ok();
}

// A run ShardScope recorded: the store's "run" block or the recorder's "experiment".
bool RecordedByShardScope(const nlohmann::json& m) {
  auto is_object = [&](const char* key) {
    auto it = m.find(key);
    return it != m.end() && it->is_object();
  };
  return m.is_object() && (is_object("run") || is_object("experiment"));
}

}  // namespace

std::string RankScope(int32_t rank) { return fmt::format("rank {}", rank); }

std::string GroupScope(const GroupInfo& group) {
  std::string_view dim = DimName(group.dim);
  return fmt::format("group {}{}{}", dim, dim.empty() ? "" : " ", RankList(group.ranks));
}

MetricSet ComputeMetrics(RunData* data) {
  Context ctx;
  ctx.data = data;
  ctx.info = RunInfo::FromMetadata(data->metadata);
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (auto& [rank, rd] : data->ranks) {
    auto by_start = [](const OpRec& a, const OpRec& b) {
      return a.ts < b.ts || (a.ts == b.ts && a.end < b.end);
    };
    // Traces are usually written in time order per rank: then ties keep file order.
    if (!std::is_sorted(rd.ops.begin(), rd.ops.end(), by_start)) {
      std::sort(rd.ops.begin(), rd.ops.end(), by_start);
    }
    for (const OpRec& op : rd.ops) {
      lo = std::min(lo, op.ts);
      hi = std::max(hi, op.end);
    }
    for (const SpanRec& s : rd.spans) {
      lo = std::min(lo, s.ts);
      hi = std::max(hi, s.end);
    }
  }
  MetricSet out;
  if (lo > hi) {
    out.AddUnavailable("wall_time", "", "s", "the trace has no ops or spans");
    return out;
  }
  ctx.window_begin = lo;
  ctx.window_end = hi;
  out.Add("ranks", "", static_cast<double>(data->ranks.size()), "count");
  out.Add("wall_time", "", Seconds(hi - lo), "s", "earliest start to latest end over all ranks");
  // The families read the data only: they run on up to ReadThreads threads, each
  // into its own set, merged in the order listed, so the output is the same with
  // any number of threads. Listed by when to start them (the long ones first);
  // those that need the collective matching start after it.
  SyncResult sync;
  std::promise<void> matched;
  std::shared_future<void> sync_ready = matched.get_future().share();
  enum Part { kLatency, kTime, kComm, kIntervals, kSync, kUtil, kExpert, kRequest, kParts };
  std::array<MetricSet, kParts> sets;
  const std::vector<std::function<void()>> tasks = {
      [&] {
        sync = MatchCollectives(ctx);
        matched.set_value();
      },
      [&] { AddTrafficIntervalMetrics(ctx, &sets[kIntervals]); },
      [&] {
        sync_ready.wait();
        AddTimeMetrics(ctx, sync, &sets[kTime]);
      },
      [&] { AddCommMetrics(ctx, &sets[kComm]); },
      [&] { AddLatencyMetrics(ctx, &sets[kLatency]); },
      [&] { AddUtilizationMetrics(ctx, &sets[kUtil]); },
      [&] {
        sync_ready.wait();
        AddSyncMetrics(ctx, sync, &sets[kSync]);
      },
      [&] { AddExpertLoadMetrics(ctx, &sets[kExpert]); },
      [&] { AddRequestMetrics(ctx, &sets[kRequest]); },
  };
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) tasks[i]();
  };
  std::vector<std::thread> helpers;
  // Small runs on the calling thread: a thread costs more than their metrics.
  size_t ops = 0;
  for (const auto& [rank, rd] : data->ranks) ops += rd.ops.size();
  const int threads =
      ops < (size_t{1} << 16) ? 1 : std::min<int>(trace::ReadThreads(trace::ReadOptions()), 4);
  for (int i = 1; i < threads; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  for (MetricSet& s : sets) out.Append(std::move(s));
  return out;
}

std::map<int32_t, std::map<int32_t, int64_t>> ExpertTokensByLayer(const RunData& data) {
  std::map<int32_t, std::map<int32_t, int64_t>> out;
  for (const auto& [key, cell] : data.expert_load) {
    auto& layer = out[std::get<2>(key)];
    for (const auto& [expert, tokens] : cell.tokens) layer[expert] += tokens;
  }
  return out;
}

std::vector<SizeBandwidth> BandwidthBySize(const RunData& data) {
  std::vector<SizeBandwidth> out;
  for (size_t i = 0; i < data.bandwidth_by_size.size(); ++i) {
    const SizeBucketSums& b = data.bandwidth_by_size[i];
    if (b.ops == 0 || b.seconds <= 0) continue;
    const size_t k = i % kSizeBuckets, cd = i / kSizeBuckets;
    out.push_back({static_cast<Collective>(cd / trace::kNumDimPositions),
                   trace::kDimListOrder[cd % trace::kNumDimPositions],
                   std::ldexp(1.0, static_cast<int>(k)), b.bytes / static_cast<double>(b.ops),
                   b.ops, b.bus_bytes / b.seconds});
  }
  return out;
}

std::vector<CommChoice> CommChoices(const RunData& data) {
  std::vector<CommChoice> out;
  for (const auto& [i, choices] : data.comm_choices) {
    const size_t k = i % kSizeBuckets, cd = i / kSizeBuckets;
    for (const auto& [choice, ops] : choices) {
      out.push_back({static_cast<Collective>(cd / trace::kNumDimPositions),
                     trace::kDimListOrder[cd % trace::kNumDimPositions],
                     std::ldexp(1.0, static_cast<int>(k)), choice, ops});
    }
  }
  return out;
}

namespace {

StatusOr<AnalysisResult> AnalyzeSet(const std::vector<std::string>& paths,
                                    const AnalyzeOptions& options,
                                    std::vector<importers::TraceProbe> probes);

// AnalyzeTraceFile with the file's probe when the caller has it (its format
// detected once, passed on to the importer).
StatusOr<AnalysisResult> AnalyzeFile(const std::string& path, const AnalyzeOptions& options,
                                     std::optional<importers::TraceProbe> probe) {
  if (!probe && !options.format) {
    ASSIGN_OR_RETURN(probe, importers::ProbeTrace(path, std::nullopt));
  }
  const importers::TraceFormat format = probe ? probe->format : *options.format;
  if (format != importers::TraceFormat::kShardScope) {
    std::vector<importers::TraceProbe> probes;
    if (probe) probes.push_back(*probe);
    return AnalyzeSet({path}, options, std::move(probes));
  }
  AnalysisResult result;
  result.trace_path = path;
  result.trace_paths = {path};
  result.format = std::string(importers::TraceFormatName(format));
  RunData data;
  RunCollector collector(&data);
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(path, size_error);
  if (!size_error) collector.set_size_hint(static_cast<int64_t>(bytes));
  trace::TraceSink* also = options.also_read_by ? options.also_read_by(path) : nullptr;
  trace::TeeSink tee(&collector, also);
  ASSIGN_OR_RETURN(result.stats, trace::ReadTrace(path, also ? static_cast<trace::TraceSink*>(&tee)
                                                             : &collector));
  // A store trace's sidecar metadata holds the full experiment.
  if (std::string meta = trace::StoreMetadataPathFor(path); !meta.empty()) {
    std::ifstream in(meta);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      nlohmann::json m = nlohmann::json::parse(ss.str(), nullptr, false);
      if (!m.is_object()) {
        return InvalidArgument("{}: not a JSON object (the metadata of {})", meta, path);
      }
      result.metadata = m;
      data.metadata = std::move(m);
      result.metadata_path = meta;
    }
  }
  if (RecordedByShardScope(data.metadata)) {
    ASSIGN_OR_RETURN(
        result.identity,
        trace::RunIdentityFromMetadata(data.metadata,
                                       result.metadata_path.empty() ? path : result.metadata_path));
  }
  if (!options.extra_metadata.empty()) MergeMissingMetadata(&data.metadata, options.extra_metadata);
  RETURN_IF_ERROR(CheckForcedFormat(result, options));
  data.format = result.format;
  result.metrics = ComputeMetrics(&data);
  result.expert_tokens = ExpertTokensByLayer(data);
  result.bandwidth_by_size = BandwidthBySize(data);
  result.requests = std::move(data.requests);
  result.comm_choices = CommChoices(data);
  return result;
}

StatusOr<AnalysisResult> AnalyzeSet(const std::vector<std::string>& paths,
                                    const AnalyzeOptions& options,
                                    std::vector<importers::TraceProbe> probes) {
  AnalysisResult result;
  RunData data;
  RunCollector collector(&data);
  importers::TraceSetOptions set_options;
  set_options.format = options.format;
  set_options.alignment = options.alignment;
  set_options.probes = std::move(probes);
  result.trace_paths = paths;
  result.trace_path = SetLabel(paths);
  trace::TraceSink* also = options.also_read_by ? options.also_read_by(result.trace_path) : nullptr;
  trace::TeeSink tee(&collector, also);
  ASSIGN_OR_RETURN(
      importers::TraceSetResult set,
      importers::ImportTraceSet(paths, set_options,
                                also ? static_cast<trace::TraceSink*>(&tee) : &collector));
  std::set<std::string_view> formats;
  for (const importers::ImportResult& f : set.files) {
    formats.insert(importers::TraceFormatName(f.format));
  }
  for (std::string_view f : formats) {
    if (!result.format.empty()) result.format += ",";
    result.format += f;
  }
  result.warnings = set.warnings;
  result.stats = set.stats;
  if (!options.extra_metadata.empty()) MergeMissingMetadata(&data.metadata, options.extra_metadata);
  data.missing_ranks = set.missing_ranks;
  RETURN_IF_ERROR(CheckForcedFormat(result, options));
  data.format = result.format;
  result.metrics = ComputeMetrics(&data);
  result.expert_tokens = ExpertTokensByLayer(data);
  result.bandwidth_by_size = BandwidthBySize(data);
  result.requests = std::move(data.requests);
  result.comm_choices = CommChoices(data);
  if (set.world_size) {
    result.metrics.Add("world_size", "", *set.world_size, "count", "as the trace files declare");
    // One row (and one warning naming them), not a row per missing rank: a set
    // holding 2 of 128 ranks would otherwise print 126 of them.
    result.metrics.Add("missing_ranks", "", static_cast<double>(set.missing_ranks.size()), "count",
                       "ranks of the world size without a trace file (the warning names them)");
  }
  if (set.ranks.size() > 1) {
    if (set.collective_end_spread_ns) {
      result.metrics.Add("clock_spread", "", Seconds(*set.collective_end_spread_ns), "s",
                         "max − min over ranks of the end of the first collective all ranks "
                         "ran, as recorded");
    } else {
      result.metrics.AddUnavailable("clock_spread", "", "s", set.alignment_note);
    }
  }
  return result;
}

}  // namespace

StatusOr<AnalysisResult> AnalyzeTraceFile(const std::string& path, const AnalyzeOptions& options) {
  return AnalyzeFile(path, options, std::nullopt);
}

StatusOr<AnalysisResult> AnalyzeTraceSet(const std::vector<std::string>& paths,
                                         const AnalyzeOptions& options) {
  return AnalyzeSet(paths, options, {});
}

StatusOr<std::vector<AnalysisResult>> AnalyzePaths(const std::vector<std::string>& paths,
                                                   const AnalyzeOptions& options) {
  ASSIGN_OR_RETURN(std::vector<std::string> files, FindTraceFiles(paths));
  std::vector<std::vector<importers::TraceProbe>> probes;
  ASSIGN_OR_RETURN(auto runs, importers::GroupTraceFiles(files, options.format, &probes));
  std::vector<AnalysisResult> results;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].size() == 1) {
      ASSIGN_OR_RETURN(AnalysisResult r, AnalyzeFile(runs[i][0], options, probes[i][0]));
      results.push_back(std::move(r));
    } else {
      ASSIGN_OR_RETURN(AnalysisResult r, AnalyzeSet(runs[i], options, std::move(probes[i])));
      results.push_back(std::move(r));
    }
  }
  return results;
}

bool IsTraceFileName(std::string_view name) {
  // Ours (.trace, .trace.gz), Chrome/Kineto/XLA JSON (.json, .json.gz, .pt.trace.json), NCCL
  // profiler event lines (.jsonl) and JAX profiler XSpace (.xplane.pb).
  for (std::string_view ext :
       {".trace", ".trace.gz", ".json", ".json.gz", ".jsonl", ".jsonl.gz", ".xplane.pb"}) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

StatusOr<std::vector<std::string>> FindTraceFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(path, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        std::string name = it->path().filename().string();
        if (name.rfind("metadata_", 0) == 0 || name.rfind("expected", 0) == 0 || name[0] == '.') {
          continue;
        }
        if (IsTraceFileName(name)) {
          found.push_back(it->path().string());
        }
      }
      if (ec) return IoError("{}: cannot list: {}", path, ec.message());
      if (found.empty()) return NotFound("{}: no trace files under this directory", path);
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      out.push_back(path);
    } else {
      return NotFound("{}: no such file or directory", path);
    }
  }
  return out;
}

}  // namespace shardscope::analysis
