#include "sim/collectives.h"

#include <algorithm>
#include <map>
#include <optional>

namespace shardscope::sim {
namespace {

// One protocol's terms as the decomposition uses them. An untuned cluster has
// one set: no base latency, the topology's own hop latency, full bandwidth.
struct Terms {
  bool tuned = false;
  Protocol protocol = Protocol::kSimple;
  double ring_base = 0, tree_base = 0;
  double up_step = 0, out_step = 0;  // tuned only: seconds per step by link kind
  double up_efficiency = 1, out_efficiency = 1;
};

CommProtocol ToCommProtocol(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return CommProtocol::kLL;
    case Protocol::kLL128:
      return CommProtocol::kLL128;
    default:
      return CommProtocol::kSimple;
  }
}

Terms TermsOf(const Topology& topo, Protocol p) {
  Terms t;
  const CommTuning& tuning = topo.tuning();
  if (!tuning.modelled) return t;
  const ProtocolCost& c = tuning.Of(ToCommProtocol(p));
  t.tuned = true;
  t.protocol = p;
  t.ring_base = c.ring_base_latency;
  t.tree_base = c.tree_base_latency;
  t.up_step = c.scale_up_step;
  t.out_step = c.scale_out_step;
  t.up_efficiency = c.scale_up_efficiency;
  t.out_efficiency = c.scale_out_efficiency;
  return t;
}

// Seconds of one algorithm step from a to b: the topology's latency, or the
// protocol's step latency of the link kind when tuned.
double StepLatency(const Topology& topo, const Terms& t, int64_t a, int64_t b) {
  if (!t.tuned) return topo.Latency(a, b);
  if (a == b) return 0;
  return topo.SameDomain(a, b) ? t.up_step : t.out_step;
}

// Adds `bytes` on every link from a to b and returns the hop's latency.
double AddPath(const Topology& topo, const Terms& t, int64_t a, int64_t b, double bytes,
               Stage* stage, std::vector<int32_t>* scratch) {
  scratch->clear();
  topo.AppendPath(a, b, scratch);
  for (int32_t l : *scratch) stage->loads.push_back({l, bytes});
  return StepLatency(topo, t, a, b);
}

// Members of `devices` in the domain of `device`, in order.
std::vector<int64_t> DomainMembers(const Topology& topo, const std::vector<int64_t>& devices,
                                   int64_t device) {
  std::vector<int64_t> out;
  for (int64_t d : devices) {
    if (d == device || topo.SameDomain(d, device)) out.push_back(d);
  }
  return out;
}

// The group's members by domain, in order of first appearance.
std::vector<std::vector<int64_t>> ByDomain(const Topology& topo,
                                           const std::vector<int64_t>& devices) {
  std::vector<std::vector<int64_t>> blocks;
  std::vector<int64_t> domain_of_block;
  for (int64_t d : devices) {
    const int64_t dom = topo.has_domains() ? topo.DomainOf(d) : d;
    auto it = std::find(domain_of_block.begin(), domain_of_block.end(), dom);
    if (it == domain_of_block.end()) {
      domain_of_block.push_back(dom);
      blocks.push_back({d});
    } else {
      blocks[it - domain_of_block.begin()].push_back(d);
    }
  }
  return blocks;
}

// A hop a→b across domains of a tuned ring: NCCL runs one channel per rail,
// so the hop's bytes spread over the NICs of the group's members in a's domain
// (out) and b's (in).
double AddRailedHop(const Topology& topo, const Terms& t, const std::vector<int64_t>& devices,
                    int64_t a, int64_t b, double bytes, Stage* stage) {
  const std::vector<int64_t> from = DomainMembers(topo, devices, a);
  const std::vector<int64_t> to = DomainMembers(topo, devices, b);
  for (int64_t d : from) {
    stage->loads.push_back({topo.NicUp(d), bytes / static_cast<double>(from.size())});
  }
  for (int64_t d : to) {
    stage->loads.push_back({topo.NicDown(d), bytes / static_cast<double>(to.size())});
  }
  return t.out_step;
}

// A ring over `devices` carrying `per_link` bytes on each hop for `steps` steps.
Stage RingStage(const Topology& topo, const Terms& t, const std::vector<int64_t>& devices,
                double per_link, int64_t steps) {
  Stage s;
  std::vector<int32_t> scratch;
  double alpha = 0;
  const size_t n = devices.size();
  for (size_t i = 0; i < n && n > 1; ++i) {
    const int64_t a = devices[i], b = devices[(i + 1) % n];
    const bool railed = t.tuned && a != b && topo.has_domains() && !topo.SameDomain(a, b);
    alpha = std::max(alpha, railed ? AddRailedHop(topo, t, devices, a, b, per_link, &s)
                                   : AddPath(topo, t, a, b, per_link, &s, &scratch));
  }
  s.latency = static_cast<double>(steps) * alpha;
  if (t.tuned && n > 1) {
    // NCCL's ring latency: each traversal crosses each domain boundary once,
    // so of the steps, (steps / (n − 1))·(m − 1) are network steps.
    const int64_t m = static_cast<int64_t>(ByDomain(topo, devices).size());
    const int64_t inter = steps / static_cast<int64_t>(n - 1) * (m - 1);
    s.latency =
        static_cast<double>(steps - inter) * t.up_step + static_cast<double>(inter) * t.out_step;
  }
  return s;
}

CollectivePlan Ring(const Topology& topo, const Terms& t, const CollectiveCall& c) {
  const double n = static_cast<double>(c.devices.size());
  const int64_t ni = static_cast<int64_t>(c.devices.size());
  const double s = static_cast<double>(c.bytes);
  CollectivePlan p{Algorithm::kRing, t.protocol, {}};
  switch (c.collective) {
    case Collective::kAllReduce:
      p.stages.push_back(RingStage(topo, t, c.devices, 2 * (n - 1) / n * s, 2 * (ni - 1)));
      break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      p.stages.push_back(RingStage(topo, t, c.devices, (n - 1) / n * s, ni - 1));
      break;
    case Collective::kBroadcast: {
      Stage st;
      std::vector<int32_t> scratch;
      double alpha = 0;
      for (int64_t i = 0; i + 1 < ni; ++i) {
        const int64_t from = c.devices[(c.root + i) % ni], to = c.devices[(c.root + i + 1) % ni];
        alpha = std::max(alpha, AddPath(topo, t, from, to, s, &st, &scratch));
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

CollectivePlan Tree(const Topology& topo, const Terms& t, const CollectiveCall& c) {
  const int64_t n = static_cast<int64_t>(c.devices.size());
  const double s = static_cast<double>(c.bytes);
  Stage st;
  std::vector<int32_t> scratch;
  double alpha = 0;
  int64_t depth = 0;
  for (int64_t i = 1; i < n; ++i) {
    const int64_t parent = (i - 1) / 2;
    alpha = std::max(alpha, AddPath(topo, t, c.devices[i], c.devices[parent], s, &st, &scratch));
    alpha = std::max(alpha, AddPath(topo, t, c.devices[parent], c.devices[i], s, &st, &scratch));
    int64_t d = 0;
    for (int64_t j = i; j > 0; j = (j - 1) / 2) ++d;
    depth = std::max(depth, d);
  }
  st.latency = 2.0 * static_cast<double>(depth) * alpha;
  return {Algorithm::kTree, t.protocol, {std::move(st)}};
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

CollectivePlan Hierarchical(const Topology& topo, const Terms& t, const CollectiveCall& c,
                            const std::vector<std::vector<int64_t>>& blocks) {
  const double k = static_cast<double>(blocks[0].size());
  const double m = static_cast<double>(blocks.size());
  const int64_t ki = static_cast<int64_t>(blocks[0].size());
  const int64_t mi = static_cast<int64_t>(blocks.size());
  const double s = static_cast<double>(c.bytes);
  auto intra = [&](double per_link) {
    Stage st;
    for (const auto& b : blocks) {
      Stage r = RingStage(topo, t, b, per_link, ki - 1);
      st.loads.insert(st.loads.end(), r.loads.begin(), r.loads.end());
      st.latency = std::max(st.latency, r.latency);
    }
    return st;
  };
  CollectivePlan p{Algorithm::kHierarchical, t.protocol, {}};
  p.stages.push_back(intra((k - 1) / k * s));  // reduce-scatter in each domain
  Stage across;                                // one ring per rail
  for (int64_t j = 0; j < ki; ++j) {
    std::vector<int64_t> rail;
    for (const auto& b : blocks) rail.push_back(b[j]);
    Stage r = RingStage(topo, Terms{}, rail, 2 * (m - 1) / m * s / k, 2 * (mi - 1));
    if (t.tuned) r.latency = static_cast<double>(2 * (mi - 1)) * t.out_step;
    across.loads.insert(across.loads.end(), r.loads.begin(), r.loads.end());
    across.latency = std::max(across.latency, r.latency);
  }
  p.stages.push_back(std::move(across));
  p.stages.push_back(intra((k - 1) / k * s));  // all-gather in each domain
  return p;
}

// NCCL's double binary tree across `blocks` (domains): every block is
// interior in one tree and a leaf in the other, each tree carrying half the
// bytes up (reduce) and down (broadcast), so a block sends and receives 2·S
// (S between two blocks, where each tree is one edge; NCCL's tuner counts the
// same: twice the inter-node bandwidth at two nodes). A block's bytes spread
// over its members' NICs (one channel per rail). Adds the loads, returns the
// number of tree levels, log2 of the blocks (NCCL's log2i).
int64_t AddDoubleBinaryTree(const Topology& topo, const std::vector<std::vector<int64_t>>& blocks,
                            double bytes, Stage* st) {
  const int64_t m = static_cast<int64_t>(blocks.size());
  if (m < 2) return 0;
  const double per_block = m == 2 ? bytes : 2 * bytes;
  for (const auto& b : blocks) {
    const double k = static_cast<double>(b.size());
    for (int64_t d : b) {
      st->loads.push_back({topo.NicUp(d), per_block / k});
      st->loads.push_back({topo.NicDown(d), per_block / k});
    }
  }
  int64_t levels = 0;
  while ((int64_t{2} << levels) <= m) ++levels;
  return levels;
}

// NCCL's treeCorrectionFactor (src/tuning/cost_model.cc, commit 1fc949c5):
// the fraction of its tree bandwidth NCCL's tuner expects per protocol at
// log2(bytes / 64); mid sizes pipeline poorly through the tree's levels.
double TreeCorrection(Protocol p, int64_t bytes) {
  static constexpr double kLL[] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
                                   .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0};
  static constexpr double kLL128[] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
                                      .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0};
  static constexpr double kSimple[] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                       .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  int index = 0;
  for (int64_t b = bytes >> 6; b > 1 && index < 23; b >>= 1) ++index;
  switch (p) {
    case Protocol::kLL:
      return kLL[index];
    case Protocol::kLL128:
      return kLL128[index];
    default:
      return kSimple[index];
  }
}

// NCCL's tree all-reduce on a tuned cluster: a chain through each domain's
// members (reduce up, broadcast down: S each way on every chain link) and a
// double binary tree across domains, pipelined as one stage.
CollectivePlan NcclTree(const Topology& topo, const Terms& t, const CollectiveCall& c) {
  const double s = static_cast<double>(c.bytes);
  const auto blocks = ByDomain(topo, c.devices);
  Stage st;
  std::vector<int32_t> scratch;
  int64_t chain = 0;
  for (const auto& b : blocks) {
    for (size_t i = 0; i + 1 < b.size(); ++i) {
      AddPath(topo, t, b[i], b[i + 1], s, &st, &scratch);
      AddPath(topo, t, b[i + 1], b[i], s, &st, &scratch);
    }
    chain = std::max(chain, static_cast<int64_t>(b.size()) - 1);
  }
  const int64_t levels = AddDoubleBinaryTree(topo, blocks, s, &st);
  st.latency =
      2.0 * (static_cast<double>(chain) * t.up_step + static_cast<double>(levels) * t.out_step);
  const double correction = TreeCorrection(t.protocol, c.bytes);
  for (LinkLoad& l : st.loads) l.bytes /= correction;
  return {Algorithm::kTree, t.protocol, {std::move(st)}};
}

// NVLS loads of one domain's members: the switch reduces what the members
// send up and multicasts what it sends down.
void AddNvlsLoads(const Topology& topo, Collective collective, const std::vector<int64_t>& members,
                  double s, Stage* st) {
  const double n = static_cast<double>(members.size());
  double up = s, down = s;  // all-reduce
  if (collective == Collective::kAllGather) {
    up = s / n;
    down = (n - 1) / n * s;
  } else if (collective == Collective::kReduceScatter) {
    up = (n - 1) / n * s;
    down = s / n;
  }
  for (int64_t d : members) {
    st->loads.push_back({topo.ScaleUpUp(d), up});
    st->loads.push_back({topo.ScaleUpDown(d), down});
  }
}

// NVLS inside one domain, or (all-reduce, nvls_tree) NVLS in each domain and a
// double binary tree across them, pipelined.
CollectivePlan Nvls(const Topology& topo, const CollectiveCall& c, Algorithm algorithm) {
  const CommTuning& tuning = topo.tuning();
  const double s = static_cast<double>(c.bytes);
  const auto blocks = ByDomain(topo, c.devices);
  Stage st;
  for (const auto& b : blocks) AddNvlsLoads(topo, c.collective, b, s, &st);
  for (LinkLoad& l : st.loads) l.bytes /= tuning.nvls_efficiency;
  const Terms simple = TermsOf(topo, Protocol::kSimple);
  const size_t nvl_loads = st.loads.size();
  const int64_t levels = AddDoubleBinaryTree(topo, blocks, s, &st);
  for (size_t i = nvl_loads; i < st.loads.size(); ++i) st.loads[i].bytes /= simple.out_efficiency;
  st.latency = tuning.nvls_base_latency + 2.0 * static_cast<double>(levels) * tuning.nvls_tree_step;
  return {algorithm, Protocol::kSimple, {std::move(st)}};
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

CollectivePlan Direct(const Topology& topo, const Terms& t, const CollectiveCall& c) {
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
        AddPath(topo, t, c.devices[0], c.devices[1], static_cast<double>(c.bytes), &st, &scratch);
  }
  return {Algorithm::kDirect, t.protocol, {std::move(st)}};
}

}  // namespace

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

// The MoE exchange kernels on a tuned cluster. Low-latency: every pair's
// bytes straight to its GPU (the direct stage). Hierarchical: pairs inside a
// domain over NVLink; bytes to another domain cross once per sender and
// domain, deduplicated by the call's node_ratio (never below the largest
// single pair, never above their sum), on the sender's NIC and that of the
// domain's member with the sender's local index, which forwards them over
// NVLink to their GPUs. Each at its kernel's efficiencies, after its per-call
// latency.
CollectivePlan ExchangeAllToAll(const Topology& topo, const CollectiveCall& c, Algorithm a) {
  const CommTuning& tuning = topo.tuning();
  const ExchangeKernelCost& k = a == Algorithm::kLowLatency ? tuning.low_latency : tuning.normal;
  std::vector<std::vector<PeerBytes>> storage;
  const std::vector<std::span<const PeerBytes>> rows = SparseRows(c, &storage);
  Stage st;
  const bool across = ByDomain(topo, c.devices).size() > 1;
  if (a == Algorithm::kLowLatency || !across || !topo.has_domains()) {
    st = topo.torus() ? Direct(topo, Terms{}, c).stages.front() : SwitchedAllToAll(topo, c, rows);
  } else {
    const size_t n = c.devices.size();
    const int64_t domain_size = topo.num_devices() > 0 ? topo.DomainSize() : 1;
    // Per domain: its members by local index.
    std::map<int64_t, std::map<int64_t, int64_t>> by_local;
    for (int64_t d : c.devices) by_local[topo.DomainOf(d)][d % domain_size] = d;
    std::map<int32_t, double> per_link;
    for (size_t i = 0; i < n && i < rows.size(); ++i) {
      const int64_t src = c.devices[i];
      std::map<int64_t, std::pair<double, double>> remote;  // domain: (sum, largest pair)
      for (const PeerBytes& e : rows[i]) {
        const size_t j = static_cast<uint32_t>(e.position);
        if (j >= n || e.bytes <= 0 || c.devices[j] == src) continue;
        const int64_t dst = c.devices[j];
        const double b = static_cast<double>(e.bytes);
        if (topo.SameDomain(src, dst)) {
          per_link[topo.ScaleUpUp(src)] += b;
          per_link[topo.ScaleUpDown(dst)] += b;
          continue;
        }
        const auto& members = by_local[topo.DomainOf(dst)];
        auto it = members.find(src % domain_size);
        const int64_t landing = it == members.end() ? members.begin()->second : it->second;
        if (dst != landing) {  // forwarded over the destination domain's NVLink
          per_link[topo.ScaleUpUp(landing)] += b;
          per_link[topo.ScaleUpDown(dst)] += b;
        }
        auto& [sum, largest] = remote[topo.DomainOf(dst)];
        sum += b;
        largest = std::max(largest, b);
      }
      for (const auto& [domain, sums] : remote) {
        const auto& members = by_local[domain];
        auto it = members.find(src % domain_size);
        const int64_t landing = it == members.end() ? members.begin()->second : it->second;
        const double wire = std::clamp(sums.first * c.node_ratio, sums.second, sums.first);
        per_link[topo.NicUp(src)] += wire;
        per_link[topo.NicDown(landing)] += wire;
      }
    }
    for (const auto& [link, bytes] : per_link) st.loads.push_back({link, bytes});
  }
  for (LinkLoad& l : st.loads) {
    l.bytes /= topo.IsScaleOut(l.link) ? k.scale_out_efficiency : k.scale_up_efficiency;
  }
  st.latency = k.latency;
  return {a, Protocol::kSimple, {std::move(st)}};
}

// The algorithms NCCL (or our model of it) has for the call on this topology.
std::vector<Algorithm> Candidates(const Topology& topo, const CollectiveCall& c) {
  const CommTuning& tuning = topo.tuning();
  const auto blocks = ByDomain(topo, c.devices);
  const bool one_domain = blocks.size() == 1 && c.devices.size() > 1 && topo.has_domains();
  const bool nvls = tuning.modelled && tuning.nvls && topo.has_domains() && !topo.torus();
  bool even = blocks.size() > 1;  // every domain holds the same number (> 1) of members
  for (const auto& b : blocks) even = even && b.size() == blocks[0].size() && b.size() > 1;
  switch (c.collective) {
    case Collective::kSend:
    case Collective::kRecv:
      return {Algorithm::kDirect};
    case Collective::kAllToAll:
      if (!tuning.modelled) return {Algorithm::kDirect};
      switch (c.all_to_all) {
        case AllToAllKind::kHierarchical:
          return {Algorithm::kHierarchical};
        case AllToAllKind::kLowLatency:
          return {Algorithm::kLowLatency};
        default:
          return {Algorithm::kDirect};
      }
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      if (nvls && one_domain) return {Algorithm::kRing, Algorithm::kNvls};
      return {Algorithm::kRing};
    case Collective::kBroadcast:
      return {Algorithm::kRing};
    case Collective::kAllReduce: {
      std::vector<Algorithm> out = {Algorithm::kRing, Algorithm::kTree};
      if (!DomainBlocks(topo, c.devices).empty()) out.push_back(Algorithm::kHierarchical);
      if (nvls && one_domain) out.push_back(Algorithm::kNvls);
      if (nvls && even) out.push_back(Algorithm::kNvlsTree);
      return out;
    }
    case Collective::kNone:
      break;
  }
  return {};
}

// A stage pipelined across link kinds: the less loaded kind's first
// `fill` bytes per link move in a stage of their own before the pipeline
// streams (it takes over the stage's latency).
void AddPipelineFill(const Topology& topo, double fill, CollectivePlan* p) {
  if (fill <= 0 || p->stages.size() != 1) return;
  Stage& main = p->stages.front();
  std::map<int32_t, double> per_link;
  for (const LinkLoad& l : main.loads) per_link[l.link] += l.bytes;
  double up = 0, out = 0;
  for (const auto& [link, bytes] : per_link) {
    double& t = topo.IsScaleOut(link) ? out : up;
    t = std::max(t, bytes / topo.Capacity(link));
  }
  if (up == 0 || out == 0) return;  // one link kind: nothing to fill
  const bool minor_out = out < up;
  Stage head;
  for (const auto& [link, bytes] : per_link) {
    if (topo.IsScaleOut(link) == minor_out) head.loads.push_back({link, std::min(bytes, fill)});
  }
  head.latency = main.latency;
  main.latency = 0;
  p->stages.insert(p->stages.begin(), std::move(head));
}

// One algorithm under one protocol's terms. Protocol efficiency divides every
// link's load (NVLS applies its own); the base latency goes before the first stage.
CollectivePlan Build(const Topology& topo, const CollectiveCall& c, Algorithm a, const Terms& t) {
  CollectivePlan p;
  if (c.collective == Collective::kAllToAll && a != Algorithm::kDirect) {
    return ExchangeAllToAll(topo, c, a);
  }
  switch (a) {
    case Algorithm::kNvls:
      return Nvls(topo, c, a);
    case Algorithm::kNvlsTree:
      p = Nvls(topo, c, a);
      AddPipelineFill(topo, topo.tuning().pipeline_fill_bytes, &p);
      return p;
    case Algorithm::kDirect:
      p = Direct(topo, t, c);
      break;
    case Algorithm::kTree:
      p = t.tuned ? NcclTree(topo, t, c) : Tree(topo, t, c);
      break;
    case Algorithm::kHierarchical: {
      const auto blocks = DomainBlocks(topo, c.devices);
      p = blocks.empty() ? Ring(topo, t, c) : Hierarchical(topo, t, c, blocks);
      break;
    }
    default:
      p = Ring(topo, t, c);
      break;
  }
  if (!t.tuned || p.stages.empty()) return p;
  for (Stage& st : p.stages) {
    for (LinkLoad& l : st.loads) {
      l.bytes /= topo.IsScaleOut(l.link) ? t.out_efficiency : t.up_efficiency;
    }
  }
  const bool p2p = c.collective == Collective::kSend || c.collective == Collective::kRecv ||
                   c.collective == Collective::kAllToAll;
  p.stages.front().latency += p2p                     ? topo.tuning().p2p_latency
                              : a == Algorithm::kTree ? t.tree_base
                                                      : t.ring_base;
  if (a == Algorithm::kTree) AddPipelineFill(topo, topo.tuning().pipeline_fill_bytes, &p);
  return p;
}

StatusOr<CollectivePlan> DecomposeByAlgorithm(const Topology& topo, const CollectiveCall& c,
                                              Algorithm forced, Protocol forced_protocol) {
  const std::vector<Algorithm> candidates = Candidates(topo, c);
  if (candidates.empty()) return InternalError("collective 'none' has no decomposition");
  std::vector<Algorithm> algorithms = candidates;
  if (std::find(candidates.begin(), candidates.end(), forced) != candidates.end()) {
    algorithms = {forced};
  } else if (forced == Algorithm::kHierarchical &&
             std::find(candidates.begin(), candidates.end(), Algorithm::kRing) !=
                 candidates.end() &&
             c.collective == Collective::kAllReduce) {
    algorithms = {Algorithm::kRing};  // inside one domain hierarchical is the ring itself
  }
  std::vector<Protocol> protocols = {Protocol::kSimple};
  if (topo.tuning().modelled) {
    protocols = forced_protocol == Protocol::kAuto
                    ? std::vector<Protocol>{Protocol::kLL, Protocol::kLL128, Protocol::kSimple}
                    : std::vector<Protocol>{forced_protocol};
  }
  std::optional<CollectivePlan> best;
  double best_t = 0;
  for (Algorithm a : algorithms) {
    const bool simple_only = a == Algorithm::kNvls || a == Algorithm::kNvlsTree ||
                             a == Algorithm::kHierarchical || a == Algorithm::kDirect ||
                             a == Algorithm::kLowLatency;
    for (Protocol p : protocols) {
      if (simple_only && p != protocols.back() && protocols.size() > 1) continue;
      CollectivePlan plan = Build(topo, c, a, TermsOf(topo, simple_only ? Protocol::kSimple : p));
      const double seconds = UncontendedSeconds(topo, plan);
      if (!best || seconds < best_t) {
        best_t = seconds;
        best = std::move(plan);
      }
    }
  }
  return std::move(*best);
}

// The calibration's measured line for the collective — an exact line
// (nccl-tests) in both directions, a line fitted from traces each part only
// where slower than the plan's: a larger latency (the line's plus the members'
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
    if (scale > 1 || m->exact) {
      for (Stage& st : plan->stages) {
        for (LinkLoad& l : st.loads) l.bytes *= scale;
      }
    }
  }
  const double measured = m->latency + m->wait;
  if (measured <= latency && !m->exact) return;
  if (latency <= 0) {
    plan->stages.front().latency = measured;
    return;
  }
  for (Stage& st : plan->stages) st.latency *= measured / latency;
}

}  // namespace

StatusOr<CollectivePlan> Decompose(const Topology& topo, const CollectiveCall& c, Algorithm forced,
                                   Protocol protocol) {
  ASSIGN_OR_RETURN(CollectivePlan plan, DecomposeByAlgorithm(topo, c, forced, protocol));
  ApplyMeasured(topo, c, &plan);
  return plan;
}

bool HasAlgorithm(const Topology& topo, const CollectiveCall& c, Algorithm algorithm) {
  if (algorithm == Algorithm::kAuto) return true;
  const std::vector<Algorithm> candidates = Candidates(topo, c);
  return std::find(candidates.begin(), candidates.end(), algorithm) != candidates.end();
}

}  // namespace shardscope::sim
