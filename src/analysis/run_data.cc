#include "analysis/run_data.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/collective.h"

namespace shardscope::analysis {

void RunCollector::OnMetadata(const nlohmann::json& metadata) {
  if (metadata.is_object()) data_->metadata = metadata;
}

void RunCollector::OnProcessName(int32_t rank, std::string_view name) {
  Rank(rank).name = std::string(name);
}

RankData& RunCollector::Rank(int32_t rank) {
  if (rank != last_rank_ || last_rank_data_ == nullptr) {
    last_rank_ = rank;
    last_rank_data_ = &data_->ranks[rank];  // std::map: references stay valid
  }
  return *last_rank_data_;
}

int32_t RunCollector::InternGroup(Dim dim, const std::vector<int32_t>& ranks, bool p2p) {
  for (int32_t id : recent_groups_) {
    if (id >= 0 && data_->groups[id].dim == dim && data_->groups[id].ranks == ranks) return id;
  }
  scratch_key_.first = dim;
  scratch_key_.second = ranks;  // reuses capacity: no allocation in steady state
  auto it = group_index_.find(scratch_key_);
  int32_t id;
  if (it != group_index_.end()) {
    id = it->second;
  } else {
    id = static_cast<int32_t>(data_->groups.size());
    data_->groups.push_back({ranks, dim, p2p});
    group_index_.emplace(scratch_key_, id);
  }
  recent_groups_[recent_next_] = id;
  recent_next_ = (recent_next_ + 1) % recent_groups_.size();
  return id;
}

double* RunCollector::TrafficCell(uint64_t key) {
  for (const auto& [k, cell] : recent_traffic_) {
    if (cell != nullptr && k == key) return cell;
  }
  double* cell = &data_->traffic[key];
  recent_traffic_[recent_traffic_next_] = {key, cell};
  recent_traffic_next_ = (recent_traffic_next_ + 1) % recent_traffic_.size();
  return cell;
}

size_t SizeBucketIndex(Collective c, Dim dim, double bytes) {
  const int k = std::clamp(static_cast<int>(std::floor(std::log2(std::max(bytes, 1.0)))), 0,
                           kSizeBuckets - 1);
  return (static_cast<size_t>(c) * trace::kNumDimPositions + trace::DimPosition(dim)) *
             kSizeBuckets +
         static_cast<size_t>(k);
}

void RunCollector::AddCommChoice(const trace::OpEvent& op, size_t bucket) {
  // An all-to-all is named by its kind (nccl, hierarchical, low_latency).
  choice_.assign(op.all_to_all.empty() ? op.algorithm : op.all_to_all);
  if (!op.protocol.empty()) {
    choice_ += '/';
    choice_ += op.protocol;
  }
  auto& choices = data_->comm_choices[bucket];
  auto it = choices.find(std::string_view(choice_));
  if (it == choices.end()) {
    choices.emplace(choice_, 1);
  } else {
    ++it->second;
  }
}

BandwidthSums& RunCollector::Bandwidth(int32_t group, Collective c) {
  size_t i = static_cast<size_t>(group) * trace::kNumCollectives + static_cast<size_t>(c);
  if (i >= bandwidth_index_.size()) bandwidth_index_.resize(i + 1, nullptr);
  if (bandwidth_index_[i] == nullptr) bandwidth_index_[i] = &data_->bandwidth[{group, c}];
  return *bandwidth_index_[i];
}

void RunCollector::AddTraffic(int32_t from, int32_t to, double bytes, const trace::OpEvent& op,
                              RankData* rd) {
  if (bytes <= 0 || from == to) return;
  uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32) | static_cast<uint32_t>(to);
  *TrafficCell(key) += bytes;
  data_->traffic_by_collective[static_cast<int>(op.collective)] += bytes;
  data_->traffic_by_dim[trace::DimPosition(op.dim)] += bytes;
  rd->bytes_sent += bytes;
}

