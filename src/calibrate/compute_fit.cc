#include "calibrate/compute_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscope::calibrate {
namespace {

constexpr double kMinLogEff = -4;  // efficiencies searched in [1e-4, 1]

// The two terms of the model, without launch.
struct Terms {
  double flops = 0;
  double memory = 0;
};

Terms ModelTerms(const sim::Efficiency& e, const DeviceRoofs& roofs, const ShapeSample& s) {
  const bool cached = s.resident && roofs.cache_bandwidth > 0;
  Terms t;
  if (s.flops > 0) {
    // As sim::ComputeModel: from cache, the ramp only where the class packs anyway.
    t.flops =
        s.flops / (roofs.peak_flops * sim::FlopsEfficiencyAt(e, s.rows, cached, s.cache_ramp));
  }
  if (s.bytes > 0) {
    double rate = roofs.memory_bandwidth * e.memory;
    if (s.shared_bandwidth > 0) rate = std::min(rate, s.shared_bandwidth);
    if (cached) rate = e.cache > 0 ? e.cache : roofs.cache_bandwidth;
    t.memory = s.bytes / rate;
  }
  return t;
}

// A small pull towards efficiency 1 (on ln e, relative to the data's weight):
// it decides between explanations the data fits about equally well — ops of
// one arithmetic intensity fit a low FLOP efficiency as well as a memory one —
// in favour of the one nearer the roofline, and moves a fit by ≲ 0.5 %.
constexpr double kPull = 1e-4;

// A sample's weight in the loss: its measured time (count × median), so the
// ops the time goes to fit best — what end-to-end latency depends on — or the
// weight the caller gave it (calibrate: its share of its run's time).
double Weight(const ShapeSample& s) {
  return s.weight > 0 ? s.weight : static_cast<double>(s.count) * s.seconds;
}

struct Eval {
  double loss = 0;          // Σ count · ln(model / measured)²
  int64_t flops_bound = 0;  // measured ops the FLOP term decides
};

Eval Evaluate(const std::vector<ShapeSample>& samples, const std::vector<double>& log_measured,
              const DeviceRoofs& roofs, double launch, const sim::Efficiency& e) {
  Eval ev;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Terms t = ModelTerms(e, roofs, samples[i]);
    const double d = std::log(std::max(t.flops, t.memory) + launch) - log_measured[i];
    ev.loss += Weight(samples[i]) * d * d;
    if (t.flops >= t.memory) ev.flops_bound += samples[i].count;
  }
  return ev;
}

struct Point {
  double lf = 0, lm = 0;                                  // log10 of the efficiencies
  double loss = std::numeric_limits<double>::infinity();  // with the pull
};

double Pulled(double loss, double lf, double lm, double weight) {
  const double a = lf * std::log(10.0), b = lm * std::log(10.0);
  return loss + kPull * weight * (a * a + b * b);
}

// Best point of a square grid centred at `c`, `half` steps of `step` decades
// each way, clipped to [kMinLogEff, 0]. With `by_regime`, the best point of
// each regime (every op memory-bound, every op FLOP-bound, mixed) instead.
std::vector<Point> SearchGrid(const std::vector<ShapeSample>& samples,
                              const std::vector<double>& log_t, const DeviceRoofs& roofs,
                              double launch, double h, Point c, int half, double step,
                              bool by_regime, double weight, int64_t ops = 0) {
  std::vector<Point> best(by_regime ? 3 : 1);
  for (int i = -half; i <= half; ++i) {
    const double lf = std::clamp(c.lf + i * step, kMinLogEff, 0.0);
    for (int j = -half; j <= half; ++j) {
      const double lm = std::clamp(c.lm + j * step, kMinLogEff, 0.0);
      const sim::Efficiency e{std::pow(10.0, lf), std::pow(10.0, lm), h};
      const Eval ev = Evaluate(samples, log_t, roofs, launch, e);
      const double loss = Pulled(ev.loss, lf, lm, weight);
      size_t slot = 0;
      if (by_regime) slot = ev.flops_bound == 0 ? 0 : ev.flops_bound >= ops ? 1 : 2;
      if (loss < best[slot].loss) best[slot] = {lf, lm, loss};
    }
  }
  return best;
}

// Refines a point twice (0.01, then 0.001 decade).
Point Refine(const std::vector<ShapeSample>& samples, const std::vector<double>& log_t,
             const DeviceRoofs& roofs, double launch, double h, Point p, double weight) {
  for (double step : {0.01, 0.001}) {
    p = SearchGrid(samples, log_t, roofs, launch, h, p, 10, step, false, weight)[0];
  }
  return p;
}

// The best point for one h: a coarse grid (0.1 decade), each regime's best refined.
Point BestForHalfRows(const std::vector<ShapeSample>& samples, const std::vector<double>& log_t,
                      const DeviceRoofs& roofs, double launch, double h, double weight) {
  int64_t ops = 0;
  for (const ShapeSample& s : samples) ops += s.count;
  Point best;
  for (const Point& p :
       SearchGrid(samples, log_t, roofs, launch, h, Point{-2, -2, 0}, 20, 0.1, true, weight, ops)) {
    if (!std::isfinite(p.loss)) continue;
    const Point r = Refine(samples, log_t, roofs, launch, h, p, weight);
    if (r.loss < best.loss) best = r;
  }
  return best;
}

}  // namespace

