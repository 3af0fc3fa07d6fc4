#include "runtime/rank_status.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/enum_names.h"

namespace shardscope::runtime {
namespace {

constexpr uint32_t kMagic = 0x53535253;  // "SSRS"
constexpr int kMaxCleanupFiles = 4;
constexpr size_t kMaxPath = 1024;
constexpr int kTerminationSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// In enum order from kRunning (1): every state named once.
constexpr auto kRankStateNames = MakeEnumNames<RankState>({
    {RankState::kRunning, "running"},
    {RankState::kDone, "done"},
    {RankState::kFailed, "failed"},
    {RankState::kCrashed, "crashed"},
    {RankState::kStopped, "stopped"},
    {RankState::kExited, "exited"},
});
static_assert([] {
  const auto& entries = kRankStateNames.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (static_cast<size_t>(entries[i].value) != i + 1) return false;
  }
  return entries.back().value == RankState::kExited;
}());

static_assert(std::atomic<int32_t>::is_always_lock_free);
static_assert(std::atomic<const RankProgram*>::is_always_lock_free);

// Text built without allocating, for signal handlers.
class SafeText {
 public:
  void Add(std::string_view s) {
    const size_t n = std::min(s.size(), sizeof(buf_) - len_);
    std::memcpy(buf_ + len_, s.data(), n);
    len_ += n;
  }
  void AddInt(int64_t v) {
    char digits[24];
    int n = 0;
    const bool negative = v < 0;
    uint64_t u = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (negative) Add("-");
    while (n > 0) Add(std::string_view(&digits[--n], 1));
  }
  std::string_view view() const { return std::string_view(buf_, len_); }

 private:
  char buf_[2048];
  size_t len_ = 0;
};

// OpName's pieces and the context in parentheses; allocation-free.
void AppendOpContext(const Op& op, int32_t phase_index, SafeText* t) {
  t->Add("op ");
  t->AddInt(op.id);
  t->Add(" '");
  if (op.is_comm()) {
    t->Add(CollectiveShortName(op.collective));
    t->Add(".");
    t->Add(DimName(op.dim));
    if (!op.label().empty()) t->Add("."), t->Add(op.label());
    if (op.layer >= 0) t->Add(".L"), t->AddInt(op.layer);
  } else {
    if (op.layer >= 0) t->Add("L"), t->AddInt(op.layer), t->Add(".");
    t->Add(OpKindName(op.kind));
    if (!op.label().empty()) t->Add("."), t->Add(op.label());
  }
  if (op.sp_step >= 0) t->Add(".s"), t->AddInt(op.sp_step);
  t->Add("' (");
  t->Add(op.is_comm() ? CollectiveShortName(op.collective) : OpKindName(op.kind));
  if (op.layer >= 0) t->Add(", layer "), t->AddInt(op.layer);
  if (phase_index == 0) {
    t->Add(", prefill)");
  } else {
    t->Add(", decode step "), t->AddInt(phase_index - 1), t->Add(")");
  }
}

// Process state the handlers read.
RankStatusRecord* g_record = nullptr;
char g_cleanup[kMaxCleanupFiles][kMaxPath];
std::atomic<int> g_cleanup_count{0};
struct sigaction g_previous[NSIG];
bool g_exit_hook_installed = false;

void WriteAll(std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = write(STDERR_FILENO, s.data(), s.size());
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

// "shardscope: error: rank R <what> in op … (…)\n" from the record.
void PrintWhere(std::string_view what, int64_t number) {
  SafeText t;
  t.Add("shardscope: error: rank ");
  t.AddInt(g_record->rank);
  t.Add(" ");
  t.Add(what);
  t.AddInt(number);
  const RankProgram* program = g_record->position.program.load(std::memory_order_relaxed);
  const int32_t op = g_record->position.op.load(std::memory_order_relaxed);
  if (what.ends_with("signal ")) {
    t.Add(" (");
    t.Add(SignalName(static_cast<int>(number)));
    t.Add(")");
  }
  if (program != nullptr && op >= 0 && op < static_cast<int32_t>(program->ops.size())) {
    t.Add(" in ");
    AppendOpContext(program->ops[static_cast<size_t>(op)],
                    g_record->position.phase_index.load(std::memory_order_relaxed), &t);
  } else {
    t.Add(" outside the Program's ops");
  }
  t.Add("\n");
  WriteAll(t.view());
}

void RemoveCleanupFiles() {
  const int n = g_cleanup_count.load();
  for (int i = 0; i < n && i < kMaxCleanupFiles; ++i) unlink(g_cleanup[i]);
}

// Hands the signal to the handler that was there before (default: terminate / core).
void Chain(int sig) {
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);  // blocked until this handler returns, then delivered to the previous action
}

void OnTermination(int sig) {
  if (g_record != nullptr) {
    int32_t running = static_cast<int32_t>(RankState::kRunning);
    if (g_record->state.compare_exchange_strong(running,
                                                static_cast<int32_t>(RankState::kStopped))) {
      g_record->detail.store(sig);
    }
  }
  RemoveCleanupFiles();
  Chain(sig);
}

void OnCrash(int sig) {
  if (g_record != nullptr) {
    int32_t running = static_cast<int32_t>(RankState::kRunning);
    if (g_record->state.compare_exchange_strong(running,
                                                static_cast<int32_t>(RankState::kCrashed))) {
      g_record->detail.store(sig);
      PrintWhere("crashed with signal ", sig);
    }
  }
  RemoveCleanupFiles();
  Chain(sig);
}

// exit() in the middle of a run (a library giving up): say where.
void OnExit(int status, void*) {
  if (g_record == nullptr) return;
  int32_t running = static_cast<int32_t>(RankState::kRunning);
  if (g_record->state.compare_exchange_strong(running, static_cast<int32_t>(RankState::kExited))) {
    g_record->detail.store(status);
    PrintWhere("exited with status ", status);
    RemoveCleanupFiles();
  }
}

void Install(int sig, void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace

std::string_view RankStateName(RankState state) { return kRankStateNames.Name(state, "unknown"); }

std::string_view SignalName(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "another signal";
  }
}

std::string OpContext(const Op& op, int32_t phase_index) {
  SafeText t;
  AppendOpContext(op, phase_index, &t);
  return std::string(t.view());
}

std::unique_ptr<RankStatus> RankStatus::Start(const std::string& dir, int64_t rank) {
  RankStatusRecord* record = nullptr;
  bool mapped = false;
  if (!dir.empty()) {
    mkdir(dir.c_str(), 0700);  // exists already on the launcher's node
    const std::string path = fmt::format("{}/rank-{}", dir, rank);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, sizeof(RankStatusRecord)) == 0) {
        void* p =
            mmap(nullptr, sizeof(RankStatusRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) record = new (p) RankStatusRecord(), mapped = true;
      }
      close(fd);
    }
  }
  if (record == nullptr) record = new RankStatusRecord();
  record->rank = static_cast<int32_t>(rank);
  record->pid = getpid();
  record->state.store(static_cast<int32_t>(RankState::kRunning));
  record->magic = kMagic;
  g_record = record;
  g_cleanup_count.store(0);
  for (int sig : kTerminationSignals) Install(sig, OnTermination);
  for (int sig : kCrashSignals) Install(sig, OnCrash);
  if (!g_exit_hook_installed) g_exit_hook_installed = on_exit(OnExit, nullptr) == 0;
  return std::unique_ptr<RankStatus>(new RankStatus(record, mapped));
}

