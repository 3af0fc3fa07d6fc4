#include "runners/cpu_run.h"

#include <cblas.h>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "config/experiment_loader.h"
#include "plan/placement.h"
#include "program/program_builder.h"
#include "run/latency.h"
#include "run/run_recorder.h"
#include "runtime/cpu/small_gemm.h"
#include "runtime/cpu_trace.h"
#include "runtime/device/backend.h"
#include "runtime/executor.h"
#include "runtime/mpi/mpi_communicator.h"
#include "runtime/rank_status.h"
#include "runtime/weights/weights.h"
#include "trace/trace_writer.h"

namespace shardscope::runtime {
namespace {

using nlohmann::json;

std::string TempDir() {
  const char *t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

std::string TempPath(const std::string &stem) {
  std::string path = TempDir() + "/shardscope-" + stem + "-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0)
    close(fd);
  return path;
}

// The body of one rank, after MPI is up; failures are returned (the caller
// aborts the job).
StatusOr<CpuRunResult> WorkerBody(const Experiment &e, const CpuRunOptions &o,
                                  MpiCommunicator &comm, RankStatus &status) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  RETURN_IF_ERROR(comm.AddGroups(placement));
  ASSIGN_OR_RETURN(ProgramBuilder builder,
                   ProgramBuilder::Create(e, placement));
  auto backend = NewCpuBackend();
  ExecutorOptions xo;
  xo.fault = o.fault;
  xo.position = status.position();
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex,
                   Executor::Create(e, placement, backend.get(), &comm, xo));
  const int64_t warmup =
      o.warmup_iterations.value_or(e.workload.warmup_iterations);
  const int64_t measured = std::max<int64_t>(
      1, o.measured_iterations.value_or(e.workload.measured_iterations));
  CpuRunResult result;
  result.ranks = comm.world_size();
  for (int64_t i = 0; i < warmup + measured; ++i) {
    RETURN_IF_ERROR(comm.Barrier());
    const int64_t t0 = NowNs();
    RETURN_IF_ERROR(RunGeneration(builder, *ex));
    RETURN_IF_ERROR(comm.Barrier());
    if (i >= warmup)
      result.generation_seconds.push_back(static_cast<double>(NowNs() - t0) *
                                          1e-9);
  }
  // The last generation's events, on rank 0's clock.
  ASSIGN_OR_RETURN(ClockOffset clock, EstimateClockOffset(comm));
  const RankEvents mine =
      ToTraceEvents(ex->records(), placement, comm.rank(), clock.offset_ns, 0);
  std::string tokens;
  for (const SampleRecord &s : ex->samples()) {
    tokens += fmt::format("{} {} {}\n", s.phase_index, s.request, s.token);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> all_events,
                   comm.GatherToRoot(SerializeEvents(mine)));
  ASSIGN_OR_RETURN(std::vector<std::string> all_tokens,
                   comm.GatherToRoot(tokens));
  ASSIGN_OR_RETURN(std::vector<std::string> all_offsets,
                   comm.GatherToRoot(fmt::format("{} {}", clock.offset_ns,
                                                 clock.round_trip_ns)));
  if (comm.rank() != 0) {
    result.root = false;
    return result;
  }

