#include "serve/kv_transfers.h"

#include <limits>
#include <tuple>

namespace shardscope::serve {

KvTransfers::KvTransfers(std::vector<double> nic_bandwidth, double latency)
    : network_(std::move(nic_bandwidth)), latency_(latency) {}

void KvTransfers::Start(double now, size_t from, size_t to, double bytes, int64_t request) {
  const int64_t order = started_++;
  if (static_cast<size_t>(request) >= order_.size()) order_.resize(request + 1, 0);
  order_[request] = order;
  if (!(bytes > 0)) {  // nothing to send: only the latency
    arrivals_.emplace(now + latency_, order, request);
    return;
  }
  network_.Start(now, {{static_cast<int32_t>(from), bytes}, {static_cast<int32_t>(to), bytes}},
                 request);
}

double KvTransfers::Next() const {
  const double arrival =
      arrivals_.empty() ? std::numeric_limits<double>::infinity() : std::get<0>(arrivals_.top());
  return std::min(network_.NextCompletion(), arrival);
}

void KvTransfers::AdvanceTo(double t, std::vector<int64_t>* arrived) {
  if (network_.NextCompletion() <= t) {
    finished_.clear();
    network_.AdvanceTo(t, &finished_);
    for (int64_t request : finished_) arrivals_.emplace(t + latency_, order_[request], request);
  }
  while (!arrivals_.empty() && std::get<0>(arrivals_.top()) <= t) {
    arrived->push_back(std::get<2>(arrivals_.top()));
    arrivals_.pop();
  }
}

}  // namespace shardscope::serve
