// Dim: a parallelism dimension. One enum for the experiment's plan, the
// Program's groups, the traces and the analyzer. The order of the real
// dimensions is the default mesh order, innermost first (tp ranks are adjacent
// devices); kNone, after them, marks a trace op outside any group.
#ifndef SHARDSCOPE_CORE_PARALLEL_DIM_H_
#define SHARDSCOPE_CORE_PARALLEL_DIM_H_

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace shardscope {

enum class Dim : uint8_t { kTp = 0, kSp, kEp, kDp, kPp, kNone };
inline constexpr int kNumDims = 5;  // kTp … kPp, without kNone

std::string_view DimName(Dim d);  // "tp", "sp", "ep", "dp", "pp"; "" for kNone
// "tp", "sp", "ep", "dp" or "pp"; an InvalidArgument naming them for anything else.
StatusOr<Dim> ParseDim(std::string_view name);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_PARALLEL_DIM_H_
