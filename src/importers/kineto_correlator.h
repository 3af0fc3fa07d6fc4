// The Kineto correlator: gives a communication kernel its collective, bytes,
// group and peer. They come from the kernel's own args, or from the host call
// that launched it: the kernel's correlation id finds its runtime launch, whose
// External id (or, failing that, the innermost enclosing collective call on the
// launching thread) finds the record_param_comms / nccl:… / c10d::… call.
// Groups come from "Process Group Ranks", the file's pg_config, the global
// rank start/stride, or the whole world. What stays unknown is counted in
// ReadStats.notes. Not thread-safe.
#ifndef SHARDSCOPE_IMPORTERS_KINETO_CORRELATOR_H_
#define SHARDSCOPE_IMPORTERS_KINETO_CORRELATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "importers/kineto_events.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers::kineto {

// What the file's distributedInfo says about the process groups.
struct GroupConfig {
  std::optional<int32_t> world_size;                     // distributedInfo.world_size
  std::map<std::string, std::vector<int32_t>> pg_ranks;  // pg_config: name → complete rank list
};

class KinetoCorrelator {
 public:
  // `events` (whose runtime calls and host calls it sorts on first use) and
  // `stats` must outlive it.
  KinetoCorrelator(KinetoEvents* events, GroupConfig groups, trace::ReadStats* stats)
      : events_(events), groups_(std::move(groups)), stats_(stats) {}
  KinetoCorrelator(const KinetoCorrelator&) = delete;
  KinetoCorrelator& operator=(const KinetoCorrelator&) = delete;

  // Fills ev's collective, kind, bytes, bytes_per_peer, group, dim and peer
  // for the communication kernel `op`, as far as the trace says.
  void ResolveComm(const GpuOp& op, trace::OpEvent* ev);
  // Gives the compute kernel `op` the kind "gemm", FLOPs, bytes and dtype of the
  // host matrix product that launched it (the launch's External id, else the
  // innermost one enclosing the launch on its thread); nothing when none did.
  void ResolveCompute(const GpuOp& op, trace::OpEvent* ev);

 private:
  // The args of the host collective call that launched `op`, or null;
  // *name_collective: the collective that call's name says.
  const CommArgs* FindHostArgs(const GpuOp& op, std::optional<trace::Collective>* name_collective);
  // Sorts the launches by correlation id and the host calls by (thread, start).
  void BuildIndex();
  // The launch of `op` (by correlation id), or null.
  const RuntimeCall* LaunchOf(const GpuOp& op);
  void FillFromArgs(const CommArgs& a, trace::Collective c, trace::OpEvent* ev);
  std::vector<int32_t> GroupOf(const CommArgs& a, trace::Stat* why_unknown);
  template <typename... Detail>
  void Note(trace::Stat stat, const Detail&... detail) {
    stats_->Count(stat, detail...);
  }

  KinetoEvents* const events_;
  const GroupConfig groups_;
  trace::ReadStats* const stats_;
  bool indexed_ = false;
  std::unordered_map<int64_t, int32_t> host_by_external_id_;  // record_param_comms with args
  std::unordered_map<int64_t, int32_t> gemm_by_external_id_;  // host_gemms
};

}  // namespace shardscope::importers::kineto

#endif  // SHARDSCOPE_IMPORTERS_KINETO_CORRELATOR_H_
