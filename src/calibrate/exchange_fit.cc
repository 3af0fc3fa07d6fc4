#include "calibrate/exchange_fit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "calibrate/comm_fit.h"
#include "sim/moe_exchange.h"

namespace shardscope::calibrate {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Devices per scale-up domain among n ranks (k), or an error.
StatusOr<int64_t> DomainOf(const ClusterSpec& cluster, int64_t n, const std::string& file) {
  if (n < 2) return InvalidArgument("{}: an EP size of {} ranks moves nothing", file, n);
  if (n > cluster.num_devices()) {
    return InvalidArgument(
        "{}: the test ran on {} ranks, more than the {} devices of cluster '{}' (--hardware with "
        "more nodes)",
        file, n, cluster.num_devices(), cluster.name);
  }
  const bool switched = cluster.scale_up.kind == ScaleUpKind::kSwitched;
  const int64_t k = switched ? std::min(cluster.scale_up.domain_size, n) : 1;
  if (n % k != 0) {
    return InvalidArgument("{}: {} ranks do not fill whole scale-up domains of {}", file, n, k);
  }
  return k;
}

// Caps an efficiency at 1, noting it.
double Cap(double e, std::string_view what, std::string* note) {
  if (e <= 1) return e;
  *note += fmt::format("{} {:.3g} above the link's bandwidth: capped at 1; ", what, e);
  return 1;
}

Status FitNormal(const std::vector<const DeepEpLog*>& logs, const ClusterSpec& cluster,
                 int64_t default_ranks, ExchangeFit* fit) {
  fit->prior = cluster.collectives.normal;
  const double latency = fit->prior.latency;
  std::vector<double> out_e, up_e;
  for (const DeepEpLog* log : logs) {
    const int64_t n = log->ranks > 0 ? log->ranks : default_ranks;
    if (n == 0) {
      return InvalidArgument(
          "{}: DeepEP's normal-kernel tests do not print their rank count: give it with "
          "--deepep-ranks N",
          log->file);
    }
    ASSIGN_OR_RETURN(const int64_t k, DomainOf(cluster, n, log->file));
    const int64_t m = n / k;
    // The model's dispatch is FP8: take the FP8 best dispatch where printed.
    bool has_fp8 = false;
    for (const DeepEpFigure& f : log->figures) has_fp8 |= f.dispatch && f.fp8;
    for (const DeepEpFigure& f : log->figures) {
      if (f.dispatch && has_fp8 && !f.fp8) continue;
      ExchangePoint p;
      p.file = log->file;
      p.line = f.line;
      p.dispatch = f.dispatch;
      p.ranks = n;
      p.rdma = m > 1;
      p.bandwidth = p.rdma ? f.rdma_bandwidth : f.nvl_bandwidth;
      if (!(p.bandwidth > 0)) {
        return InvalidArgument("{}:{}: a {} run on {} ranks ({} nodes) without its {} figure",
                               log->file, f.line, p.rdma ? "multi-node" : "single-node", n, m,
                               p.rdma ? "RDMA" : "NVL");
      }
      p.seconds = f.seconds;
      if (!(p.seconds > 0)) {
        // No time printed: DeepEP's counted bytes from the run's routing (the
        // model's expectation for its uniform draw) over the figure.
        sim::ExchangeOptions o;
        o.dispatch = f.dispatch;
        o.ranks = n;
        o.tokens = log->tokens > 0 ? log->tokens : 4096;
        o.hidden = log->hidden > 0 ? log->hidden : 7168;
        o.topk = log->topk > 0 ? log->topk : 8;
        // The tests' defaults: 256 experts (intranode: rounded to the ranks).
        o.experts = log->experts > 0 ? log->experts : m > 1 ? 256 : (256 / n) * n;
        o.group_limit = log->topk_groups < m ? log->topk_groups : 0;
        o.token_bytes = f.dispatch && f.fp8 ? static_cast<double>(o.hidden) * (1 + 4.0 / 128)
                                            : 2.0 * static_cast<double>(o.hidden);
        StatusOr<sim::ExchangeResult> r = sim::SimulateExchange(cluster, o);
        if (!r.ok()) return r.status().WithPrefix(fmt::format("{}:{}", log->file, f.line));
        const double per = p.rdma ? r->nodes_per_token : r->gpus_per_token;
        p.seconds = static_cast<double>(o.tokens) * per * o.token_bytes / p.bandwidth;
        p.time_estimated = true;
      }
      const double counted = p.bandwidth * p.seconds;
      p.wire_bytes = p.rdma ? counted * static_cast<double>(m - 1) / static_cast<double>(m)
                            : counted * static_cast<double>(k - 1) / static_cast<double>(k);
      const double link = p.rdma ? cluster.scale_out.nic_bandwidth_per_device
                                 : cluster.scale_up.bandwidth_per_device;
      if (!(link > 0)) {
        return InvalidArgument("{}: cluster '{}' has no {} bandwidth", log->file, cluster.name,
                               p.rdma ? "NIC" : "scale-up");
      }
      if (p.seconds <= latency) {
        fit->note += fmt::format("{}:{} runs faster than the kernel's latency: not used; ",
                                 log->file, f.line);
        fit->points.push_back(p);
        continue;
      }
      (p.rdma ? out_e : up_e).push_back(p.wire_bytes / ((p.seconds - latency) * link));
      fit->points.push_back(p);
    }
  }
  if (!out_e.empty()) {
    fit->result.scale_out_efficiency = Cap(Median(out_e), "scale_out_efficiency", &fit->note);
  }
  if (!up_e.empty()) {
    fit->result.scale_up_efficiency = Cap(Median(up_e), "scale_up_efficiency", &fit->note);
  }
  fit->fitted = fit->result.any();
  if (!fit->fitted) fit->why_not = "no usable figure";
  fit->note += fmt::format(
      "one token count per run: the latency stays the hardware file's ({:.3g} us)", latency * 1e6);
  return Status::Ok();
}

Status FitLowLatency(const std::vector<const DeepEpLog*>& logs, const ClusterSpec& cluster,
                     int64_t default_ranks, ExchangeFit* fit) {
  fit->prior = cluster.collectives.low_latency;
  std::vector<MessageSample> remote, local;  // bytes: wire seconds at the full link
  for (const DeepEpLog* log : logs) {
    // A log holding one rank's lines (its stdout alone) does not tell the EP size.
    const int64_t n = log->ranks >= 2 ? log->ranks : default_ranks;
    if (n == 0) {
      return InvalidArgument("{}: only rank {}'s lines: give the EP size with --deepep-ranks N",
                             log->file, log->figures.front().rank);
    }
    ASSIGN_OR_RETURN(const int64_t k, DomainOf(cluster, n, log->file));
    for (bool dispatch : {true, false}) {
      std::vector<double> t, g;
      int line = 0;
      for (const DeepEpFigure& f : log->figures) {
        if (f.dispatch != dispatch) continue;
        t.push_back(f.seconds);
        g.push_back(f.nvl_bandwidth);
        if (line == 0) line = f.line;
      }
      if (t.empty()) continue;
      ExchangePoint p;
      p.file = log->file;
      p.line = line;
      p.dispatch = dispatch;
      p.ranks = n;
      p.rdma = n > k;
      p.seconds = Median(t);  // over the ranks
      p.bandwidth = Median(g);
      const double counted = p.bandwidth * p.seconds;  // every (token, expert) selection
      const double nd = static_cast<double>(n), kd = static_cast<double>(k);
      p.wire_bytes = p.rdma ? counted * (nd - kd) / nd : counted * (kd - 1) / nd;
      const double link = p.rdma ? cluster.scale_out.nic_bandwidth_per_device
                                 : cluster.scale_up.bandwidth_per_device;
      if (!(link > 0)) {
        return InvalidArgument("{}: cluster '{}' has no {} bandwidth", log->file, cluster.name,
                               p.rdma ? "NIC" : "scale-up");
      }
      (p.rdma ? remote : local).push_back({p.wire_bytes / link, p.seconds, 1});
      fit->points.push_back(p);
    }
  }
  double latency = fit->prior.latency;
  auto efficiency_at = [&](const std::vector<MessageSample>& s, double l) {
    std::vector<double> e;
    for (const MessageSample& m : s) {
      if (m.seconds > l) e.push_back(m.bytes / (m.seconds - l));
    }
    return e;
  };
  // The points of the link kind that carries most give the latency.
  const std::vector<MessageSample>& lead = remote.empty() ? local : remote;
  LinkFit line = FitLinkRobust(lead);
  if (line.latency_known && line.algbw > 0 && line.algbw <= 1) {
    latency = line.latency;
    fit->result.latency = latency;
    fit->note +=
        fmt::format("latency and {} efficiency from {} points (rms {:.1f} %); ",
                    remote.empty() ? "NVLink" : "RDMA", lead.size(), 100 * line.rms_relative);
  } else {
    fit->note += fmt::format(
        "the points give no line with a latency ≥ 0 and an efficiency ≤ 1: the latency stays the "
        "hardware file's ({:.3g} us); ",
        latency * 1e6);
  }
  for (const auto& [points, out, what] :
       {std::tuple{&remote, &fit->result.scale_out_efficiency, "scale_out_efficiency"},
        std::tuple{&local, &fit->result.scale_up_efficiency, "scale_up_efficiency"}}) {
    const std::vector<double> e = efficiency_at(*points, latency);
    if (!e.empty()) *out = Cap(Median(e), what, &fit->note);
  }
  fit->fitted = fit->result.any();
  if (!fit->fitted) fit->why_not = "no figure above the kernel's latency";
  return Status::Ok();
}

// Each point's time under the fitted terms.
void ModelTimes(const ClusterSpec& cluster, ExchangeFit* fit) {
  ExchangeKernelCost c = fit->prior;
  if (fit->result.latency) c.latency = *fit->result.latency;
  if (fit->result.scale_up_efficiency) c.scale_up_efficiency = *fit->result.scale_up_efficiency;
  if (fit->result.scale_out_efficiency) c.scale_out_efficiency = *fit->result.scale_out_efficiency;
  for (ExchangePoint& p : fit->points) {
    const double link = p.rdma ? cluster.scale_out.nic_bandwidth_per_device * c.scale_out_efficiency
                               : cluster.scale_up.bandwidth_per_device * c.scale_up_efficiency;
    p.model_seconds = c.latency + p.wire_bytes / link;
  }
}

}  // namespace

StatusOr<DeepEpFit> FitDeepEp(const std::vector<DeepEpLog>& logs, const ClusterSpec& cluster,
                              int64_t ranks) {
  std::vector<const DeepEpLog*> normal, low;
  for (const DeepEpLog& log : logs) (log.low_latency ? low : normal).push_back(&log);
  DeepEpFit fit;
  fit.normal.why_not = fit.low_latency.why_not = "no log of these kernels";
  if (!normal.empty()) {
    fit.normal.why_not.clear();
    RETURN_IF_ERROR(FitNormal(normal, cluster, ranks, &fit.normal));
    ModelTimes(cluster, &fit.normal);
  }
  if (!low.empty()) {
    fit.low_latency.why_not.clear();
    RETURN_IF_ERROR(FitLowLatency(low, cluster, ranks, &fit.low_latency));
    ModelTimes(cluster, &fit.low_latency);
  }
  return fit;
}

}  // namespace shardscope::calibrate
