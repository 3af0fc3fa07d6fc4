// How a failed Status is reported to a user: bad input (the command line exits
// with 2, Python raises shardscope.InputError), an interruption (130,
// shardscope.Cancelled) or another failure (1, shardscope.RunError). One
// grouping for both faces.
#ifndef SHARDSCOPE_CORE_EXIT_KIND_H_
#define SHARDSCOPE_CORE_EXIT_KIND_H_

#include "core/status.h"

namespace shardscope {

enum class FailureKind { kBadInput, kInterrupted, kOther };

FailureKind FailureKindOf(StatusCode code);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_EXIT_KIND_H_