void RunCollector::AddExpertTokens(const trace::OpEvent& op) {
  ExpertLoadCell& cell = data_->expert_load[{op.phase, op.step, op.layer}];
  const int32_t ep_rank = *std::min_element(op.experts.begin(), op.experts.end());
  for (size_t i = 0; i < op.experts.size() && i < op.expert_tokens.size(); ++i) {
    cell.tokens[op.experts[i]] += op.expert_tokens[i];
    cell.ep_rank[op.experts[i]] = ep_rank;
  }
}

void RunCollector::OnOp(const trace::OpEvent& op) {
  if (!op.experts.empty()) AddExpertTokens(op);
  if (op.request.id >= 0) data_->requests.push_back({op.rank, op.ts_ns, op.end_ns(), op.request});
  if (op.kind == "iteration") data_->iterations[op.rank].emplace_back(op.ts_ns, op.end_ns());
  RankData& rd = Rank(op.rank);
  OpRec rec;
  rec.ts = op.ts_ns;
  rec.end = op.end_ns();
  rec.peer = op.peer;
  rec.step = op.step;
  rec.cat = op.category;
  rec.coll = op.collective;
  rec.phase = op.phase;
  rec.dim = op.dim;
  int p = static_cast<int>(op.phase);
  rd.flops[p] += static_cast<double>(op.flops);
  rd.mem_bytes[p] += static_cast<double>(op.bytes_read) + static_cast<double>(op.bytes_written);
  if (op.category == Category::kComm) {
    bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
    // An all-to-all(v) that sends nothing lists its zeros per peer: sized, 0 bytes
    // (our traces leave out a total of 0, as every default).
    if (op.bytes <= 0 && op.bytes_per_peer.empty()) {
      ++rd.comm_ops_without_bytes;
      ++data_->comm_ops_without_bytes;
    }
    if (op.collective == Collective::kNone || (p2p ? op.peer < 0 : op.group.empty())) {
      ++rd.comm_ops_without_group;
      ++data_->comm_ops_without_group;
      if (op.collective == Collective::kNone) ++data_->comm_ops_unknown_collective;
    }
  }
  if (op.category == Category::kComm && op.collective != Collective::kNone) {
    bool p2p = op.collective == Collective::kSend || op.collective == Collective::kRecv;
    if (p2p && op.peer >= 0) {
      pair_.assign({std::min(op.rank, op.peer), std::max(op.rank, op.peer)});
      rec.group = InternGroup(op.dim, pair_, true);
    } else if (!op.group.empty()) {
      rec.group = InternGroup(op.dim, op.group, false);
    }
    data_->payload_by_collective[static_cast<int>(op.collective)] += static_cast<double>(op.bytes);
    data_->payload_by_dim[trace::DimPosition(op.dim)] += static_cast<double>(op.bytes);
    // Wire traffic this rank sends, by the algorithm that moved it.
    const std::vector<int32_t>& g = op.group;
    int64_t n = static_cast<int64_t>(g.size());
    double bytes = static_cast<double>(op.bytes);
    if (op.collective == Collective::kSend) {
      if (op.peer >= 0) AddTraffic(op.rank, op.peer, bytes, op, &rd);
    } else if (op.collective != Collective::kRecv && n > 1) {
      auto it = std::find(g.begin(), g.end(), op.rank);
      if (it == g.end()) {
        ++data_->comm_ops_outside_group;
      } else {
        int64_t pos = it - g.begin();
        int32_t next = g[(pos + 1) % n];
        double nn = static_cast<double>(n);
        switch (op.collective) {
          case Collective::kAllReduce:
            AddTraffic(op.rank, next, 2.0 * (nn - 1) / nn * bytes, op, &rd);
            break;
          case Collective::kAllGather:
          case Collective::kReduceScatter:
            AddTraffic(op.rank, next, (nn - 1) / nn * bytes, op, &rd);
            break;
          case Collective::kAllToAll:
            for (int64_t j = 0; j < n; ++j) {
              double b = op.bytes_per_peer.empty() ? bytes / nn
                                                   : static_cast<double>(op.bytes_per_peer[j]);
              if (j != pos) AddTraffic(op.rank, g[j], b, op, &rd);
            }
            break;
          case Collective::kBroadcast: {
            // A chain from the root along the group order: all but the last member forward.
            int32_t root = op.root >= 0 ? op.root : g[0];
            auto rit = std::find(g.begin(), g.end(), root);
            int64_t root_pos = rit == g.end() ? 0 : rit - g.begin();
            if ((pos - root_pos + n) % n < n - 1) AddTraffic(op.rank, next, bytes, op, &rd);
            break;
          }
          default:
            break;
        }
      }
    }
    if (rec.group >= 0) {
      BandwidthSums& bw = Bandwidth(rec.group, op.collective);
      int64_t group_size = static_cast<int64_t>(data_->groups[rec.group].ranks.size());
      double factor = BusFactor(op.collective, group_size);
      ++bw.ops;
      if (op.bytes > 0) {  // an op of unknown size stays out of the bandwidth sums
        bw.bytes += bytes;
        bw.bus_bytes += bytes * factor;
        bw.seconds += static_cast<double>(op.dur_ns) * 1e-9;
        if (op.dur_ns > 0) {
          bw.busbw.push_back(
              static_cast<float>(bytes * factor / (static_cast<double>(op.dur_ns) * 1e-9)));
          if (data_->bandwidth_by_size.empty()) {
            data_->bandwidth_by_size.resize(static_cast<size_t>(trace::kNumCollectives) *
                                            trace::kNumDimPositions * kSizeBuckets);
          }
          const size_t bucket = SizeBucketIndex(op.collective, op.dim, bytes);
          SizeBucketSums& b = data_->bandwidth_by_size[bucket];
          if (!op.algorithm.empty()) AddCommChoice(op, bucket);
          ++b.ops;
          b.bytes += bytes;
          b.bus_bytes += bytes * factor;
          b.seconds += static_cast<double>(op.dur_ns) * 1e-9;
        }
      }
    }
  }
  if (rd.ops.size() == rd.ops.capacity()) GrowOps(&rd);
  rd.ops.push_back(rec);
  ++ops_seen_;
}