  // Rank 0: tokens, phase timings and the trace.
  result.tokens.assign(static_cast<size_t>(e.workload.batch_size), {});
  for (const std::string &text : all_tokens) {
    std::istringstream in(text);
    int64_t phase, request, token;
    while (in >> phase >> request >> token) {
      auto &seq = result.tokens[static_cast<size_t>(request)];
      if (seq.size() < static_cast<size_t>(phase + 1))
        seq.resize(static_cast<size_t>(phase + 1), -1);
      seq[static_cast<size_t>(phase)] = static_cast<int32_t>(token);
    }
  }
  std::vector<RankEvents> ranks;
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const std::string &text : all_events) {
    ASSIGN_OR_RETURN(RankEvents ev, ParseEvents(text));
    for (const auto &op : ev.ops)
      origin = std::min(origin, op.ts_ns);
    ranks.push_back(std::move(ev));
  }
  if (origin == std::numeric_limits<int64_t>::max())
    origin = 0;
  run::LatencyWindows<int64_t> windows;
  for (RankEvents &ev : ranks) {
    for (auto &op : ev.ops)
      op.ts_ns -= origin;
    for (auto &s : ev.spans) {
      s.ts_ns -= origin;
      if (s.kind == trace::SpanKind::kPhase &&
          s.phase == trace::Phase::kPrefill) {
        windows.AddPrefill(s.ts_ns, s.end_ns());
      } else if (s.kind == trace::SpanKind::kPhase &&
                 s.phase == trace::Phase::kDecode) {
        windows.AddDecodeEnd(s.end_ns());
      } else if (s.kind == trace::SpanKind::kStep &&
                 s.phase == trace::Phase::kDecode) {
        windows.AddDecodeStep(s.step, s.end_ns());
      }
    }
  }
  const run::Latency latency =
      windows.Compute(e.workload.tokens_to_generate - 1);
  result.ttft_seconds = latency.ttft;
  result.tpot_seconds = latency.tpot;
  if (o.write_trace) {
    json offsets = json::array(), round_trips = json::array();
    for (const std::string &s : all_offsets) {
      std::istringstream in(s);
      int64_t offset = 0, round_trip = 0;
      in >> offset >> round_trip;
      offsets.push_back(offset);
      round_trips.push_back(round_trip);
    }
    // Which GEMM runs at which row count: CpuKernels::Gemm's dispatch.
    const std::string kernels =
        fmt::format("cpu (fp32; GEMMs: OpenBLAS sgemv at 1 row, SmallGemm at "
                    "2-{} rows, OpenBLAS sgemm above)",
                    kSmallGemmMaxRows);
    const json meta =
        run::RunMetadata(e, placement, "cpu",
                         {{"kernels", kernels},
                          {"communicator", "MPI"},
                          {"warmup_iterations", warmup},
                          {"measured_iterations", measured},
                          {"traced_iteration", "the last measured generation"},
                          {"generation_seconds", result.generation_seconds},
                          {"clock_offsets_ns", offsets},
                          {"clock_round_trips_ns", round_trips},
                          {"generated_tokens", result.tokens},
                          {"activation_dtype", "fp32"}});
    ASSIGN_OR_RETURN(
        std::unique_ptr<run::RunRecorder> recorder,
        run::RunRecorder::Open(e, meta, o.trace_root, o.trace_file));
    result.trace_path = recorder->trace_path();
    result.metadata_path = recorder->metadata_path();
    trace::TraceWriter *const writer = recorder->writer();
    // Stopped or failing from here on: no half-written trace, no metadata
    // without one.
    status.AddCleanupFile(writer->temp_path());
    if (!result.metadata_path.empty())
      status.AddCleanupFile(result.metadata_path);
    for (int64_t r = 0; r < placement.world_size(); ++r) {
      const int32_t r32 = static_cast<int32_t>(r);
      writer->NameProcess(r32, fmt::format("rank {} · node {} · cpu {}", r,
                                           placement.Location(r).node,
                                           placement.Location(r).local));
      for (int s = 0; s < kNumStreams; ++s) {
        writer->NameThread(r32, s, StreamName(static_cast<Stream>(s)));
      }
      writer->NameThread(r32, trace::kSpanStream, "phases");
    }
    for (const RankEvents &ev : ranks) {
      for (const auto &op : ev.ops)
        writer->AddOp(op);
      for (const auto &s : ev.spans)
        writer->AddSpan(s);
    }
    RETURN_IF_ERROR(recorder->Close());
    status.ClearCleanupFiles();
  }
  if (!o.result_file.empty()) {
    std::ofstream out(o.result_file, std::ios::trunc);
    out << CpuRunResultToJson(result).dump(2) << "\n";
    if (!out)
      return IoError("cannot write the run result to {}", o.result_file);
  }
  return result;
}

// The executable `name` resolves to on $PATH (the child execs without
// searching).
std::string FindInPath(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return name;
  const char *env = std::getenv("PATH");
  std::string_view rest = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view()
                                           : rest.substr(colon + 1);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return name;
}

// The executable the ranks run `worker` on: the option, else
// $SHARDSCOPE_BINARY, else this process when it is shardscope itself, else
// `shardscope` on $PATH. A host process (Python) is never started as a worker.
StatusOr<std::string> WorkerBinary(const CpuRunOptions &o) {
  if (!o.shardscope_binary.empty())
    return o.shardscope_binary;
  if (const char *env = std::getenv("SHARDSCOPE_BINARY");
      env != nullptr && *env != '\0') {
    return std::string(env);
  }
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  const std::string self =
      n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  if (std::filesystem::path(self).filename() == "shardscope")
    return self;
  const std::string found = FindInPath("shardscope");
  if (found.find('/') != std::string::npos)
    return found;
  return NotFound("backend cpu: no shardscope executable to start the ranks "
                  "with (this process is {}); set "
                  "SHARDSCOPE_BINARY or put shardscope on PATH",
                  self.empty() ? "unknown" : self);
}

