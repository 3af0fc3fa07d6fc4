// One rank of a CPU run (RunCpuWorker, runners/cpu_run.h): MPI up, the
// executor's warm-up and measured generations, then rank 0 gathers the last
// generation's events and tokens and writes the trace.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plan/placement.h"
#include "program/program_builder.h"
#include "run/latency.h"
#include "run/run_recorder.h"
#include "runners/cpu_run.h"
#include "runtime/cpu/small_gemm.h"
#include "runtime/cpu_trace.h"
#include "runtime/device/backend.h"
#include "runtime/executor.h"
#include "runtime/mpi/mpi_communicator.h"
#include "runtime/rank_status.h"
#include "trace/trace_writer.h"

namespace shardscope::runtime {
namespace {

using nlohmann::json;

// Rank 0: each request's generated tokens from the ranks' "phase request token"
// lines (-1 where no rank sampled one).
std::vector<std::vector<int32_t>> TokensByRequest(const std::vector<std::string>& all_tokens,
                                                  int64_t batch_size) {
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(batch_size));
  for (const std::string& text : all_tokens) {
    std::istringstream in(text);
    int64_t phase, request, token;
    while (in >> phase >> request >> token) {
      auto& seq = tokens[static_cast<size_t>(request)];
      if (seq.size() < static_cast<size_t>(phase + 1))
        seq.resize(static_cast<size_t>(phase + 1), -1);
      seq[static_cast<size_t>(phase)] = static_cast<int32_t>(token);
    }
  }
  return tokens;
}

// Rank 0: every rank's events, shifted so that the earliest op starts at 0.
StatusOr<std::vector<RankEvents>> EventsFromZero(const std::vector<std::string>& all_events) {
  std::vector<RankEvents> ranks;
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const std::string& text : all_events) {
    ASSIGN_OR_RETURN(RankEvents ev, ParseEvents(text));
    for (const auto& op : ev.ops) origin = std::min(origin, op.ts_ns);
    ranks.push_back(std::move(ev));
  }
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (RankEvents& ev : ranks) {
    for (auto& op : ev.ops) op.ts_ns -= origin;
    for (auto& s : ev.spans) s.ts_ns -= origin;
  }
  return ranks;
}

// TTFT and TPOT from the ranks' phase and step spans (run/latency.h).
run::Latency MeasureLatency(const std::vector<RankEvents>& ranks, int64_t tokens_to_generate) {
  run::LatencyWindows<int64_t> windows;
  for (const RankEvents& ev : ranks) {
    for (const auto& s : ev.spans) {
      if (s.kind == trace::SpanKind::kPhase && s.phase == trace::Phase::kPrefill) {
        windows.AddPrefill(s.ts_ns, s.end_ns());
      } else if (s.kind == trace::SpanKind::kPhase && s.phase == trace::Phase::kDecode) {
        windows.AddDecodeEnd(s.end_ns());
      } else if (s.kind == trace::SpanKind::kStep && s.phase == trace::Phase::kDecode) {
        windows.AddDecodeStep(s.step, s.end_ns());
      }
    }
  }
  return windows.Compute(tokens_to_generate - 1);
}

struct Iterations {
  int64_t warmup = 0, measured = 0;
};

// Rank 0: the trace of the last measured generation and its metadata, through
// the run recorder; `status` removes a half-written one if the rank is stopped.
Status WriteTrace(const Experiment& e, const Placement& placement, const CpuRunOptions& o,
                  Iterations iterations, const std::vector<std::string>& all_offsets,
                  const std::vector<RankEvents>& ranks, RankStatus& status, CpuRunResult* result) {
  json offsets = json::array(), round_trips = json::array();
  for (const std::string& s : all_offsets) {
    std::istringstream in(s);
    int64_t offset = 0, round_trip = 0;
    in >> offset >> round_trip;
    offsets.push_back(offset);
    round_trips.push_back(round_trip);
  }
  // Which GEMM runs at which row count: cpu::Gemm's dispatch.
  const std::string kernels = fmt::format(
      "cpu (fp32; GEMMs: OpenBLAS sgemv at 1 row, SmallGemm at 2-{} rows, OpenBLAS sgemm above)",
      kSmallGemmMaxRows);
  const json meta = run::RunMetadata(e, placement, "cpu",
                                     {{"kernels", kernels},
                                      {"communicator", "MPI"},
                                      {"warmup_iterations", iterations.warmup},
                                      {"measured_iterations", iterations.measured},
                                      {"traced_iteration", "the last measured generation"},
                                      {"generation_seconds", result->generation_seconds},
                                      {"clock_offsets_ns", offsets},
                                      {"clock_round_trips_ns", round_trips},
                                      {"generated_tokens", result->tokens},
                                      {"activation_dtype", "fp32"}});
  ASSIGN_OR_RETURN(std::unique_ptr<run::RunRecorder> recorder,
                   run::RunRecorder::Open(e, meta, o.trace_root, o.trace_file));
  result->trace_path = recorder->trace_path();
  result->metadata_path = recorder->metadata_path();
  trace::TraceWriter* const writer = recorder->writer();
  // Stopped or failing from here on: no half-written trace, no metadata without one.
  status.AddCleanupFile(writer->temp_path());
  if (!result->metadata_path.empty()) status.AddCleanupFile(result->metadata_path);
  for (int64_t r = 0; r < placement.world_size(); ++r) {
    const int32_t r32 = static_cast<int32_t>(r);
    writer->NameProcess(r32, fmt::format("rank {} · node {} · cpu {}", r,
                                         placement.Location(r).node, placement.Location(r).local));
    for (int s = 0; s < kNumStreams; ++s) {
      writer->NameThread(r32, s, StreamName(static_cast<Stream>(s)));
    }
    writer->NameThread(r32, trace::kSpanStream, "phases");
  }
  for (const RankEvents& ev : ranks) {
    for (const auto& op : ev.ops) writer->AddOp(op);
    for (const auto& s : ev.spans) writer->AddSpan(s);
  }
  RETURN_IF_ERROR(recorder->Close());
  status.ClearCleanupFiles();
  return Status::Ok();
}