RankStatus::~RankStatus() {
  for (int sig : kTerminationSignals) sigaction(sig, &g_previous[sig], nullptr);
  for (int sig : kCrashSignals) sigaction(sig, &g_previous[sig], nullptr);
  g_record = nullptr;
  if (mapped_) {
    munmap(record_, sizeof(RankStatusRecord));
  } else {
    delete record_;
  }
}

void RankStatus::Set(RankState state, int32_t detail, std::string_view message) {
  const size_t n = std::min(message.size(), sizeof(record_->message) - 1);
  std::memcpy(record_->message, message.data(), n);
  record_->message[n] = '\0';
  record_->detail.store(detail);
  record_->state.store(static_cast<int32_t>(state));
}

void RankStatus::AddCleanupFile(const std::string& path) {
  const int n = g_cleanup_count.load();
  if (n >= kMaxCleanupFiles || path.size() >= kMaxPath) return;
  std::memcpy(g_cleanup[n], path.c_str(), path.size() + 1);
  g_cleanup_count.store(n + 1);
}

void RankStatus::ClearCleanupFiles() { g_cleanup_count.store(0); }

std::vector<RankReport> ReadRankStatuses(const std::string& dir) {
  std::vector<RankReport> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.path().filename().string().starts_with("rank-")) continue;
    const int fd = open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    RankStatusRecord r;
    const ssize_t n = read(fd, static_cast<void*>(&r), sizeof(r));
    close(fd);
    if (n != static_cast<ssize_t>(sizeof(r)) || r.magic != kMagic) continue;
    RankReport rep;
    rep.rank = r.rank;
    rep.pid = r.pid;
    rep.state = static_cast<RankState>(r.state.load());
    rep.detail = r.detail.load();
    rep.phase_index = r.position.phase_index.load();
    rep.op = r.position.op.load();
    rep.entered = r.position.entered.load();
    rep.waiting_on = r.position.waiting_on.load();
    r.message[sizeof(r.message) - 1] = '\0';
    rep.message = r.message;
    out.push_back(rep);
  }
  std::sort(out.begin(), out.end(),
            [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
  return out;
}

std::string DescribeNoFailure(const std::vector<RankReport>& reports) {
  std::string stopped;
  for (const RankReport& r : reports) {
    if (r.state != RankState::kStopped) continue;
    stopped +=
        fmt::format("{}rank {} by {}", stopped.empty() ? "" : "; ", r.rank, SignalName(r.detail));
  }
  if (!stopped.empty()) {
    return "no rank failed; the ranks were stopped by a signal from outside the job (" + stopped +
           ")";
  }
  if (reports.empty()) return "no rank started running (mpirun's own message, if any, is above)";
  return "no rank recorded a failure (mpirun's own message, if any, is above)";
}

}  // namespace shardscope::runtime