// The launcher's signals: the first SIGINT, SIGTERM or SIGHUP is forwarded to
// mpirun once, as SIGINT (what Ctrl-C sends it); mpirun then ends every rank
// (SIGTERM, SIGKILL a second later). A second signal to mpirun would make it
// exit at once and leave the ranks running, so later ones are not forwarded.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_mpirun_pid = 0;

void OnLauncherSignal(int sig) {
  if (g_signal != 0)
    return;
  g_signal = sig;
  if (g_mpirun_pid > 0)
    kill(static_cast<pid_t>(g_mpirun_pid), SIGINT);
}

class LauncherSignals {
public:
  LauncherSignals() {
    g_signal = 0;
    g_mpirun_pid = 0;
    struct sigaction sa = {};
    sa.sa_handler = OnLauncherSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      sigaction(kForwardedSignals[i], &sa, &previous_[i]);
    }
  }
  ~LauncherSignals() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      sigaction(kForwardedSignals[i], &previous_[i], nullptr);
    }
    g_mpirun_pid = 0;
  }
  LauncherSignals(const LauncherSignals &) = delete;
  LauncherSignals &operator=(const LauncherSignals &) = delete;

  // Records mpirun's pid; forwards a signal that came before it existed.
  void Started(pid_t pid) {
    g_mpirun_pid = pid;
    if (g_signal != 0)
      kill(pid, SIGINT);
  }
  int received() const { return g_signal; }

private:
  struct sigaction previous_[std::size(kForwardedSignals)];
};

// Starts `args` (args[0] a path) in its own process group — Ctrl-C reaches only
// the launcher, which forwards it once — with stdin from /dev/null (no terminal
// reads from a background group); it gets SIGTERM when the launcher dies.
pid_t SpawnMpirun(std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0)
      setpgid(pid, pid); // also in the child: whichever runs first
    return pid;
  }
  // The child: async-signal-safe calls only until exec.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    _exit(127);
  const int null = open("/dev/null", O_RDONLY);
  if (null >= 0)
    dup2(null, STDIN_FILENO), close(null);
  execv(argv[0], argv.data());
  _exit(127);
}

// Where a rank stopped: "in op 17 '…' (…)" from its phase and op index.
std::string Where(const RankReport &r, const ProgramBuilder *builder) {
  if (r.phase_index < 0)
    return "outside the Program's ops (setup, clock sync or trace writing)";
  const std::string phase =
      r.phase_index == 0 ? "prefill"
                         : fmt::format("decode step {}", r.phase_index - 1);
  if (r.op < 0)
    return fmt::format("between ops of {}", phase);
  if (builder != nullptr) {
    auto program =
        builder->Build(r.phase_index == 0 ? Phase::kPrefill : Phase::kDecode,
                       r.phase_index == 0 ? 0 : r.phase_index - 1);
    if (program.ok() && r.rank < static_cast<int64_t>(program->ranks.size())) {
      const auto &ops = program->ranks[static_cast<size_t>(r.rank)].ops;
      if (r.op < static_cast<int32_t>(ops.size())) {
        return "in " + OpContext(ops[static_cast<size_t>(r.op)], r.phase_index);
      }
    }
  }
  return fmt::format("in op {} of {}", r.op, phase);
}

// One line for the ranks that ended the job, from their status records.
std::string DescribeFailure(const Experiment &e, const Placement &placement,
                            const std::vector<RankReport> &reports) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder *b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> parts;
  for (const RankReport &r : reports) {
    switch (r.state) {
    case RankState::kFailed:
      parts.push_back(r.message.starts_with("rank ")
                          ? r.message
                          : fmt::format("rank {} failed {}: {}", r.rank,
                                        Where(r, b), r.message));
      break;
    case RankState::kCrashed:
      parts.push_back(fmt::format("rank {} crashed with signal {} ({}) {}",
                                  r.rank, r.detail, SignalName(r.detail),
                                  Where(r, b)));
      break;
    case RankState::kExited:
      parts.push_back(fmt::format("rank {} exited with status {} {}", r.rank,
                                  r.detail, Where(r, b)));
      break;
    case RankState::kRunning:
      parts.push_back(fmt::format("rank {} died without an error message "
                                  "(killed, e.g. SIGKILL or the OOM killer) {}",
                                  r.rank, Where(r, b)));
      break;
    default:
      break;
    }
  }
  if (parts.empty())
    return DescribeNoFailure(reports);
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i)
    out += "; " + parts[i];
  return out;
}

