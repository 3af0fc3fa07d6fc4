#include "calibrate/calibrate.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "analysis/run_data.h"
#include "calibrate/deepep_log.h"
#include "calibrate/nccl_tests_log.h"
#include "cluster/cluster_yaml.h"
#include "core/collective.h"
#include "sim/rank_spread.h"
#include "sim/sim_setup.h"

namespace shardscope::calibrate {
namespace {

constexpr sim::OpClass kClasses[] = {
    sim::OpClass::kGemm,      sim::OpClass::kSmallGemm,       sim::OpClass::kGemv,
    sim::OpClass::kAttention, sim::OpClass::kAttentionDecode, sim::OpClass::kElementwise,
    sim::OpClass::kGather};

// A per-kind override is written only when it cuts its ops' loss this much.
constexpr double kKindGain = 0.5;
// A collective's fit sets network_efficiency only with this many message
// sizes and at most this rms error.
constexpr int64_t kMinSizes = 3;
constexpr double kMaxCommRms = 0.2;
// A class's own cache rate is fitted with a Huber loss beyond this |ln error|
// (×1.5): a few of a class's cache-resident ops take a library's slower path
// (in the CPU runs one m = 4 product took 4× its m = 2 time, per-expert GEMM
// calls 3–7× the model's) and would otherwise set the rate of all.
constexpr double kCacheHuber = 0.405;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The ops grouped by shape, each shape's time their median (or mean);
// `cache_ramp`: their class's (sim::Efficiency::cache_ramp).
std::vector<ShapeSample> Shapes(const std::vector<const ComputeOpSample*>& ops, bool mean,
                                bool cache_ramp = false) {
  using Key = std::tuple<double, double, double, double, bool>;
  std::map<Key, std::vector<double>> by_shape;
  std::map<Key, double> weight;
  for (const ComputeOpSample* s : ops) {
    const Key key{s->flops, s->bytes, s->rows, s->shared_bandwidth, s->resident};
    by_shape[key].push_back(s->seconds);
    weight[key] += s->weight;
  }
  std::vector<ShapeSample> out;
  for (auto& [key, times] : by_shape) {
    const auto& [flops, bytes, rows, shared, resident] = key;
    const double seconds =
        mean ? std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size())
             : Median(times);
    out.push_back({flops, bytes, rows, seconds, static_cast<int64_t>(times.size()), shared,
                   resident, weight[key], cache_ramp});
  }
  return out;
}

// The fixed cost per op of a kind's ops (its launch) and its efficiencies: the
// launch from 0 or a 0.25-decade grid from 10 ns to 1 ms (refined to 0.05
// decade around the best) minimising the ops' loss, each point with its
// efficiencies re-fitted; `shared_launch` is a candidate too. Returns the fit
// with efficiency.launch set.
EfficiencyFit FitClassLaunch(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs,
                             double shared_launch, const sim::Efficiency& prior, bool half_rows) {
  EfficiencyFit best = FitEfficiency(samples, roofs, shared_launch, prior, half_rows);
  double best_launch = shared_launch;
  auto consider = [&](double l) {
    EfficiencyFit f = FitEfficiency(samples, roofs, l, prior, half_rows);
    if (f.loss < best.loss * (1 - 1e-9)) best = f, best_launch = l;
  };
  consider(0);
  for (double l = -8; l <= -3 + 1e-9; l += 0.25) consider(std::pow(10.0, l));
  if (best_launch > 0) {
    const double centre = std::log10(best_launch);
    for (double l = centre - 0.2; l <= centre + 0.2 + 1e-9; l += 0.05) consider(std::pow(10.0, l));
  }
  best.efficiency.launch = best_launch;
  return best;
}

// Each class's launch (0 or 10 ns … 1 ms, 0.05 decade) for its fixed
// efficiencies, minimising its loss over all its ops; with `fit_cache`, at
// the cache bandwidth (0.01 decade over 10 GB/s … 300 GB/s; ties to the
// smallest) minimising the total, then each class's own cache rate (the same
// grid, with its launch) where its `min_resident` or more cache-resident ops
// decide one (`caches`: −1 where they do not: the common rate), searched with
// its FLOP ceiling from the cache where those ops do FLOPs over known rows
// (`ceilings`: −1, its `flops`, or 0.02 decade over 0.1 … 1). Returns the
// common bandwidth (0 without).
double FitLaunchesAndCache(const std::vector<std::vector<ShapeSample>>& groups, DeviceRoofs roofs,
                           std::vector<sim::Efficiency> efficiencies, bool fit_cache,
                           int64_t min_resident, std::vector<double>* launches,
                           std::vector<double>* caches, std::vector<double>* ceilings) {
  std::vector<double> grid = {0};
  for (double l = -8; l <= -3 + 1e-9; l += 0.05) grid.push_back(std::pow(10.0, l));
  // The best launch of group i and its loss.
  auto best_launch = [&](size_t i, const DeviceRoofs& r, double* launch, double huber = 0) {
    double best = (*launches)[i];
    double best_loss = FitLoss(groups[i], r, best, efficiencies[i], huber);
    for (double l : grid) {
      const double v = FitLoss(groups[i], r, l, efficiencies[i], huber);
      if (v < best_loss * (1 - 1e-9)) best_loss = v, best = l;
    }
    if (launch != nullptr) *launch = best;
    return best_loss;
  };
  auto best_launches = [&](std::vector<double>* out) {
    double total = 0;
    for (size_t i = 0; i < groups.size(); ++i) {
      total += best_launch(i, roofs, out != nullptr ? &(*out)[i] : nullptr);
    }
    return total;
  };
  caches->assign(groups.size(), -1);
  ceilings->assign(groups.size(), -1);
  double cache = 0;
  if (fit_cache) {
    double best_loss = std::numeric_limits<double>::infinity();
    for (double l = 10; l <= 11.5 + 1e-9; l += 0.01) {
      roofs.cache_bandwidth = std::pow(10.0, l);
      const double v = best_launches(nullptr);
      if (v < best_loss * (1 - 1e-9)) best_loss = v, cache = roofs.cache_bandwidth;
    }
    roofs.cache_bandwidth = cache;
    // A class's own rate where its resident ops are many enough and the data
    // prefer one (ties keep the common rate: ops the FLOPs bound say nothing).
    for (size_t i = 0; i < groups.size(); ++i) {
      int64_t resident = 0;
      bool gemm = false;  // resident ops with FLOPs over known rows
      for (const ShapeSample& s : groups[i]) {
        resident += s.resident ? s.count : 0;
        gemm = gemm || (s.resident && s.flops > 0 && s.rows > 0);
      }
      if (resident < min_resident) continue;
      std::vector<double> ceiling_grid = {-1};
      for (double l = -1; gemm && l <= 1e-9; l += 0.02) ceiling_grid.push_back(std::pow(10.0, l));
      double best = -1, best_ceiling = -1;
      double best_class_loss = best_launch(i, roofs, nullptr, kCacheHuber);
      for (double ceiling : ceiling_grid) {
        efficiencies[i].cache_flops = ceiling;
        for (double l = 10; l <= 11.5 + 1e-9; l += 0.01) {
          efficiencies[i].cache = std::pow(10.0, l);
          const double v = best_launch(i, roofs, nullptr, kCacheHuber);
          if (v < best_class_loss * (1 - 1e-9)) {
            best_class_loss = v, best = efficiencies[i].cache, best_ceiling = ceiling;
          }
        }
      }
      efficiencies[i].cache = best;
      efficiencies[i].cache_flops = best_ceiling;  // −1 with the rate: set together
      (*caches)[i] = best;
      (*ceilings)[i] = best_ceiling;
    }
  }
  best_launches(launches);
  return cache;
}

// The host gap before a decode step as fixed + per_op × the step's ops:
// least squares over the median gap of each distinct op count, both parts ≥ 0.
// One op count: the median gap, no per-op part.
struct StepGapFit {
  double fixed = 0, per_op = 0;
  int64_t sizes = 0;  // distinct op counts
};
StepGapFit FitStepGaps(const std::vector<double>& gaps, const std::vector<double>& ops) {
  std::map<double, std::vector<double>> by_ops;
  for (size_t i = 0; i < gaps.size() && i < ops.size(); ++i) by_ops[ops[i]].push_back(gaps[i]);
  StepGapFit f;
  f.sizes = static_cast<int64_t>(by_ops.size());
  if (by_ops.size() < 2) {
    f.fixed = Median(gaps);
    return f;
  }
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, g] : by_ops) {
    const double y = Median(g);
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  f.per_op = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  f.fixed = (sy - f.per_op * sx) / n;
  if (f.per_op < 0) {
    f.per_op = 0, f.fixed = sy / n;
  } else if (f.fixed < 0) {
    f.fixed = 0, f.per_op = sxy / sxx;
  }
  return f;
}

