// Collective: the kind of a communication call, one enum for the Program, the
// traces, the importers and the analyzer. Two spellings: the trace and metric
// one ("all_reduce") and the compact one op names use ("allreduce.tp.attn.L3").
#ifndef SHARDSCOPE_CORE_COLLECTIVE_H_
#define SHARDSCOPE_CORE_COLLECTIVE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardscope {

enum class Collective : uint8_t {
  kNone = 0,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,  // all-to-all(v): the real split is given per peer
  kSend,
  kRecv,
  kBroadcast,
};
inline constexpr int kNumCollectives = 8;

// "all_reduce", "send", …; "" for kNone.
std::string_view CollectiveName(Collective c);
// "allreduce", "send", …; "none" for kNone.
std::string_view CollectiveShortName(Collective c);
// Either spelling, any case, with or without '_', '-' or ' ' ("AllReduce",
// "all-reduce"), and "alltoallv"; nullopt for anything else.
std::optional<Collective> ParseCollective(std::string_view s);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_COLLECTIVE_H_