// The body of one rank, after MPI is up; failures are returned (the caller aborts the job).
StatusOr<CpuRunResult> WorkerBody(const Experiment& e, const CpuRunOptions& o,
                                  MpiCommunicator& comm, RankStatus& status) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  RETURN_IF_ERROR(comm.AddGroups(placement));
  ASSIGN_OR_RETURN(ProgramBuilder builder, ProgramBuilder::Create(e, placement));
  auto backend = NewCpuBackend();
  ExecutorOptions xo;
  xo.fault = o.fault;
  xo.position = status.position();
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                   Executor::Create(e, placement, backend.get(), &comm, xo));
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
  ASSIGN_OR_RETURN(ClockOffset clock, EstimateClockOffset(comm));
  const RankEvents mine = ToTraceEvents(ex->records(), placement, comm.rank(), clock.offset_ns, 0);
  std::string tokens;
  for (const SampleRecord& s : ex->samples()) {
    tokens += fmt::format("{} {} {}\n", s.phase_index, s.request, s.token);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> all_events, comm.GatherToRoot(SerializeEvents(mine)));
  ASSIGN_OR_RETURN(std::vector<std::string> all_tokens, comm.GatherToRoot(tokens));
  ASSIGN_OR_RETURN(std::vector<std::string> all_offsets,
                   comm.GatherToRoot(fmt::format("{} {}", clock.offset_ns, clock.round_trip_ns)));
  if (comm.rank() != 0) {
    result.root = false;
    return result;
  }

  // Rank 0: tokens, phase timings and the trace.
  result.tokens = TokensByRequest(all_tokens, e.workload.batch_size);
  ASSIGN_OR_RETURN(std::vector<RankEvents> ranks, EventsFromZero(all_events));
  const run::Latency latency = MeasureLatency(ranks, e.workload.tokens_to_generate);
  result.ttft_seconds = latency.ttft;
  result.tpot_seconds = latency.tpot;
  if (o.write_trace) {
    RETURN_IF_ERROR(
        WriteTrace(e, placement, o, {warmup, measured}, all_offsets, ranks, status, &result));
  }
  if (!o.result_file.empty()) {
    std::ofstream out(o.result_file, std::ios::trunc);
    out << CpuRunResultToJson(result).dump(2) << "\n";
    if (!out) return IoError("cannot write the run result to {}", o.result_file);
  }
  return result;
}

}  // namespace

Status CpuRunnerBuilt(const Experiment&) { return Status::Ok(); }

StatusOr<CpuRunResult> RunCpuWorker(const Experiment& experiment, const CpuRunOptions& options) {
  ASSIGN_OR_RETURN(auto session, MpiSession::Init(nullptr, nullptr));
  ASSIGN_OR_RETURN(auto comm, MpiCommunicator::Create());
  // One rank = one core (local-cpu.yaml): one OpenBLAS thread, unless the user set a number.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
  // After MPI_Init, so that the crash handlers chain to Open MPI's.
  std::unique_ptr<RankStatus> status = RankStatus::Start(options.status_dir, comm->rank());
  auto body = [&]() -> StatusOr<CpuRunResult> {
    try {
      return WorkerBody(experiment, options, *comm, *status);
    } catch (const std::exception& e) {  // outside the executor's ops (weights, trace)
      return InternalError("rank {} failed: exception: {}", comm->rank(), e.what());
    }
  };
  StatusOr<CpuRunResult> r = body();
  if (r.ok()) {
    status->Set(RankState::kDone);
    return r;
  }
  status->Set(RankState::kFailed, 0, r.status().message());
  if (comm->world_size() > 1) {
    comm->Abort(
        fmt::format("experiment '{}' (backend cpu): {}", experiment.name, r.status().message()));
  }
  return r;
}

}  // namespace shardscope::runtime
