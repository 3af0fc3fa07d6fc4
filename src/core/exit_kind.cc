#include "core/exit_kind.h"

namespace shardscope {

FailureKind FailureKindOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kDataLoss:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
      return FailureKind::kBadInput;
    case StatusCode::kCancelled:
      return FailureKind::kInterrupted;
    default:
      return FailureKind::kOther;
  }
}

}  // namespace shardscope
