#include "core/collective.h"

#include <array>
#include <string>

namespace shardscope {
namespace {

constexpr std::array<std::string_view, kNumCollectives> kNames = {
    "", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv", "broadcast"};
constexpr std::array<std::string_view, kNumCollectives> kShortNames = {
    "none", "allreduce", "allgather", "reducescatter", "alltoall", "send", "recv", "broadcast"};

// Lower-cases and drops '_', '-' and ' ', so "AllReduce", "all-reduce" and "allreduce" match.
std::string Canonical(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

}  // namespace

std::string_view CollectiveName(Collective c) { return kNames[static_cast<int>(c)]; }
std::string_view CollectiveShortName(Collective c) { return kShortNames[static_cast<int>(c)]; }

std::optional<Collective> ParseCollective(std::string_view s) {
  if (s == kNames[1]) return Collective::kAllReduce;  // the common case, fast
  const std::string c = Canonical(s);
  for (int i = 1; i < kNumCollectives; ++i) {
    if (kShortNames[i] == c) return static_cast<Collective>(i);
  }
  if (c == "alltoallv") return Collective::kAllToAll;
  return std::nullopt;
}

double BusFactor(Collective c, int64_t n) {
  if (n <= 0) return 0;
  const double d = static_cast<double>(n);
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (d - 1) / d;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (d - 1) / d;
    case Collective::kSend:
    case Collective::kRecv:
    case Collective::kBroadcast:
      return 1;
    case Collective::kNone:
      return 0;
  }
  return 0;
}

}  // namespace shardscope