// Watches the ranks' status records while the job runs: the job hung when some
// rank is blocked on a comm op and no rank has entered an op for the timeout.
class HangWatch {
public:
  HangWatch(std::string dir, double timeout_seconds)
      : dir_(std::move(dir)),
        timeout_ns_(static_cast<int64_t>(timeout_seconds * 1e9)) {}

  // Reads the records at time `now_ns` (every few hundred ms is enough).
  bool Hung(int64_t now_ns) {
    if (timeout_ns_ <= 0)
      return false;
    reports_ = ReadRankStatuses(dir_);
    uint64_t signature = reports_.size();
    bool blocked = false;
    for (const RankReport &r : reports_) {
      signature = signature * 1000003u + r.entered * 31u +
                  static_cast<uint32_t>(r.state);
      blocked |= r.state == RankState::kRunning && r.waiting_on >= 0;
    }
    if (signature != signature_ || since_ns_ < 0)
      signature_ = signature, since_ns_ = now_ns;
    return blocked && now_ns - since_ns_ >= timeout_ns_;
  }
  const std::vector<RankReport> &reports() const { return reports_; }

private:
  const std::string dir_;
  const int64_t timeout_ns_;
  std::vector<RankReport> reports_;
  uint64_t signature_ = 0;
  int64_t since_ns_ = -1;
};

// The hung job's ranks: who waits on its peers, and who stopped elsewhere.
std::string DescribeHang(const Experiment &e, const Placement &placement,
                         const std::vector<RankReport> &reports,
                         double timeout_seconds) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder *b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> stuck, waiting;
  for (const RankReport &r : reports) {
    if (r.state != RankState::kRunning)
      continue;
    if (r.waiting_on >= 0) {
      RankReport on = r;
      on.op = r.waiting_on;
      waiting.push_back(
          fmt::format("rank {} waits on its peers {}", r.rank, Where(on, b)));
    } else {
      stuck.push_back(fmt::format("rank {} stopped {} (not waiting on a peer)",
                                  r.rank, Where(r, b)));
    }
  }
  stuck.insert(stuck.end(), waiting.begin(), waiting.end());
  return fmt::format(
      "the job hung: no rank started an op for {} s (--hang-timeout): {}",
      timeout_seconds, fmt::join(stuck, "; "));
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status))
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       SignalName(WTERMSIG(status)));
  }
  return "ended abnormally";
}

// Whether some rank's record says it failed, crashed or exited on its own.
bool AnyRankEnded(const std::vector<RankReport> &reports) {
  return std::any_of(reports.begin(), reports.end(), [](const RankReport &r) {
    return r.state == RankState::kFailed || r.state == RankState::kCrashed ||
           r.state == RankState::kExited;
  });
}

// mpirun itself killed by a signal (SIGSEGV, SIGKILL, SIGBUS) while no rank had
// failed: mpirun's death ended the ranks, so they are not blamed for it.
std::string DescribeMpirunDeath(const Experiment &e, const Placement &placement,
                                const std::vector<RankReport> &reports,
                                int status) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder *b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> where;
  for (const RankReport &r : reports) {
    if (r.state == RankState::kRunning)
      where.push_back(fmt::format("rank {} {}", r.rank, Where(r, b)));
  }
  return fmt::format(
      "mpirun {}, which ended its ranks{}; no trace written",
      DescribeExit(status),
      where.empty() ? "" : fmt::format(" ({})", fmt::join(where, "; ")));
}

