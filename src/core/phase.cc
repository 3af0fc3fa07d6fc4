#include "core/phase.h"

#include "core/enum_names.h"

namespace shardscope {
namespace {

constexpr auto kPhaseNames =
    MakeEnumNames<Phase>({{Phase::kPrefill, "prefill"}, {Phase::kDecode, "decode"}});

}  // namespace

std::string_view PhaseName(Phase p) { return kPhaseNames.Name(p, ""); }
std::optional<Phase> ParsePhase(std::string_view s) { return kPhaseNames.Parse(s); }

}  // namespace shardscope
