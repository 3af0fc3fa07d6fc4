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
  std::vector<std::vector<const OpRec*>*> rank_calls;  // this rank's list per group
  for (const auto& [rank, rd] : data.ranks) {
    rank_calls.assign(data.groups.size(), nullptr);
    for (const OpRec& op : rd.ops) {
      if (op.group < 0) continue;
      if (op.coll == Collective::kSend) {
        sends[{rank, op.peer}].push_back(&op);
      } else if (op.coll == Collective::kRecv) {
        recvs[{op.peer, rank}].push_back(&op);
      } else if (!data.groups[op.group].p2p) {
        auto*& list = rank_calls[op.group];
        if (list == nullptr) list = &calls[op.group][rank];  // map nodes are stable
        list->push_back(&op);
      }
    }
  }
  std::vector<const std::vector<const OpRec*>*> members;  // per member of the group, its calls
  std::vector<int64_t> member_wait;
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
    members.clear();
    for (int32_t member : group.ranks) members.push_back(&calls[g][member]);
    member_wait.assign(members.size(), 0);
    int64_t group_wait = 0;
    for (size_t k = 0; k < n; ++k) {
      // The last arrival, and the one before it (the margin by which the last was late).
      int64_t last = INT64_MIN, second = INT64_MIN;
      int32_t last_rank = -1;
      bool tie = false;
      for (size_t m = 0; m < members.size(); ++m) {
        int64_t s = (*members[m])[k]->ts;
        if (s > last) {
          second = last;
          last = s;
          last_rank = group.ranks[m];
          tie = false;
        } else if (s == last) {
          second = s;
          tie = true;
        } else {
          second = std::max(second, s);
        }
      }
      for (size_t m = 0; m < members.size(); ++m) {
        const OpRec* op = (*members[m])[k];
        int64_t wait = std::clamp<int64_t>(last - op->ts, 0, op->end - op->ts);
        member_wait[m] += wait;
        group_wait += wait;
      }
      if (!tie && members.size() > 1) {
        ++r.last_arrivals[last_rank];
        r.last_margin_ns[last_rank] += last - second;
      }
      ++r.matched;
    }
    if (n > 0) {
      for (size_t m = 0; m < members.size(); ++m) r.wait_ns[group.ranks[m]] += member_wait[m];
      r.group_wait_ns[static_cast<int32_t>(g)] += group_wait;
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
