#include "cluster/comm_tuning.h"

#include "core/enum_names.h"

namespace shardscope {

namespace {

constexpr auto kCommProtocolNames =
    MakeEnumNames<CommProtocol>({{CommProtocol::kLL, "ll"},
                                 {CommProtocol::kLL128, "ll128"},
                                 {CommProtocol::kSimple, "simple"}});
constexpr auto kAlgorithmNames =
    MakeEnumNames<Algorithm>({{Algorithm::kAuto, "auto"},
                              {Algorithm::kRing, "ring"},
                              {Algorithm::kTree, "tree"},
                              {Algorithm::kHierarchical, "hierarchical"},
                              {Algorithm::kDirect, "direct"},
                              {Algorithm::kNvls, "nvls"},
                              {Algorithm::kNvlsTree, "nvls_tree"},
                              {Algorithm::kLowLatency, "low_latency"}});
constexpr auto kProtocolNames = MakeEnumNames<Protocol>({{Protocol::kAuto, "auto"},
                                                         {Protocol::kLL, "ll"},
                                                         {Protocol::kLL128, "ll128"},
                                                         {Protocol::kSimple, "simple"}});
constexpr auto kAllToAllKindNames =
    MakeEnumNames<AllToAllKind>({{AllToAllKind::kAuto, "auto"},
                                 {AllToAllKind::kNccl, "nccl"},
                                 {AllToAllKind::kHierarchical, "hierarchical"},
                                 {AllToAllKind::kLowLatency, "low_latency"}});

}  // namespace

std::string_view CommProtocolName(CommProtocol p) { return kCommProtocolNames.Name(p); }

std::string_view AlgorithmName(Algorithm a) { return kAlgorithmNames.Name(a); }

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  // low_latency names an all-to-all's algorithm only (AllToAllKind).
  std::optional<Algorithm> a = kAlgorithmNames.Parse(name);
  if (a && *a != Algorithm::kLowLatency) return *a;
  return InvalidArgument(
      "unknown collective algorithm '{}' (auto, ring, tree, nvls, nvls_tree, hierarchical, "
      "direct, low_latency)",
      name);
}

std::string_view ProtocolName(Protocol p) { return kProtocolNames.Name(p); }

StatusOr<Protocol> ParseProtocol(std::string_view name) {
  if (std::optional<Protocol> p = kProtocolNames.Parse(name)) return *p;
  return InvalidArgument("unknown collective protocol '{}' (auto, ll, ll128, simple)", name);
}

std::string_view AllToAllKindName(AllToAllKind k) { return kAllToAllKindNames.Name(k); }

StatusOr<AllToAllKind> ParseAllToAllKind(std::string_view name) {
  if (std::optional<AllToAllKind> k = kAllToAllKindNames.Parse(name)) return *k;
  return InvalidArgument("unknown all-to-all kind '{}' (auto, nccl, hierarchical, low_latency)",
                         name);
}

}  // namespace shardscope