double TotalLoss(const std::vector<sim::OpClass>& classes,
                 const std::vector<std::vector<ShapeSample>>& groups, const DeviceRoofs& roofs,
                 double launch, const std::vector<sim::Efficiency>& priors) {
  double loss = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    loss +=
        FitEfficiency(groups[i], roofs, launch, priors[i], classes[i] != sim::OpClass::kGemv).loss;
  }
  return loss;
}

// The launch overhead minimising the total loss over the classes fitted:
// 0 or a log grid from 10 ns to 1 ms, refined around the best.
double FitLaunch(const std::vector<sim::OpClass>& classes,
                 const std::vector<std::vector<ShapeSample>>& groups, const DeviceRoofs& roofs,
                 const std::vector<sim::Efficiency>& priors) {
  double best = 0, best_loss = TotalLoss(classes, groups, roofs, 0, priors);
  double best_log = -8;
  for (double l = -8; l <= -3 + 1e-9; l += 0.25) {
    const double loss = TotalLoss(classes, groups, roofs, std::pow(10.0, l), priors);
    if (loss < best_loss) best_loss = loss, best = std::pow(10.0, l), best_log = l;
  }
  if (best == 0) return 0;
  for (double l = best_log - 0.2; l <= best_log + 0.2 + 1e-9; l += 0.05) {
    const double loss = TotalLoss(classes, groups, roofs, std::pow(10.0, l), priors);
    if (loss < best_loss) best_loss = loss, best = std::pow(10.0, l);
  }
  return best;
}

bool AnyShared(const std::vector<std::vector<ShapeSample>>& groups) {
  for (const auto& g : groups) {
    for (const ShapeSample& s : g) {
      if (s.shared_bandwidth > 0) return true;
    }
  }
  return false;
}

// The matrix products of a class whose shape (rows m, FLOPs and bytes, which
// give n·k and n + k) was measured at two or more shares of the node's bus
// (alone, and with the node's other devices busy): only such pairs tell the
// bus apart from the class's own efficiency. Different shapes (a TP2 shard
// against a TP1 matrix, m = 4 against m = 1) would let the bus absorb the
// shapes' own rates, and ops without rows (attention over one request or
// four, elementwise ops) can agree in FLOPs and bytes while doing different
// work, so they take no part in the bus's fit.
std::vector<ShapeSample> PairedShapes(const std::vector<ShapeSample>& group) {
  using Key = std::tuple<double, double, double>;
  std::map<Key, std::set<double>> shares;
  for (const ShapeSample& s : group) {
    if (s.rows > 0) shares[{s.flops, s.bytes, s.rows}].insert(s.shared_bandwidth);
  }
  std::vector<ShapeSample> out;
  for (const ShapeSample& s : group) {
    if (s.rows > 0 && shares[{s.flops, s.bytes, s.rows}].size() >= 2) out.push_back(s);
  }
  return out;
}

// The factor k on every sample's shared bandwidth (the node's bus) that
// minimises the loss of the shapes measured at several shares of the bus
// (PairedShapes), log10 k in [−0.5, 0.5]. Scales the samples by
// the k found. nullopt (nothing scaled) when no class has such a shape.
std::optional<double> FitNodeScale(const std::vector<sim::OpClass>& classes,
                                   std::vector<std::vector<ShapeSample>>* groups,
                                   const DeviceRoofs& roofs, double launch,
                                   const std::vector<sim::Efficiency>& priors) {
  std::vector<std::pair<size_t, std::vector<ShapeSample>>> paired;
  for (size_t i = 0; i < groups->size(); ++i) {
    std::vector<ShapeSample> p = PairedShapes((*groups)[i]);
    if (!p.empty()) paired.emplace_back(i, std::move(p));
  }
  if (paired.empty()) return std::nullopt;
  auto loss = [&](double log_k) {
    double total = 0;
    for (const auto& [i, samples] : paired) {
      std::vector<ShapeSample> g = samples;
      for (ShapeSample& s : g) s.shared_bandwidth *= std::pow(10.0, log_k);
      total += FitEfficiency(g, roofs, launch, priors[i], classes[i] != sim::OpClass::kGemv).loss;
    }
    return total;
  };
  // A grid, not a bracketing search: above the bus the loss is flat (the cap
  // stops binding), which would lead a bracketing search past a narrow minimum.
  // Ties keep the cluster's figure (k = 1) when it is among the best, else go
  // to the smallest k: the bus is at least what the data show.
  double best = 0, best_loss = loss(0);
  for (double l = -0.5; l <= 0.5 + 1e-9; l += 0.02) {
    const double v = loss(l);
    if (v < best_loss * (1 - 1e-9)) best_loss = v, best = l;
  }
  const double coarse = best;
  for (double l = coarse - 0.02; l <= coarse + 0.02 + 1e-9; l += 0.001) {
    const double v = loss(l);
    if (v < best_loss * (1 - 1e-9)) best_loss = v, best = l;
  }
  const double k = std::pow(10.0, best);
  for (auto& g : *groups) {
    for (ShapeSample& s : g) s.shared_bandwidth *= k;
  }
  return k;
}

// The cluster's per-device bandwidth into the links a group of `n` uses:
// scale-up when the device has it, else its NIC.
double LinkBandwidth(const ClusterSpec& c) {
  if (c.scale_up.kind != ScaleUpKind::kNone && c.scale_up.bandwidth_per_device > 0) {
    return c.scale_up.bandwidth_per_device;
  }
  return c.scale_out.nic_bandwidth_per_device;
}

std::string Percent(double x) { return fmt::format("{:+.1f} %", 100 * x); }

StatusOr<std::optional<ClusterSpec>> HardwareCluster(const CalibrateOptions& options) {
  if (options.hardware.empty()) return std::optional<ClusterSpec>();
  const std::string dir =
      options.hardware_dir.empty() ? DefaultHardwareDir() : options.hardware_dir;
  StatusOr<ClusterSpec> hw = std::filesystem::exists(options.hardware)
                                 ? LoadClusterFile(options.hardware)
                                 : LoadZooCluster(options.hardware, dir);
  if (!hw.ok()) return hw.status().WithPrefix("--hardware");
  return std::optional<ClusterSpec>(*hw);
}

// ---- Compute: the ops grouped by class (shape regime) and by kind.
struct ComputeGroups {
  std::map<OpKind, std::vector<const ComputeOpSample*>> by_kind;
  // The classes fitted, each with its shapes and prior.
  std::vector<sim::OpClass> fit_classes;
  std::vector<std::vector<ShapeSample>> groups;    // from memory
  std::vector<std::vector<ShapeSample>> resident;  // cache-resident
  std::vector<sim::Efficiency> priors;
};

