// The Kineto importer's entry points and its last step, the delivery: the
// tokenizer (kineto_tokenizer.h) reads the file into typed events, the
// correlator (kineto_correlator.h) resolves communication kernels, and this
// file assigns ranks and streams, reads the top-level fields and hands
// everything to the sink.
#include "importers/kineto_importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "importers/kineto_correlator.h"
#include "importers/kineto_events.h"
#include "importers/kineto_names.h"
#include "importers/kineto_tokenizer.h"
#include "trace/event_scanner.h"
#include "trace/parallel_events.h"

namespace shardscope::importers {
namespace {

using kineto::GpuOp;
using kineto::GroupConfig;
using kineto::KinetoEvents;
using kineto::StepMark;
using kineto::StepSource;

// The top-level fields the import reads, parsed (null when absent or invalid).
struct TopLevel {
  nlohmann::json dist, devices, base, trace_name, schema_version;
};

TopLevel ParseTopLevel(const std::map<std::string, std::string>& top_level,
                       trace::ReadStats* stats) {
  auto top = [&](const char* key) -> nlohmann::json {
    auto it = top_level.find(key);
    if (it == top_level.end()) return nullptr;
    nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (j.is_discarded()) {
      stats->Count(trace::Stat::kTopLevelNotJson, key);
      return nullptr;
    }
    return j;
  };
  TopLevel t;
  t.dist = top("distributedInfo");
  t.devices = top("deviceProperties");
  t.base = top("baseTimeNanoseconds");
  t.trace_name = top("traceName");
  t.schema_version = top("schemaVersion");
  return t;
}

// An integer field of `j` in [min, int32 max), or nullopt.
std::optional<int32_t> Int32Field(const nlohmann::json& j, const char* key, int64_t min) {
  if (!j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
  int64_t v = j[key].get<int64_t>();
  if (v < min || v >= std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(v);
}

// distributedInfo.pg_config: each process group's complete rank list, by name.
std::map<std::string, std::vector<int32_t>> ParsePgConfig(const nlohmann::json& dist) {
  std::map<std::string, std::vector<int32_t>> out;
  if (!dist.contains("pg_config") || !dist["pg_config"].is_array()) return out;
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
    if (ok && !ranks.empty()) out[pg_name] = std::move(ranks);
  }
  return out;
}

// Hands the tokenized, correlated events to a sink: metadata, process and
// thread names, ops, then steps.
class Delivery {
 public:
  // All four must outlive it.
  Delivery(KinetoEvents* events, const TopLevel* top, trace::ReadStats* stats,
           trace::TraceSink* sink);

  void Run(const std::string& name, KinetoInfo* info);

 private:
  // Rank: distributedInfo.rank; without it, each GPU's ops are the rank of its device id.
  int32_t RankOf(int32_t device) const { return rank_ ? *rank_ : device; }
  void NoteOpsOnOtherDevices();
  void DeliverMetadata(const std::string& name);
  void DeliverNames();
  void DeliverOps();
  void DeliverSteps();
  void CountIgnored();
  void FillInfo(KinetoInfo* info) const;

  KinetoEvents* const events_;
  const TopLevel* const top_;
  trace::ReadStats* const stats_;
  trace::TraceSink* const sink_;
  std::optional<int32_t> rank_;
  GroupConfig groups_;
  int64_t base_ns_ = 0;
  std::vector<std::string> device_names_;
  std::map<int32_t, int64_t> ops_per_device_;
  std::map<int32_t, bool> ranks_seen_;  // ranks named so far, in order
};

Delivery::Delivery(KinetoEvents* events, const TopLevel* top, trace::ReadStats* stats,
                   trace::TraceSink* sink)
    : events_(events), top_(top), stats_(stats), sink_(sink) {
  if (top->dist.is_object()) {
    rank_ = Int32Field(top->dist, "rank", 0);
    groups_.world_size = Int32Field(top->dist, "world_size", 1);
    groups_.pg_ranks = ParsePgConfig(top->dist);
  }
  if (top->base.is_number_integer()) base_ns_ = top->base.get<int64_t>();
  if (top->devices.is_array()) {
    for (const auto& d : top->devices) {
      device_names_.push_back(d.is_object() && d.contains("name") && d["name"].is_string()
                                  ? d["name"].get<std::string>()
                                  : "");
    }
  }
  for (const GpuOp& op : events_->ops) ++ops_per_device_[op.device];
}

void Delivery::Run(const std::string& name, KinetoInfo* info) {
  NoteOpsOnOtherDevices();
  DeliverMetadata(name);  // first, so a collector has it before the ops
  DeliverNames();
  DeliverOps();
  DeliverSteps();
  CountIgnored();
  if (info) FillInfo(info);
}

void Delivery::NoteOpsOnOtherDevices() {
  if (!rank_ || ops_per_device_.size() <= 1) return;
  int64_t others = 0;
  int64_t most = 0;
  for (const auto& [d, n] : ops_per_device_) {
    others += n;
    most = std::max(most, n);
  }
  stats_->CountN(trace::Stat::kOpsOnOtherDevices, others - most, ops_per_device_.size(), *rank_);
}

void Delivery::DeliverMetadata(const std::string& name) {
  nlohmann::json meta = nlohmann::json::object();
  nlohmann::json source = {{"format", "kineto"}, {"file", name}};
  if (top_->trace_name.is_string()) source["trace_name"] = top_->trace_name;
  if (!top_->schema_version.is_null()) source["schema_version"] = top_->schema_version;
  meta["source"] = source;
  nlohmann::json kineto = nlohmann::json::object();
  if (top_->dist.is_object()) kineto["distributedInfo"] = top_->dist;
  if (!device_names_.empty()) kineto["devices"] = device_names_;
  kineto["clock"] =
      top_->base.is_number_integer()
          ? fmt::format("ts relative to baseTimeNanoseconds {}; made absolute", base_ns_)
          : std::string("ts absolute as recorded (no baseTimeNanoseconds)");
  meta["kineto"] = kineto;
  if (groups_.world_size) meta["world_size"] = *groups_.world_size;
  if (rank_) meta["rank"] = *rank_;
  if (!ops_per_device_.empty()) {
    int32_t device = ops_per_device_.begin()->first;
    if (device >= 0 && static_cast<size_t>(device) < device_names_.size() &&
        !device_names_[device].empty()) {
      meta["cluster"] = {{"device", {{"name", device_names_[device]}}}};
    }
  }
  sink_->OnMetadata(meta);
}

// A process per rank (named after its device), a thread per (device, stream).
void Delivery::DeliverNames() {
  for (const auto& [device, n] : ops_per_device_) {
    int32_t r = RankOf(device);
    if (!ranks_seen_.emplace(r, true).second) continue;
    std::string dev = device >= 0 && static_cast<size_t>(device) < device_names_.size()
                          ? device_names_[device]
                          : std::string();
    sink_->OnProcessName(
        r, fmt::format("rank {} · device {}{}{}", r, device, dev.empty() ? "" : " · ", dev));
    ++stats_->names;
  }
  std::map<std::pair<int32_t, int32_t>, bool> streams_seen;
  for (const GpuOp& op : events_->ops) {
    if (!streams_seen.emplace(std::make_pair(op.device, op.stream), true).second) continue;
    auto it = events_->thread_names.find({op.device, op.stream});
    std::string tname = it != events_->thread_names.end() && !it->second.empty()
                            ? it->second
                            : fmt::format("stream {}", op.stream);
    sink_->OnThreadName(RankOf(op.device), op.stream, tname);
    ++stats_->names;
  }
}

void Delivery::DeliverOps() {
  kineto::KinetoCorrelator correlator(events_, groups_, stats_);
  trace::OpEvent ev;
  for (const GpuOp& op : events_->ops) {
    ev = trace::OpEvent();
    ev.rank = RankOf(op.device);
    ev.stream = op.stream;
    ev.name = events_->names[op.name];
    ev.category = op.category;
    ev.ts_ns = op.ts + base_ns_;
    ev.dur_ns = op.dur;
    if (op.comm) {
      correlator.ResolveComm(op, &ev);
    } else if (op.category == trace::Category::kCompute) {
      correlator.ResolveCompute(op, &ev);
    }
    sink_->OnOp(ev);
    ++stats_->ops;
  }
}

// Steps: ProfilerStep#N when the trace has them, else vLLM's execute_*, else SGLang's run_batch.
void Delivery::DeliverSteps() {
  for (StepSource src :
       {StepSource::kProfilerStep, StepSource::kVllmExecute, StepSource::kSglangRunBatch}) {
    std::vector<StepMark> marks;
    for (const StepMark& m : events_->steps) {
      if (m.source == src) marks.push_back(m);
    }
    if (marks.empty()) continue;
    std::stable_sort(marks.begin(), marks.end(),
                     [](const StepMark& a, const StepMark& b) { return a.ts < b.ts; });
    int32_t index = 0;
    std::vector<int32_t> rank_list;
    for (const auto& [r, unused] : ranks_seen_) rank_list.push_back(r);
    if (rank_list.empty()) rank_list.push_back(rank_.value_or(0));
    for (const StepMark& m : marks) {
      trace::SpanEvent span;
      span.kind = trace::SpanKind::kStep;
      span.phase = trace::Phase::kNone;
      span.step = m.step >= 0 ? m.step : index;
      span.name = fmt::format("step {}", span.step);
      span.ts_ns = m.ts + base_ns_;
      span.dur_ns = m.dur;
      ++index;
      // Host annotations belong to the process: to its rank (each device's rank without
      // distributedInfo).
      for (int32_t r : rank_list) {
        span.rank = r;
        sink_->OnSpan(span);
        ++stats_->spans;
      }
    }
    break;
  }
}

void Delivery::CountIgnored() {
  for (const kineto::IgnoredCount& c : events_->ignored) {
    const trace::Stat stat = c.type == "ph"         ? trace::Stat::kPhNotAnalysed
                             : c.type == "metadata" ? trace::Stat::kMetadataNotAnalysed
                             : c.value.empty()      ? trace::Stat::kEventWithoutCat
                                                    : trace::Stat::kHostCat;
    stats_->CountN(stat, c.count, c.value);
  }
}

void Delivery::FillInfo(KinetoInfo* info) const {
  info->rank = rank_;
  info->world_size = groups_.world_size;
  if (top_->base.is_number_integer()) info->base_time_ns = base_ns_;
  info->devices = device_names_;
  info->ranks.clear();
  for (const auto& [r, unused] : ranks_seen_) info->ranks.push_back(r);
  if (info->ranks.empty() && !events_->steps.empty()) info->ranks.push_back(rank_.value_or(0));
}

}  // namespace

namespace {

constexpr const char* kKeptKeys[] = {"distributedInfo", "deviceProperties", "baseTimeNanoseconds",
                                     "traceName", "schemaVersion"};

// The tokenized events of one part of a file, appended to the whole in order.
class KinetoPartOutput final : public trace::RangeOutput {
 public:
  KinetoPartOutput(KinetoEvents events, KinetoEvents* total,
                   std::unordered_map<std::string, int32_t>* name_index)
      : events_(std::move(events)), total_(total), name_index_(name_index) {}
  void Deliver() override { kineto::AppendKinetoEvents(std::move(events_), total_, name_index_); }