void RunCollector::GrowOps(RankData* rd) {
  const int64_t n = static_cast<int64_t>(rd->ops.size());
  int64_t want = std::max<int64_t>(2 * n, 1024);
  // Once a few thousand ops show this rank's share, project it to the whole
  // trace: all ranks together at most 1.5 × the expected ops, one rank at most
  // a sixteenth of the machine's memory.
  if (ops_seen_ >= 4096 && ops_seen_ < expected_ops_) {
    static const int64_t kMaxOps = [] {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      return pages > 0 && page > 0
                 ? static_cast<int64_t>(pages) * page / 16 / static_cast<int64_t>(sizeof(OpRec))
                 : int64_t{1} << 20;
    }();
    const double share = static_cast<double>(n) / static_cast<double>(ops_seen_);
    const int64_t projected =
        std::min(kMaxOps, static_cast<int64_t>(share * static_cast<double>(expected_ops_)));
    const int64_t extra = projected - static_cast<int64_t>(rd->ops.capacity());
    if (projected > want && ops_reserved_ + extra <= expected_ops_ + expected_ops_ / 2) {
      want = projected;
    }
  }
  ops_reserved_ += want - static_cast<int64_t>(rd->ops.capacity());
  rd->ops.reserve(static_cast<size_t>(want));
}

void RunCollector::OnSpan(const trace::SpanEvent& span) {
  Rank(span.rank).spans.push_back({span.ts_ns, span.end_ns(), span.kind, span.phase, span.step});
}

void RunCollector::OnCounter(const trace::CounterEvent& counter) {
  if (counter.name == "serving") {
    for (const auto& [series, value] : counter.values) {
      if (series == "decode") data_->iteration_decodes[{counter.rank, counter.ts_ns}] = value;
    }
    return;
  }
  if (counter.name != "memory") return;
  RankData& rd = Rank(counter.rank);
  double total = 0;
  for (const auto& [series, value] : counter.values) {
    total += value;
    double& peak = rd.peak_by_series[series];
    peak = std::max(peak, value);
  }
  rd.peak_memory = rd.has_memory ? std::max(rd.peak_memory, total) : total;
  rd.has_memory = true;
}

}  // namespace shardscope::analysis
