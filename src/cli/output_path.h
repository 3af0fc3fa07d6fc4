// Checks of a command's output path, made before any work so that a bad one
// costs nothing and destroys nothing: an empty path, or an output that is one of
// the command's own inputs (`report in.trace -o in.trace` replaced its input).
#ifndef SHARDSCOPE_CLI_OUTPUT_PATH_H_
#define SHARDSCOPE_CLI_OUTPUT_PATH_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shardscope::cli {

// InvalidArgument naming `flag` when `output` is empty or is the same file as
// one of `inputs` (compared after resolving links, `.` and `..`).
Status CheckOutputPath(std::string_view flag, const std::string& output,
                       const std::vector<std::string>& inputs);

}  // namespace shardscope::cli

#endif  // SHARDSCOPE_CLI_OUTPUT_PATH_H_
