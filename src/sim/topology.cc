#include "sim/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace shardscope::sim {

Topology::Topology(const ClusterSpec& cluster, MeasuredCollectives measured)
    : cluster_(cluster),
      devices_(cluster.num_devices()),
      domain_size_(cluster.scale_up.domain_size),
      domains_(cluster.scale_up.kind != ScaleUpKind::kNone && cluster.scale_up.domain_size > 1),
      torus_(cluster.scale_up.kind == ScaleUpKind::kTorus),
      num_dims_(static_cast<int>(cluster.scale_up.torus_dims.size())),
      dims_(cluster.scale_up.torus_dims),
      measured_(std::move(measured)) {
  if (torus_ && domains_ && domain_size_ <= kTableDomain && domain_size_ <= devices_) {
    const int64_t n = domain_size_;
    torus_path_begin_.reserve(n * n + 1);
    torus_path_begin_.push_back(0);
    std::vector<double> latency;  // filled before torus_latency_, which Latency() reads
    latency.reserve(n * n);
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = 0; b < n; ++b) {
        if (a != b) AppendTorusPath(a, b, &torus_path_);
        torus_path_begin_.push_back(static_cast<int32_t>(torus_path_.size()));
        latency.push_back(Latency(a, b));
      }
    }
    torus_latency_ = std::move(latency);
    const int32_t first = TorusLink(0, 0, false);
    for (int32_t& l : torus_path_) l -= first;  // relative to the domain's first link
  }
  // Unused link kinds keep capacity 0; no path ever contains them.
  capacity_.assign(static_cast<size_t>(devices_ * 10), 0.0);
  const bool switched = cluster.scale_up.kind == ScaleUpKind::kSwitched;
  const bool torus = cluster.scale_up.kind == ScaleUpKind::kTorus;
  for (int64_t d = 0; d < devices_; ++d) {
    if (switched) {
      capacity_[ScaleUpUp(d)] = cluster.scale_up.bandwidth_per_device;
      capacity_[ScaleUpDown(d)] = cluster.scale_up.bandwidth_per_device;
    }
    capacity_[NicUp(d)] = cluster.scale_out.nic_bandwidth_per_device;
    capacity_[NicDown(d)] = cluster.scale_out.nic_bandwidth_per_device;
    if (torus) {
      for (int dim = 0; dim < 3; ++dim) {
        capacity_[TorusLink(d, dim, false)] = cluster.scale_up.link_bandwidth;
        capacity_[TorusLink(d, dim, true)] = cluster.scale_up.link_bandwidth;
      }
    }
  }
}

std::string Topology::LinkName(int32_t link) const {
  const int64_t l = link;
  if (l < devices_) return fmt::format("nvl_up[{}]", l);
  if (l < 2 * devices_) return fmt::format("nvl_down[{}]", l - devices_);
  if (l < 3 * devices_) return fmt::format("nic_up[{}]", l - 2 * devices_);
  if (l < 4 * devices_) return fmt::format("nic_down[{}]", l - 3 * devices_);
  const int64_t t = l - 4 * devices_;
  return fmt::format("ici[{}].d{}{}", t / 6, (t % 6) / 2, t % 2 ? "-" : "+");
}

void Topology::Coords(int64_t device, int64_t* coords) const {
  int64_t local = device % domain_size_;
  for (int i = 0; i < num_dims_; ++i) {
    coords[i] = local % dims_[i];
    local /= dims_[i];
  }
}

double Topology::Latency(int64_t a, int64_t b) const {
  if (a == b) return 0;
  if (!SameDomain(a, b)) return cluster_.scale_out.latency;
  if (!torus_) return cluster_.scale_up.latency;  // one hop (ScaleUpHops)
  if (!torus_latency_.empty()) {
    return torus_latency_[(a % domain_size_) * domain_size_ + b % domain_size_];
  }
  int64_t stack[2 * kStackDims];
  std::vector<int64_t> heap(num_dims_ > kStackDims ? 2 * num_dims_ : 0);
  int64_t* ca = heap.empty() ? stack : heap.data();
  int64_t* cb = ca + num_dims_;
  Coords(a, ca);
  Coords(b, cb);
  int64_t hops = 0;
  for (int i = 0; i < num_dims_; ++i) {
    int64_t d = std::llabs(ca[i] - cb[i]);
    if (cluster_.scale_up.wraparound) d = std::min(d, dims_[i] - d);
    hops += d;
  }
  return static_cast<double>(hops) * cluster_.scale_up.latency;
}

void Topology::AppendPath(int64_t a, int64_t b, std::vector<int32_t>* links) const {
  if (a == b) return;
  if (!SameDomain(a, b)) {
    links->push_back(NicUp(a));
    links->push_back(NicDown(b));
    return;
  }
  if (torus_) {
    if (torus_path_begin_.empty()) {
      AppendTorusPath(a, b, links);
      return;
    }
    const int64_t la = a % domain_size_, lb = b % domain_size_;
    const int32_t first = TorusLink(a - la, 0, false);
    const int64_t pair = la * domain_size_ + lb;
    for (int32_t i = torus_path_begin_[pair]; i < torus_path_begin_[pair + 1]; ++i) {
      links->push_back(first + torus_path_[i]);
    }
    return;
  }
  links->push_back(ScaleUpUp(a));
  links->push_back(ScaleUpDown(b));
}

void Topology::AppendTorusPath(int64_t a, int64_t b, std::vector<int32_t>* links) const {
  int64_t stack[2 * kStackDims];
  std::vector<int64_t> heap(num_dims_ > kStackDims ? 2 * num_dims_ : 0);
  int64_t* cur = heap.empty() ? stack : heap.data();
  int64_t* dst = cur + num_dims_;
  Coords(a, cur);
  Coords(b, dst);
  // Device number of coordinates in the same slice: dimension 0 fastest.
  const int64_t base = a - (a % domain_size_);
  auto device_of = [&](const int64_t* c) {
    int64_t idx = 0, stride = 1;
    for (int i = 0; i < num_dims_; ++i) {
      idx += c[i] * stride;
      stride *= dims_[i];
    }
    return base + idx;
  };
  for (int dim = 0; dim < num_dims_ && dim < 3; ++dim) {
    const int64_t n = dims_[dim];
    while (cur[dim] != dst[dim]) {
      const int64_t forward = ((dst[dim] - cur[dim]) % n + n) % n;
      bool negative;
      if (cluster_.scale_up.wraparound) {
        negative = forward > n - forward;  // ties go the positive way
      } else {
        negative = dst[dim] < cur[dim];
      }
      links->push_back(TorusLink(device_of(cur), static_cast<int>(dim), negative));
      cur[dim] = ((cur[dim] + (negative ? -1 : 1)) % n + n) % n;
    }
  }
}

}  // namespace shardscope::sim
