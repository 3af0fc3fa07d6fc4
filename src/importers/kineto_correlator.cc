#include "importers/kineto_correlator.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "importers/kineto_names.h"

namespace shardscope::importers::kineto {

using trace::Collective;

std::vector<int32_t> KinetoCorrelator::GroupOf(const CommArgs& a, trace::Stat* why) {
  std::vector<int32_t> group;
  std::vector<int64_t> ranks;
  bool truncated = false;
  if (!a.pg_ranks.empty() && ParseRankList(a.pg_ranks, &ranks, &truncated) && !truncated &&
      !ranks.empty()) {
    group.assign(ranks.begin(), ranks.end());
    return group;
  }
  if (!a.pg_name.empty()) {
    auto it = groups_.pg_ranks.find(a.pg_name);
    if (it != groups_.pg_ranks.end() &&
        (a.group_size < 0 || a.group_size == int64_t(it->second.size()))) {
      return it->second;
    }
  }
  if (a.group_size > 0 && a.rank_start >= 0 && a.rank_stride > 0) {
    for (int64_t i = 0; i < a.group_size; ++i) {
      group.push_back(static_cast<int32_t>(a.rank_start + i * a.rank_stride));
    }
    return group;
  }
  if (a.group_size > 0 && groups_.world_size && a.group_size == *groups_.world_size) {
    for (int32_t r = 0; r < *groups_.world_size; ++r) group.push_back(r);
    return group;
  }
  *why = truncated ? trace::Stat::kGroupTruncated : trace::Stat::kGroupUnknown;
  return group;
}

void KinetoCorrelator::FillFromArgs(const CommArgs& a, Collective c, trace::OpEvent* ev) {
  trace::Stat why = trace::Stat::kGroupUnknown;
  std::vector<int32_t> group = GroupOf(a, &why);
  if (group.empty()) Note(why);
  ev->dim = DimOfDescription(a.pg_desc);
  // The msg nelems / dtype args, else the host op's first input tensor.
  const bool from_shape = a.in_nelems < 0 && a.out_nelems < 0 && a.shape_nelems >= 0;
  const std::string& dtype = a.dtype.empty() && from_shape ? a.shape_dtype : a.dtype;
  std::string ours;
  int64_t size = dtype.empty() ? 0 : KinetoDtypeSize(dtype, &ours);
  ev->dtype = ours;
  if (size == 0) {
    if (dtype.empty()) {
      Note(trace::Stat::kCommWithoutDtype);
    } else {
      Note(trace::Stat::kUnknownDtype, dtype.substr(0, 24));
    }
  }
  if (from_shape) Note(trace::Stat::kCommSizedFromInputDims);
  int64_t n = static_cast<int64_t>(group.size());
  int64_t gs = a.group_size > 0 ? a.group_size : n;
  int64_t in = from_shape ? a.shape_nelems : a.in_nelems, out = a.out_nelems;
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
  if (elems < 0 && size > 0) Note(trace::Stat::kCommWithoutSize);
  if (elems >= 0 && size > 0) ev->bytes = elems * size;
  if (c == Collective::kSend || c == Collective::kRecv) {
    if (a.rank >= 0 && a.rank < n) ev->peer = group[a.rank];
    if (ev->peer < 0) Note(trace::Stat::kP2pWithoutPeer);
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

void KinetoCorrelator::BuildIndex() {
  std::sort(
      events_->runtime.begin(), events_->runtime.end(),
      [](const RuntimeCall& a, const RuntimeCall& b) { return a.correlation < b.correlation; });
  std::vector<HostComm>& host = events_->host_comms;
  std::sort(host.begin(), host.end(), [](const HostComm& a, const HostComm& b) {
    return a.tid < b.tid || (a.tid == b.tid && a.ts < b.ts);
  });
  for (size_t i = 0; i < host.size(); ++i) {
    if (host[i].external_id >= 0 && host[i].args >= 0) {
      host_by_external_id_.emplace(host[i].external_id, static_cast<int32_t>(i));
    }
  }
  std::vector<HostGemm>& gemms = events_->host_gemms;
  std::sort(gemms.begin(), gemms.end(), [](const HostGemm& a, const HostGemm& b) {
    return a.tid < b.tid || (a.tid == b.tid && a.ts < b.ts);
  });
  for (size_t i = 0; i < gemms.size(); ++i) {
    if (gemms[i].external_id >= 0) {
      gemm_by_external_id_.emplace(gemms[i].external_id, static_cast<int32_t>(i));
    }
  }
  indexed_ = true;
}

const RuntimeCall* KinetoCorrelator::LaunchOf(const GpuOp& op) {
  const std::vector<RuntimeCall>& runtime = events_->runtime;
  if (op.correlation < 0 || runtime.empty()) return nullptr;
  if (!indexed_) BuildIndex();
  auto rt = std::lower_bound(runtime.begin(), runtime.end(), op.correlation,
                             [](const RuntimeCall& r, int64_t c) { return r.correlation < c; });
  if (rt == runtime.end() || rt->correlation != op.correlation) return nullptr;
  return &*rt;
}

void KinetoCorrelator::ResolveCompute(const GpuOp& op, trace::OpEvent* ev) {
  if (events_->host_gemms.empty()) return;
  const RuntimeCall* rt = LaunchOf(op);
  if (rt == nullptr) return;
  const std::vector<HostGemm>& gemms = events_->host_gemms;
  auto encloses = [&](const HostGemm& g) {
    return g.tid == rt->tid && g.ts <= rt->ts && rt->ts <= g.end;
  };
  const HostGemm* found = nullptr;
  if (rt->external_id >= 0) {
    auto h = gemm_by_external_id_.find(rt->external_id);
    if (h != gemm_by_external_id_.end() && encloses(gemms[h->second])) found = &gemms[h->second];
  }
  if (found == nullptr) {
    // The innermost (latest-starting) product enclosing the launch on its thread.
    auto it =
        std::upper_bound(gemms.begin(), gemms.end(), std::make_pair(rt->tid, rt->ts),
                         [](const std::pair<int64_t, int64_t>& key, const HostGemm& g) {
                           return key.first < g.tid || (key.first == g.tid && key.second < g.ts);
                         });
    for (int looked = 0; it != gemms.begin() && looked < 16; ++looked) {
      --it;
      if (it->tid != rt->tid) break;
      if (encloses(*it)) {
        found = &*it;
        break;
      }
    }
  }
  if (found == nullptr) return;
  ev->kind = "gemm";
  ev->flops = found->flops;
  ev->bytes_read = found->bytes_read;
  ev->bytes_written = found->bytes_written;
  ev->dtype = found->dtype;
  Note(trace::Stat::kGemmShapeFromHost);
}

const CommArgs* KinetoCorrelator::FindHostArgs(const GpuOp& op,
                                               std::optional<Collective>* name_collective) {
  const std::vector<HostComm>& host = events_->host_comms;
  const RuntimeCall* rt = LaunchOf(op);
  if (rt == nullptr) return nullptr;
  // Newer PyTorch: the launch carries the External id of the record_param_comms
  // around it (older versions write the correlation there: the enclosure check
  // keeps a coincidence from joining).
  if (rt->external_id >= 0) {
    auto h = host_by_external_id_.find(rt->external_id);
    if (h != host_by_external_id_.end()) {
      const HostComm& hc = host[h->second];
      if (hc.tid == rt->tid && hc.ts <= rt->ts && rt->ts <= hc.end) {
        *name_collective = hc.collective;
        return &events_->comm_args[hc.args];
      }
    }
  }
  // Else the innermost collective call on the launching thread that encloses the launch.
  auto it =
      std::upper_bound(host.begin(), host.end(), std::make_pair(rt->tid, rt->ts),
                       [](const std::pair<int64_t, int64_t>& key, const HostComm& h) {
                         return key.first < h.tid || (key.first == h.tid && key.second < h.ts);
                       });
  const CommArgs* args = nullptr;
  int looked = 0;
  while (it != host.begin() && looked++ < 64) {
    --it;
    if (it->tid != rt->tid) break;
    if (it->ts <= rt->ts && rt->ts <= it->end) {
      if (!*name_collective && it->collective) *name_collective = it->collective;
      if (args == nullptr && it->args >= 0) args = &events_->comm_args[it->args];
      if (args != nullptr && *name_collective) break;
    }
  }
  return args;
}

void KinetoCorrelator::ResolveComm(const GpuOp& op, trace::OpEvent* ev) {
  const CommArgs* args = op.args >= 0 ? &events_->comm_args[op.args] : nullptr;
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
    Note(trace::Stat::kCommCollectiveUnknown);
    return;
  }
  ev->collective = *coll;
  ev->kind = std::string(trace::CollectiveName(*coll));
  if (*coll == Collective::kNone) {
    // reduce, gather, barrier, …: kept as communication time, named in `kind`.
    ev->kind = args && !args->collective.empty() ? args->collective : "other_collective";
    Note(trace::Stat::kCollectiveNotModelled, ev->kind.substr(0, 24));
    return;
  }
  if (args == nullptr) {
    Note(trace::Stat::kCommWithoutArgs);
    return;
  }
  FillFromArgs(*args, *coll, ev);
}

}  // namespace shardscope::importers::kineto