// After mpirun was killed by a signal: its ranks (each in a process group of
// its own) live on until they notice. Each still running gets SIGTERM — its
// handler removes a trace it was writing — and SIGKILL if it is not gone within
// 2 s. Returns the ranks' records as they were before (where each one was).
std::vector<RankReport> EndOrphanedRanks(const std::string &status_dir) {
  const std::vector<RankReport> before = ReadRankStatuses(status_dir);
  std::vector<pid_t> alive;
  for (const RankReport &r : before) {
    if (r.state != RankState::kRunning || r.pid <= 0)
      continue;
    // Only a process of this run: its command line names this run's status
    // folder.
    std::ifstream in(fmt::format("/proc/{}/cmdline", r.pid));
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    if (cmdline.find(status_dir) == std::string::npos)
      continue;
    kill(static_cast<pid_t>(r.pid), SIGTERM);
    alive.push_back(static_cast<pid_t>(r.pid));
  }
  auto gone = [](pid_t p) {
    // A rank re-parented to init is reaped there; a zombie has an empty command
    // line.
    std::ifstream in(fmt::format("/proc/{}/cmdline", p));
    return !in || in.peek() == std::ifstream::traits_type::eof();
  };
  for (int i = 0; i < 100; ++i) {
    std::erase_if(alive, gone);
    if (alive.empty())
      break;
    if (i == 99) {
      for (pid_t p : alive)
        kill(p, SIGKILL);
    } else {
      usleep(20'000);
    }
  }
  return before;
}

// The session folder Open MPI's mpirun `pid` keeps under the temp folder
// (<TMPDIR>/ompi.<host>.<uid>/pid.<pid>): mpirun removes it when it exits, not
// when a signal kills it, so the launcher removes it then. Only that mpirun's
// folder.
void RemoveMpirunSessionDir(pid_t pid) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0)
    return;
  std::string node(host);
  node = node.substr(0, node.find('.')); // Open MPI drops the domain
  std::string base = TempDir();
  for (const char *var : {"TMPDIR", "TEMP", "TMP"}) { // Open MPI's order
    const char *v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      base = v;
      break;
    }
  }
  const std::filesystem::path dir = std::filesystem::path(base) /
                                    fmt::format("ompi.{}.{}", node, geteuid()) /
                                    fmt::format("pid.{}", pid);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Removes the launcher's temporary files on every way out.
struct TempFiles {
  std::vector<std::string> files;
  std::string dir;
  ~TempFiles() {
    for (const std::string &f : files)
      std::remove(f.c_str());
    std::error_code ec;
    if (!dir.empty())
      std::filesystem::remove_all(dir, ec);
  }
};

} // namespace

Status CpuRunnerBuilt(const Experiment &) { return Status::Ok(); }

StatusOr<CpuRunResult> RunCpuWorker(const Experiment &experiment,
                                    const CpuRunOptions &options) {
  ASSIGN_OR_RETURN(auto session, MpiSession::Init(nullptr, nullptr));
  ASSIGN_OR_RETURN(auto comm, MpiCommunicator::Create());
  // One rank = one core (local-cpu.yaml): one OpenBLAS thread, unless the user
  // set a number.
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr)
    openblas_set_num_threads(1);
  // After MPI_Init, so that the crash handlers chain to Open MPI's.
  std::unique_ptr<RankStatus> status =
      RankStatus::Start(options.status_dir, comm->rank());
  auto body = [&]() -> StatusOr<CpuRunResult> {
    try {
      return WorkerBody(experiment, options, *comm, *status);
    } catch (const std::exception
                 &e) { // outside the executor's ops (weights, trace)
      return InternalError("rank {} failed: exception: {}", comm->rank(),
                           e.what());
    }
  };
  StatusOr<CpuRunResult> r = body();
  if (r.ok()) {
    status->Set(RankState::kDone);
    return r;
  }
  status->Set(RankState::kFailed, 0, r.status().message());
  if (comm->world_size() > 1) {
    comm->Abort(fmt::format("experiment '{}' (backend cpu): {}",
                            experiment.name, r.status().message()));
  }
  return r;
}

