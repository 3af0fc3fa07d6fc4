#include "runners/cpu_run_diagnostics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>

#include <algorithm>

#include "program/program_builder.h"

namespace shardscope::runtime {
namespace {

// Where a rank stopped: "in op 17 '…' (…)" from its phase and op index.
std::string Where(const RankReport& r, const ProgramBuilder* builder) {
  if (r.phase_index < 0) return "outside the Program's ops (setup, clock sync or trace writing)";
  const std::string phase =
      r.phase_index == 0 ? "prefill" : fmt::format("decode step {}", r.phase_index - 1);
  if (r.op < 0) return fmt::format("between ops of {}", phase);
  if (builder != nullptr) {
    auto program = builder->Build(r.phase_index == 0 ? Phase::kPrefill : Phase::kDecode,
                                  r.phase_index == 0 ? 0 : r.phase_index - 1);
    if (program.ok() && r.rank < static_cast<int64_t>(program->ranks.size())) {
      const auto& ops = program->ranks[static_cast<size_t>(r.rank)].ops;
      if (r.op < static_cast<int32_t>(ops.size())) {
        return "in " + OpContext(ops[static_cast<size_t>(r.op)], r.phase_index);
      }
    }
  }
  return fmt::format("in op {} of {}", r.op, phase);
}

}  // namespace

std::string DescribeFailure(const Experiment& e, const Placement& placement,
                            const std::vector<RankReport>& reports) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder* b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> parts;
  for (const RankReport& r : reports) {
    switch (r.state) {
      case RankState::kFailed:
        parts.push_back(r.message.starts_with("rank ")
                            ? r.message
                            : fmt::format("rank {} failed {}: {}", r.rank, Where(r, b), r.message));
        break;
      case RankState::kCrashed:
        parts.push_back(fmt::format("rank {} crashed with signal {} ({}) {}", r.rank, r.detail,
                                    SignalName(r.detail), Where(r, b)));
        break;
      case RankState::kExited:
        parts.push_back(
            fmt::format("rank {} exited with status {} {}", r.rank, r.detail, Where(r, b)));
        break;
      case RankState::kRunning:
        parts.push_back(fmt::format(
            "rank {} died without an error message (killed, e.g. SIGKILL or the OOM killer) {}",
            r.rank, Where(r, b)));
        break;
      default:
        break;
    }
  }
  if (parts.empty()) return DescribeNoFailure(reports);
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

std::string DescribeHang(const Experiment& e, const Placement& placement,
                         const std::vector<RankReport>& reports, double timeout_seconds) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder* b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> stuck, waiting;
  for (const RankReport& r : reports) {
    if (r.state != RankState::kRunning) continue;
    if (r.waiting_on >= 0) {
      RankReport on = r;
      on.op = r.waiting_on;
      waiting.push_back(fmt::format("rank {} waits on its peers {}", r.rank, Where(on, b)));
    } else {
      stuck.push_back(
          fmt::format("rank {} stopped {} (not waiting on a peer)", r.rank, Where(r, b)));
    }
  }
  stuck.insert(stuck.end(), waiting.begin(), waiting.end());
  return fmt::format("the job hung: no rank started an op for {} s (--hang-timeout): {}",
                     timeout_seconds, fmt::join(stuck, "; "));
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       SignalName(WTERMSIG(status)));
  }
  return "ended abnormally";
}

bool AnyRankEnded(const std::vector<RankReport>& reports) {
  return std::any_of(reports.begin(), reports.end(), [](const RankReport& r) {
    return r.state == RankState::kFailed || r.state == RankState::kCrashed ||
           r.state == RankState::kExited;
  });
}

std::string DescribeMpirunDeath(const Experiment& e, const Placement& placement,
                                const std::vector<RankReport>& reports, int status) {
  auto builder = ProgramBuilder::Create(e, placement);
  const ProgramBuilder* b = builder.ok() ? &*builder : nullptr;
  std::vector<std::string> where;
  for (const RankReport& r : reports) {
    if (r.state == RankState::kRunning)
      where.push_back(fmt::format("rank {} {}", r.rank, Where(r, b)));
  }
  return fmt::format("mpirun {}, which ended its ranks{}; no trace written", DescribeExit(status),
                     where.empty() ? "" : fmt::format(" ({})", fmt::join(where, "; ")));
}

}  // namespace shardscope::runtime