// Groups the compute ops and adds a ClassFit per class to `result` (with why
// not, where a class is not fitted). Ops of cache-resident ranks
// (ComputeOpSample::resident) take part in the class fits once the cache
// bandwidth is searched; the launch and the node's bus are fitted on the
// others first. `no_roofs`: why there are no roofs ("" when there are).
ComputeGroups GroupComputeOps(const TraceSamples& samples, const CalibrateOptions& options,
                              bool tensor_cores, const std::string& no_roofs,
                              CalibrationResult* result) {
  ComputeGroups g;
  std::map<sim::OpClass, std::vector<const ComputeOpSample*>> by_class, resident_by_class;
  // On a GPU, GEMMs with a dimension tensor cores cannot take run slower
  // kernels the model has no term for (no alignment): left out, counted.
  std::map<sim::OpClass, int64_t> misaligned;
  for (const ComputeOpSample& s : samples.compute) {
    const sim::OpClass c = sim::ClassOfShape(s.kind, s.rows, result->calibration.small_gemm_rows);
    if (tensor_cores && s.misaligned) {
      ++misaligned[c];
      continue;
    }
    (s.resident ? resident_by_class : by_class)[c].push_back(&s);
    g.by_kind[s.kind].push_back(&s);
    result->cache.samples += s.resident;
  }
  for (sim::OpClass c : kClasses) {
    // The small-GEMM regime exists only where the device's calibration gives it rows.
    if (c == sim::OpClass::kSmallGemm && !(result->calibration.small_gemm_rows > 0)) continue;
    ClassFit f;
    f.name = std::string(sim::OpClassName(c));
    f.samples = static_cast<int64_t>(by_class[c].size() + resident_by_class[c].size());
    f.prior = f.result = result->calibration.classes.at(c);
    if (misaligned[c] > 0) {
      f.note = fmt::format(
          "{} ops of misaligned shapes left out (k, m or n not a multiple of 16 bytes: slower "
          "kernels, no alignment term)",
          misaligned[c]);
    }
    if (f.samples < options.min_samples) {
      f.why_not =
          fmt::format("too few samples ({} < {}): default kept", f.samples, options.min_samples);
    } else if (!no_roofs.empty()) {
      f.why_not = no_roofs;
    } else {
      g.fit_classes.push_back(c);
      g.groups.push_back(Shapes(by_class[c], options.shape_mean, f.prior.cache_ramp));
      g.resident.push_back(Shapes(resident_by_class[c], options.shape_mean, f.prior.cache_ramp));
      g.priors.push_back(f.prior);
      f.shapes = static_cast<int64_t>(g.groups.back().size() + g.resident.back().size());
    }
    result->classes.push_back(f);
  }
  if (samples.compute.empty()) {
    for (ClassFit& f : result->classes) {
      f.why_not =
          "no compute op with a ShardScope op kind and FLOPs or bytes in the traces (foreign "
          "kernels have shapes only when a matrix product with Input Dims launched them)";
    }
  }
  return g;
}

// The launch shared by the classes (`default_launch` when none is fitted).
// Runs whose ranks shared a node's memory bus measure that bus: its bandwidth
// is fitted (as a factor on the cluster's figure, scaling `g`'s samples), then
// the launch again.
double FitSharedLaunch(ComputeGroups* g, const std::optional<ClusterSpec>& cluster,
                       double default_launch, CalibrationResult* result) {
  if (g->groups.empty()) return default_launch;
  double launch = FitLaunch(g->fit_classes, g->groups, result->roofs, g->priors);
  if (cluster && cluster->node_memory_bandwidth > 0 && AnyShared(g->groups)) {
    if (std::optional<double> k =
            FitNodeScale(g->fit_classes, &g->groups, result->roofs, launch, g->priors)) {
      result->node_bandwidth_fitted = true;
      result->calibration.node_memory_bandwidth = *k * cluster->node_memory_bandwidth;
      launch = FitLaunch(g->fit_classes, g->groups, result->roofs, g->priors);
    } else {
      result->node_bandwidth_why_not = fmt::format(
          "no matrix product of one shape was measured both alone on the node and with its "
          "other devices busy: the cluster file's {:.3g} GB/s kept",
          cluster->node_memory_bandwidth * 1e-9);
    }
  }
  result->launch_fitted = true;
  result->calibration.launch_overhead = launch;
  return launch;
}

// Each fitted class's efficiencies, launch and own cache rate (index as
// ComputeGroups::fit_classes).
struct ClassResults {
  std::vector<EfficiencyFit> fits;
  std::vector<double> launches;
  std::vector<double> caches;    // each class's own cache rate (FitLaunchesAndCache)
  std::vector<double> ceilings;  // and its FLOP ceiling from the cache
};

// Whether the cache bandwidth can be fitted; sets why not in `result`.
bool CacheFittable(const ComputeGroups& g, const CalibrateOptions& options,
                   const std::string& no_roofs, CalibrationResult* result) {
  if (result->cache.samples == 0) {
    result->cache.why_not = "no run's working set fit the device's last-level cache";
  } else if (result->cache.samples < options.min_samples) {
    result->cache.why_not = fmt::format("too few cache-resident ops ({} < {})",
                                        result->cache.samples, options.min_samples);
  } else if (g.fit_classes.empty()) {
    result->cache.why_not = no_roofs.empty() ? "no op class fitted" : no_roofs;
  }
  return result->cache.samples >= options.min_samples && !g.fit_classes.empty();
}

// Efficiencies from the ops that read memory; then each class's launch and
// the cache bandwidth from all ops (`all`: the resident ones are what show
// small ops' fixed cost); then the efficiencies again with those launches, and
// the launches and cache once more.
ClassResults FitClassEfficiencies(const ComputeGroups& g,
                                  const std::vector<std::vector<ShapeSample>>& all,
                                  const CalibrateOptions& options, double launch, bool fit_cache,
                                  CalibrationResult* result) {
  ClassResults c;
  c.fits.resize(g.fit_classes.size());
  c.launches.assign(g.fit_classes.size(), launch);
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < g.fit_classes.size(); ++i) {
      // gemv is one row by definition: no ramp to fit.
      c.fits[i] =
          FitEfficiency(g.groups[i].empty() ? all[i] : g.groups[i], result->roofs, c.launches[i],
                        g.priors[i], g.fit_classes[i] != sim::OpClass::kGemv);
    }
    std::vector<sim::Efficiency> efficiencies;
    for (const EfficiencyFit& f : c.fits) efficiencies.push_back(f.efficiency);
    const double cache =
        FitLaunchesAndCache(all, result->roofs, efficiencies, fit_cache, options.min_samples,
                            &c.launches, &c.caches, &c.ceilings);
    if (fit_cache) result->roofs.cache_bandwidth = cache;
  }
  return c;
}

