#include "sim/collectives.h"

#include <algorithm>
#include <map>

namespace shardscope::sim {
namespace {

// Adds `bytes` on every link from a to b and returns the hop's latency.
double AddPath(const Topology& topo, int64_t a, int64_t b, double bytes, Stage* stage,
               std::vector<int32_t>* scratch) {
  scratch->clear();
  topo.AppendPath(a, b, scratch);
  for (int32_t l : *scratch) stage->loads.push_back({l, bytes});
  return topo.Latency(a, b);
}

// A ring over `devices` carrying `per_link` bytes on each hop for `steps` steps.
Stage RingStage(const Topology& topo, const std::vector<int64_t>& devices, double per_link,
                int64_t steps) {
  Stage s;
  std::vector<int32_t> scratch;
  double alpha = 0;
  const size_t n = devices.size();
  for (size_t i = 0; i < n && n > 1; ++i) {
    alpha =
        std::max(alpha, AddPath(topo, devices[i], devices[(i + 1) % n], per_link, &s, &scratch));
  }
  s.latency = static_cast<double>(steps) * alpha;
  return s;
}

CollectivePlan Ring(const Topology& topo, const CollectiveCall& c) {
  const double n = static_cast<double>(c.devices.size());
  const int64_t ni = static_cast<int64_t>(c.devices.size());
  const double s = static_cast<double>(c.bytes);
  CollectivePlan p{Algorithm::kRing, {}};
  switch (c.collective) {
    case Collective::kAllReduce:
      p.stages.push_back(RingStage(topo, c.devices, 2 * (n - 1) / n * s, 2 * (ni - 1)));
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      p.stages.push_back(RingStage(topo, c.devices, (n - 1) / n * s, ni - 1));
      break;
    case Collective::kBroadcast: {
      Stage st;
      std::vector<int32_t> scratch;
      double alpha = 0;
      for (int64_t i = 0; i + 1 < ni; ++i) {
        const int64_t from = c.devices[(c.root + i) % ni], to = c.devices[(c.root + i + 1) % ni];
        alpha = std::max(alpha, AddPath(topo, from, to, s, &st, &scratch));
      }
      st.latency = static_cast<double>(ni - 1) * alpha;
      p.stages.push_back(std::move(st));
      break;
    }
    default:
      break;
  }
  return p;
}

CollectivePlan Tree(const Topology& topo, const CollectiveCall& c) {
  const int64_t n = static_cast<int64_t>(c.devices.size());
  const double s = static_cast<double>(c.bytes);
  Stage st;
  std::vector<int32_t> scratch;
  double alpha = 0;
  int64_t depth = 0;
  for (int64_t i = 1; i < n; ++i) {
    const int64_t parent = (i - 1) / 2;
    alpha = std::max(alpha, AddPath(topo, c.devices[i], c.devices[parent], s, &st, &scratch));
    alpha = std::max(alpha, AddPath(topo, c.devices[parent], c.devices[i], s, &st, &scratch));
    int64_t d = 0;
    for (int64_t j = i; j > 0; j = (j - 1) / 2) ++d;
    depth = std::max(depth, d);
  }
  st.latency = 2.0 * static_cast<double>(depth) * alpha;
  return {Algorithm::kTree, {std::move(st)}};
}

// Members grouped by scale-up domain, in ring order; empty unless every domain
// holds the same number (> 1) of members and there is more than one domain.
std::vector<std::vector<int64_t>> DomainBlocks(const Topology& topo,
                                               const std::vector<int64_t>& devices) {
  std::map<int64_t, std::vector<int64_t>> by_domain;
  std::vector<int64_t> order;
  for (int64_t d : devices) {
    const int64_t dom = topo.DomainOf(d);
    if (!by_domain.count(dom)) order.push_back(dom);
    by_domain[dom].push_back(d);
  }
  std::vector<std::vector<int64_t>> blocks;
  if (order.size() < 2) return blocks;
  const size_t k = by_domain[order[0]].size();
  if (k < 2) return blocks;
  for (int64_t dom : order) {
    if (by_domain[dom].size() != k) return {};
    // Members of one domain must really share it (scale-up kind none does not).
    if (!topo.SameDomain(by_domain[dom][0], by_domain[dom][1])) return {};
    blocks.push_back(by_domain[dom]);
  }
  return blocks;
}

CollectivePlan Hierarchical(const Topology& topo, const CollectiveCall& c,
                            const std::vector<std::vector<int64_t>>& blocks) {
  const double k = static_cast<double>(blocks[0].size());
  const double m = static_cast<double>(blocks.size());
  const int64_t ki = static_cast<int64_t>(blocks[0].size());
  const int64_t mi = static_cast<int64_t>(blocks.size());
  const double s = static_cast<double>(c.bytes);
  auto intra = [&](double per_link) {
    Stage st;
    for (const auto& b : blocks) {
      Stage r = RingStage(topo, b, per_link, ki - 1);
      st.loads.insert(st.loads.end(), r.loads.begin(), r.loads.end());
      st.latency = std::max(st.latency, r.latency);
    }
    return st;
  };
  CollectivePlan p{Algorithm::kHierarchical, {}};
  p.stages.push_back(intra((k - 1) / k * s));  // reduce-scatter in each domain
  Stage across;                                // one ring per rail
  for (int64_t j = 0; j < ki; ++j) {
    std::vector<int64_t> rail;
    for (const auto& b : blocks) rail.push_back(b[j]);
    Stage r = RingStage(topo, rail, 2 * (m - 1) / m * s / k, 2 * (mi - 1));
    across.loads.insert(across.loads.end(), r.loads.begin(), r.loads.end());
    across.latency = std::max(across.latency, r.latency);
  }
  p.stages.push_back(std::move(across));
  p.stages.push_back(intra((k - 1) / k * s));  // all-gather in each domain
  return p;
}

// An all-to-all's rows as their non-zero (position, bytes) entries, by
// position: the call's sparse rows, or those of its dense matrix (kept in
// `storage`). A member without a row sends nothing.
std::vector<std::span<const PeerBytes>> SparseRows(const CollectiveCall& c,
                                                   std::vector<std::vector<PeerBytes>>* storage) {
  if (!c.sparse_rows.empty()) return c.sparse_rows;
  storage->resize(c.per_peer.size());
  std::vector<std::span<const PeerBytes>> rows(c.per_peer.size());
  for (size_t i = 0; i < c.per_peer.size(); ++i) {
    for (size_t j = 0; j < c.per_peer[i].size(); ++j) {
      const int64_t bytes = c.per_peer[i][j];
      if (bytes != 0) (*storage)[i].push_back({static_cast<int32_t>(j), bytes});
    }
    rows[i] = (*storage)[i];
  }
  return rows;
}

// Asks for the cache lines of a row (the ops' rows are cold).
void PrefetchRow(std::span<const PeerBytes> row) {
  const char* p = reinterpret_cast<const char*>(row.data());
  for (size_t o = 0; o < row.size_bytes(); o += 64) __builtin_prefetch(p + o);
}

// The all-to-all's stage without a torus: a pair's path is the sender's up
// link and the receiver's down link, of the scale-up switch within a domain and
// of the NICs across, so each link's load is a row or column sum. Sums stay in
// whole bytes and the loads come out in link order: the same stage the general
// loop below makes, without a path lookup per pair.
Stage SwitchedAllToAll(const Topology& topo, const CollectiveCall& c,
                       const std::vector<std::span<const PeerBytes>>& rows) {
  const size_t n = c.devices.size();
  // Per member: its domain (−1 − i where there are none: no pair shares one).
  std::vector<int64_t> domain(n);
  for (size_t i = 0; i < n; ++i) {
    domain[i] = topo.has_domains() ? topo.DomainOf(c.devices[i]) : -1 - static_cast<int64_t>(i);
  }
  // Per member: bytes up and down, within its domain and across.
  std::vector<int64_t> up_in(n), up_out(n), down_in(n), down_out(n);
  bool any_in = false, any_out = false;  // bytes moved within a domain, across
  for (size_t i = 0; i < n && i < rows.size(); ++i) {
    if (i + 1 < rows.size()) PrefetchRow(rows[i + 1]);
    const int64_t a = c.devices[i], own = domain[i];
    int64_t in = 0, out = 0;
    for (const PeerBytes& e : rows[i]) {
      const size_t j = static_cast<uint32_t>(e.position);
      // The member's own part (the same device) stays local.
      if (j >= n || e.bytes <= 0 || c.devices[j] == a) continue;
      if (domain[j] == own) {
        in += e.bytes;
        down_in[j] += e.bytes;
      } else {
        out += e.bytes;
        down_out[j] += e.bytes;
      }
    }
    up_in[i] = in;
    up_out[i] = out;
    any_in = any_in || in > 0;
    any_out = any_out || out > 0;
  }
  Stage st;
  if (any_in) st.latency = topo.SwitchLatency();
  if (any_out) st.latency = std::max(st.latency, topo.NicLatency());
  // Link ids grow with the device within each kind (topology.h): for members
  // in device order, these four passes give the loads in link order already.
  for (const auto& [link_of, bytes] :
       {std::pair{&Topology::ScaleUpUp, &up_in}, std::pair{&Topology::ScaleUpDown, &down_in},
        std::pair{&Topology::NicUp, &up_out}, std::pair{&Topology::NicDown, &down_out}}) {
    for (size_t i = 0; i < n; ++i) {
      if ((*bytes)[i] > 0) {
        st.loads.push_back({(topo.*link_of)(c.devices[i]), static_cast<double>((*bytes)[i])});
      }
    }
  }
  SortAndMergeLoads(&st.loads);  // members out of order, or a device twice
  return st;
}

CollectivePlan Direct(const Topology& topo, const CollectiveCall& c) {
  Stage st;
  std::vector<int32_t> scratch;
  std::vector<std::vector<PeerBytes>> storage;  // rows of a dense matrix
  if (c.collective == Collective::kAllToAll && !topo.torus()) {
    st = SwitchedAllToAll(topo, c, SparseRows(c, &storage));
  } else if (c.collective == Collective::kAllToAll) {
    // Every pair's bytes summed per link here, in link order: the bytes are
    // whole numbers, so the sums are exact and FlowNetwork::Start (which would
    // sort and merge thousands of entries) gets the same loads it would make.
    const std::vector<std::span<const PeerBytes>> rows = SparseRows(c, &storage);
    std::vector<double> per_link(static_cast<size_t>(topo.num_links()), 0.0);
    std::vector<int32_t> used;
    const size_t n = c.devices.size();
    for (size_t i = 0; i < n && i < rows.size(); ++i) {
      if (i + 1 < rows.size()) PrefetchRow(rows[i + 1]);
      for (const PeerBytes& e : rows[i]) {
        const size_t j = static_cast<uint32_t>(e.position);
        if (j >= n || i == j || e.bytes <= 0) continue;  // own part moves locally
        scratch.clear();
        topo.AppendPath(c.devices[i], c.devices[j], &scratch);
        for (int32_t l : scratch) {
          if (per_link[l] == 0) used.push_back(l);
          per_link[l] += static_cast<double>(e.bytes);
        }
        st.latency = std::max(st.latency, topo.Latency(c.devices[i], c.devices[j]));
      }
    }
    std::sort(used.begin(), used.end());
    st.loads.reserve(used.size());
    for (int32_t l : used) st.loads.push_back({l, per_link[l]});
  } else {  // send / recv
    st.latency =
        AddPath(topo, c.devices[0], c.devices[1], static_cast<double>(c.bytes), &st, &scratch);
  }
  return {Algorithm::kDirect, {std::move(st)}};
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHierarchical, Algorithm::kDirect}) {
    if (AlgorithmName(a) == name) return a;
  }
  return InvalidArgument("unknown collective algorithm '{}' (auto, ring, tree, hierarchical)",
                         name);
}

