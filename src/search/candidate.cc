#include "search/candidate.h"

#include <fmt/format.h>

#include <algorithm>

namespace shardscope::search {
namespace {

const std::vector<Dim> kDefaultOrder = {Dim::kTp, Dim::kSp, Dim::kEp, Dim::kDp, Dim::kPp};

std::vector<int64_t> PowersOfTwoUpTo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

std::vector<int64_t> Within(std::vector<int64_t> values, int64_t limit) {
  std::erase_if(values, [&](int64_t v) { return v > limit; });
  return values;
}

// The mesh orders worth trying: orders that differ only in where size-1
// dimensions sit place every rank identically, so only the dimensions above 1
// are arranged; the others follow in default order. Inside one switched domain
// (NVSwitch) every device is one hop from every other: one order is enough.
std::vector<std::vector<Dim>> Orders(const ParallelSpec& p, OrderMode mode, bool one_switch) {
  std::vector<Dim> active, idle;
  for (Dim d : kDefaultOrder) (p.Size(d) > 1 ? active : idle).push_back(d);
  auto full = [&](std::vector<Dim> head) {
    head.insert(head.end(), idle.begin(), idle.end());
    return head;
  };
  std::vector<std::vector<Dim>> out = {full(active)};
  if (active.size() < 2 || mode == OrderMode::kDefault || one_switch) return out;
  if (mode == OrderMode::kInnermost) {
    for (size_t i = 1; i < active.size(); ++i) {
      std::vector<Dim> head = {active[i]};
      for (Dim d : active) {
        if (d != active[i]) head.push_back(d);
      }
      out.push_back(full(head));
    }
    return out;
  }
  std::vector<Dim> perm = active;  // kDefaultOrder order is ascending by enum value
  while (std::next_permutation(perm.begin(), perm.end())) out.push_back(full(perm));
  return out;
}

}  // namespace

std::string PlanLabel(const Candidate& c) {
  const ParallelSpec& p = c.parallel;
  std::string out;
  for (Dim d : kDefaultOrder) {
    if (p.Size(d) > 1) out += fmt::format("{}{}{}", out.empty() ? "" : "·", DimName(d), p.Size(d));
  }
  if (out.empty()) out = "single";
  if (p.sp > 1) out += fmt::format(" {}", SpVariantName(p.sp_variant));
  if (p.pp > 1) out += fmt::format(" mb{}", p.micro_batches == 0 ? p.pp : p.micro_batches);
  std::vector<Dim> active;
  for (Dim d : p.order) {
    if (p.Size(d) > 1) active.push_back(d);
  }
  std::vector<Dim> default_active;
  for (Dim d : kDefaultOrder) {
    if (p.Size(d) > 1) default_active.push_back(d);
  }
  if (active != default_active) {
    std::string order;
    for (Dim d : active) order += fmt::format("{}{}", order.empty() ? "" : ",", DimName(d));
    out += " [" + order + "]";
  }
  return out + fmt::format(" b{}", c.batch);
}

Experiment CandidateExperiment(const Experiment& base, const Candidate& c) {
  Experiment e = base;
  e.parallel = c.parallel;
  e.workload.batch_size = c.batch;
  e.claims.clear();
  e.name = fmt::format("{} [{}]", base.name, PlanLabel(c));
  return e;
}

int64_t DeviceBudget(const Experiment& base, const SearchSpec& spec) {
  return spec.max_devices > 0 ? spec.max_devices : base.cluster.num_devices();
}

// GCC 12 takes ParallelSpec's default order (an initializer list of one-byte Dims), when
// inlined in this loop nest, for maybe-uninitialized: a false positive (-Werror).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
int64_t EnumerateCandidates(const Experiment& base, const SearchSpec& spec,
                            const std::function<bool(const Candidate&)>& visit) {
  const int64_t budget = DeviceBudget(base, spec);
  const int64_t requests = base.workload.batch_size;
  auto sizes = [&](const std::vector<int64_t>& given) {
    return given.empty() ? PowersOfTwoUpTo(budget) : Within(given, budget);
  };
  std::vector<int64_t> tps = sizes(spec.tp), sps = sizes(spec.sp), dps = sizes(spec.dp);
  std::vector<int64_t> pps = sizes(spec.pp);
  if (spec.pp.empty() && base.model.num_layers <= budget) pps.push_back(base.model.num_layers);
  pps = Within(pps, base.model.num_layers);
  std::sort(pps.begin(), pps.end());
  pps.erase(std::unique(pps.begin(), pps.end()), pps.end());
  std::vector<int64_t> eps = {1};
  if (base.model.is_moe()) eps = sizes(spec.ep);
  std::vector<int64_t> batches =
      spec.batch_sizes.empty() ? PowersOfTwoUpTo(requests) : Within(spec.batch_sizes, requests);
  if (spec.batch_sizes.empty() && batches.back() != requests) batches.push_back(requests);
  // A served workload's scheduler batches the arriving requests itself: one replica set
  // (the plan's dp) serves them all.
  if (base.serving) batches = {requests};

  int64_t count = 0;
  Candidate c;
  for (int64_t tp : tps) {
    for (int64_t pp : pps) {
      for (int64_t sp : sps) {
        for (int64_t ep : eps) {
          for (int64_t dp : dps) {
            const int64_t world = tp * pp * sp * ep * dp;
            if (world > budget) continue;
            ParallelSpec p;
            p.tp = tp, p.pp = pp, p.sp = sp, p.ep = ep, p.dp = dp;
            std::vector<SpVariant> variants = {SpVariant::kZigzag};
            if (sp > 1) variants = spec.sp_variants;
            for (SpVariant v : variants) {
              p.sp_variant = v;
              const bool one_switch = base.cluster.scale_up.kind == ScaleUpKind::kSwitched &&
                                      world <= base.cluster.scale_up.domain_size;
              for (const auto& order : Orders(p, spec.orders, one_switch)) {
                p.order = order;
                for (int64_t b : batches) {
                  // Micro-batch counts this batch allows (one per replica group at most).
                  std::vector<int64_t> mbs = {0};
                  if (pp > 1) {
                    mbs = {1};
                    for (int64_t f : spec.micro_batch_factors) mbs.push_back(f * pp);
                    std::sort(mbs.begin(), mbs.end());
                    mbs.erase(std::unique(mbs.begin(), mbs.end()), mbs.end());
                    const int64_t per_group = b / (dp * ep);
                    std::erase_if(mbs,
                                  [&](int64_t m) { return m > std::max<int64_t>(1, per_group); });
                  }
                  for (int64_t mb : mbs) {
                    p.micro_batches = mb;
                    c.parallel = p;
                    c.parallel.strategy = "search";
                    c.batch = b;
                    c.replicas = (requests + b - 1) / b;
                    c.index = count++;
                    if (!visit(c)) return count;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return count;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace shardscope::search
