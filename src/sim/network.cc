#include "sim/network.h"

#include <algorithm>
#include <cmath>

namespace shardscope::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities)
    : capacity_(std::move(capacities)),
      on_link_(capacity_.size()),
      link_mark_(capacity_.size(), -1),
      cap_left_(capacity_.size(), 0),
      weight_left_(capacity_.size(), 0),
      unfrozen_on_link_(capacity_.size(), 0) {}

void FlowNetwork::Settle(Transfer& t, double now) {
  if (now > t.updated) {
    t.remaining = std::max(0.0, t.remaining - t.rate * (now - t.updated));
    t.updated = now;
  }
}

double FlowNetwork::FinishTime(const Transfer& t) const {
  if (t.remaining <= 0) return t.updated;
  return t.rate > 0 ? t.updated + t.remaining / t.rate : kInf;
}

void SortAndMergeLoads(std::vector<LinkLoad>* loads) {
  std::vector<LinkLoad>& v = *loads;
  const auto increasing = [](const LinkLoad& a, const LinkLoad& b) { return a.link >= b.link; };
  if (std::adjacent_find(v.begin(), v.end(), increasing) != v.end()) {
    std::sort(v.begin(), v.end(),
              [](const LinkLoad& a, const LinkLoad& b) { return a.link < b.link; });
  }
  size_t w = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (w > 0 && v[w - 1].link == v[i].link) {
      v[w - 1].bytes += v[i].bytes;
    } else {
      v[w++] = v[i];
    }
  }
  v.resize(w);
}

void FlowNetwork::Start(double now, const std::vector<LinkLoad>& loads, int64_t tag) {
  now_ = std::max(now_, now);
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int32_t>(transfers_.size());
    transfers_.emplace_back();
    transfer_mark_.push_back(-1);
  }
  Transfer& t = transfers_[slot];
  t.tag = tag;
  t.coeff.clear();
  for (const LinkLoad& l : loads) {
    if (l.bytes > 0) t.coeff.push_back(l);
  }
  SortAndMergeLoads(&t.coeff);
  t.size = 0;
  for (const LinkLoad& l : t.coeff) t.size = std::max(t.size, l.bytes);
  for (LinkLoad& l : t.coeff) l.bytes /= t.size;
  t.remaining = t.size;
  t.rate = 0;
  t.updated = now_;
  t.live = true;
  ++started_;
  active_.push_back(slot);
  seeds_.clear();
  for (const LinkLoad& l : t.coeff) {
    on_link_[l.link].push_back(slot);
    seeds_.push_back(l.link);
  }
  Recompute(now_, seeds_);
  UpdateNextCompletion();
}

void FlowNetwork::UpdateNextCompletion() {
  double best = kInf;
  for (int32_t s : active_) best = std::min(best, FinishTime(transfers_[s]));
  next_completion_ = best;
}

void FlowNetwork::AdvanceTo(double t, std::vector<int64_t>* finished) {
  now_ = std::max(now_, t);
  // Transfers finishing within a relative 1e-12 of t finish together.
  const double tolerance = std::max(1e-15, std::abs(t) * 1e-12);
  seeds_.clear();
  size_t w = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    const int32_t s = active_[i];
    Transfer& tr = transfers_[s];
    if (FinishTime(tr) <= t + tolerance) {
      finished->push_back(tr.tag);
      tr.live = false;
      for (const LinkLoad& l : tr.coeff) {
        auto& v = on_link_[l.link];
        v.erase(std::find(v.begin(), v.end(), s));
        seeds_.push_back(l.link);
      }
      free_slots_.push_back(s);
    } else {
      active_[w++] = s;
    }
  }
  active_.resize(w);
  if (!seeds_.empty()) Recompute(now_, seeds_);
  UpdateNextCompletion();
}

double FlowNetwork::RateOf(int64_t tag) const {
  for (int32_t s : active_) {
    if (transfers_[s].tag == tag) return transfers_[s].rate;
  }
  return 0;
}

void FlowNetwork::Recompute(double now, const std::vector<int32_t>& seed_links) {
  // The connected component of the seeds: links and the live transfers on them.
  ++epoch_;
  std::vector<int32_t>& links = links_;
  std::vector<int32_t>& comp = comp_;
  std::vector<int32_t>& stack = stack_;
  links.clear();
  comp.clear();
  stack.clear();
  for (int32_t l : seed_links) {
    if (link_mark_[l] != epoch_) {
      link_mark_[l] = epoch_;
      stack.push_back(l);
    }
  }
  while (!stack.empty()) {
    const int32_t l = stack.back();
    stack.pop_back();
    links.push_back(l);
    for (int32_t s : on_link_[l]) {
      if (transfer_mark_[s] == epoch_) continue;
      transfer_mark_[s] = epoch_;
      comp.push_back(s);
      for (const LinkLoad& ll : transfers_[s].coeff) {
        if (link_mark_[ll.link] != epoch_) {
          link_mark_[ll.link] = epoch_;
          stack.push_back(ll.link);
        }
      }
    }
  }
  if (comp.empty()) return;
  // Deterministic order regardless of discovery order.
  std::sort(comp.begin(), comp.end());
  std::sort(links.begin(), links.end());
  for (int32_t s : comp) Settle(transfers_[s], now);
  for (int32_t l : links) {
    cap_left_[l] = capacity_[l];
    weight_left_[l] = 0;
    unfrozen_on_link_[l] = 0;
  }
  for (int32_t s : comp) {
    for (const LinkLoad& ll : transfers_[s].coeff) {
      weight_left_[ll.link] += ll.bytes;
      ++unfrozen_on_link_[ll.link];
    }
  }
  // Progressive filling: raise every unfrozen transfer's rate together until a
  // link saturates; freeze the transfers crossing it; repeat.
  size_t frozen = 0;
  ++epoch_;  // transfer_mark_ == epoch_ now means "frozen"
  while (frozen < comp.size()) {
    int32_t best = -1;
    double best_share = kInf;
    for (int32_t l : links) {
      if (unfrozen_on_link_[l] == 0) continue;
      const double share = std::max(0.0, cap_left_[l]) / weight_left_[l];
      if (share < best_share) {
        best_share = share;
        best = l;
      }
    }
    if (best < 0) break;
    for (int32_t s : on_link_[best]) {
      if (transfer_mark_[s] == epoch_) continue;
      transfer_mark_[s] = epoch_;
      ++frozen;
      Transfer& t = transfers_[s];
      t.rate = best_share;
      for (const LinkLoad& ll : t.coeff) {
        cap_left_[ll.link] -= best_share * ll.bytes;
        weight_left_[ll.link] -= ll.bytes;
        --unfrozen_on_link_[ll.link];
      }
    }
  }
}

}  // namespace shardscope::sim
