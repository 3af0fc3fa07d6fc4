#include "program/expert_balancer.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace shardscope {

ExpertReplicas BalanceExperts(const std::vector<double>& load, int64_t redundant, int64_t ep) {
  const int64_t experts = static_cast<int64_t>(load.size());
  const int64_t slots = experts + redundant;
  assert(ep >= 1 && slots % ep == 0);
  std::vector<int64_t> replicas(load.size(), 1);
  for (int64_t r = 0; r < redundant; ++r) {
    int64_t best = 0;
    for (int64_t x = 1; x < experts; ++x) {
      // load[x] / replicas[x] > load[best] / replicas[best], without dividing.
      if (load[x] * static_cast<double>(replicas[best]) >
          load[best] * static_cast<double>(replicas[x])) {
        best = x;
      }
    }
    ++replicas[best];
  }
  struct Item {
    double load;
    int32_t expert;
  };
  std::vector<Item> items;
  items.reserve(static_cast<size_t>(slots));
  for (int64_t x = 0; x < experts; ++x) {
    for (int64_t i = 0; i < replicas[x]; ++i) {
      items.push_back({load[x] / static_cast<double>(replicas[x]), static_cast<int32_t>(x)});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.load > b.load; });
  ExpertReplicas out;
  out.slots_per_rank = slots / ep;
  out.slot_expert.assign(static_cast<size_t>(slots), -1);
  out.expert_slots.assign(load.size(), {});
  out.rank_load.assign(static_cast<size_t>(ep), 0.0);
  std::vector<int64_t> used(static_cast<size_t>(ep), 0);
  for (const Item& item : items) {
    int64_t best = -1;
    for (int64_t k = 0; k < ep; ++k) {
      if (used[k] < out.slots_per_rank && (best < 0 || out.rank_load[k] < out.rank_load[best])) {
        best = k;
      }
    }
    const int64_t slot = best * out.slots_per_rank + used[best]++;
    out.slot_expert[slot] = item.expert;
    out.rank_load[best] += item.load;
  }
  for (int64_t s = 0; s < slots; ++s) {
    out.expert_slots[out.slot_expert[s]].push_back(static_cast<int32_t>(s));
  }
  return out;
}

double LoadImbalance(const std::vector<double>& load) {
  if (load.empty()) return 0;
  const double sum = std::accumulate(load.begin(), load.end(), 0.0);
  if (sum <= 0) return 0;
  return *std::max_element(load.begin(), load.end()) / (sum / static_cast<double>(load.size()));
}

}  // namespace shardscope
