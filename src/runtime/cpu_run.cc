#include "runtime/cpu_run.h"

#include <cblas.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "config/experiment_json.h"
#include "config/experiment_loader.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "runtime/cpu_trace.h"
#include "runtime/executor.h"
#include "runtime/kernels.h"
#include "runtime/mpi/mpi_communicator.h"
#include "trace/trace_store.h"
#include "trace/trace_writer.h"

extern char** environ;

namespace shardscope::runtime {
namespace {

using nlohmann::json;

json PlanJson(const Placement& pl) {
  json groups = json::array();
  for (const Group& g : pl.groups()) {
    if (g.ranks.size() <= 1) continue;
    groups.push_back({{"id", g.id}, {"dim", DimName(g.dim)}, {"ranks", g.ranks}});
  }
  json stages = json::array();
  for (int64_t s = 0; s < pl.num_stages(); ++s) stages.push_back(pl.LayersOfStage(s));
  return {{"world_size", pl.world_size()}, {"groups", groups}, {"stages", stages}};
}

std::string TempPath(const std::string& stem) {
  std::string path = "/tmp/shardscope-" + stem + "-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

// The body of one rank, after MPI is up; failures are returned (the caller aborts the job).
StatusOr<CpuRunResult> WorkerBody(const Experiment& e, const CpuRunOptions& o,
                                  MpiCommunicator& comm) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  RETURN_IF_ERROR(comm.AddGroups(placement));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, placement));
  auto kernels = NewCpuKernels();
  ExecutorOptions xo;
  xo.fail_rank = o.fail_rank;
  xo.fail_op = o.fail_op;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                   Executor::Create(e, placement, kernels.get(), &comm, xo));
  const int64_t warmup = o.warmup_iterations.value_or(e.workload.warmup_iterations);
  const int64_t measured =
      std::max<int64_t>(1, o.measured_iterations.value_or(e.workload.measured_iterations));
  CpuRunResult result;
  result.ranks = comm.world_size();
  for (int64_t i = 0; i < warmup + measured; ++i) {
    RETURN_IF_ERROR(comm.Barrier());
    const int64_t t0 = NowNs();
    RETURN_IF_ERROR(RunGeneration(builder, *ex));
    RETURN_IF_ERROR(comm.Barrier());
    if (i >= warmup) result.generation_seconds.push_back(static_cast<double>(NowNs() - t0) * 1e-9);
  }
  // The last generation's events, on rank 0's clock.
  ASSIGN_OR_RETURN(int64_t offset, EstimateClockOffset(comm));
  const RankEvents mine = ToTraceEvents(ex->records(), placement, comm.rank(), offset, 0);
  std::string tokens;
  for (const SampleRecord& s : ex->samples()) {
    tokens += fmt::format("{} {} {}\n", s.phase_index, s.request, s.token);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> all_events, comm.GatherToRoot(SerializeEvents(mine)));
  ASSIGN_OR_RETURN(std::vector<std::string> all_tokens, comm.GatherToRoot(tokens));
  ASSIGN_OR_RETURN(std::vector<std::string> all_offsets, comm.GatherToRoot(std::to_string(offset)));
  if (comm.rank() != 0) {
    result.root = false;
    return result;
  }

  // Rank 0: tokens, phase timings and the trace.
  result.tokens.assign(static_cast<size_t>(e.workload.batch_size), {});
  for (const std::string& text : all_tokens) {
    std::istringstream in(text);
    int64_t phase, request, token;
    while (in >> phase >> request >> token) {
      auto& seq = result.tokens[static_cast<size_t>(request)];
      if (seq.size() < static_cast<size_t>(phase + 1))
        seq.resize(static_cast<size_t>(phase + 1), -1);
      seq[static_cast<size_t>(phase)] = static_cast<int32_t>(token);
    }
  }
  std::vector<RankEvents> ranks;
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const std::string& text : all_events) {
    ASSIGN_OR_RETURN(RankEvents ev, ParseEvents(text));
    for (const auto& op : ev.ops) origin = std::min(origin, op.ts_ns);
    ranks.push_back(std::move(ev));
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  int64_t prefill_end = 0, decode_end = 0;
  for (RankEvents& ev : ranks) {
    for (auto& op : ev.ops) op.ts_ns -= origin;
    for (auto& s : ev.spans) {
      s.ts_ns -= origin;
      if (s.kind == trace::SpanKind::kPhase && s.phase == trace::Phase::kPrefill) {
        prefill_end = std::max(prefill_end, s.end_ns());
      }
      if (s.kind == trace::SpanKind::kPhase && s.phase == trace::Phase::kDecode) {
        decode_end = std::max(decode_end, s.end_ns());
      }
    }
  }
  result.ttft_seconds = static_cast<double>(prefill_end) * 1e-9;
  const int64_t steps = e.workload.tokens_to_generate - 1;
  if (steps > 0 && decode_end > prefill_end) {
    result.tpot_seconds =
        static_cast<double>(decode_end - prefill_end) * 1e-9 / static_cast<double>(steps);
  }
  if (o.write_trace) {
    json offsets = json::array();
    for (const std::string& s : all_offsets) offsets.push_back(std::stoll(s));
    json meta = {{"experiment", ExperimentToJson(e)},
                 {"backend", "cpu"},
                 {"plan", PlanJson(placement)},
                 {"cluster", ClusterToJson(e.cluster)},
                 {"cpu",
                  {{"kernels", "cpu (OpenBLAS sgemm, fp32)"},
                   {"communicator", "MPI"},
                   {"warmup_iterations", warmup},
                   {"measured_iterations", measured},
                   {"traced_iteration", "the last measured generation"},
                   {"generation_seconds", result.generation_seconds},
                   {"clock_offsets_ns", offsets},
                   {"activation_dtype", "fp32"}}}};
    std::unique_ptr<trace::TraceWriter> writer;
    if (!o.trace_file.empty()) {
      ASSIGN_OR_RETURN(writer, trace::TraceWriter::Open(o.trace_file, meta));
      result.trace_path = o.trace_file;
    } else {
      trace::TraceStore store(o.trace_root);
      trace::StoredTrace stored;
      const trace::RunKey key{e.model.name, e.parallel.strategy, e.workload.batch_size,
                              e.workload.sequence_length};
      ASSIGN_OR_RETURN(writer, store.Create(key, meta, &stored));
      result.trace_path = stored.trace_path;
      result.metadata_path = stored.metadata_path;
    }
    for (int64_t r = 0; r < placement.world_size(); ++r) {
      const int32_t r32 = static_cast<int32_t>(r);
      writer->NameProcess(r32,
                          fmt::format("rank {} · node {} · cpu {}", r, placement.Location(r).node,
                                      placement.Location(r).local));
      for (int s = 0; s < kNumStreams; ++s) {
        writer->NameThread(r32, s, StreamName(static_cast<Stream>(s)));
      }
      writer->NameThread(r32, trace::kSpanStream, "phases");
    }
    for (const RankEvents& ev : ranks) {
      for (const auto& op : ev.ops) writer->AddOp(op);
      for (const auto& s : ev.spans) writer->AddSpan(s);
    }
    RETURN_IF_ERROR(writer->Close());
  }
  if (!o.result_file.empty()) {
    std::ofstream out(o.result_file, std::ios::trunc);
    out << CpuRunResultToJson(result).dump(2) << "\n";
    if (!out) return IoError("cannot write the run result to {}", o.result_file);
  }
  return result;
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "shardscope";
}

}  // namespace

