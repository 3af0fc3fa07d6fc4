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

// nccl-tests' bus-bandwidth factor of a collective over n ranks (busbw = algbw ·
// factor): 2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and
// all-to-all, 1 for send/recv and broadcast; 0 for kNone or n ≤ 0.
double BusFactor(Collective c, int64_t n);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_COLLECTIVE_H_
