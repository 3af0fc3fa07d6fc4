#include "sim/collective_sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace shardscope::sim {
namespace {

// The call nccl-tests makes for `bytes` over `members`: all-to-all sends
// bytes/n to every member; send/recv goes from the first member to the last
// (across the network when the members span domains).
CollectiveCall MakeCall(Collective collective, const std::vector<int64_t>& members, int64_t bytes) {
  CollectiveCall call;
  call.collective = collective;
  call.bytes = bytes;
  if (collective == Collective::kSend || collective == Collective::kRecv) {
    call.collective = Collective::kSend;
    call.devices = {members.front(), members.back()};
    return call;
  }
  call.devices = members;
  if (collective == Collective::kAllToAll) {
    const int64_t n = static_cast<int64_t>(members.size());
    call.per_peer.assign(n, std::vector<int64_t>(n, bytes / n));
  }
  return call;
}

// The link kind whose transfer time is largest in the plan, or "latency"
// when the latencies outweigh every transfer.
std::string Bottleneck(const Topology& topo, const CollectivePlan& plan) {
  double latency = 0, nvlink = 0, nic = 0;
  for (const Stage& st : plan.stages) {
    latency += st.latency;
    std::map<int32_t, double> per_link;
    for (const LinkLoad& l : st.loads) per_link[l.link] += l.bytes;
    double up = 0, out = 0;
    for (const auto& [link, bytes] : per_link) {
      const double t = bytes / topo.Capacity(link);
      (topo.IsScaleOut(link) ? out : up) = std::max(topo.IsScaleOut(link) ? out : up, t);
    }
    // A stage lasts as long as its slowest link: charge it to that kind.
    (out > up ? nic : nvlink) += std::max(up, out);
  }
  if (latency >= nvlink && latency >= nic) return "latency";
  return nic > nvlink ? "nic" : "nvlink";
}

}  // namespace

StatusOr<int64_t> ParseByteSize(std::string_view text) {
  if (text.empty()) return InvalidArgument("a size must not be empty");
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) {
    return InvalidArgument("size '{}' is not a number of bytes (8, 64K, 8M, 8G)", text);
  }
  int64_t value = std::stoll(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M" || unit == "m") {
    shift = 20;
  } else if (unit == "G" || unit == "g") {
    shift = 30;
  } else if (!unit.empty()) {
    return InvalidArgument("size '{}' has an unknown unit '{}' (K, M or G)", text, unit);
  }
  if (value > (int64_t{1} << (62 - shift))) return InvalidArgument("size '{}' is too large", text);
  return value << shift;
}

StatusOr<std::vector<SweepRow>> SweepCollective(const Topology& topo, int64_t devices,
                                                const SweepOptions& o) {
  const int64_t ranks = o.ranks == 0 ? devices : o.ranks;
  if (ranks < 2 || ranks > devices) {
    return InvalidArgument("--ranks must be in [2, {}] (the cluster's devices), got {}", devices,
                           ranks);
  }
  if (o.min_bytes < 1 || o.max_bytes < o.min_bytes) {
    return InvalidArgument("--sizes: the first size must be at least 1 and at most the last");
  }
  if (!(o.factor > 1)) return InvalidArgument("--sizes: the factor must be above 1");
  if (o.collective == Collective::kNone) return InvalidArgument("--op: no collective given");
  std::vector<int64_t> members(ranks);
  for (int64_t i = 0; i < ranks; ++i) members[i] = i;
  std::vector<SweepRow> rows;
  for (double size = static_cast<double>(o.min_bytes); size <= static_cast<double>(o.max_bytes);
       size *= o.factor) {
    // Whole elements, and (as nccl-tests) a multiple of the ranks for the split collectives.
    int64_t bytes = static_cast<int64_t>(size) / o.element_size * o.element_size;
    const int64_t split = o.collective == Collective::kAllReduce ||
                                  o.collective == Collective::kSend ||
                                  o.collective == Collective::kBroadcast
                              ? 1
                              : ranks;
    bytes = bytes / (split * o.element_size) * (split * o.element_size);
    if (bytes <= 0 || (!rows.empty() && rows.back().bytes == bytes)) continue;
    const CollectiveCall call = MakeCall(o.collective, members, bytes);
    ASSIGN_OR_RETURN(CollectivePlan plan, Decompose(topo, call, o.algorithm, o.protocol));
    SweepRow r;
    r.bytes = bytes;
    r.count = bytes / o.element_size;
    r.seconds = UncontendedSeconds(topo, plan);
    r.algbw = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds : 0;
    r.busbw = r.algbw * BusFactor(call.collective, ranks);
    r.algorithm = plan.algorithm;
    r.protocol = plan.protocol;
    r.bottleneck = Bottleneck(topo, plan);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace shardscope::sim
