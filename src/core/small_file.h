// Reading a user's small input file (a configuration, a prompts file, a request
// file, a calibration, a workload card) whole into memory, safely: only regular
// files are read (a FIFO, a device such as /dev/zero or a directory is refused
// before any read, so nothing blocks or grows without bound), and a file larger
// than a cap is refused with its size named. Thread-compatible (no state).
#ifndef SHARDSCOPE_CORE_SMALL_FILE_H_
#define SHARDSCOPE_CORE_SMALL_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope {

// The cap for configuration-sized files: far above any real configuration,
// far below what would exhaust memory.
inline constexpr int64_t kMaxConfigFileBytes = int64_t{64} << 20;  // 64 MiB

// Opens `path` read-only without blocking (a FIFO with no writer would block a
// plain open) and returns the descriptor, blocking mode restored, or an error
// naming the file when it is missing, unreadable or not a regular file. `what`
// names the file's role in messages, with its article ("the request file");
// empty: "file" ("x.yaml: cannot read file (No such file or directory)").
// The caller owns (closes) the descriptor.
StatusOr<int> OpenRegularFile(const std::string& path, std::string_view what = "");

// Reads the regular file at `path` whole; refuses non-regular files (as above)
// and files over `max_bytes` ("x.yaml: file is 100 MiB, more than the 64 MiB
// it may be").
StatusOr<std::string> ReadSmallFile(const std::string& path, std::string_view what = "",
                                    int64_t max_bytes = kMaxConfigFileBytes);

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_SMALL_FILE_H_
