#include "sim/collective_table.h"

#include <fmt/format.h>

#include "core/collective.h"
#include "sim/sim_setup.h"

namespace shardscope::sim {
namespace {

constexpr double kUs = 1e6;  // seconds -> µs
constexpr double kGb = 1e9;  // bytes/s -> GB/s

std::string BusFactorText(Collective c, int64_t n) {
  switch (c) {
    case Collective::kAllReduce:
      return fmt::format("2(n-1)/n = {:.4g}", BusFactor(c, n));
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return fmt::format("(n-1)/n = {:.4g}", BusFactor(c, n));
    default:
      return "1";
  }
}

std::string Cell(const nlohmann::json& v, int precision) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return fmt::format("{:.{}f}", v.get<double>(), std::max(precision, 0));
}

}  // namespace

StatusOr<CollectiveTable> SweepTable(const ClusterSpec& cluster, const Calibration& calibration,
                                     const SweepOptions& o, const std::string& type) {
  const Topology topology = NetworkTopology(cluster, calibration);
  ASSIGN_OR_RETURN(std::vector<SweepRow> rows, SweepCollective(topology, cluster.num_devices(), o));
  const int64_t ranks = o.ranks == 0 ? cluster.num_devices() : o.ranks;
  CollectiveTable t;
  const std::string op =
      o.collective == Collective::kSend ? "send_recv" : std::string(CollectiveName(o.collective));
  t.title = fmt::format("{} over {} ranks of {} ({} nodes × {}), algorithm {}, protocol {}{}", op,
                        ranks, cluster.name, cluster.num_nodes, cluster.devices_per_node,
                        AlgorithmName(o.algorithm), ProtocolName(o.protocol),
                        cluster.collectives.modelled ? "" : " (untuned links: ideal)");
  t.notes = {
      "size: bytes per call as nccl-tests' -b/-e count them (all_gather / reduce_scatter: the "
      "whole buffer; all_to_all: each rank's send buffer); count: elements of the type",
      "time: one call on an idle network, every rank starting together; algbw = size / time; "
      "busbw = algbw × " +
          BusFactorText(o.collective, ranks) + " (nccl-tests' bus factor); GB/s = 1e9 B/s",
      "algorithm / protocol: what the model chose (docs/sim.md \"Collectives\"); bound: the link "
      "kind whose transfer takes longest, or latency when the fixed costs outweigh it"};
  if (o.collective == Collective::kSend) {
    t.notes.push_back("send_recv: one message from rank 0 to the last rank");
  }
  t.columns = {"size_bytes", "count",     "type",     "time_us", "algbw_gb_s",
               "busbw_gb_s", "algorithm", "protocol", "bound"};
  t.precision = {-1, -1, -1, 2, 2, 2, -1, -1, -1};
  for (const SweepRow& r : rows) {
    t.rows.push_back(nlohmann::json::array({r.bytes, r.count, type, r.seconds * kUs, r.algbw / kGb,
                                            r.busbw / kGb, std::string(AlgorithmName(r.algorithm)),
                                            std::string(ProtocolName(r.protocol)), r.bottleneck}));
  }
  return t;
}

StatusOr<CollectiveTable> ExchangeTable(const ClusterSpec& cluster, const Calibration& calibration,
                                        const ExchangeOptions& o) {
  ASSIGN_OR_RETURN(ExchangeResult r, SimulateExchange(NetworkCluster(cluster, calibration), o));
  const int64_t ranks = o.ranks == 0 ? cluster.num_devices() : o.ranks;
  CollectiveTable t;
  const bool normal = o.kernel == ExchangeKernel::kNormal;
  t.title = fmt::format(
      "{} ({} kernel) over EP{} of {}: {} tokens/rank, hidden {}, top-{} of {} experts{}",
      o.dispatch ? "dispatch" : "combine", normal ? "normal" : "low_latency", ranks, cluster.name,
      o.tokens, o.hidden, o.topk, o.experts,
      o.group_limit > 0 ? fmt::format(", {} groups per token", o.group_limit) : "");
  t.notes = {
      normal ? "normal: each token crosses to each remote node it needs once (RDMA), then NVLink "
               "to that node's GPUs; rdma_gb_s counts (token, node) pairs with the sender's own "
               "node, nvlink_gb_s (token, GPU) pairs received, over the time (DeepEP's test)"
             : "low_latency: every (token, expert) selection goes straight to its GPU after a "
               "fixed per-call cost; rdma_gb_s and nvlink_gb_s count every selection over the "
               "time (DeepEP's test)",
      "token bytes: " +
          std::string(o.token_bytes > 0 ? "as given"
                      : o.dispatch      ? "FP8 with one fp32 scale per 128 values"
                                        : "BF16") +
          "; nic_mb / nvlink_mb: bytes each rank really sends on each link kind",
      "bound: the link kind that takes longer; time includes the kernel's per-call latency"};
  t.columns = {"time_us",   "rdma_gb_s",       "nvlink_gb_s",    "nic_mb",
               "nvlink_mb", "nodes_per_token", "gpus_per_token", "bound"};
  t.precision = {1, 1, 1, 2, 2, 2, 2, -1};
  t.rows.push_back(
      nlohmann::json::array({r.seconds * kUs, r.rdma_bandwidth / kGb, r.nvlink_bandwidth / kGb,
                             r.rdma_bytes / 1e6, r.nvlink_bytes / 1e6, r.nodes_per_token,
                             r.gpus_per_token, r.rdma_bound ? "nic" : "nvlink"}));
  return t;
}

std::string CollectiveTableMarkdown(const CollectiveTable& t) {
  std::string out = "# " + t.title + "\n";
  for (const std::string& n : t.notes) out += "# " + n + "\n";
  out += "\n|";
  for (const std::string& c : t.columns) out += " " + c + " |";
  out += "\n|";
  for (size_t i = 0; i < t.columns.size(); ++i) out += t.precision[i] < 0 ? "---|" : "---:|";
  out += "\n";
  for (const nlohmann::json& row : t.rows) {
    out += "|";
    for (size_t i = 0; i < t.columns.size(); ++i) out += " " + Cell(row[i], t.precision[i]) + " |";
    out += "\n";
  }
  return out;
}

std::string CollectiveTableCsv(const CollectiveTable& t) {
  std::string out;
  for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + t.columns[i];
  out += "\n";
  for (const nlohmann::json& row : t.rows) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const nlohmann::json& v = row[i];
      out += i ? "," : "";
      out += v.is_string() ? v.get<std::string>() : v.dump();
    }
    out += "\n";
  }
  return out;
}

nlohmann::json CollectiveTableJson(const CollectiveTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& row : t.rows) {
    nlohmann::json obj = nlohmann::json::object();
    for (size_t i = 0; i < t.columns.size(); ++i) obj[t.columns[i]] = row[i];
    rows.push_back(std::move(obj));
  }
  return {{"title", t.title}, {"notes", t.notes}, {"columns", t.columns}, {"rows", rows}};
}

}  // namespace shardscope::sim
