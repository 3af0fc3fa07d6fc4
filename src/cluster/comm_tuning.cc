#include "cluster/comm_tuning.h"

namespace shardscope {

std::string_view CommProtocolName(CommProtocol p) {
  switch (p) {
    case CommProtocol::kLL:
      return "ll";
    case CommProtocol::kLL128:
      return "ll128";
    case CommProtocol::kSimple:
      return "simple";
  }
  return "?";
}

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
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kNvlsTree:
      return "nvls_tree";
    case Algorithm::kLowLatency:
      return "low_latency";
  }
  return "?";
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  for (Algorithm a :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical,
        Algorithm::kDirect, Algorithm::kNvls, Algorithm::kNvlsTree}) {
    if (AlgorithmName(a) == name) return a;
  }
  return InvalidArgument(
      "unknown collective algorithm '{}' (auto, ring, tree, nvls, nvls_tree, hierarchical, "
      "direct, low_latency)",
      name);
}

std::string_view ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kAuto:
      return "auto";
    case Protocol::kLL:
      return "ll";
    case Protocol::kLL128:
      return "ll128";
    case Protocol::kSimple:
      return "simple";
  }
  return "?";
}

StatusOr<Protocol> ParseProtocol(std::string_view name) {
  for (Protocol p : {Protocol::kAuto, Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    if (ProtocolName(p) == name) return p;
  }
  return InvalidArgument("unknown collective protocol '{}' (auto, ll, ll128, simple)", name);
}

std::string_view AllToAllKindName(AllToAllKind k) {
  switch (k) {
    case AllToAllKind::kAuto:
      return "auto";
    case AllToAllKind::kNccl:
      return "nccl";
    case AllToAllKind::kHierarchical:
      return "hierarchical";
    case AllToAllKind::kLowLatency:
      return "low_latency";
  }
  return "?";
}

StatusOr<AllToAllKind> ParseAllToAllKind(std::string_view name) {
  for (AllToAllKind k : {AllToAllKind::kAuto, AllToAllKind::kNccl, AllToAllKind::kHierarchical,
                         AllToAllKind::kLowLatency}) {
    if (AllToAllKindName(k) == name) return k;
  }
  return InvalidArgument("unknown all-to-all kind '{}' (auto, nccl, hierarchical, low_latency)",
                         name);
}

}  // namespace shardscope
