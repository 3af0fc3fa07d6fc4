#include "calibrate/trace_samples.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/checked_int.h"
#include "importers/importer.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "trace/trace_event.h"

namespace shardscope::calibrate {
namespace {

using nlohmann::json;

double Number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

// A text field, or `fallback` (nlohmann's value() throws when it is not text).
std::string Text(const json& j, const char* key, const char* fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

// A count (ranks, sizes, a batch) of the metadata: a whole number from 0 to 2^30,
// else `fallback`. nlohmann's value<int64_t>() casts a float unchecked (1e300 is
// undefined) and throws on a string; products of two counts stay within int64.
int64_t Count(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  const std::optional<int64_t> n = JsonToInt64(*it);
  return n && *n >= 0 && *n <= (int64_t{1} << 30) ? *n : fallback;
}

// The cluster of ShardScope metadata (ClusterToJson), as far as calibration
// needs it: the device's peaks, bandwidth and launch overhead, and the links.
std::optional<ClusterSpec> ClusterFromMetadata(const json& metadata) {
  const json* c = nullptr;
  if (metadata.contains("cluster") && metadata["cluster"].is_object()) {
    c = &metadata["cluster"];
  } else if (metadata.contains("experiment") && metadata["experiment"].is_object() &&
             metadata["experiment"].contains("cluster")) {
    c = &metadata["experiment"]["cluster"];
  }
  if (c == nullptr || !c->contains("device") || !(*c)["device"].is_object()) return std::nullopt;
  const json& d = (*c)["device"];
  ClusterSpec cluster;
  cluster.name = Text(*c, "name", "");
  cluster.device.name = Text(d, "name", "");
  if (auto kind = ParseDeviceKind(Text(d, "kind", "gpu")); kind.ok()) cluster.device.kind = *kind;
  if (d.contains("peak_flops") && d["peak_flops"].is_object()) {
    for (const auto& [name, v] : d["peak_flops"].items()) {
      auto dtype = ParseDType(name);
      if (dtype.ok() && v.is_number()) cluster.device.peak_flops[*dtype] = v.get<double>();
    }
  }
  cluster.device.memory_bandwidth = Number(d, "memory_bandwidth");
  cluster.device.launch_overhead = Number(d, "launch_overhead");
  cluster.device.l2_cache_bytes = Number(d, "l2_cache_bytes");
  if (c->contains("scale_up") && (*c)["scale_up"].is_object()) {
    const json& u = (*c)["scale_up"];
    if (auto k = ParseScaleUpKind(Text(u, "kind", "none")); k.ok()) cluster.scale_up.kind = *k;
    cluster.scale_up.bandwidth_per_device = Number(u, "bandwidth_per_device");
    cluster.scale_up.latency = Number(u, "latency");
  }
  cluster.devices_per_node = std::max<int64_t>(1, Count(*c, "devices_per_node", 1));
  cluster.node_memory_bandwidth = Number(*c, "node_memory_bandwidth");
  if (c->contains("scale_out") && (*c)["scale_out"].is_object()) {
    cluster.scale_out.nic_bandwidth_per_device =
        Number((*c)["scale_out"], "nic_bandwidth_per_device");
    cluster.scale_out.latency = Number((*c)["scale_out"], "latency");
  }
  return cluster;
}

std::optional<DType> DTypeFromMetadata(const json& metadata) {
  if (!metadata.contains("experiment") || !metadata["experiment"].is_object()) return std::nullopt;
  const json& e = metadata["experiment"];
  if (!e.contains("workload") || !e["workload"].is_object()) return std::nullopt;
  auto d = ParseDType(Text(e["workload"], "dtype", ""));
  if (!d.ok()) return std::nullopt;
  return *d;
}

// The share of the node's memory bus each busy device of the run had
// (sim::SharedBandwidthPerDevice), from the experiment in the metadata.
double SharedBandwidthFromMetadata(const json& metadata, const ClusterSpec& cluster) {
  if (!(cluster.node_memory_bandwidth > 0) || !metadata.contains("experiment")) return 0;
  const json& e = metadata["experiment"];
  if (!e.is_object() || !e.contains("parallelism") || !e["parallelism"].is_object()) return 0;
  const json& p = e["parallelism"];
  const int64_t replicas = std::max<int64_t>(1, Count(p, "dp_size", 1) * Count(p, "ep_size", 1));
  int64_t batch = 1;
  if (e.contains("workload") && e["workload"].is_object()) {
    batch = Count(e["workload"], "batch_size", 1);
  }
  const int64_t concurrent = sim::ConcurrentDevicesPerNode(
      Count(p, "world_size", 1), cluster.devices_per_node, Count(p, "pp_size", 1),
      Count(p, "micro_batches", 0), (batch + replicas - 1) / replicas);
  return sim::SharedBandwidthPerDevice(cluster, concurrent);
}

// Comm calls are matched across members by (phase, step, micro-batch, layer,
// collective, ranks, seq); each call keeps its shortest member's time.
using CallKey = std::tuple<int, int32_t, int32_t, int32_t, int, std::vector<int32_t>, int64_t>;

// A rank's speed is taken over at least this many of its ops that other ranks ran too.
constexpr int64_t kMinRankSpreadOps = 16;

class SampleSink : public trace::TraceSink {
 public:
  SampleSink(std::string path, TraceSamples* out)
      : path_(std::move(path)), out_(out), first_compute_(out->compute.size()) {}

  void OnMetadata(const json& metadata) override { metadata_ = metadata; }

  void OnOp(const trace::OpEvent& op) override {
    ++index_;
    if (!status_.ok()) return;
    if (op.dur_ns < 0) return Fail(op, "dur", "is negative");
    if (op.flops < 0) return Fail(op, "args.flops", "is negative");
    if (op.bytes_read < 0) return Fail(op, "args.bytes_read", "is negative");
    if (op.bytes_written < 0) return Fail(op, "args.bytes_written", "is negative");
    if (op.bytes < 0) return Fail(op, "args.bytes", "is negative");
    if (op.phase == trace::Phase::kDecode && op.step >= 0 &&
        (op.category == trace::Category::kCompute || op.category == trace::Category::kComm)) {
      auto [it, inserted] = steps_[op.rank].try_emplace(op.step, op.ts_ns, op.ts_ns + op.dur_ns);
      if (!inserted) {
        it->second.first = std::min(it->second.first, op.ts_ns);
        it->second.second = std::max(it->second.second, op.ts_ns + op.dur_ns);
      }
      if (op.category == trace::Category::kCompute) {
        step_bytes_[op.rank][op.step] += static_cast<double>(op.bytes_read + op.bytes_written);
      }
      ++step_ops_[op.rank][op.step];
    }
    if (op.dur_ns == 0) return Unused("op with zero duration");
    if (op.category == trace::Category::kComm) return AddComm(op);
    if (op.category != trace::Category::kCompute) return Unused("op neither compute nor comm");
    out_->kernel_seconds.push_back(static_cast<double>(op.dur_ns) * 1e-9);
    // A foreign kernel given a matrix product's shape (the Kineto importer's
    // "gemm") stands for the GEMM class: a GEMM kind fits no override of its own.
    StatusOr<OpKind> kind =
        op.kind == "gemm" ? StatusOr<OpKind>(OpKind::kFfnUp) : sim::ParseOpKind(op.kind);
    if (!kind.ok() || *kind == OpKind::kComm)
      return Unused("compute op without a ShardScope op kind (e.g. a foreign kernel)");
    if (op.flops == 0 && op.bytes_read == 0 && op.bytes_written == 0) {
      return Unused("compute op without FLOPs or bytes");
    }
    ComputeOpSample s;
    s.kind = *kind;
    s.flops = static_cast<double>(op.flops);
    s.bytes = static_cast<double>(op.bytes_read + op.bytes_written);
    s.seconds = static_cast<double>(op.dur_ns) * 1e-9;
    if (!op.expert_tokens.empty()) {
      int64_t sum = 0, active = 0;
      for (int64_t t : op.expert_tokens) sum += t, active += t > 0;
      s.rows = active > 0 ? static_cast<double>(sum) / static_cast<double>(active) : 0;
    } else if (auto own = ParseDType(op.dtype); own.ok() && op.kind == "gemm") {
      // The op says its element size (foreign GEMMs): rows now, and the run's dtype.
      s.rows = GemmRows(s.flops, static_cast<double>(op.bytes_read),
                        static_cast<double>(op.bytes_written), DTypeSize(*own));
      // A foreign GEMM's m is whatever the batch held (37 tokens, 1 000
      // images): only k says the weights' alignment (GemmMisaligned's roots
      // cannot tell m from n).
      s.misaligned = GemmMisaligned(s.flops, static_cast<double>(op.bytes_read),
                                    static_cast<double>(op.bytes_written), DTypeSize(*own),
                                    /*k_only=*/true);
      ++op_dtypes_[*own];
    } else if (sim::ClassOf(*kind) == sim::OpClass::kGemm && *kind != OpKind::kExpertGemm) {
      pending_rows_.push_back({out_->compute.size(), op.bytes_read, op.bytes_written});
    }
    out_->compute.push_back(s);
    sample_ranks_.push_back(op.rank);
    sample_phases_.push_back(static_cast<int>(op.phase));
  }

  // Completes the samples once the metadata (dtype, device) is known.
  Status Finish() {
    RETURN_IF_ERROR(status_);
    std::optional<DType> dtype = DTypeFromMetadata(metadata_);
    if (dtype) {
      const double s = static_cast<double>(DTypeSize(*dtype));
      for (const auto& [i, read, written] : pending_rows_) {
        ComputeOpSample& c = out_->compute[i];
        c.rows = GemmRows(c.flops, static_cast<double>(read), static_cast<double>(written), s);
        c.misaligned =
            GemmMisaligned(c.flops, static_cast<double>(read), static_cast<double>(written), s);
      }
    }
    // Each phase of each run weighs the same (TTFT and TPOT count alike); within
    // one, an op weighs its share of the phase's compute time.
    std::map<int, double> phase_seconds;
    for (size_t i = first_compute_; i < out_->compute.size(); ++i) {
      phase_seconds[sample_phases_[i - first_compute_]] += out_->compute[i].seconds;
    }
    for (size_t i = first_compute_; i < out_->compute.size(); ++i) {
      const double total = phase_seconds[sample_phases_[i - first_compute_]];
      if (total > 0) out_->compute[i].weight = out_->compute[i].seconds / total;
    }
    // How the ranks' speeds spread, per phase, on the ops they share.
    std::map<int, std::vector<RankOpTime>> phase_ops;
    for (size_t i = first_compute_; i < out_->compute.size(); ++i) {
      const ComputeOpSample& c = out_->compute[i];
      phase_ops[sample_phases_[i - first_compute_]].push_back(
          {sample_ranks_[i - first_compute_],
           {static_cast<int>(c.kind), c.flops, c.bytes},
           c.seconds});
    }
    for (const auto& [phase, ops] : phase_ops) {
      if (auto spread = RankSpreadOf(ops, kMinRankSpreadOps)) out_->rank_spread.push_back(*spread);
    }
    for (auto [key, call] : calls_) {
      CommCallSample& c = call.sample;
      c.wait = c.members > 1 ? std::max(0.0, call.sum / c.members - c.seconds) : 0;
      out_->comm.push_back(c);
    }
    for (const auto& [rank, steps] : steps_) {
      for (auto it = steps.begin(), next = std::next(it); next != steps.end(); it = next++) {
        if (next->first != it->first + 1) continue;  // only consecutive steps
        const int64_t gap = next->second.first - it->second.second;
        if (gap >= 0) {
          out_->step_gaps.push_back(static_cast<double>(gap) * 1e-9);
          out_->step_gap_ops.push_back(static_cast<double>(step_ops_[rank][next->first]));
        }
      }
    }
    std::optional<ClusterSpec> cluster = ClusterFromMetadata(metadata_);
    if (cluster) {
      const double shared = SharedBandwidthFromMetadata(metadata_, *cluster);
      // Ranks whose decode steps move no more than the cache holds (median step).
      std::set<int32_t> resident;
      for (const auto& [rank, by_step] : step_bytes_) {
        std::vector<double> bytes;
        for (const auto& [step, b] : by_step) bytes.push_back(b);
        std::sort(bytes.begin(), bytes.end());
        const double median = bytes[bytes.size() / 2];
        if (cluster->device.l2_cache_bytes > 0 && median > 0 &&
            median <= cluster->device.l2_cache_bytes) {
          resident.insert(rank);
        }
      }
      for (size_t i = first_compute_; i < out_->compute.size(); ++i) {
        out_->compute[i].shared_bandwidth = shared;
        out_->compute[i].resident = resident.count(sample_ranks_[i - first_compute_]) > 0;
      }
      if (out_->cluster && out_->cluster->device.name != cluster->device.name) {
        return InvalidArgument(
            "{}: otherData.cluster.device.name is '{}', but an earlier file says '{}': "
            "calibrate traces of one device at a time",
            path_, cluster->device.name, out_->cluster->device.name);
      }
      out_->cluster = cluster;
    }
    if (!dtype && !op_dtypes_.empty()) {  // no metadata: the ops' own, the most common
      dtype =
          std::max_element(op_dtypes_.begin(), op_dtypes_.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
          })->first;
    }
    if (dtype) out_->dtype = dtype;
    return Status::Ok();
  }

 private:
  void Unused(const std::string& why) { ++out_->unused[why]; }

  void Fail(const trace::OpEvent& op, std::string_view field, std::string_view what) {
    status_ = InvalidArgument("{}: op event {} ('{}', rank {}): {} {}", path_, index_, op.name,
                              op.rank, field, what);
  }

  void AddComm(const trace::OpEvent& op) {
    Collective c = op.collective;
    if (c == Collective::kNone) return Unused("comm op without a known collective");
    if (op.bytes == 0) return Unused("comm op without a message size");
    std::vector<int32_t> ranks = op.group;
    if (c == Collective::kSend || c == Collective::kRecv) {
      if (op.peer < 0) return Unused("send/recv without a peer");
      ranks = {std::min(op.rank, op.peer), std::max(op.rank, op.peer)};
      c = Collective::kSend;
    } else if (ranks.empty()) {
      return Unused("comm op without a group");
    } else {
      std::sort(ranks.begin(), ranks.end());
    }
    const double seconds = static_cast<double>(op.dur_ns) * 1e-9;
    const PendingCall s{
        {c, static_cast<int32_t>(ranks.size()), static_cast<double>(op.bytes), seconds}, seconds};
    if (op.seq < 0) {  // no way to match the members of one call
      calls_.emplace(CallKey{-1, op.rank, 0, 0, 0, {}, unmatched_++}, s);
      return;
    }
    CallKey key{static_cast<int>(op.phase), op.step,          op.micro_batch, op.layer,
                static_cast<int>(c),        std::move(ranks), op.seq};
    auto [it, inserted] = calls_.emplace(std::move(key), s);
    if (!inserted) {
      CommCallSample& c = it->second.sample;
      c.seconds = std::min(c.seconds, seconds);
      ++c.members;
      it->second.sum += seconds;
    }
  }

  struct PendingRows {
    size_t index;
    int64_t read, written;
  };

  const std::string path_;
  TraceSamples* const out_;
  const size_t first_compute_;  // this file's samples start here
  json metadata_ = json::object();
  Status status_;
  int64_t index_ = 0;
  int64_t unmatched_ = 0;
  std::vector<PendingRows> pending_rows_;
  std::vector<int32_t> sample_ranks_;  // the rank of each of this file's compute samples
  std::vector<int> sample_phases_;     // and its phase (trace::Phase)
  // Decode steps' compute bytes (read + written): rank → step → bytes.
  std::map<int32_t, std::map<int32_t, double>> step_bytes_;
  std::map<int32_t, std::map<int32_t, int64_t>> step_ops_;  // rank → step → ops
  std::map<DType, int64_t> op_dtypes_;                      // GEMMs that name their dtype, by dtype
  struct PendingCall {
    CommCallSample sample;
    double sum = 0;  // of its members' times
  };
  std::map<CallKey, PendingCall> calls_;
  // Decode steps' ops: rank → step → (first start, last end) ns.
  std::map<int32_t, std::map<int32_t, std::pair<int64_t, int64_t>>> steps_;
};

}  // namespace

double GemmRows(double flops, double bytes_read, double bytes_written, double elem_bytes) {
  if (!(flops > 0 && bytes_written > 0 && elem_bytes > 0)) return 0;
  const double mn = bytes_written / elem_bytes;
  const double k = flops / (2 * mn);
  if (!(k > 0)) return 0;
  const double sum = bytes_read / elem_bytes / k;  // m + n (+ n/k for a bias)
  const double disc = sum * sum - 4 * mn;
  if (disc < 0) return 0;
  const double small = (sum - std::sqrt(disc)) / 2;
  // Whole rows: the figures are exact up to a bias row.
  return small >= 0.5 ? std::round(small) : 0;
}

bool GemmMisaligned(double flops, double bytes_read, double bytes_written, double elem_bytes,
                    bool k_only) {
  if (elem_bytes > 2) return false;  // fp32: FMA-unit kernels, no tensor-core alignment
  const double m = GemmRows(flops, bytes_read, bytes_written, elem_bytes);
  if (!(m > 0)) return false;
  const double n = std::round(bytes_written / elem_bytes / m);
  const double k = std::round(flops / (2 * m * n));
  auto off = [&](double elements) {
    return std::fmod(std::round(elements * elem_bytes), 16.0) != 0;
  };
  return off(k) || (!k_only && ((m >= 16 && off(m)) || (n >= 16 && off(n))));
}

std::optional<TraceSamples::RankSpread> RankSpreadOf(const std::vector<RankOpTime>& ops,
                                                     int64_t min_ops) {
  // key → rank → (seconds, ops)
  std::map<std::tuple<int, double, double>, std::map<int32_t, std::pair<double, int64_t>>> by_key;
  for (const RankOpTime& o : ops) {
    auto& [seconds, count] = by_key[o.key][o.rank];
    seconds += o.seconds;
    ++count;
  }
  // rank → (its seconds, the same ops at their mean over ranks, ops)
  std::map<int32_t, std::tuple<double, double, int64_t>> ranks;
  for (const auto& [key, by_rank] : by_key) {
    if (by_rank.size() < 2) continue;
    double seconds = 0, count = 0;
    for (const auto& [rank, sc] : by_rank) seconds += sc.first, count += sc.second;
    const double mean = seconds / count;
    for (const auto& [rank, sc] : by_rank) {
      auto& [own, reference, n] = ranks[rank];
      own += sc.first;
      reference += mean * static_cast<double>(sc.second);
      n += sc.second;
    }
  }
  std::vector<double> ratios;
  for (const auto& [rank, t] : ranks) {
    const auto& [own, reference, n] = t;
    if (n >= min_ops && reference > 0) ratios.push_back(own / reference);
  }
  if (ratios.size() < 2) return std::nullopt;
  double sum = 0;
  for (double q : ratios) sum += q;
  const double mean = sum / static_cast<double>(ratios.size());
  return TraceSamples::RankSpread{*std::max_element(ratios.begin(), ratios.end()) / mean - 1,
                                  static_cast<int32_t>(ratios.size())};
}

StatusOr<TraceSamples> CollectSamples(const std::vector<std::string>& paths) {
  if (paths.empty()) return InvalidArgument("no trace files given");
  TraceSamples out;
  for (const std::string& path : paths) {
    SampleSink sink(path, &out);
    ASSIGN_OR_RETURN(importers::ImportResult imported,
                     importers::ImportTrace(path, std::nullopt, &sink));
    for (const auto& [why, n] : imported.stats.skipped) out.unused["malformed: " + why] += n;
    RETURN_IF_ERROR(sink.Finish());
    out.files.push_back(path);
  }
  return out;
}

}  // namespace shardscope::calibrate
