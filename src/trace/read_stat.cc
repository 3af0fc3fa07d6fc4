#include "trace/read_stat.h"

#include <array>

namespace shardscope::trace {
namespace {

constexpr std::array<StatInfo, kNumStats> kStats = {{
#define SHARDSCOPE_STAT_INFO(e, name, severity, text) {Stat::e, name, Severity::severity, text},
    SHARDSCOPE_READ_STATS(SHARDSCOPE_STAT_INFO)
#undef SHARDSCOPE_STAT_INFO
}};

}  // namespace

std::span<const StatInfo> AllStats() { return kStats; }

const StatInfo& InfoOf(Stat stat) { return kStats[static_cast<size_t>(stat)]; }

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kSkipped:
      return "skipped";
    case Severity::kIgnored:
      return "ignored";
    case Severity::kNote:
      return "note";
  }
  return "?";
}

}  // namespace shardscope::trace
