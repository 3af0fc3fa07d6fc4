// The launcher of a CPU run (RunCpuExperiment, runners/cpu_run.h): starts
// mpirun on `shardscope worker` ranks, forwards signals to it, watches for a
// hung job, cleans up after mpirun's death, and reads rank 0's result.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "plan/placement.h"
#include "runners/cpu_run.h"
#include "runners/cpu_run_diagnostics.h"
#include "runtime/executor.h"
#include "runtime/mpi/mpi_communicator.h"
#include "runtime/rank_status.h"
#include "runtime/weights/weights.h"

namespace shardscope::runtime {
namespace {

using nlohmann::json;

std::string TempDir() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

std::string TempPath(const std::string& stem) {
  std::string path = TempDir() + "/shardscope-" + stem + "-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

// The executable `name` resolves to on $PATH (the child execs without searching).
std::string FindInPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  std::string_view rest = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// The executable the ranks run `worker` on: the option, else $SHARDSCOPE_BINARY,
// else this process when it is shardscope itself, else `shardscope` on $PATH. A
// host process (Python) is never started as a worker.
StatusOr<std::string> WorkerBinary(const CpuRunOptions& o) {
  if (!o.shardscope_binary.empty()) return o.shardscope_binary;
  if (const char* env = std::getenv("SHARDSCOPE_BINARY"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  const std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  if (std::filesystem::path(self).filename() == "shardscope") return self;
  const std::string found = FindInPath("shardscope");
  if (found.find('/') != std::string::npos) return found;
  return NotFound(
      "backend cpu: no shardscope executable to start the ranks with (this process is {}); set "
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
  if (g_signal != 0) return;
  g_signal = sig;
  if (g_mpirun_pid > 0) kill(static_cast<pid_t>(g_mpirun_pid), SIGINT);
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
  LauncherSignals(const LauncherSignals&) = delete;
  LauncherSignals& operator=(const LauncherSignals&) = delete;

  // Records mpirun's pid; forwards a signal that came before it existed.
  void Started(pid_t pid) {
    g_mpirun_pid = pid;
    if (g_signal != 0) kill(pid, SIGINT);
  }
  int received() const { return g_signal; }

 private:
  struct sigaction previous_[std::size(kForwardedSignals)];
};

// Starts `args` (args[0] a path) in its own process group — Ctrl-C reaches only
// the launcher, which forwards it once — with stdin from /dev/null (no terminal
// reads from a background group); it gets SIGTERM when the launcher dies.
pid_t SpawnMpirun(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) setpgid(pid, pid);  // also in the child: whichever runs first
    return pid;
  }
  // The child: async-signal-safe calls only until exec.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  const int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO), close(null);
  execv(argv[0], argv.data());
  _exit(127);
}

// After mpirun was killed by a signal: its ranks (each in a process group of its
// own) live on until they notice. Each still running gets SIGTERM — its handler
// removes a trace it was writing — and SIGKILL if it is not gone within 2 s.
// Returns the ranks' records as they were before (where each one was).
std::vector<RankReport> EndOrphanedRanks(const std::string& status_dir) {
  const std::vector<RankReport> before = ReadRankStatuses(status_dir);
  std::vector<pid_t> alive;
  for (const RankReport& r : before) {
    if (r.state != RankState::kRunning || r.pid <= 0) continue;
    // Only a process of this run: its command line names this run's status folder.
    std::ifstream in(fmt::format("/proc/{}/cmdline", r.pid));
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    if (cmdline.find(status_dir) == std::string::npos) continue;
    kill(static_cast<pid_t>(r.pid), SIGTERM);
    alive.push_back(static_cast<pid_t>(r.pid));
  }
  auto gone = [](pid_t p) {
    // A rank re-parented to init is reaped there; a zombie has an empty command line.
    std::ifstream in(fmt::format("/proc/{}/cmdline", p));
    return !in || in.peek() == std::ifstream::traits_type::eof();
  };
  for (int i = 0; i < 100; ++i) {
    std::erase_if(alive, gone);
    if (alive.empty()) break;
    if (i == 99) {
      for (pid_t p : alive) kill(p, SIGKILL);
    } else {
      usleep(20'000);
    }
  }
  return before;
}

// The session folder Open MPI's mpirun `pid` keeps under the temp folder
// (<TMPDIR>/ompi.<host>.<uid>/pid.<pid>): mpirun removes it when it exits, not when
// a signal kills it, so the launcher removes it then. Only that mpirun's folder.
void RemoveMpirunSessionDir(pid_t pid) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return;
  std::string node(host);
  node = node.substr(0, node.find('.'));  // Open MPI drops the domain
  std::string base = TempDir();
  for (const char* var : {"TMPDIR", "TEMP", "TMP"}) {  // Open MPI's order
    const char* v = std::getenv(var);
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
    for (const std::string& f : files) std::remove(f.c_str());
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

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
    return IoError("cannot create a temporary directory in {}: {}", TempDir(), std::strerror(err));
  }
  ASSIGN_OR_RETURN(const std::string worker, WorkerBinary(options));
  Experiment expected = experiment;
  expected.backend = shardscope::RunnerKind::kCpu;
  std::vector<std::string> args = {FindInPath(options.mpirun), "--oversubscribe", "-np",
                                   std::to_string(placement.world_size())};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (!options.hostfile.empty()) args.insert(args.end(), {"--hostfile", options.hostfile});
  args.insert(args.end(), options.mpirun_args.begin(), options.mpirun_args.end());
  args.insert(args.end(), {worker, "worker", "--config", config, "--experiment", experiment.name,
                           "--expect-digest", ExperimentDigest(expected), "--result", result_file,
                           "--status-dir", temp.dir});
  if (!options.write_trace) args.push_back("--no-trace");
  if (!options.trace_file.empty()) args.insert(args.end(), {"--trace-file", options.trace_file});
  args.insert(args.end(), {"--trace-root", options.trace_root});
  // The ranks reload the experiment from its YAML: a --trace-compression given
  // to `run` goes with them.
  args.insert(args.end(), {"--trace-compression",
                           std::string(TraceCompressionName(experiment.trace_compression))});
  if (options.warmup_iterations) {
    args.insert(args.end(), {"--warmup", std::to_string(*options.warmup_iterations)});
  }
  if (options.measured_iterations) {
    args.insert(args.end(), {"--iterations", std::to_string(*options.measured_iterations)});
  }
  if (options.fault.active())
    args.insert(args.end(), {"--fault", FaultSpecToString(options.fault)});

  int status = 0;
  int signal = 0;
  std::string hang;  // set when the job was ended as hung
  pid_t pid = -1;
  {
    LauncherSignals signals;
    pid = SpawnMpirun(args);
    if (pid < 0) {
      return InternalError("cannot start {} for backend cpu: {}", options.mpirun,
                           std::strerror(errno));
    }
    signals.Started(pid);
    HangWatch watch(temp.dir, options.hang_timeout_seconds);
    int64_t kill_at_ns = -1;  // a hung job: SIGKILL to mpirun's group if SIGTERM did not end it
    for (int64_t tick = 0;; ++tick) {
      const pid_t ended = waitpid(pid, &status, WNOHANG);
      if (ended == pid) break;
      if (ended < 0 && errno != EINTR) {
        return InternalError("waiting for mpirun: {}", std::strerror(errno));
      }
      const int64_t now = NowNs();
      if (hang.empty() && tick % 4 == 0 && watch.Hung(now)) {
        hang = DescribeHang(experiment, placement, watch.reports(), options.hang_timeout_seconds);
        kill(pid, SIGTERM);  // mpirun ends every rank
        kill_at_ns = now + 5'000'000'000;
      }
      if (kill_at_ns >= 0 && now >= kill_at_ns) kill(-pid, SIGKILL), kill_at_ns = -1;
      usleep(50'000);
    }
    signal = signals.received();
  }
  const bool succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // mpirun killed by a signal (SIGSEGV or SIGKILL to it) does not end its ranks.
  const std::vector<RankReport> orphans =
      WIFSIGNALED(status) ? EndOrphanedRanks(temp.dir) : std::vector<RankReport>{};
  if (WIFSIGNALED(status)) RemoveMpirunSessionDir(pid);
  if (signal != 0 && !succeeded) {
    return Cancelled("backend cpu: interrupted by {}; mpirun stopped every rank, no trace written",
                     SignalName(signal));
  }
  if (!hang.empty()) return InternalError("backend cpu: {}; mpirun was stopped", hang);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return InternalError("backend cpu: cannot run {} (is OpenMPI installed?)", options.mpirun);
  }
  if (!succeeded) {
    const std::vector<RankReport> reports = ReadRankStatuses(temp.dir);
    if (WIFSIGNALED(status) && !AnyRankEnded(orphans)) {
      return InternalError("backend cpu: {}",
                           DescribeMpirunDeath(experiment, placement, orphans, status));
    }
    return InternalError("backend cpu: {}; mpirun {}",
                         DescribeFailure(experiment, placement, reports), DescribeExit(status));
  }
  std::ifstream in(result_file);
  json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    return DataLoss("backend cpu: unreadable run result {}: {}", result_file, e.what());
  }
  return CpuRunResultFromJson(j);
}

}  // namespace shardscope::runtime
