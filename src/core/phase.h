// Phase: the part of inference a step, an op or a span belongs to. One enum for
// the Program, the executors, the traces and the analyzer; kNone marks a trace
// event that carries no phase.
#ifndef SHARDSCOPE_CORE_PHASE_H_
#define SHARDSCOPE_CORE_PHASE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardscope {

enum class Phase : uint8_t { kNone = 0, kPrefill, kDecode };
inline constexpr int kNumPhases = 3;

std::string_view PhaseName(Phase p);  // "prefill", "decode"; "" for kNone
// "prefill" or "decode"; nullopt for anything else.
std::optional<Phase> ParsePhase(std::string_view s);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_PHASE_H_
