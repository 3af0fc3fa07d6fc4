#include "sim/simulator.h"

#include <algorithm>

#include "config/experiment_json.h"
#include "plan/memory.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/topology.h"
#include "sim/trace_emitter.h"
#include "trace/trace_store.h"

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

json PlanJson(const Placement& pl) {
  json groups = json::array();
  for (const Group& g : pl.groups()) {
    if (g.ranks.size() <= 1) continue;
    groups.push_back({{"id", g.id}, {"dim", DimName(g.dim)}, {"ranks", g.ranks}});
  }
  json devices = json::array();
  for (int64_t r = 0; r < pl.world_size(); ++r) devices.push_back(pl.Location(r).device);
  json stages = json::array();
  for (int64_t s = 0; s < pl.num_stages(); ++s) stages.push_back(pl.LayersOfStage(s));
  return {{"world_size", pl.world_size()},
          {"rank_to_device", devices},
          {"groups", groups},
          {"stages", stages}};
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
      ComputeModel::Create(experiment.cluster.device, experiment.workload.dtype, calibration));
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
  std::unique_ptr<trace::TraceWriter> writer;
  std::unique_ptr<TraceEmitter> emitter;
  if (options.write_trace) {
    json meta = {{"experiment", ExperimentToJson(recorded)},
                 {"backend", "sim"},
                 {"plan", PlanJson(placement)},
                 {"cluster", ClusterToJson(experiment.cluster)},
                 {"sim",
                  {{"options", SimOptionsToJson(options)},
                   {"calibration", calibration.source},
                   {"requested_tokens_to_generate", experiment.workload.tokens_to_generate},
                   {"simulated_decode_steps", result.decode_steps_simulated}}}};
    if (!options.trace_file.empty()) {
      ASSIGN_OR_RETURN(writer, trace::TraceWriter::Open(options.trace_file, meta));
      result.trace_path = options.trace_file;
    } else {
      trace::TraceStore store(options.trace_root);
      trace::StoredTrace stored;
      const trace::RunKey key{experiment.model.name, experiment.parallel.strategy,
                              experiment.workload.batch_size, experiment.workload.sequence_length};
      ASSIGN_OR_RETURN(writer, store.Create(key, meta, &stored));
      result.trace_path = stored.trace_path;
      result.metadata_path = stored.metadata_path;
    }
    emitter = std::make_unique<TraceEmitter>(writer.get(), experiment, placement);
    emitter->WriteHeader(PlanMemory(experiment, placement));
  }

  std::vector<double> start(placement.world_size(), 0.0);
  std::vector<double> decode_start;
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
    start = r.rank_end;
    return Status::Ok();
  };
  RETURN_IF_ERROR(run_phase(Phase::kPrefill, 0));
  result.ttft = result.phases.back().end;
  decode_start = start;
  for (int64_t k = 0; k < result.decode_steps_simulated; ++k) {
    RETURN_IF_ERROR(run_phase(Phase::kDecode, k));
  }
  const double decode_end = result.phases.back().end;
  if (result.decode_steps_simulated > 0) {
    result.tpot = (decode_end - result.ttft) / static_cast<double>(result.decode_steps_simulated);
    if (emitter) emitter->WriteDecodeSpans(decode_start, start);
  }
  result.total = result.ttft + static_cast<double>(result.decode_steps) * result.tpot;
  const double batch = static_cast<double>(experiment.workload.batch_size);
  const double prompt = batch * static_cast<double>(experiment.workload.sequence_length);
  result.prefill_tokens_per_s = result.ttft > 0 ? prompt / result.ttft : 0;
  result.decode_tokens_per_s = result.tpot > 0 ? batch / result.tpot : 0;
  result.tps = result.total > 0 ? prompt / result.total : 0;
  if (writer) RETURN_IF_ERROR(writer->Close());
  return result;
}

}  // namespace shardscope::sim