double ModelSeconds(const sim::Efficiency& e, const DeviceRoofs& roofs, double launch,
                    const ShapeSample& s) {
  const Terms t = ModelTerms(e, roofs, s);
  return std::max(t.flops, t.memory) + launch;
}

EfficiencyFit FitEfficiency(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs,
                            double launch, const sim::Efficiency& prior, bool half_rows) {
  EfficiencyFit fit;
  fit.efficiency = prior;
  if (samples.empty()) return fit;
  std::vector<double> log_t(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) log_t[i] = std::log(samples[i].seconds);
  fit.fit_half_rows =
      half_rows && std::any_of(samples.begin(), samples.end(),
                               [](const ShapeSample& s) { return s.rows > 0 && s.flops > 0; });
  double weight = 0;
  for (const ShapeSample& s : samples) weight += Weight(s);
  // h: 0 and a √2 grid from 0.5 to 512, then 8 steps between the best's neighbours.
  std::vector<double> halves = {0};
  if (fit.fit_half_rows) {
    for (int j = -2; j <= 18; ++j) halves.push_back(std::pow(2.0, j / 2.0));
  }
  Point best;
  double best_h = 0;
  for (double h : halves) {
    const Point p = BestForHalfRows(samples, log_t, roofs, launch, h, weight);
    if (p.loss < best.loss) best = p, best_h = h;
  }
  if (best_h > 0) {
    const double lo = best_h / std::sqrt(2.0), hi = best_h * std::sqrt(2.0);
    for (int i = 0; i <= 16; ++i) {
      const double h = lo * std::pow(hi / lo, i / 16.0);
      const Point p = Refine(samples, log_t, roofs, launch, h, best, weight);
      if (p.loss < best.loss) best = p, best_h = h;
    }
  }
  fit.efficiency = {std::pow(10.0, best.lf), std::pow(10.0, best.lm), best_h};
  for (const ShapeSample& s : samples) {
    const Terms t = ModelTerms(fit.efficiency, roofs, s);
    (t.flops >= t.memory ? fit.flops_bound : fit.memory_bound) += s.count;
  }
  // A term that decides nothing is not measured: keep the prior, but never so
  // low that it would take over a sample the other term explains.
  sim::Efficiency& e = fit.efficiency;
  if (fit.flops_bound == 0) {
    double need = 0;
    e.half_rows = prior.half_rows;
    for (const ShapeSample& s : samples) {
      const Terms t = ModelTerms({1.0, e.memory, e.half_rows}, roofs, s);
      if (t.memory > 0) need = std::max(need, t.flops / t.memory);
    }
    e.flops = std::min(1.0, std::max(prior.flops, need));
  }
  if (fit.memory_bound == 0) {
    double need = 0;
    for (const ShapeSample& s : samples) {
      const Terms t = ModelTerms({e.flops, 1.0, e.half_rows}, roofs, s);
      if (t.flops > 0) need = std::max(need, t.memory / t.flops);
    }
    e.memory = std::min(1.0, std::max(prior.memory, need));
  }
  fit.loss = Evaluate(samples, log_t, roofs, launch, e).loss;
  return fit;
}

Residual ComputeResidual(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs,
                         double launch, const sim::Efficiency& e) {
  Residual r;
  double n = 0, sq = 0, model_sum = 0, measured_sum = 0;
  std::vector<std::pair<double, double>> abs_err;
  for (const ShapeSample& s : samples) {
    const double model = ModelSeconds(e, roofs, launch, s);
    const double rel = (model - s.seconds) / s.seconds;
    const double w = Weight(s);
    n += w;
    sq += w * rel * rel;
    model_sum += static_cast<double>(s.count) * model;
    measured_sum += static_cast<double>(s.count) * s.seconds;
    abs_err.push_back({std::abs(rel), w});
  }
  if (n == 0) return r;
  r.rms_relative = std::sqrt(sq / n);
  r.total_relative = (model_sum - measured_sum) / measured_sum;
  std::sort(abs_err.begin(), abs_err.end());
  double seen = 0;
  for (const auto& [err, weight] : abs_err) {
    seen += weight;
    if (seen >= n / 2) {
      r.median_relative = err;
      break;
    }
  }
  return r;
}

}  // namespace shardscope::calibrate

namespace shardscope::calibrate {

double FitLoss(const std::vector<ShapeSample>& samples, const DeviceRoofs& roofs, double launch,
               const sim::Efficiency& e, double huber) {
  double loss = 0;
  for (const ShapeSample& s : samples) {
    const double d = std::abs(std::log(ModelSeconds(e, roofs, launch, s) / s.seconds));
    loss += Weight(s) * (huber > 0 && d > huber ? huber * (2 * d - huber) : d * d);
  }
  return loss;
}

}  // namespace shardscope::calibrate
