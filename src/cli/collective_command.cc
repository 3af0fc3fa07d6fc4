// `shardscope collective`: one collective timed on its own, as nccl-tests
// prints it, or the MoE dispatch / combine in DeepEP's terms.
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "cluster/cluster_yaml.h"
#include "sim/calibration.h"
#include "sim/collective_table.h"
#include "sim/sim_setup.h"

namespace shardscope::cli {
namespace {

struct CollectiveArgs {
  std::string hardware;
  int64_t nodes = 0;
  std::string op = "all_reduce";
  int64_t ranks = 0;
  std::string sizes = "8:8G";
  std::string algorithm = "auto";
  std::string protocol = "auto";
  std::string type = "float";
  std::string calibration;
  std::string format = "md";
  // DeepEP form.
  std::string kernel = "normal";
  sim::ExchangeOptions exchange;
};

StatusOr<ClusterSpec> LoadCluster(const CollectiveArgs& a) {
  ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterArg(a.hardware));
  if (a.nodes < 0) return InvalidArgument("--nodes must be at least 1, got {}", a.nodes);
  if (a.nodes > 0) cluster.num_nodes = a.nodes;
  if (cluster.num_devices() > (int64_t{1} << 20)) {
    return InvalidArgument("--nodes {}: more than 2^20 devices", a.nodes);
  }
  return cluster;
}

// nccl-tests' -b/-e/-f as "MIN:MAX[:xF]".
Status ParseSizes(const std::string& text, sim::SweepOptions* o) {
  const size_t c1 = text.find(':');
  const std::string first = text.substr(0, c1);
  std::string last = c1 == std::string::npos ? first : text.substr(c1 + 1);
  const size_t c2 = last.find(':');
  if (c2 != std::string::npos) {
    const std::string f = last.substr(c2 + 1);
    last = last.substr(0, c2);
    char* end = nullptr;
    const double factor = f.size() > 1 && f[0] == 'x' ? std::strtod(f.c_str() + 1, &end) : 0;
    if (end == nullptr || *end != '\0' || !(factor > 1) || factor > 1e6) {
      return InvalidArgument("--sizes '{}': the step must be xF with F > 1 (e.g. x2)", text);
    }
    o->factor = factor;
  }
  auto lo = sim::ParseByteSize(first);
  if (!lo.ok()) return InvalidArgument("--sizes '{}': {}", text, lo.status().message());
  auto hi = sim::ParseByteSize(last);
  if (!hi.ok()) return InvalidArgument("--sizes '{}': {}", text, hi.status().message());
  o->min_bytes = *lo;
  o->max_bytes = *hi;
  return Status::Ok();
}

Status RunCollective(const CollectiveArgs& a) {
  if (a.format != "md" && a.format != "json" && a.format != "csv") {
    return InvalidArgument("--format is '{}': expected md, json or csv", a.format);
  }
  ASSIGN_OR_RETURN(ClusterSpec cluster, LoadCluster(a));
  sim::Calibration calibration = sim::DefaultCalibration(cluster.device);
  if (!a.calibration.empty()) {
    ASSIGN_OR_RETURN(calibration, sim::LoadCalibration(a.calibration, calibration));
  }
  sim::CollectiveTable table;
  if (a.op == "dispatch" || a.op == "combine") {
    sim::ExchangeOptions o = a.exchange;
    o.dispatch = a.op == "dispatch";
    if (a.kernel != "normal" && a.kernel != "low_latency") {
      return InvalidArgument("--kernel is '{}': expected normal or low_latency", a.kernel);
    }
    o.kernel =
        a.kernel == "normal" ? sim::ExchangeKernel::kNormal : sim::ExchangeKernel::kLowLatency;
    o.ranks = a.ranks;
    ASSIGN_OR_RETURN(table, sim::ExchangeTable(cluster, calibration, o));
  } else {
    auto collective = ParseCollective(a.op);
    if (!collective || *collective == Collective::kNone || *collective == Collective::kRecv) {
      return InvalidArgument(
          "--op is '{}': expected all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, "
          "broadcast, dispatch or combine",
          a.op);
    }
    sim::SweepOptions o;
    o.collective = a.op == "send_recv" ? Collective::kSend : *collective;
    o.ranks = a.ranks;
    RETURN_IF_ERROR(ParseSizes(a.sizes, &o));
    auto algorithm = sim::ParseAlgorithm(a.algorithm);
    if (!algorithm.ok()) return InvalidArgument("--algorithm: {}", algorithm.status().message());
    auto protocol = sim::ParseProtocol(a.protocol);
    if (!protocol.ok()) return InvalidArgument("--protocol: {}", protocol.status().message());
    o.algorithm = *algorithm;
    o.protocol = *protocol;
    auto dtype = ParseDType(a.type);
    if (!dtype.ok()) return InvalidArgument("--type: {}", dtype.status().message());
    o.element_size = DTypeSize(*dtype);
    if (o.element_size < 1) return InvalidArgument("--type '{}' has no whole bytes", a.type);
    ASSIGN_OR_RETURN(table, sim::SweepTable(cluster, calibration, o, a.type));
  }
  std::cout << (a.format == "md"     ? sim::CollectiveTableMarkdown(table)
                : a.format == "json" ? sim::CollectiveTableJson(table).dump(2) + "\n"
                                     : sim::CollectiveTableCsv(table));
  return Status::Ok();
}

}  // namespace

void AddCollectiveCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand(
      "collective",
      "Time one collective on its own (nccl-tests' table) or the MoE dispatch/combine (DeepEP's)");
  cmd->add_option("--hardware", args->hardware, "zoo name or hardware YAML file")->required();
  cmd->add_option("--nodes", args->nodes, "nodes of the cluster (default: the file's)");
  cmd->add_option("--op", args->op,
                  "all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast, "
                  "dispatch or combine")
      ->default_str("all_reduce");
  cmd->add_option("--ranks", args->ranks, "members: devices 0..ranks-1 (default: all)");
  cmd->add_option("--sizes", args->sizes, "MIN:MAX[:xF] bytes as nccl-tests' -b/-e/-f")
      ->default_str("8:8G");
  cmd->add_option("--algorithm", args->algorithm, "auto, ring, tree, nvls, nvls_tree, hierarchical")
      ->default_str("auto");
  cmd->add_option("--protocol", args->protocol, "auto, ll, ll128 or simple")->default_str("auto");
  cmd->add_option("--type", args->type, "element type of the count column")->default_str("float");
  cmd->add_option("--calibration", args->calibration,
                  "calibration file (measured collectives, network_efficiency)");
  cmd->add_option("--format", args->format, "md, json or csv")->default_str("md");
  cmd->add_option("--kernel", args->kernel, "dispatch/combine: normal or low_latency")
      ->default_str("normal");
  cmd->add_option("--tokens", args->exchange.tokens, "dispatch/combine: tokens per rank")
      ->default_str("4096");
  cmd->add_option("--hidden", args->exchange.hidden, "dispatch/combine: hidden size")
      ->default_str("7168");
  cmd->add_option("--topk", args->exchange.topk, "dispatch/combine: experts per token")
      ->default_str("8");
  cmd->add_option("--experts", args->exchange.experts, "dispatch/combine: routed experts")
      ->default_str("256");
  cmd->add_option("--groups", args->exchange.groups,
                  "dispatch/combine: expert groups (n_group; 0: none)")
      ->default_str("0");
  cmd->add_option("--group-limit", args->exchange.group_limit,
                  "dispatch/combine: groups a token may use (topk_group; 0: no limit)")
      ->default_str("0");
  cmd->callback([args, exit_code] {
    Status s = RunCollective(*args);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