 private:
  KinetoEvents events_;
  KinetoEvents* const total_;
  std::unordered_map<std::string, int32_t>* const name_index_;
};

// A worker's tokenizer; a fresh one per part (its name ids are the part's own).
class KinetoPartParser final : public trace::PartParser {
 public:
  KinetoPartParser(KinetoEvents* total, std::unordered_map<std::string, int32_t>* name_index)
      : total_(total), name_index_(name_index) {
    Reset();
  }
  trace::EventParser* parser() override { return tokenizer_.get(); }
  trace::ReadStats* stats() override { return &stats_; }
  std::unique_ptr<trace::RangeOutput> Take() override {
    auto out = std::make_unique<KinetoPartOutput>(std::move(events_), total_, name_index_);
    Reset();
    return out;
  }

 private:
  void Reset() {
    events_ = KinetoEvents();
    stats_ = trace::ReadStats();
    tokenizer_ = kineto::MakeKinetoTokenizer(&stats_, &events_);
  }

  KinetoEvents* const total_;
  std::unordered_map<std::string, int32_t>* const name_index_;
  KinetoEvents events_;
  trace::ReadStats stats_;
  std::unique_ptr<trace::EventParser> tokenizer_;
};

// After the events are read: the top-level keys, the delivery and the counts.
trace::ReadStats Finish(KinetoEvents* events, const std::map<std::string, std::string>& top_level,
                        trace::ReadStats stats, const std::string& name, trace::TraceSink* sink,
                        KinetoInfo* info) {
  TopLevel top = ParseTopLevel(top_level, &stats);
  Delivery(events, &top, &stats, sink).Run(name, info);
  return stats;
}

}  // namespace

StatusOr<trace::ReadStats> ImportKinetoFrom(trace::ByteSource* source, const std::string& name,
                                            trace::TraceSink* sink, KinetoInfo* info,
                                            const trace::ReadOptions& options) {
  trace::ReadStats stats;
  trace::EventScanner scanner(source, name, options.chunk_bytes);
  scanner.set_kept_keys({std::begin(kKeptKeys), std::end(kKeptKeys)});
  KinetoEvents events;
  {
    std::unique_ptr<trace::EventParser> tokenizer = kineto::MakeKinetoTokenizer(&stats, &events);
    RETURN_IF_ERROR(trace::ParseEvents(&scanner, tokenizer.get(), options));
  }
  stats = Finish(&events, scanner.top_level(), std::move(stats), name, sink, info);
  stats.bytes = scanner.bytes_scanned();
  stats.array_form = scanner.array_form();
  stats.unclosed_array = scanner.unclosed_array();
  return stats;
}

StatusOr<trace::ReadStats> ImportKinetoParallel(const trace::RandomAccessInput& input,
                                                const std::string& name, trace::TraceSink* sink,
                                                KinetoInfo* info,
                                                const trace::ReadOptions& options) {
  trace::ReadStats stats;
  KinetoEvents events;
  std::unordered_map<std::string, int32_t> name_index;
  trace::MakePartParser make_parser = [&events, &name_index] {
    return std::unique_ptr<trace::PartParser>(
        std::make_unique<KinetoPartParser>(&events, &name_index));
  };
  ASSIGN_OR_RETURN(
      trace::ParallelScan scan,
      trace::ParseEventsParallel(input, name, options, {std::begin(kKeptKeys), std::end(kKeptKeys)},
                                 make_parser, &stats, {}));
  stats = Finish(&events, scan.top_level, std::move(stats), name, sink, info);
  stats.bytes = scan.bytes_scanned;
  stats.array_form = scan.array_form;
  stats.unclosed_array = scan.unclosed_array;
  return stats;
}

StatusOr<trace::ReadStats> ImportKineto(const std::string& path, trace::TraceSink* sink,
                                        KinetoInfo* info, const trace::ReadOptions& options) {
  ASSIGN_OR_RETURN(auto source, trace::OpenByteSource(path));
  if (!source->compressed() && trace::ReadThreads(options) > 1) {
    ASSIGN_OR_RETURN(auto input, trace::OpenRandomAccess(path));
    if (input->size() >= 2 * static_cast<int64_t>(options.range_bytes)) {
      return ImportKinetoParallel(*input, path, sink, info, options);
    }
  }
  // Compressed: one thread inflates ahead while this one tokenizes.
  if (source->compressed() && trace::ReadThreads(options) > 1) {
    source = trace::ReadAheadSource(std::move(source));
  }
  return ImportKinetoFrom(source.get(), path, sink, info, options);
}

}  // namespace shardscope::importers