StatusOr<CpuRunResult> RunCpuExperiment(const Experiment &experiment,
                                        const CpuRunOptions &options) {
  if (UnderMpirun())
    return RunCpuWorker(experiment, options);
  const std::string config = options.config_path.empty()
                                 ? experiment.source_file
                                 : options.config_path;
  if (config.empty()) {
    return Unimplemented("not implemented: backend cpu for an experiment "
                         "without a config file (the worker "
                         "ranks reload experiment '{}' from its YAML)",
                         experiment.name);
  }
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(experiment));
  // A checkpoint that cannot serve the model is bad input: say so once, here,
  // rather than from every rank after mpirun has started.
  RETURN_IF_ERROR(Weights::CheckCheckpoint(experiment, placement));
  TempFiles temp;
  const std::string result_file = TempPath("result");
  temp.files.push_back(result_file);
  temp.dir = TempDir() + "/shardscope-ranks-XXXXXX";
  if (mkdtemp(temp.dir.data()) == nullptr) {
    const int err = errno;
    temp.dir.clear();
    return IoError("cannot create a temporary directory in {}: {}", TempDir(),
                   std::strerror(err));
  }
  ASSIGN_OR_RETURN(const std::string worker, WorkerBinary(options));
  Experiment expected = experiment;
  expected.backend = shardscope::Backend::kCpu;
  std::vector<std::string> args = {FindInPath(options.mpirun),
                                   "--oversubscribe", "-np",
                                   std::to_string(placement.world_size())};
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  if (!options.hostfile.empty())
    args.insert(args.end(), {"--hostfile", options.hostfile});
  args.insert(args.end(), options.mpirun_args.begin(),
              options.mpirun_args.end());
  args.insert(args.end(),
              {worker, "worker", "--config", config, "--experiment",
               experiment.name, "--expect-digest", ExperimentDigest(expected),
               "--result", result_file, "--status-dir", temp.dir});
  if (!options.write_trace)
    args.push_back("--no-trace");
  if (!options.trace_file.empty())
    args.insert(args.end(), {"--trace-file", options.trace_file});
  args.insert(args.end(), {"--trace-root", options.trace_root});
  // The ranks reload the experiment from its YAML: a --trace-compression given
  // to `run` goes with them.
  args.insert(args.end(),
              {"--trace-compression", std::string(TraceCompressionName(
                                          experiment.trace_compression))});
  if (options.warmup_iterations) {
    args.insert(args.end(),
                {"--warmup", std::to_string(*options.warmup_iterations)});
  }
  if (options.measured_iterations) {
    args.insert(args.end(),
                {"--iterations", std::to_string(*options.measured_iterations)});
  }
  if (options.fault.active())
    args.insert(args.end(), {"--fault", FaultSpecToString(options.fault)});

  int status = 0;
  int signal = 0;
  std::string hang; // set when the job was ended as hung
  pid_t pid = -1;
  {
    LauncherSignals signals;
    pid = SpawnMpirun(args);
    if (pid < 0) {
      return InternalError("cannot start {} for backend cpu: {}",
                           options.mpirun, std::strerror(errno));
    }
    signals.Started(pid);
    HangWatch watch(temp.dir, options.hang_timeout_seconds);
    int64_t kill_at_ns =
        -1; // a hung job: SIGKILL to mpirun's group if SIGTERM did not end it
    for (int64_t tick = 0;; ++tick) {
      const pid_t ended = waitpid(pid, &status, WNOHANG);
      if (ended == pid)
        break;
      if (ended < 0 && errno != EINTR) {
        return InternalError("waiting for mpirun: {}", std::strerror(errno));
      }
      const int64_t now = NowNs();
      if (hang.empty() && tick % 4 == 0 && watch.Hung(now)) {
        hang = DescribeHang(experiment, placement, watch.reports(),
                            options.hang_timeout_seconds);
        kill(pid, SIGTERM); // mpirun ends every rank
        kill_at_ns = now + 5'000'000'000;
      }
      if (kill_at_ns >= 0 && now >= kill_at_ns)
        kill(-pid, SIGKILL), kill_at_ns = -1;
      usleep(50'000);
    }
    signal = signals.received();
  }
  const bool succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // mpirun killed by a signal (SIGSEGV or SIGKILL to it) does not end its
  // ranks.
  const std::vector<RankReport> orphans = WIFSIGNALED(status)
                                              ? EndOrphanedRanks(temp.dir)
                                              : std::vector<RankReport>{};
  if (WIFSIGNALED(status))
    RemoveMpirunSessionDir(pid);
  if (signal != 0 && !succeeded) {
    return Cancelled("backend cpu: interrupted by {}; mpirun stopped every "
                     "rank, no trace written",
                     SignalName(signal));
  }
  if (!hang.empty())
    return InternalError("backend cpu: {}; mpirun was stopped", hang);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return InternalError("backend cpu: cannot run {} (is OpenMPI installed?)",
                         options.mpirun);
  }
  if (!succeeded) {
    const std::vector<RankReport> reports = ReadRankStatuses(temp.dir);
    if (WIFSIGNALED(status) && !AnyRankEnded(orphans)) {
      return InternalError(
          "backend cpu: {}",
          DescribeMpirunDeath(experiment, placement, orphans, status));
    }
    return InternalError("backend cpu: {}; mpirun {}",
                         DescribeFailure(experiment, placement, reports),
                         DescribeExit(status));
  }
  std::ifstream in(result_file);
  json j;
  try {
    in >> j;
  } catch (const std::exception &e) {
    return DataLoss("backend cpu: unreadable run result {}: {}", result_file,
                    e.what());
  }
  return CpuRunResultFromJson(j);
}

} // namespace shardscope::runtime
