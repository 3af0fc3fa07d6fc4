#include "sim/simulator.h"

#include <algorithm>

#include "config/experiment_json.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "run/latency.h"
#include "run/run_recorder.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/topology.h"
#include "sim/trace_emitter.h"

namespace shardscope::sim {
namespace {

using nlohmann::json;

// Busy figures of one phase from its timings.
PhaseFigures Figures(const PhaseProgram& program, const PhaseResult& r,
                     const std::vector<double>& rank_start) {
  PhaseFigures f;
  f.phase = program.phase;
  f.step = program.step;
  f.start = rank_start.empty() ? 0 : *std::min_element(rank_start.begin(), rank_start.end());
  f.end = *std::max_element(r.rank_end.begin(), r.rank_end.end());
  std::vector<std::pair<double, double>> comm, compute;
  for (const RankProgram& rp : program.ranks) {
    comm.clear();
    compute.clear();
    // Timings alone (op i has id i): the Ops themselves stay out of the cache.
    for (const OpTiming& t : r.timings[rp.rank]) {
      if (t.end <= t.start) continue;
      (t.comm ? comm : compute).emplace_back(t.comm ? t.post : t.start, t.end);
    }
    for (const auto& [s, e] : compute) f.compute += e - s;  // one compute stream: disjoint
    std::sort(comm.begin(), comm.end());
    // Union of comm intervals, and the part of it no compute op covers.
    double cur_s = -1, cur_e = -1;
    size_t ci = 0;
    auto exposed_of = [&](double s, double e) {
      double covered = 0;
      while (ci < compute.size() && compute[ci].second <= s) ++ci;
      for (size_t j = ci; j < compute.size() && compute[j].first < e; ++j) {
        covered += std::min(e, compute[j].second) - std::max(s, compute[j].first);
      }
      return (e - s) - covered;
    };
    for (const auto& [s, e] : comm) {
      if (s > cur_e) {
        if (cur_e > cur_s) {
          f.comm += cur_e - cur_s;
          f.exposed += exposed_of(cur_s, cur_e);
        }
        cur_s = s;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    if (cur_e > cur_s) {
      f.comm += cur_e - cur_s;
      f.exposed += exposed_of(cur_s, cur_e);
    }
  }
  return f;
}

}  // namespace

json SimOptionsToJson(const SimOptions& o) {
  return {{"calibration_file", o.calibration_file},
          {"allreduce_algorithm", AlgorithmName(o.allreduce)},
          {"max_decode_steps", o.max_decode_steps}};
}

StatusOr<SimResult> SimulateExperiment(const Experiment& experiment, const SimOptions& options) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(experiment));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(experiment, placement));
  Calibration calibration = DefaultCalibration(experiment.cluster.device);
  if (!options.calibration_file.empty()) {
    ASSIGN_OR_RETURN(calibration, LoadCalibration(options.calibration_file, calibration));
  }
  ASSIGN_OR_RETURN(
      ComputeModel compute,
      ComputeModel::Create(
          experiment.cluster.device, experiment.workload.dtype, calibration,
          SharedBandwidthPerDevice(NodeBandwidthCluster(experiment.cluster, calibration),
                                   ConcurrentDevicesPerNode(experiment))));
  ClusterSpec network_cluster = experiment.cluster;
  network_cluster.scale_up.bandwidth_per_device *= calibration.network_efficiency;
  network_cluster.scale_up.link_bandwidth *= calibration.network_efficiency;
  network_cluster.scale_out.nic_bandwidth_per_device *= calibration.network_efficiency;
  const Topology topology(network_cluster);
  Engine engine(placement, compute, topology, EngineOptions{options.allreduce});

  SimResult result;
  result.calibration_source = calibration.source;
  result.decode_steps = std::max<int64_t>(experiment.workload.tokens_to_generate - 1, 0);
  result.decode_steps_simulated = options.max_decode_steps >= 0
                                      ? std::min(result.decode_steps, options.max_decode_steps)
                                      : result.decode_steps;

  // The trace records the run as simulated: with truncated decode, a run of
  // fewer generated tokens (the metadata keeps the requested count).
  Experiment recorded = experiment;
  recorded.workload.tokens_to_generate = result.decode_steps_simulated + 1;
  std::unique_ptr<run::RunRecorder> recorder;
  std::unique_ptr<TraceEmitter> emitter;
  if (options.write_trace) {
    const json meta =
        run::RunMetadata(recorded, placement, "sim",
                         {{"options", SimOptionsToJson(options)},
                          {"calibration", calibration.source},
                          {"requested_tokens_to_generate", experiment.workload.tokens_to_generate},
                          {"simulated_decode_steps", result.decode_steps_simulated}});
    ASSIGN_OR_RETURN(
        recorder, run::RunRecorder::Open(experiment, meta, options.trace_root, options.trace_file));
    result.trace_path = recorder->trace_path();
    result.metadata_path = recorder->metadata_path();
    emitter = std::make_unique<TraceEmitter>(recorder->writer(), experiment, placement);
    emitter->WriteHeader(PlanMemory(experiment, placement));
  }

  std::vector<double> start(placement.world_size(), 0.0);
  std::vector<double> decode_start;
  run::LatencyWindows<double> windows;  // per-rank phase windows, seconds
  auto run_phase = [&](Phase phase, int64_t step) -> Status {
    if (options.progress) {
      options.progress(phase == Phase::kPrefill ? std::string("prefill")
                                                : fmt::format("decode step {}/{}", step + 1,
                                                              result.decode_steps_simulated));
    }
    ASSIGN_OR_RETURN(PhaseProgram program, builder.Build(phase, step));
    ASSIGN_OR_RETURN(PhaseResult r, engine.Run(program, start));
    result.ops += r.ops;
    result.transfers += r.transfers;
    PhaseFigures f = Figures(program, r, start);
    result.compute_seconds += f.compute;
    result.comm_seconds += f.comm;
    result.exposed_comm_seconds += f.exposed;
    result.phases.push_back(f);
    if (emitter) emitter->WritePhase(program, r, start);
    for (size_t rank = 0; rank < r.rank_end.size(); ++rank) {
      if (phase == Phase::kPrefill) {
        windows.AddPrefill(start[rank], r.rank_end[rank]);
      } else {
        windows.AddDecodeStep(static_cast<int32_t>(step), r.rank_end[rank]);
      }
    }
    start = r.rank_end;
    return Status::Ok();
  };
  RETURN_IF_ERROR(run_phase(Phase::kPrefill, 0));
  decode_start = start;
  for (int64_t k = 0; k < result.decode_steps_simulated; ++k) {
    RETURN_IF_ERROR(run_phase(Phase::kDecode, k));
  }
  if (result.decode_steps_simulated > 0 && emitter) emitter->WriteDecodeSpans(decode_start, start);
  const run::Latency latency = windows.Compute();
  result.latency = latency;
  result.ttft = latency.ttft;
  result.tpot = latency.tpot;
  result.total = run::ExtrapolatedRunSeconds(latency, result.decode_steps);
  const run::Throughput throughput = run::ComputeThroughput(
      latency, experiment.workload.batch_size, experiment.workload.sequence_length, result.total);
  result.throughput = throughput;
  result.prefill_tokens_per_s = throughput.prefill_tokens_per_s;
  result.decode_tokens_per_s = throughput.decode_tokens_per_s;
  result.tps = throughput.tps;
  if (recorder) RETURN_IF_ERROR(recorder->Close());
  return result;
}

}  // namespace shardscope::sim
