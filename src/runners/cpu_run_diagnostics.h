// How the CPU run's launcher explains a job that failed, hung or lost mpirun,
// from the ranks' status records (runtime/rank_status.h): one line naming each
// rank and the op it was in. Used by RunCpuExperiment (cpu_run_launcher.cc).
#ifndef SHARDSCOPE_RUNNERS_CPU_RUN_DIAGNOSTICS_H_
#define SHARDSCOPE_RUNNERS_CPU_RUN_DIAGNOSTICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment.h"
#include "plan/placement.h"
#include "runtime/rank_status.h"

namespace shardscope::runtime {

// One line for the ranks that ended the job, from their status records.
std::string DescribeFailure(const Experiment& e, const Placement& placement,
                            const std::vector<RankReport>& reports);

// Watches the ranks' status records while the job runs: the job hung when some
// rank is blocked on a comm op and no rank has entered an op for the timeout.
class HangWatch {
 public:
  HangWatch(std::string dir, double timeout_seconds)
      : dir_(std::move(dir)), timeout_ns_(static_cast<int64_t>(timeout_seconds * 1e9)) {}

  // Reads the records at time `now_ns` (every few hundred ms is enough).
  bool Hung(int64_t now_ns) {
    if (timeout_ns_ <= 0) return false;
    reports_ = ReadRankStatuses(dir_);
    uint64_t signature = reports_.size();
    bool blocked = false;
    for (const RankReport& r : reports_) {
      signature = signature * 1000003u + r.entered * 31u + static_cast<uint32_t>(r.state);
      blocked |= r.state == RankState::kRunning && r.waiting_on >= 0;
    }
    if (signature != signature_ || since_ns_ < 0) signature_ = signature, since_ns_ = now_ns;
    return blocked && now_ns - since_ns_ >= timeout_ns_;
  }
  const std::vector<RankReport>& reports() const { return reports_; }

 private:
  const std::string dir_;
  const int64_t timeout_ns_;
  std::vector<RankReport> reports_;
  uint64_t signature_ = 0;
  int64_t since_ns_ = -1;
};

// The hung job's ranks: who waits on its peers, and who stopped elsewhere.
std::string DescribeHang(const Experiment& e, const Placement& placement,
                         const std::vector<RankReport>& reports, double timeout_seconds);

// How mpirun ended, from its wait status: "exited with status 1", "was killed by signal 9
// (SIGKILL)".
std::string DescribeExit(int status);

// Whether some rank's record says it failed, crashed or exited on its own.
bool AnyRankEnded(const std::vector<RankReport>& reports);

// mpirun itself killed by a signal (SIGSEGV, SIGKILL, SIGBUS) while no rank had
// failed: mpirun's death ended the ranks, so they are not blamed for it.
std::string DescribeMpirunDeath(const Experiment& e, const Placement& placement,
                                const std::vector<RankReport>& reports, int status);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNNERS_CPU_RUN_DIAGNOSTICS_H_