// Writes fitted class i into its ClassFit and the calibration. `prior_cache`:
// the defaults' cache bandwidth.
void RecordClassFit(const ComputeGroups& g, const std::vector<ShapeSample>& all,
                    const ClassResults& c, size_t i, double prior_cache, double default_launch,
                    CalibrationResult* result) {
  ClassFit& f = *std::find_if(
      result->classes.begin(), result->classes.end(),
      [&](const ClassFit& x) { return x.name == sim::OpClassName(g.fit_classes[i]); });
  const EfficiencyFit& fit = c.fits[i];
  f.fitted = true;
  f.result = fit.efficiency;
  f.result.cache_ramp = f.prior.cache_ramp;  // the kernel's, not fitted
  f.result.launch = c.launches[i];
  f.result.cache = c.caches[i];
  f.result.cache_flops = c.ceilings[i];
  f.flops_bound = fit.flops_bound;
  f.memory_bound = fit.memory_bound;
  // The defaults as the simulator applies them: their launch and cache bandwidth.
  DeviceRoofs prior_roofs = result->roofs;
  prior_roofs.cache_bandwidth = prior_cache;
  f.prior_residual = ComputeResidual(
      all, prior_roofs, f.prior.launch >= 0 ? f.prior.launch : default_launch, f.prior);
  f.residual = ComputeResidual(all, result->roofs, c.launches[i], f.result);
  auto note = [&f](std::string_view n) { f.note += (f.note.empty() ? "" : "; ") + std::string(n); };
  if (fit.flops_bound == 0) note("no op FLOP-bound: flops_efficiency not measured");
  if (fit.memory_bound == 0) note("no op memory-bound: memory_efficiency not measured");
  if (!fit.fit_half_rows) note("rows unknown: half_rows not measured");
  if (!g.resident[i].empty()) {
    int64_t n = 0;
    for (const ShapeSample& r : g.resident[i]) n += r.count;
    note(c.caches[i] > 0
             ? fmt::format(
                   "{} ops from cache (launch, own cache bandwidth {:.3g} GB/s{})", n,
                   c.caches[i] * 1e-9,
                   c.ceilings[i] > 0 ? fmt::format(", FLOP efficiency {:.3g}", c.ceilings[i]) : "")
             : fmt::format("{} ops from cache (launch, cache bandwidth)", n));
  }
  result->calibration.classes[g.fit_classes[i]] = f.result;
}

// The cache-resident ops' residuals with the fitted cache bandwidth and
// without it (as read from memory).
void CacheResidual(const ComputeGroups& g, CalibrationResult* result) {
  DeviceRoofs from_memory = result->roofs;
  from_memory.cache_bandwidth = 0;
  double sq0 = 0, sq = 0, w = 0, model0 = 0, model = 0, measured = 0;
  for (size_t i = 0; i < g.fit_classes.size(); ++i) {
    const sim::Efficiency& e = result->calibration.classes.at(g.fit_classes[i]);
    for (const ShapeSample& r : g.resident[i]) {
      const double weight = r.weight > 0 ? r.weight : static_cast<double>(r.count) * r.seconds;
      const double m0 = ModelSeconds(e, from_memory, e.launch, r);
      const double m = ModelSeconds(e, result->roofs, e.launch, r);
      sq0 += weight * std::pow((m0 - r.seconds) / r.seconds, 2);
      sq += weight * std::pow((m - r.seconds) / r.seconds, 2);
      w += weight;
      model0 += static_cast<double>(r.count) * m0;
      model += static_cast<double>(r.count) * m;
      measured += static_cast<double>(r.count) * r.seconds;
    }
  }
  if (w > 0 && measured > 0) {
    result->cache.prior_residual = {std::sqrt(sq0 / w), 0, (model0 - measured) / measured};
    result->cache.residual = {std::sqrt(sq / w), 0, (model - measured) / measured};
  }
}

// Per-kind overrides of the non-GEMM classes (GEMM kinds keep their shape
// regimes), where a kind's own fit cuts its loss by more than kKindGain.
void FitKindOverrides(const ComputeGroups& g, const CalibrateOptions& options, double launch,
                      CalibrationResult* result) {
  for (const auto& entry : g.by_kind) {
    const OpKind kind = entry.first;
    const std::vector<const ComputeOpSample*>& ops = entry.second;
    const sim::OpClass c = sim::ClassOf(kind);
    // GEMM kinds keep their shape regimes; a class of one kind needs no override.
    const bool alone = std::all_of(g.by_kind.begin(), g.by_kind.end(), [&](const auto& other) {
      return other.first == kind || sim::ClassOf(other.first) != c;
    });
    if (c == sim::OpClass::kGemm || alone ||
        static_cast<int64_t>(ops.size()) < options.min_samples) {
      continue;
    }
    const std::vector<ShapeSample> shapes = Shapes(ops, options.shape_mean);
    const sim::Efficiency& class_e = result->calibration.classes.at(c);
    const double class_launch = class_e.launch >= 0 ? class_e.launch : launch;
    const EfficiencyFit own = FitClassLaunch(shapes, result->roofs, class_launch, class_e, true);
    const double class_loss = FitLoss(shapes, result->roofs, class_launch, class_e);
    if (own.loss >= kKindGain * class_loss) continue;
    ClassFit f;
    f.name = std::string(OpKindName(kind));
    f.is_kind = true;
    f.samples = static_cast<int64_t>(ops.size());
    f.shapes = static_cast<int64_t>(shapes.size());
    f.fitted = true;
    f.prior = class_e;
    f.result = own.efficiency;
    f.flops_bound = own.flops_bound;
    f.memory_bound = own.memory_bound;
    f.prior_residual = ComputeResidual(shapes, result->roofs, class_launch, class_e);
    f.residual = ComputeResidual(shapes, result->roofs, own.efficiency.launch, own.efficiency);
    f.note = fmt::format("override of class {}", sim::OpClassName(c));
    result->calibration.kinds[kind] = own.efficiency;
    result->classes.push_back(f);
  }
}

// The compute fits: the classes' launch, efficiencies and cache rates, the
// cache and node bandwidths, and per-kind overrides.
void FitCompute(const TraceSamples& samples, const CalibrateOptions& options,
                const std::optional<ClusterSpec>& cluster, const std::string& no_roofs,
                CalibrationResult* result) {
  const double default_launch = cluster ? cluster->device.launch_overhead : 0;
  const bool tensor_cores = cluster && cluster->device.kind == DeviceKind::kGpu;
  ComputeGroups g = GroupComputeOps(samples, options, tensor_cores, no_roofs, result);
  const double launch = FitSharedLaunch(&g, cluster, default_launch, result);
  std::vector<std::vector<ShapeSample>> all = g.groups;
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].insert(all[i].end(), g.resident[i].begin(), g.resident[i].end());
  }
  const bool fit_cache = CacheFittable(g, options, no_roofs, result);
  const double prior_cache = result->calibration.cache_bandwidth;  // the defaults'
  const ClassResults c = FitClassEfficiencies(g, all, options, launch, fit_cache, result);
  if (fit_cache) {
    result->cache.fitted = true;
    result->cache.bandwidth = result->roofs.cache_bandwidth;
    result->calibration.cache_bandwidth = result->cache.bandwidth;
    for (const auto& r : g.resident) result->cache.shapes += static_cast<int64_t>(r.size());
  }
  for (size_t i = 0; i < g.fit_classes.size(); ++i) {
    RecordClassFit(g, all[i], c, i, prior_cache, default_launch, result);
  }
  if (result->cache.fitted) CacheResidual(g, result);
  if (result->launch_fitted) FitKindOverrides(g, options, launch, result);
}