json CpuRunResultToJson(const CpuRunResult& r) {
  return {{"ranks", r.ranks},
          {"trace_path", r.trace_path},
          {"metadata_path", r.metadata_path},
          {"generation_seconds", r.generation_seconds},
          {"ttft_seconds", r.ttft_seconds},
          {"tpot_seconds", r.tpot_seconds},
          {"tokens", r.tokens}};
}

StatusOr<CpuRunResult> CpuRunResultFromJson(const json& j) {
  CpuRunResult r;
  try {
    r.ranks = j.at("ranks");
    r.trace_path = j.at("trace_path");
    r.metadata_path = j.at("metadata_path");
    r.generation_seconds = j.at("generation_seconds").get<std::vector<double>>();
    r.ttft_seconds = j.at("ttft_seconds");
    r.tpot_seconds = j.at("tpot_seconds");
    r.tokens = j.at("tokens").get<std::vector<std::vector<int32_t>>>();
  } catch (const std::exception& e) {
    return DataLoss("cpu run result: {}", e.what());
  }
  return r;
}

StatusOr<CpuRunResult> RunCpuWorker(const Experiment& experiment, const CpuRunOptions& options) {
  ASSIGN_OR_RETURN(auto session, MpiSession::Init(nullptr, nullptr));
  ASSIGN_OR_RETURN(auto comm, MpiCommunicator::Create());
  // Ranks share the cores: one OpenBLAS thread each.
  if (comm->world_size() > 1) openblas_set_num_threads(1);
  StatusOr<CpuRunResult> r = WorkerBody(experiment, options, *comm);
  if (!r.ok() && comm->world_size() > 1) {
    comm->Abort(
        fmt::format("experiment '{}' (backend cpu): {}", experiment.name, r.status().message()));
  }
  return r;
}

