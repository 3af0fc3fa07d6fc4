// RankStatus: what one rank of a backend-cpu run is doing — its state and the
// op it is in — kept in a small file mapping that the launcher reads after the
// job ended, so that even a rank that died without a word (SIGKILL, exit()) is
// named with its op. It also owns the rank's signal handlers: a crash (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT) or exit() during a run prints the rank and
// the op; termination (mpirun's SIGTERM after a failure or Ctrl-C, SIGINT,
// SIGHUP) removes the files registered for cleanup (a trace being written).
// Handlers chain to the previous ones (Open MPI's backtrace). One per process.
#ifndef SHARDSCOPE_RUNTIME_RANK_STATUS_H_
#define SHARDSCOPE_RUNTIME_RANK_STATUS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "program/program.h"
#include "runtime/executor.h"

namespace shardscope::runtime {

enum class RankState : int32_t {
  kRunning = 1,
  kDone,     // finished and reported success
  kFailed,   // returned an error (printed it, then aborted the job)
  kCrashed,  // a fatal signal; detail = the signal
  kStopped,  // terminated from outside (mpirun ending the job); detail = the signal
  kExited,   // called exit() in the middle of the run; detail = the exit status
};
std::string_view RankStateName(RankState state);

// The shared record: plain data and lock-free atomics, so it can live in a mapping.
struct RankStatusRecord {
  uint32_t magic = 0;
  int32_t rank = -1;
  int64_t pid = 0;
  std::atomic<int32_t> state{0};
  std::atomic<int32_t> detail{0};
  OpPosition position;
  char message[1024] = {};  // kFailed: the error, NUL-terminated (truncated)
};

class RankStatus {
 public:
  // Maps <dir>/rank-<rank> (creating dir and file), or process memory when dir
  // is empty or unusable (a remote node without it); sets kRunning and installs
  // the handlers. At most one at a time per process.
  static std::unique_ptr<RankStatus> Start(const std::string& dir, int64_t rank);
  ~RankStatus();  // restores the handlers and unmaps
  RankStatus(const RankStatus&) = delete;
  RankStatus& operator=(const RankStatus&) = delete;

  OpPosition* position() { return &record_->position; }
  void Set(RankState state, int32_t detail = 0, std::string_view message = {});

  // Files removed when this rank is terminated or crashes before
  // ClearCleanupFiles(): a trace and metadata being written. At most 4.
  void AddCleanupFile(const std::string& path);
  void ClearCleanupFiles();

 private:
  RankStatus(RankStatusRecord* record, bool mapped) : record_(record), mapped_(mapped) {}
  RankStatusRecord* record_;
  bool mapped_;
};

// What the launcher finds of one rank after the job.
struct RankReport {
  int64_t rank = -1;
  int64_t pid = 0;
  RankState state = RankState::kRunning;
  int32_t detail = 0;
  int32_t phase_index = -1;  // -1: outside a phase
  int32_t op = -1;           // -1: between ops
  uint32_t entered = 0;      // ops entered so far (progress)
  int32_t waiting_on = -1;   // the comm op it is blocked on; -1: none
  std::string message;       // kFailed: the rank's error
};
// The records in `dir`, by rank (ranks without a readable record are absent).
std::vector<RankReport> ReadRankStatuses(const std::string& dir);
// Why the job ended when no rank's record says it failed, crashed or exited: the
// ranks stopped by a signal from outside ("rank 1 by SIGTERM; rank 0 by SIGTERM"), or
// that no rank left a record. Never points at a message that is not there.
std::string DescribeNoFailure(const std::vector<RankReport>& reports);

// "op 17 'L1.attention' (attention, layer 1, prefill)": how failure messages
// name an op of phase `phase_index` (0: prefill; k + 1: decode step k).
std::string OpContext(const Op& op, int32_t phase_index);
// "SIGSEGV", "SIGKILL", … ("signal N" for others).
std::string_view SignalName(int signal);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_RANK_STATUS_H_