// ---- Communication: per (collective, group size).
void FitCommunication(const std::vector<CommCallSample>& comm, const CalibrateOptions& options,
                      const std::optional<ClusterSpec>& cluster, CalibrationResult* result) {
  std::map<std::pair<Collective, int32_t>, std::map<double, std::vector<double>>> calls;
  std::map<std::pair<Collective, int32_t>, std::vector<double>> waits;  // calls of ≥ 2 members
  for (const CommCallSample& s : comm) {
    calls[{s.collective, s.group_size}][s.bytes].push_back(s.seconds);
    if (s.members >= 2) waits[{s.collective, s.group_size}].push_back(s.wait);
  }
  std::vector<double> efficiencies;
  for (const auto& [key, by_size] : calls) {
    CollectiveFit f;
    f.collective = key.first;
    f.group_size = key.second;
    std::vector<MessageSample> ms;
    for (const auto& [bytes, times] : by_size) {
      ms.push_back({bytes, Median(times), static_cast<int64_t>(times.size())});
      f.samples += static_cast<int64_t>(times.size());
    }
    f.sizes = static_cast<int64_t>(ms.size());
    if (cluster) f.link_bw = LinkBandwidth(*cluster);
    if (f.samples < options.min_samples) {
      f.why_not = fmt::format("too few calls ({} < {})", f.samples, options.min_samples);
    } else {
      f.fit = FitLink(ms);
      f.busbw = BusFactor(f.collective, f.group_size) * f.fit.algbw;
      // The members' wait for the latest (ranks drift apart between
      // synchronisations; a simulator's ranks do not): the median over calls
      // whose members all showed up in the traces (the mean would follow a few
      // descheduled calls).
      const std::vector<double>& w = waits[key];
      f.wait_calls = static_cast<int64_t>(w.size());
      if (f.wait_calls >= options.min_samples) f.wait = Median(w);
      // The line the simulator takes for this collective and group size
      // (where slower than its algorithm's), with its wait: ≥ 2 sizes give
      // one. A collective of one size is mostly one role at one place of the
      // step (TP's sampling all-gather at the step's end, whose members wait
      // out the whole step's drift): its wait does not carry over.
      if (f.fit.latency_known && f.fit.algbw > 0) {
        result->calibration.terms.collectives[key] = {f.fit.latency, f.fit.algbw, f.wait, false};
      }
      // Only a clean line over several sizes says what the links deliver;
      // small-message calls dominated by latency or waits do not.
      if (f.fit.latency_known && f.sizes >= kMinSizes && f.fit.rms_relative <= kMaxCommRms &&
          f.link_bw > 0 && f.busbw > 0) {
        efficiencies.push_back(f.busbw / f.link_bw);
      } else {
        f.note = fmt::format(
            "not used for network_efficiency (needs ≥ {} sizes, a latency, rms ≤ {:.0f} %)",
            kMinSizes, 100 * kMaxCommRms);
      }
    }
    result->collectives.push_back(f);
  }
  if (!efficiencies.empty()) {
    result->network_fitted = true;
    result->calibration.network_efficiency = std::clamp(Median(efficiencies), 1e-3, 1.0);
  }
}

// ---- Overhead: the terms a trace shows.

// The minimum kernel time: the shortest compute kernel measured (a floor no
// modelled op goes under).
TermFit FitMinKernel(const TraceSamples& samples, const CalibrateOptions& options,
                     CalibrationResult* result) {
  TermFit k{"min_kernel_us", static_cast<int64_t>(samples.kernel_seconds.size())};
  if (k.samples < options.min_samples) {
    k.why_not = fmt::format("too few compute kernels ({} < {})", k.samples, options.min_samples);
  } else {
    k.fitted = true;
    k.seconds = *std::min_element(samples.kernel_seconds.begin(), samples.kernel_seconds.end());
    k.note = fmt::format("the shortest of {} compute kernels", k.samples);
    result->calibration.terms.min_kernel = k.seconds;
  }
  return k;
}

// The iteration cost: the host gap between consecutive decode steps of a rank,
// as fixed + per op (FitStepGaps). Adds both terms to `result`.
void FitIterationOverhead(const TraceSamples& samples, const CalibrateOptions& options,
                          CalibrationResult* result) {
  TermFit g{"iteration_overhead_us", static_cast<int64_t>(samples.step_gaps.size())};
  TermFit per_op{"iteration_overhead_per_op_us", g.samples};
  if (g.samples == 0) {
    g.why_not = per_op.why_not = "no consecutive decode steps (foreign traces name no steps)";
  } else if (g.samples < options.min_samples) {
    g.why_not = per_op.why_not =
        fmt::format("too few step gaps ({} < {})", g.samples, options.min_samples);
  } else {
    const StepGapFit fit = FitStepGaps(samples.step_gaps, samples.step_gap_ops);
    g.fitted = true;
    g.seconds = fit.fixed;
    result->calibration.terms.iteration_overhead = fit.fixed;
    if (fit.sizes < 2) {
      g.note = fmt::format("median host gap between consecutive decode steps ({} gaps)", g.samples);
      per_op.why_not = "every step had the same ops: no per-op part to separate";
    } else {
      g.note = per_op.note = fmt::format(
          "host gap between consecutive decode steps = fixed + per op × the step's ops (least "
          "squares over the median gap of {} step sizes, {} gaps)",
          fit.sizes, g.samples);
      per_op.fitted = true;
      per_op.seconds = fit.per_op;
      result->calibration.terms.iteration_overhead_per_op = fit.per_op;
    }
  }
  result->terms.push_back(g);
  result->terms.push_back(per_op);
}

// The ranks' spread: the mean over phases of multi-rank runs of the slowest
// rank's excess over the ranks' mean on the same ops, in units of the
// expected largest of as many normal draws (sim/rank_spread.h), so that the
// simulator's slowest rank runs that much above the mean.
TermFit FitRankSpread(const TraceSamples& samples, const CalibrateOptions& options,
                      CalibrationResult* result) {
  TermFit spread{"rank_speed_spread", static_cast<int64_t>(samples.rank_spread.size())};
  spread.fraction = true;
  if (spread.samples == 0) {
    spread.why_not = "no phase of a run on two or more ranks with the same ops on each";
  } else if (spread.samples < options.min_samples) {
    spread.why_not = fmt::format("too few phases of multi-rank runs ({} < {})", spread.samples,
                                 options.min_samples);
  } else {
    double sum = 0, excess = 0;
    for (const TraceSamples::RankSpread& r : samples.rank_spread) {
      sum += r.excess / sim::NormalOrderScore(r.ranks, r.ranks);
      excess += r.excess;
    }
    const double n = static_cast<double>(spread.samples);
    spread.fitted = true;
    // The file takes spreads below one half (sim::Calibration::Validate).
    spread.seconds = std::min(sum / n, 0.49);
    spread.note = fmt::format(
        "the slowest rank ran {:.2g} % above the ranks' mean on the same ops (mean over {} "
        "phases of multi-rank runs){}",
        100 * excess / n, spread.samples,
        sum / n > 0.49 ? fmt::format("; {:.3g} capped at 0.49", sum / n) : "");
    result->calibration.terms.rank_speed_spread = spread.seconds;
  }
  return spread;
}

// The overhead terms, in the order the summary lists them; those a trace of
// one run cannot show are listed as not fitted.
void FitOverheadTerms(const TraceSamples& samples, const CalibrateOptions& options,
                      CalibrationResult* result) {
  result->terms.push_back(FitMinKernel(samples, options, result));
  FitIterationOverhead(samples, options, result);
  result->terms.push_back(FitRankSpread(samples, options, result));
  const char* unseen = "not visible in a trace of one run: set it by hand (docs/fidelity.md)";
  for (const char* name :
       {"request_overhead_us", "response_overhead_us", "graph_replay_us (cuda_graphs)",
        "fp8_quant_bytes_per_element", "fp8_quant_fixed_us", "cold_start_us"}) {
    TermFit t{name};
    t.why_not = unseen;
    result->terms.push_back(t);
  }
}

// The device and its roofs for the fits: the traces' cluster, or --hardware's.
// Returns why there are no roofs ("" when there are).
StatusOr<std::string> SetUpDevice(const TraceSamples& samples, const CalibrateOptions& options,
                                  CalibrationResult* result) {
  std::optional<ClusterSpec> cluster = samples.cluster;
  ASSIGN_OR_RETURN(std::optional<ClusterSpec> hardware, HardwareCluster(options));
  if (hardware) cluster = hardware;
  result->cluster = cluster;
  if (samples.dtype) result->dtype = *samples.dtype;
  std::string no_roofs;
  if (!cluster) {
    no_roofs = "the traces name no device (no ShardScope metadata): pass --hardware";
    result->calibration = sim::DefaultCalibration(DeviceSpec{});
  } else {
    result->device = cluster->device.name;
    result->calibration = sim::DefaultCalibration(cluster->device);
    StatusOr<double> peak = cluster->device.PeakFlops(result->dtype);
    if (!peak.ok()) {
      no_roofs = peak.status().message();
    } else if (!(cluster->device.memory_bandwidth > 0)) {
      no_roofs = fmt::format("device '{}' has no memory bandwidth", cluster->device.name);
    } else {
      result->roofs = {*peak, cluster->device.memory_bandwidth};
    }
  }
  result->calibration.source = "shardscope calibrate";
  return no_roofs;
}