StatusOr<CpuRunResult> RunCpuExperiment(const Experiment& experiment,
                                        const CpuRunOptions& options) {
  if (UnderMpirun()) return RunCpuWorker(experiment, options);
  const std::string config =
      options.config_path.empty() ? experiment.source_file : options.config_path;
  if (config.empty()) {
    return Unimplemented(
        "not implemented: backend cpu for an experiment without a config file (the worker "
        "ranks reload experiment '{}' from its YAML)",
        experiment.name);
  }
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(experiment));
  const std::string expect = TempPath("expect");
  const std::string result_file = TempPath("result");
  {
    Experiment e = experiment;
    e.backend = Backend::kCpu;
    std::ofstream out(expect, std::ios::trunc);
    out << ExperimentToJson(e).dump();
  }
  std::vector<std::string> args = {options.mpirun, "--oversubscribe", "-np",
                                   std::to_string(placement.world_size())};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (!options.hostfile.empty()) args.insert(args.end(), {"--hostfile", options.hostfile});
  args.insert(args.end(), options.mpirun_args.begin(), options.mpirun_args.end());
  args.insert(args.end(),
              {options.shardscope_binary.empty() ? SelfExe() : options.shardscope_binary, "worker",
               "--config", config, "--experiment", experiment.name, "--expect", expect, "--result",
               result_file});
  if (!options.write_trace) args.push_back("--no-trace");
  if (!options.trace_file.empty()) args.insert(args.end(), {"--trace-file", options.trace_file});
  args.insert(args.end(), {"--trace-root", options.trace_root});
  if (options.warmup_iterations) {
    args.insert(args.end(), {"--warmup", std::to_string(*options.warmup_iterations)});
  }
  if (options.fail_rank >= 0) {
    args.insert(args.end(),
                {"--fail-rank", std::to_string(options.fail_rank), "--fail-op", options.fail_op});
  }
  if (options.measured_iterations) {
    args.insert(args.end(), {"--iterations", std::to_string(*options.measured_iterations)});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::remove(expect.c_str());
    std::remove(result_file.c_str());
    return InternalError("cannot start {} for backend cpu (is OpenMPI installed?)", options.mpirun);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::remove(expect.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(result_file.c_str());
    return InternalError(
        "experiment '{}' (backend cpu) failed: mpirun {} (the failing rank's message is above)",
        experiment.name,
        WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                          : "was killed by a signal");
  }
  std::ifstream in(result_file);
  json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    std::remove(result_file.c_str());
    return DataLoss("experiment '{}' (backend cpu): unreadable run result: {}", experiment.name,
                    e.what());
  }
  std::remove(result_file.c_str());
  return CpuRunResultFromJson(j);
}

}  // namespace shardscope::runtime
