#include "trace/read_stat.h"

#include <array>

#include "core/enum_names.h"

namespace shardscope::trace {
namespace {

constexpr std::array<StatInfo, kNumStats> kStats = {{
#define SHARDSCOPE_STAT_INFO(e, name, severity, text) {Stat::e, name, Severity::severity, text},
    SHARDSCOPE_READ_STATS(SHARDSCOPE_STAT_INFO)
#undef SHARDSCOPE_STAT_INFO
}};

constexpr auto kSeverityNames = MakeEnumNames<Severity>({
    {Severity::kSkipped, "skipped"},
    {Severity::kIgnored, "ignored"},
    {Severity::kNote, "note"},
});
static_assert(kSeverityNames.InEnumOrder() &&
              kSeverityNames.entries().back().value == Severity::kNote);

}  // namespace

std::span<const StatInfo> AllStats() { return kStats; }

const StatInfo& InfoOf(Stat stat) { return kStats[static_cast<size_t>(stat)]; }

std::string_view SeverityName(Severity severity) { return kSeverityNames.Name(severity); }

}  // namespace shardscope::trace