// The error when the traces fit nothing: why each part was not fitted.
Status NothingToFit(const std::vector<std::string>& paths, const CalibrationResult& result) {
  std::string why = "nothing to fit in " + std::to_string(paths.size()) + " trace(s):";
  for (const ClassFit& f : result.classes) why += "\n  " + f.name + ": " + f.why_not;
  if (result.collectives.empty()) why += "\n  communication: no comm call with a message size";
  for (const CollectiveFit& f : result.collectives) {
    why += fmt::format("\n  {} over {}: {}", CollectiveName(f.collective), f.group_size, f.why_not);
  }
  return Status(StatusCode::kFailedPrecondition, why);
}

// The fits from traces. `others`: microbenchmark logs follow, so fitting
// nothing here is no error.
StatusOr<CalibrationResult> CalibrateTraces(const std::vector<std::string>& paths,
                                            const CalibrateOptions& options, bool others) {
  ASSIGN_OR_RETURN(TraceSamples samples, CollectSamples(paths));
  CalibrationResult result;
  result.files = samples.files;
  result.shape_mean = options.shape_mean;
  result.unused = samples.unused;
  ASSIGN_OR_RETURN(const std::string no_roofs, SetUpDevice(samples, options, &result));
  FitCompute(samples, options, result.cluster, no_roofs, &result);
  FitCommunication(samples.comm, options, result.cluster, &result);
  FitOverheadTerms(samples, options, &result);
  const bool any_comm = std::any_of(result.collectives.begin(), result.collectives.end(),
                                    [](const CollectiveFit& f) { return f.why_not.empty(); });
  if (!others && !result.launch_fitted && !any_comm && !result.cache.fitted) {
    return NothingToFit(paths, result);
  }
  return result;
}

// nccl-tests tables: per (collective, ranks) the robust line over their rows'
// sizes (each size's median time over the tables), the collective's time.
Status FitNcclTests(const CalibrateOptions& options, CalibrationResult* result) {
  std::map<std::pair<Collective, int32_t>, std::map<double, std::vector<double>>> rows;
  std::map<std::pair<Collective, int32_t>, std::set<std::string>> files;
  for (const CalibrateOptions::NcclTestsInput& in : options.nccl_tests) {
    ASSIGN_OR_RETURN(std::vector<NcclTestsTable> tables, ReadNcclTestsLog(in.path, in.collective));
    result->logs.push_back(in.path);
    for (const NcclTestsTable& t : tables) {
      const std::pair<Collective, int32_t> key{t.collective, static_cast<int32_t>(t.ranks)};
      // nccl-tests' sendrecv is a ring of pairs: its line is each pair's.
      const std::pair<Collective, int32_t> at =
          t.collective == Collective::kSend ? std::pair{Collective::kSend, 2} : key;
      files[at].insert(fmt::format("{} (table at line {}, {} ranks from {}, {} from {})", t.file,
                                   t.line, t.ranks, t.ranks_from, NcclTestsName(t.collective),
                                   t.collective_from));
      for (const NcclTestsRow& r : t.rows) {
        const double s = r.Timing().seconds;
        if (r.bytes > 0 && s > 0) rows[at][static_cast<double>(r.bytes)].push_back(s);
      }
    }
  }
  for (const auto& [key, by_size] : rows) {
    CollectiveFit f;
    f.collective = key.first;
    f.group_size = key.second;
    f.source = "nccl-tests";
    std::vector<MessageSample> ms;
    for (const auto& [bytes, times] : by_size) {
      ms.push_back({bytes, Median(times), 1});
      f.samples += static_cast<int64_t>(times.size());
    }
    f.sizes = static_cast<int64_t>(ms.size());
    if (result->cluster) f.link_bw = LinkBandwidth(*result->cluster);
    std::string from;
    for (const std::string& file : files[key]) from += (from.empty() ? "" : "; ") + file;
    if (f.sizes < 2) {
      f.why_not = "one message size: no line (run a sweep, -b … -e …)";
    } else {
      f.fit = FitLinkRobust(ms);
      f.busbw = BusFactor(f.collective, f.group_size) * f.fit.algbw;
      if (!f.fit.latency_known) {
        f.why_not = "no line with a latency ≥ 0 through the rows";
      } else {
        // The microbenchmark's line wins over one fitted from traces.
        for (CollectiveFit& other : result->collectives) {
          if (other.collective == f.collective && other.group_size == f.group_size &&
              other.why_not.empty()) {
            other.note = "replaced by the nccl-tests line; " + other.note;
          }
        }
        sim::MeasuredCollective m;
        m.latency = f.fit.latency;
        m.algbw = f.fit.algbw;
        m.exact = true;
        result->calibration.terms.collectives[key] = m;
      }
    }
    f.note = "from " + from;
    result->collectives.push_back(f);
  }
  return Status::Ok();
}

Status FitDeepEpLogs(const CalibrateOptions& options, CalibrationResult* result) {
  if (options.deepep.empty()) return Status::Ok();
  if (!result->cluster) {
    return InvalidArgument(
        "--deepep needs the cluster the kernels ran on (its links' bandwidths): pass --hardware");
  }
  std::vector<DeepEpLog> logs;
  for (const std::string& path : options.deepep) {
    ASSIGN_OR_RETURN(std::vector<DeepEpLog> read, ReadDeepEpLog(path));
    result->logs.push_back(path);
    for (DeepEpLog& l : read) logs.push_back(std::move(l));
  }
  ASSIGN_OR_RETURN(result->exchange,
                   FitDeepEp(logs, sim::NetworkCluster(*result->cluster, result->calibration),
                             options.deepep_ranks));
  if (result->exchange.normal.fitted) {
    result->calibration.exchange_normal = result->exchange.normal.result;
  }
  if (result->exchange.low_latency.fitted) {
    result->calibration.exchange_low_latency = result->exchange.low_latency.result;
  }
  result->exchange_fitted = result->exchange.normal.fitted || result->exchange.low_latency.fitted;
  return Status::Ok();
}

// The summary's table of op classes and kinds.
void AppendClassTable(const CalibrationResult& r, std::string* out) {
  if (!r.classes.empty())
    *out +=
        "\n| class / kind | ops | shapes | flops_eff | memory_eff | half_rows | launch | rms "
        "error, "
        "weighted as the fit "
        "(defaults → fitted) | total time error | note "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ClassFit& f : r.classes) {
    if (!f.fitted) {
      *out += fmt::format("| {} | {} | - | {:.3g} | {:.3g} | {:.3g} | - | not fitted | - | {} |\n",
                          f.name, f.samples, f.prior.flops, f.prior.memory, f.prior.half_rows,
                          f.why_not);
      continue;
    }
    *out += fmt::format(
        "| {}{} | {} | {} | {:.3g} | {:.3g} | {:.3g} | {} | {:.1f} % → {:.1f} % | {} → {} | {} |\n",
        f.is_kind ? "kind " : "", f.name, f.samples, f.shapes, f.result.flops, f.result.memory,
        f.result.half_rows,
        f.result.launch >= 0 ? fmt::format("{:.3g} µs", f.result.launch * 1e6) : "-",
        100 * f.prior_residual.rms_relative, 100 * f.residual.rms_relative,
        Percent(f.prior_residual.total_relative), Percent(f.residual.total_relative), f.note);
  }
}

