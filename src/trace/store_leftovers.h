// Temporary files a killed run leaves in the trace store. A trace is written to a
// hidden `.trace_{ts}.trace.tmp-{pid}-{n}` beside its final name and renamed on
// Close; a writer killed with SIGKILL (or a crash, or the OOM killer) never
// renames or removes it, and `traces list` does not show it. These find such
// files whose writing process is gone, and remove them (`shardscope traces gc`).
// Thread-compatible.
#ifndef SHARDSCOPE_TRACE_STORE_LEFTOVERS_H_
#define SHARDSCOPE_TRACE_STORE_LEFTOVERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shardscope::trace {

struct Leftover {
  std::string path;
  int64_t bytes = 0;
  int64_t pid = 0;  // the process that was writing it (no longer running)
};

// The temporary files under the store `root` (its run directories, three levels
// down) whose writer process no longer runs on this machine. A missing root has
// none; a root that is not a directory is an error.
StatusOr<std::vector<Leftover>> FindLeftovers(const std::string& root);

// Removes each of `leftovers`; an error names the first file that could not be removed.
Status RemoveLeftovers(const std::vector<Leftover>& leftovers);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_STORE_LEFTOVERS_H_