double UncontendedSeconds(const Topology& topo, const CollectivePlan& plan) {
  double total = 0;
  for (const Stage& st : plan.stages) {
    std::map<int32_t, double> per_link;
    for (const LinkLoad& l : st.loads) per_link[l.link] += l.bytes;
    double t = 0;
    for (const auto& [link, bytes] : per_link) t = std::max(t, bytes / topo.Capacity(link));
    total += st.latency + t;
  }
  return total;
}

namespace {

StatusOr<CollectivePlan> DecomposeByAlgorithm(const Topology& topo, const CollectiveCall& c,
                                              Algorithm forced) {
  auto unsupported = [&](Algorithm a) {
    return Unimplemented("not implemented: the {} algorithm for {} (only ring{})", AlgorithmName(a),
                         CollectiveShortName(c.collective),
                         c.collective == Collective::kAllReduce ? ", tree, hierarchical" : "");
  };
  switch (c.collective) {
    case Collective::kSend:
    case Collective::kRecv:
    case Collective::kAllToAll:
      // One algorithm only: a forced choice for the collectives does not apply.
      return Direct(topo, c);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
      if (forced != Algorithm::kAuto && forced != Algorithm::kRing) return unsupported(forced);
      return Ring(topo, c);
    case Collective::kAllReduce: {
      const auto blocks = DomainBlocks(topo, c.devices);
      if (forced == Algorithm::kRing) return Ring(topo, c);
      if (forced == Algorithm::kTree) return Tree(topo, c);
      if (forced == Algorithm::kHierarchical) {
        // Inside one domain (or one member per domain) it is the ring itself.
        return blocks.empty() ? Ring(topo, c) : Hierarchical(topo, c, blocks);
      }
      if (forced == Algorithm::kDirect) return unsupported(forced);
      std::vector<CollectivePlan> candidates = {Ring(topo, c), Tree(topo, c)};
      if (!blocks.empty()) candidates.push_back(Hierarchical(topo, c, blocks));
      size_t best = 0;
      double best_t = UncontendedSeconds(topo, candidates[0]);
      for (size_t i = 1; i < candidates.size(); ++i) {
        const double t = UncontendedSeconds(topo, candidates[i]);
        if (t < best_t) {
          best_t = t;
          best = i;
        }
      }
      return std::move(candidates[best]);
    }
    case Collective::kNone:
      break;
  }
  return InternalError("collective 'none' has no decomposition");
}

// The calibration's measured line for the collective, each part only where
// slower than the plan's: a larger latency (the line's plus the members'
// typical wait) replaces the plan's steps × link latency (spread over its
// stages in proportion; on the first stage when the model has none), and a
// lower bandwidth scales every stage's link loads so the bytes take size /
// algbw on an idle network. Loads only time transfers
// (the traffic figures come from the ops' bytes), so the scaled loads change
// no byte count.
void ApplyMeasured(const Topology& topo, const CollectiveCall& c, CollectivePlan* plan) {
  const MeasuredCollective* m = topo.Measured(c.collective, static_cast<int64_t>(c.devices.size()));
  if (m == nullptr || plan->stages.empty()) return;
  double latency = 0;
  for (const Stage& st : plan->stages) latency += st.latency;
  const double transfer = UncontendedSeconds(topo, *plan) - latency;
  if (m->algbw > 0 && transfer > 0 && c.bytes > 0) {
    const double scale = static_cast<double>(c.bytes) / m->algbw / transfer;
    if (scale > 1) {
      for (Stage& st : plan->stages) {
        for (LinkLoad& l : st.loads) l.bytes *= scale;
      }
    }
  }
  const double measured = m->latency + m->wait;
  if (measured <= latency) return;
  if (latency <= 0) {
    plan->stages.front().latency = measured;
    return;
  }
  for (Stage& st : plan->stages) st.latency *= measured / latency;
}

}  // namespace

StatusOr<CollectivePlan> Decompose(const Topology& topo, const CollectiveCall& c,
                                   Algorithm forced) {
  ASSIGN_OR_RETURN(CollectivePlan plan, DecomposeByAlgorithm(topo, c, forced));
  ApplyMeasured(topo, c, &plan);
  return plan;
}

}  // namespace shardscope::sim
