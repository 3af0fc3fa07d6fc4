#include "analysis/metric_set.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace shardscope::analysis {

void MetricSet::Add(std::string name, std::string scope, double value, std::string unit,
                    std::string aggregation) {
  Metric m{std::move(name), std::move(scope), value, std::move(unit), std::move(aggregation), ""};
  if (!std::isfinite(value)) {
    m.value.reset();
    m.unavailable = "not a finite number (division by zero time?)";
  }
  Insert(std::move(m));
}

void MetricSet::AddUnavailable(std::string name, std::string scope, std::string unit,
                               std::string reason) {
  Insert({std::move(name), std::move(scope), std::nullopt, std::move(unit), "", std::move(reason)});
}

void MetricSet::Insert(Metric m) {
  std::string key = m.key();
  auto it = index_.find(key);
  if (it != index_.end()) {
    metrics_[it->second] = std::move(m);
    return;
  }
  index_.emplace(std::move(key), metrics_.size());
  metrics_.push_back(std::move(m));
}

void MetricSet::Append(MetricSet later) {
  if (metrics_.empty()) {
    *this = std::move(later);
    return;
  }
  for (Metric& m : later.metrics_) Insert(std::move(m));
}

const Metric* MetricSet::Find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &metrics_[it->second];
}

MetricSet MetricSet::Filter(const std::vector<std::string>& names) const {
  if (names.empty()) return *this;
  MetricSet out;
  for (const Metric& m : metrics_) {
    for (const std::string& n : names) {
      if (m.name == n || (m.name.size() > n.size() && m.name.compare(0, n.size(), n) == 0 &&
                          m.name[n.size()] == '.')) {
        out.metrics_.push_back(m);
        out.index_.emplace(m.key(), out.metrics_.size() - 1);
        break;
      }
    }
  }
  return out;
}

nlohmann::ordered_json MetricSet::ToJson() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Metric& m : metrics_) {
    if (m.value) {
      j[m.key()] = *m.value;
    } else {
      j[m.key()] = "not available: " + m.unavailable;
    }
  }
  return j;
}

}  // namespace shardscope::analysis
