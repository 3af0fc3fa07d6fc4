#include "sim/topology.h"

#include <fmt/format.h>

namespace shardscope::sim {

Topology::Topology(const ClusterSpec& cluster)
    : cluster_(cluster), devices_(cluster.num_devices()) {
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

void Topology::AppendPath(int64_t a, int64_t b, std::vector<int32_t>* links) const {
  if (a == b) return;
  if (!cluster_.SameScaleUpDomain(a, b)) {
    links->push_back(NicUp(a));
    links->push_back(NicDown(b));
    return;
  }
  if (cluster_.scale_up.kind == ScaleUpKind::kTorus) {
    AppendTorusPath(a, b, links);
    return;
  }
  links->push_back(ScaleUpUp(a));
  links->push_back(ScaleUpDown(b));
}

void Topology::AppendTorusPath(int64_t a, int64_t b, std::vector<int32_t>* links) const {
  const std::vector<int64_t>& dims = cluster_.scale_up.torus_dims;
  std::vector<int64_t> cur = cluster_.TorusCoords(a);
  const std::vector<int64_t> dst = cluster_.TorusCoords(b);
  // Device number of coordinates in the same slice: dimension 0 fastest.
  const int64_t base = a - (a % cluster_.scale_up.domain_size);
  auto device_of = [&](const std::vector<int64_t>& c) {
    int64_t idx = 0, stride = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      idx += c[i] * stride;
      stride *= dims[i];
    }
    return base + idx;
  };
  for (size_t dim = 0; dim < dims.size() && dim < 3; ++dim) {
    const int64_t n = dims[dim];
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
