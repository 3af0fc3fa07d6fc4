// Fault injection for the CPU executor's failure tests: one rank fails at one
// op, the way a real failure would (an error, an exception from a kernel, a
// library calling exit(), an abort, a kill). Set with the hidden environment
// variable SHARDSCOPE_FAULT, e.g. "rank=1,op=L1.attention,mode=kill" or
// "rank=1,op=17,phase=decode:2,mode=throw"; see docs/runtime.md, "Faults".
#ifndef SHARDSCOPE_RUNTIME_FAULT_INJECTION_H_
#define SHARDSCOPE_RUNTIME_FAULT_INJECTION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "program/op.h"

namespace shardscope::runtime {

inline constexpr char kFaultEnvVar[] = "SHARDSCOPE_FAULT";

enum class FaultMode {
  kError,  // the op returns an error (as a failed MPI call would)
  kThrow,  // the kernel throws std::runtime_error
  kExit,   // the process calls exit(3) (a library giving up)
  kAbort,  // the process calls abort() (SIGABRT, as a failed assertion)
  kKill,   // the process gets SIGKILL (the OOM killer; no handler runs)
  kHang,   // the rank stops and waits forever (a deadlocked kernel or library)
};

struct FaultSpec {
  int64_t rank = -1;         // -1: no fault
  std::string op;            // op name (OpName) …
  int32_t op_id = -1;        // … or op id within the rank's phase Program
  int32_t phase_index = -1;  // 0: prefill; k + 1: decode step k; -1: the first match
  FaultMode mode = FaultMode::kError;

  bool active() const { return rank >= 0; }
  // True when this fault is due at `op` of phase `phase_index` on rank `rank`.
  bool Matches(int64_t rank, int32_t phase_index, const Op& op) const;
};

// Parses "rank=R,op=NAME|ID[,phase=prefill|decode:K][,mode=error|throw|exit|abort|kill|hang]"
// (mode defaults to error). The empty string is no fault.
StatusOr<FaultSpec> ParseFaultSpec(std::string_view text);
// The spec in $SHARDSCOPE_FAULT (no fault when unset); errors name the variable.
StatusOr<FaultSpec> FaultSpecFromEnv();
// Back to the text ParseFaultSpec reads.
std::string FaultSpecToString(const FaultSpec& spec);

// Carries the fault out: returns the error (kError), throws (kThrow), or ends
// the process (kExit, kAbort, kKill).
Status InjectFault(const FaultSpec& spec);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_FAULT_INJECTION_H_