// The summary's table of collectives.
void AppendCollectiveTable(const CalibrationResult& r, std::string* out) {
  if (!r.collectives.empty()) {
    *out +=
        "\n| collective | group | calls | sizes | latency | algbw | busbw | link | rms error | "
        "wait | note |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const CollectiveFit& f : r.collectives) {
      const std::string name =
          (f.collective == Collective::kSend ? std::string("send/recv")
                                             : std::string(CollectiveName(f.collective))) +
          (f.source.empty() ? "" : " (" + f.source + ")");
      if (!f.why_not.empty()) {
        *out += fmt::format("| {} | {} | {} | {} | - | - | - | - | - | - | {} |\n", name,
                            f.group_size, f.samples, f.sizes, f.why_not);
        continue;
      }
      *out += fmt::format(
          "| {} | {} | {} | {} | {} | {:.3g} GB/s | {:.3g} GB/s | {} | {:.1f} % | {} | {} |\n",
          name, f.group_size, f.samples, f.sizes,
          f.fit.latency_known ? fmt::format("{:.3g} µs", f.fit.latency * 1e6) : "-",
          f.fit.algbw * 1e-9, f.busbw * 1e-9,
          f.link_bw > 0 ? fmt::format("{:.3g} GB/s", f.link_bw * 1e-9) : "-",
          100 * f.fit.rms_relative,
          f.wait > 0          ? fmt::format("{:.3g} µs over {} calls", f.wait * 1e6, f.wait_calls)
          : !f.source.empty() ? std::string("-")
                              : fmt::format("- ({} calls of all members)", f.wait_calls),
          f.fit.latency_known
              ? f.note
              : "one message size (or no positive latency): latency in algbw; " + f.note);
    }
  }
}

// The summary's MoE exchange fits (DeepEP), one table per kernel family.
void AppendExchangeTables(const CalibrationResult& r, std::string* out) {
  for (const auto& [name, e] : {std::pair{"normal", &r.exchange.normal},
                                std::pair{"low_latency", &r.exchange.low_latency}}) {
    if (e->points.empty()) continue;
    auto term = [](const std::optional<double>& v, double prior, double unit) {
      return v ? fmt::format("{:.4g} (was {:.4g})", *v * unit, prior * unit)
               : fmt::format("{:.4g} (kept)", prior * unit);
    };
    *out += fmt::format(
        "\nMoE exchange, {} kernels (DeepEP): latency {} us, scale_up_efficiency {}, "
        "scale_out_efficiency {}\n{}\n",
        name, term(e->result.latency, e->prior.latency, 1e6),
        term(e->result.scale_up_efficiency, e->prior.scale_up_efficiency, 1),
        term(e->result.scale_out_efficiency, e->prior.scale_out_efficiency, 1),
        e->fitted ? e->note : "not fitted: " + e->why_not);
    *out +=
        "| log | op | EP | link | DeepEP GB/s | measured | model | error |\n"
        "|---|---|---|---|---|---|---|---|\n";
    for (const ExchangePoint& p : e->points) {
      *out += fmt::format("| {}:{} | {} | {} | {} | {:.4g} | {:.4g} µs{} | {:.4g} µs | {} |\n",
                          p.file, p.line, p.dispatch ? "dispatch" : "combine", p.ranks,
                          p.rdma ? "RDMA" : "NVLink", p.bandwidth * 1e-9, p.seconds * 1e6,
                          p.time_estimated ? " (from GB/s)" : "", p.model_seconds * 1e6,
                          Percent(p.model_seconds / p.seconds - 1));
    }
  }
}

}  // namespace

StatusOr<CalibrationResult> Calibrate(const std::vector<std::string>& paths,
                                      const CalibrateOptions& options) {
  const bool logs = !options.nccl_tests.empty() || !options.deepep.empty();
  if (paths.empty() && !logs) {
    return InvalidArgument("nothing to calibrate from: give traces, --nccl-tests or --deepep logs");
  }
  CalibrationResult result;
  if (!paths.empty()) {
    ASSIGN_OR_RETURN(result, CalibrateTraces(paths, options, logs));
  } else {
    ASSIGN_OR_RETURN(result.cluster, HardwareCluster(options));
    result.calibration =
        sim::DefaultCalibration(result.cluster ? result.cluster->device : DeviceSpec{});
    result.calibration.source = "shardscope calibrate";
    if (result.cluster) result.device = result.cluster->device.name;
  }
  RETURN_IF_ERROR(FitNcclTests(options, &result));
  RETURN_IF_ERROR(FitDeepEpLogs(options, &result));
  if (paths.empty()) {
    const bool any = result.exchange_fitted ||
                     std::any_of(result.collectives.begin(), result.collectives.end(),
                                 [](const CollectiveFit& f) { return f.why_not.empty(); });
    if (!any) {
      std::string why = "nothing to fit in the logs:";
      for (const CollectiveFit& f : result.collectives) {
        why += fmt::format("\n  {} over {}: {}", CollectiveName(f.collective), f.group_size,
                           f.why_not);
      }
      for (const auto& [name, e] : {std::pair{"normal", &result.exchange.normal},
                                    std::pair{"low_latency", &result.exchange.low_latency}}) {
        if (!e->fitted) why += fmt::format("\n  {} kernels: {}", name, e->why_not);
      }
      return Status(StatusCode::kFailedPrecondition, why);
    }
  }
  return result;
}

