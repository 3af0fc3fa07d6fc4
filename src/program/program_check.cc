#include "program/program_check.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace shardscope {
namespace {

struct OpRef {
  int64_t rank = 0;
  int32_t id = 0;
};

template <typename... Args>
Status Broken(const Op& op, int64_t rank, fmt::format_string<Args...> f, Args&&... args) {
  return InternalError("program check: rank {} op {} ({}): {}", rank, op.id, OpName(op),
                       fmt::format(f, std::forward<Args>(args)...));
}

bool IsPointToPoint(const Op& op) {
  return op.collective == Collective::kSend || op.collective == Collective::kRecv;
}

bool InGroup(const Group& g, int64_t rank) {
  return std::find(g.ranks.begin(), g.ranks.end(), rank) != g.ranks.end();
}

Status CheckRank(const RankProgram& rp, const Placement& pl) {
  const auto& groups = pl.groups();
  for (size_t i = 0; i < rp.ops.size(); ++i) {
    const Op& op = rp.ops[i];
    if (op.id != static_cast<int32_t>(i)) return Broken(op, rp.rank, "id is not its index {}", i);
    if (op.deps_count < 0 || op.deps_begin < 0 ||
        static_cast<size_t>(op.deps_begin) + static_cast<size_t>(op.deps_count) > rp.deps.size()) {
      return Broken(op, rp.rank, "deps [{}, +{}) are outside the rank's {}", op.deps_begin,
                    op.deps_count, rp.deps.size());
    }
    for (int32_t d : DepsOf(rp, op)) {
      if (d < 0 || d >= op.id) return Broken(op, rp.rank, "dependency {} does not point back", d);
    }
    if (op.flops < 0 || op.bytes_read < 0 || op.bytes_written < 0 || op.weight_bytes < 0 ||
        op.bytes < 0 || op.weight_bytes > op.bytes_read) {
      return Broken(op, rp.rank, "negative or inconsistent cost");
    }
    if (op.replication < 1) return Broken(op, rp.rank, "replication {} < 1", op.replication);
    if (op.role != OpRole::kNone && RoleKind(op.role) != op.kind) {
      return Broken(op, rp.rank, "role '{}' does not belong to kind {}", op.label(),
                    OpKindName(op.kind));
    }
    if (!op.is_comm()) {
      if (op.stream != Stream::kCompute) return Broken(op, rp.rank, "compute op on a comm stream");
      continue;
    }
    if (op.collective == Collective::kNone)
      return Broken(op, rp.rank, "comm op without collective");
    if (op.stream != CommStream(op.dim)) {
      return Broken(op, rp.rank, "on stream {}, not that of {}", StreamName(op.stream),
                    DimName(op.dim));
    }
    if (IsPointToPoint(op)) {
      if (op.peer < 0 || op.peer >= pl.world_size() || op.peer == rp.rank ||
          !InGroup(pl.GroupOf(rp.rank, op.dim), op.peer)) {
        return Broken(op, rp.rank, "peer {} is not another member of its {} group", op.peer,
                      DimName(op.dim));
      }
      continue;
    }
    if (op.group_id < 0 || op.group_id >= static_cast<int64_t>(groups.size())) {
      return Broken(op, rp.rank, "unknown group {}", op.group_id);
    }
    const Group& g = groups[op.group_id];
    if (g.dim != op.dim || !InGroup(g, rp.rank)) {
      return Broken(op, rp.rank, "not a member of group {} ({})", g.id, DimName(g.dim));
    }
    if (op.collective == Collective::kBroadcast && !InGroup(g, op.peer)) {
      return Broken(op, rp.rank, "broadcast root {} outside group {}", op.peer, g.id);
    }
    if (op.collective == Collective::kAllToAll) {
      int64_t sum = 0;
      int32_t last = -1;
      for (const PeerBytes& p : op.peer_sends) {
        if (p.position <= last || p.position >= static_cast<int64_t>(g.ranks.size()) ||
            p.bytes <= 0) {
          return Broken(op, rp.rank,
                        "peer_sends entry ({}, {} B) is not a non-zero entry after position {} "
                        "among the {} members of group {}",
                        p.position, p.bytes, last, g.ranks.size(), g.id);
        }
        last = p.position;
        sum += p.bytes;
      }
      if (sum != op.bytes) {
        return Broken(op, rp.rank, "peer_sends sum to {}, bytes is {}", sum, op.bytes);
      }
    }
  }
  return Status::Ok();
}

// Every member of a group posts the same collectives in the same order.
Status CheckCollectives(const PhaseProgram& program, const Placement& pl,
                        std::map<std::pair<int64_t, int64_t>, std::vector<OpRef>>& calls) {
  // (group, seq) → the members' ops.
  for (const RankProgram& rp : program.ranks) {
    std::map<int64_t, int64_t> next;  // group → expected seq
    for (const Op& op : rp.ops) {
      if (!op.is_comm() || IsPointToPoint(op)) continue;
      int64_t& expect = next[op.group_id];
      if (op.seq != expect) return Broken(op, rp.rank, "seq {} where {} was due", op.seq, expect);
      ++expect;
      calls[{op.group_id, op.seq}].push_back({rp.rank, op.id});
    }
  }
  for (const auto& [key, refs] : calls) {
    const Group& g = pl.groups()[key.first];
    const Op& first = program.ranks[refs[0].rank].ops[refs[0].id];
    if (refs.size() != g.ranks.size()) {
      return Broken(first, refs[0].rank, "only {} of the {} members of group {} post call {}",
                    refs.size(), g.ranks.size(), g.id, key.second);
    }
    for (const OpRef& ref : refs) {
      const Op& op = program.ranks[ref.rank].ops[ref.id];
      // All-to-all(v) sizes differ by member; their pairwise match is checked below.
      const bool sizes_differ = op.collective != Collective::kAllToAll && op.bytes != first.bytes;
      if (op.collective != first.collective || sizes_differ || op.role != first.role ||
          op.peer != first.peer) {
        return Broken(op, ref.rank,
                      "call {} of group {} differs from rank {}'s ({} {} B vs {} {} B)", key.second,
                      g.id, refs[0].rank, CollectiveShortName(op.collective), op.bytes,
                      CollectiveShortName(first.collective), first.bytes);
      }
    }
    // A combine sends back what the dispatch before it (same layer and
    // micro-batch) received: what member i sends to j in the combine, j sent to
    // i in the dispatch.
    if (first.collective != Collective::kAllToAll || first.role != OpRole::kCombine) continue;
    // The dispatch is the call before, or (two-batch overlap) the one before that.
    auto prev = calls.end();
    for (int64_t back : {1, 2}) {
      auto it = calls.find({key.first, key.second - back});
      if (it == calls.end()) continue;
      const Op& d = program.ranks[it->second[0].rank].ops[it->second[0].id];
      if (d.collective == Collective::kAllToAll && d.role == OpRole::kDispatch &&
          d.layer == first.layer && d.micro_batch == first.micro_batch) {
        prev = it;
        break;
      }
    }
    if (prev == calls.end()) continue;
    const size_t n = g.ranks.size();
    std::vector<int64_t> sent(n * n, 0);  // sent[i * n + j]: the dispatch's i → j
    for (const OpRef& ref : prev->second) {
      const size_t i = std::find(g.ranks.begin(), g.ranks.end(), ref.rank) - g.ranks.begin();
      for (const PeerBytes& p : program.ranks[ref.rank].ops[ref.id].peer_sends) {
        sent[i * n + p.position] = p.bytes;
      }
    }
    for (const OpRef& ref : refs) {
      const Op& op = program.ranks[ref.rank].ops[ref.id];
      const size_t i = std::find(g.ranks.begin(), g.ranks.end(), ref.rank) - g.ranks.begin();
      const std::vector<int64_t> row = BytesPerPeer(op, n);
      for (size_t j = 0; j < n; ++j) {
        if (row[j] != sent[j * n + i]) {
          return Broken(op, ref.rank, "combines {} B to rank {}, whose dispatch sent it {} B",
                        row[j], g.ranks[j], sent[j * n + i]);
        }
      }
    }
  }
  return Status::Ok();
}

// Every send has its recv: key (src, dst, seq).
using P2pKey = std::tuple<int64_t, int64_t, int64_t>;

Status CheckPointToPoint(const PhaseProgram& program, std::map<P2pKey, OpRef>& sends,
                         std::map<P2pKey, OpRef>& recvs) {
  for (const RankProgram& rp : program.ranks) {
    std::map<int64_t, int64_t> next_send, next_recv;
    for (const Op& op : rp.ops) {
      if (!op.is_comm() || !IsPointToPoint(op)) continue;
      const bool send = op.collective == Collective::kSend;
      int64_t& expect = (send ? next_send : next_recv)[op.peer];
      if (op.seq != expect) return Broken(op, rp.rank, "seq {} where {} was due", op.seq, expect);
      ++expect;
      if (send) {
        sends[{rp.rank, op.peer, op.seq}] = {rp.rank, op.id};
      } else {
        recvs[{op.peer, rp.rank, op.seq}] = {rp.rank, op.id};
      }
    }
  }
  for (const auto& [key, ref] : sends) {
    const Op& op = program.ranks[ref.rank].ops[ref.id];
    auto it = recvs.find(key);
    if (it == recvs.end()) return Broken(op, ref.rank, "no matching recv on rank {}", op.peer);
    const Op& other = program.ranks[it->second.rank].ops[it->second.id];
    if (other.bytes != op.bytes || other.dim != op.dim) {
      return Broken(op, ref.rank, "sends {} B ({}), rank {} receives {} B ({})", op.bytes,
                    DimName(op.dim), op.peer, other.bytes, DimName(other.dim));
    }
  }
  for (const auto& [key, ref] : recvs) {
    if (!sends.count(key)) {
      const Op& op = program.ranks[ref.rank].ops[ref.id];
      return Broken(op, ref.rank, "no matching send on rank {}", op.peer);
    }
  }
  return Status::Ok();
}

// Runs the streams with rendezvous semantics until nothing moves.
Status CheckProgress(const PhaseProgram& program,
                     const std::map<std::pair<int64_t, int64_t>, std::vector<OpRef>>& calls,
                     const std::map<P2pKey, OpRef>& sends, const std::map<P2pKey, OpRef>& recvs) {
  const size_t n = program.ranks.size();
  std::vector<std::vector<char>> done(n), posted(n);
  std::vector<std::array<std::vector<int32_t>, kNumStreams>> streams(n);
  std::vector<std::array<size_t, kNumStreams>> head(n);
  for (size_t r = 0; r < n; ++r) {
    const auto& ops = program.ranks[r].ops;
    done[r].assign(ops.size(), 0);
    posted[r].assign(ops.size(), 0);
    for (const Op& op : ops) streams[r][static_cast<int>(op.stream)].push_back(op.id);
    head[r].fill(0);
  }
  std::map<std::pair<int64_t, int64_t>, size_t> arrived;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      const auto& ops = program.ranks[r].ops;
      for (int s = 0; s < kNumStreams; ++s) {
        auto& list = streams[r][s];
        while (head[r][s] < list.size()) {
          const Op& op = ops[list[head[r][s]]];
          if (!done[r][op.id]) {
            const auto deps = DepsOf(program.ranks[r], op);
            bool ready =
                std::all_of(deps.begin(), deps.end(), [&](int32_t d) { return done[r][d] != 0; });
            if (!ready) break;
            if (!op.is_comm()) {
              done[r][op.id] = 1;
            } else if (!posted[r][op.id]) {
              posted[r][op.id] = 1;
              progress = true;
              if (IsPointToPoint(op)) {
                const bool send = op.collective == Collective::kSend;
                const P2pKey key = send ? P2pKey{static_cast<int64_t>(r), op.peer, op.seq}
                                        : P2pKey{op.peer, static_cast<int64_t>(r), op.seq};
                const OpRef other = (send ? recvs : sends).at(key);
                if (posted[other.rank][other.id]) {
                  done[r][op.id] = 1;
                  done[other.rank][other.id] = 1;
                }
              } else {
                const std::pair<int64_t, int64_t> key{op.group_id, op.seq};
                const auto& members = calls.at(key);
                if (++arrived[key] == members.size()) {
                  for (const OpRef& m : members) done[m.rank][m.id] = 1;
                }
              }
            }
            if (!done[r][op.id]) break;
          }
          ++head[r][s];
          progress = true;
        }
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    for (int s = 0; s < kNumStreams; ++s) {
      if (head[r][s] < streams[r][s].size()) {
        const Op& op = program.ranks[r].ops[streams[r][s][head[r][s]]];
        return Broken(op, static_cast<int64_t>(r), "deadlock: stream {} never gets past it",
                      StreamName(op.stream));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckProgram(const PhaseProgram& program, const Placement& placement) {
  if (static_cast<int64_t>(program.ranks.size()) != placement.world_size()) {
    return InternalError("program check: {} rank programs for a world of {}", program.ranks.size(),
                         placement.world_size());
  }
  for (size_t r = 0; r < program.ranks.size(); ++r) {
    if (program.ranks[r].rank != static_cast<int64_t>(r)) {
      return InternalError("program check: rank program {} is for rank {}", r,
                           program.ranks[r].rank);
    }
    RETURN_IF_ERROR(CheckRank(program.ranks[r], placement));
  }
  std::map<std::pair<int64_t, int64_t>, std::vector<OpRef>> calls;
  RETURN_IF_ERROR(CheckCollectives(program, placement, calls));
  std::map<P2pKey, OpRef> sends, recvs;
  RETURN_IF_ERROR(CheckPointToPoint(program, sends, recvs));
  return CheckProgress(program, calls, sends, recvs);
}

}  // namespace shardscope
