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

}  // namespace shardscope