std::string CalibrationYaml(const CalibrationResult& r) {
  std::string out = "# Fitted by `shardscope calibrate` from";
  for (const std::string& f : r.files) out += " " + f;
  for (const std::string& f : r.logs) out += " " + f;
  out +=
      "\n# Read by `shardscope run --calibration FILE`; entries not listed keep the "
      "device family's defaults.\n";
  if (!r.device.empty()) out += fmt::format("device: \"{}\"\n", r.device);
  bool any = false;
  for (const ClassFit& f : r.classes) any |= f.fitted;
  if (any) {
    out += "ops:\n";
    for (const ClassFit& f : r.classes) {
      if (!f.fitted) continue;
      out += fmt::format(
          "  {}: {{flops_efficiency: {:.4g}, memory_efficiency: {:.4g}, half_rows: {:.4g}{}{}{}}}"
          "  # {} ops, {} shapes, rms error {:.1f} % (defaults {:.1f} %)\n",
          f.name, f.result.flops, f.result.memory, f.result.half_rows,
          f.result.launch >= 0 ? fmt::format(", launch_us: {:.4g}", f.result.launch * 1e6) : "",
          f.result.cache > 0
              ? fmt::format(
                    ", cache_bandwidth_gb_s: {:.4g}{}", f.result.cache * 1e-9,
                    f.result.cache_flops > 0
                        ? fmt::format(", cache_flops_efficiency: {:.4g}", f.result.cache_flops)
                        : "")
              : "",
          f.result.cache_ramp ? ", ramp_from_cache: true" : "", f.samples, f.shapes,
          100 * f.residual.rms_relative, 100 * f.prior_residual.rms_relative);
    }
  }
  if (r.calibration.small_gemm_rows > 0) {
    out += fmt::format(
        "small_gemm_rows: {:g}  # GEMMs of 2 to this many rows are the small_gemm class\n",
        r.calibration.small_gemm_rows);
  }
  if (r.launch_fitted) {
    out += fmt::format("launch_overhead_us: {:.4g}\n", r.calibration.launch_overhead * 1e6);
  }
  for (const TermFit& t : r.terms) {
    if (t.fitted) {
      out += fmt::format("{}: {:.4g}  # {}\n", t.name, t.fraction ? t.seconds : t.seconds * 1e6,
                         t.note);
    }
  }
  if (r.cache.fitted) {
    out += fmt::format(
        "cache_bandwidth_gb_s: {:.4g}  # {} ops of ranks whose working set fit the last-level "
        "cache, rms error {:.1f} % (from memory {:.1f} %)\n",
        r.cache.bandwidth * 1e-9, r.cache.samples, 100 * r.cache.residual.rms_relative,
        100 * r.cache.prior_residual.rms_relative);
  }
  if (r.node_bandwidth_fitted) {
    out += fmt::format(
        "node_memory_bandwidth_gb_s: {:.4g}  # the memory bus the node's busy ranks shared\n",
        r.calibration.node_memory_bandwidth * 1e-9);
  }
  if (r.network_fitted) {
    out += fmt::format(
        "network_efficiency: {:.4g}  # median over the collectives below of busbw / link "
        "bandwidth\n",
        r.calibration.network_efficiency);
  }
  bool comm = false;
  for (const CollectiveFit& f : r.collectives) comm |= f.why_not.empty();
  if (comm) {
    out +=
        "# Measured per collective and group size. From traces the simulator takes\n"
        "# latency_us and algbw_gb_s where slower than its algorithm's latency and\n"
        "# bandwidth (null: one message size, no line: the entry is not used), plus\n"
        "# wait_us, the members' median wait for the latest. A `source: nccl-tests` line\n"
        "# is the collective's time (latency_us + size / algbw_gb_s), faster or slower\n"
        "# than the model's. The other fields are the fit's report.\n"
        "collectives:\n";
    for (const CollectiveFit& f : r.collectives) {
      if (!f.why_not.empty()) continue;
      if (f.source == "nccl-tests") {
        out += fmt::format(
            "  - {{collective: {}, group_size: {}, latency_us: {:.4g}, algbw_gb_s: {:.4g}, "
            "source: nccl-tests, busbw_gb_s: {:.4g}, rows: {}, sizes: {}, rms_error: {:.3g}}}"
            "  # {}\n",
            sim::MeasuredCollectiveName(f.collective), f.group_size, f.fit.latency * 1e6,
            f.fit.algbw * 1e-9, f.busbw * 1e-9, f.samples, f.sizes, f.fit.rms_relative, f.note);
        continue;
      }
      out += fmt::format(
          "  - {{collective: {}, group_size: {}, latency_us: {}, algbw_gb_s: {:.4g}, "
          "wait_us: {:.4g}, busbw_gb_s: {:.4g}, calls: {}, sizes: {}, rms_error: {:.3g}}}\n",
          sim::MeasuredCollectiveName(f.collective), f.group_size,
          f.fit.latency_known ? fmt::format("{:.4g}", f.fit.latency * 1e6) : "null",
          f.fit.algbw * 1e-9, f.wait * 1e6, f.busbw * 1e-9, f.samples, f.sizes, f.fit.rms_relative);
    }
  }
  if (r.exchange_fitted) {
    out +=
        "# The MoE exchange kernels (DeepEP-like dispatch/combine), fitted from DeepEP's test\n"
        "# logs; each field replaces the hardware file's collectives.all_to_all term.\n"
        "exchange:\n";
    for (const auto& [name, e] : {std::pair{"normal", &r.exchange.normal},
                                  std::pair{"low_latency", &r.exchange.low_latency}}) {
      if (!e->fitted) continue;
      std::vector<std::string> fields;
      if (e->result.latency)
        fields.push_back(fmt::format("latency_us: {:.4g}", *e->result.latency * 1e6));
      if (e->result.scale_up_efficiency) {
        fields.push_back(
            fmt::format("scale_up_efficiency: {:.4g}", *e->result.scale_up_efficiency));
      }
      if (e->result.scale_out_efficiency) {
        fields.push_back(
            fmt::format("scale_out_efficiency: {:.4g}", *e->result.scale_out_efficiency));
      }
      out += fmt::format("  {}: {{{}}}  # {} figures\n", name, fmt::join(fields, ", "),
                         e->points.size());
    }
  }
  return out;
}

std::string CalibrationSummary(const CalibrationResult& r) {
  std::string out = fmt::format(
      "calibrated from {} trace(s){}; device: {}; dtype {}; each op shape's time: the {} "
      "of its ops\n",
      r.files.size(),
      r.logs.empty() ? "" : fmt::format(" and {} microbenchmark log(s)", r.logs.size()),
      r.device.empty() ? "unknown" : r.device, DTypeName(r.dtype),
      r.shape_mean ? "mean" : "median");
  if (r.roofs.peak_flops > 0) {
    out += fmt::format("roofs: {:.4g} TFLOP/s, {:.4g} GB/s; launch overhead {}\n",
                       r.roofs.peak_flops * 1e-12, r.roofs.memory_bandwidth * 1e-9,
                       r.launch_fitted
                           ? fmt::format("{:.3g} µs (fitted)", r.calibration.launch_overhead * 1e6)
                           : "not fitted");
  }
  AppendClassTable(r, &out);
  AppendCollectiveTable(r, &out);
  if (r.network_fitted) {
    out += fmt::format("\nnetwork_efficiency {:.3g}\n", r.calibration.network_efficiency);
  }
  AppendExchangeTables(r, &out);
  if (r.node_bandwidth_fitted) {
    out += fmt::format(
        "\nnode memory bandwidth {:.3g} GB/s (fitted on the op shapes measured both alone and "
        "with the node's other ranks busy)\n",
        r.calibration.node_memory_bandwidth * 1e-9);
  } else if (!r.node_bandwidth_why_not.empty()) {
    out += fmt::format("\nnode memory bandwidth not fitted: {}\n", r.node_bandwidth_why_not);
  }
  if (!r.files.empty())
    out += r.cache.fitted
               ? fmt::format(
                     "\ncache bandwidth {:.3g} GB/s (fitted on {} ops of {} shapes of ranks whose "
                     "working set fit the last-level cache; rms error {:.1f} % → {:.1f} %, total "
                     "{} → {})\n",
                     r.cache.bandwidth * 1e-9, r.cache.samples, r.cache.shapes,
                     100 * r.cache.prior_residual.rms_relative, 100 * r.cache.residual.rms_relative,
                     Percent(r.cache.prior_residual.total_relative),
                     Percent(r.cache.residual.total_relative))
               : fmt::format("\ncache bandwidth not fitted: {}\n", r.cache.why_not);
  if (!r.terms.empty()) {
    out += "\n| term | samples | value | note |\n|---|---|---|---|\n";
    for (const TermFit& t : r.terms) {
      out += fmt::format("| {} | {} | {} | {} |\n", t.name, t.samples,
                         !t.fitted    ? std::string("not fitted")
                         : t.fraction ? fmt::format("{:.3g} %", 100 * t.seconds)
                                      : fmt::format("{:.4g} µs", t.seconds * 1e6),
                         t.fitted ? t.note : t.why_not);
    }
  }
  if (!r.unused.empty()) {
    out += "\nevents not used:\n";
    for (const auto& [why, n] : r.unused) out += fmt::format("  {}: {}\n", why, n);
  }
  return out;
}

Status CheckNewFile(const std::string& path, bool force) {
  if (!force && std::filesystem::exists(path)) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("{} exists: not overwritten (use --force)", path));
  }
  return Status::Ok();
}

Status WriteNewFile(const std::string& path, const std::string& text, bool force) {
  RETURN_IF_ERROR(CheckNewFile(path, force));
  std::ofstream f(path, std::ios::trunc);
  if (!f) return IoError("{}: cannot open for writing", path);
  f << text;
  f.close();
  if (!f) return IoError("{}: write failed", path);
  return Status::Ok();
}

}  // namespace shardscope::calibrate
