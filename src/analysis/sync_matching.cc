// Synchronisation wait: the k-th call on a group is matched across the group's
// members; a member waits from its own arrival until the last member arrives.
// Send/recv pairs are matched the same way per (sender, receiver) in order.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "analysis/metric_families.h"

namespace shardscope::analysis {

SyncResult MatchCollectives(const Context& ctx) {
  SyncResult r;
  const RunData& data = *ctx.data;
  // Per group: per member rank, its calls on that group in start order.
  std::vector<std::map<int32_t, std::vector<const OpRec*>>> calls(data.groups.size());
  std::map<std::pair<int32_t, int32_t>, std::vector<const OpRec*>> sends, recvs;
  for (const auto& [rank, rd] : data.ranks) {
    for (const OpRec& op : rd.ops) {
      if (op.group < 0) continue;
      if (op.coll == Collective::kSend) {
        sends[{rank, op.peer}].push_back(&op);
      } else if (op.coll == Collective::kRecv) {
        recvs[{op.peer, rank}].push_back(&op);
      } else if (!data.groups[op.group].p2p) {
        calls[op.group][rank].push_back(&op);
      }
    }
  }
  std::vector<int64_t> starts;
  for (size_t g = 0; g < data.groups.size(); ++g) {
    const GroupInfo& group = data.groups[g];
    if (group.p2p || calls[g].empty()) continue;
    // Every member must appear; otherwise the calls cannot be matched.
    size_t n = SIZE_MAX;
    size_t total = 0;
    bool complete = true;
    for (int32_t member : group.ranks) {
      auto it = calls[g].find(member);
      if (it == calls[g].end()) {
        complete = false;
        continue;
      }
      n = std::min(n, it->second.size());
      total += it->second.size();
    }
    if (!complete) {
      r.unmatched += static_cast<int64_t>(total);
      continue;
    }
    r.unmatched += static_cast<int64_t>(total - n * group.ranks.size());
    for (size_t k = 0; k < n; ++k) {
      starts.clear();
      int64_t last = INT64_MIN;
      int32_t last_rank = -1;
      bool tie = false;
      for (int32_t member : group.ranks) {
        int64_t s = calls[g][member][k]->ts;
        starts.push_back(s);
        if (s > last) {
          last = s;
          last_rank = member;
          tie = false;
        } else if (s == last) {
          tie = true;
        }
      }
      for (int32_t member : group.ranks) {
        const OpRec* op = calls[g][member][k];
        int64_t wait = std::clamp<int64_t>(last - op->ts, 0, op->end - op->ts);
        r.wait_ns[member] += wait;
        r.group_wait_ns[static_cast<int32_t>(g)] += wait;
      }
      if (!tie && starts.size() > 1) {
        std::sort(starts.begin(), starts.end());
        ++r.last_arrivals[last_rank];
        r.last_margin_ns[last_rank] += starts.back() - starts[starts.size() - 2];
      }
      ++r.matched;
    }
  }
  for (auto& [pair, send_list] : sends) {
    auto it = recvs.find(pair);
    size_t n = it == recvs.end() ? 0 : std::min(send_list.size(), it->second.size());
    r.p2p_unmatched += static_cast<int64_t>(send_list.size() - n);
    for (size_t k = 0; k < n; ++k) {
      const OpRec* s = send_list[k];
      const OpRec* v = it->second[k];
      int64_t recv_wait = std::clamp<int64_t>(s->ts - v->ts, 0, v->end - v->ts);
      int64_t send_wait = std::clamp<int64_t>(v->ts - s->ts, 0, s->end - s->ts);
      r.recv_wait_ns[pair.second] += recv_wait;
      r.wait_ns[pair.second] += recv_wait;
      r.wait_ns[pair.first] += send_wait;
      r.group_wait_ns[s->group] += recv_wait + send_wait;
      ++r.p2p_matched;
    }
  }
  for (auto& [pair, recv_list] : recvs) {
    auto it = sends.find(pair);
    size_t n = it == sends.end() ? 0 : std::min(recv_list.size(), it->second.size());
    r.p2p_unmatched += static_cast<int64_t>(recv_list.size() - n);
  }
  return r;
}

}  // namespace shardscope::analysis
