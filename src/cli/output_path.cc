#include "cli/output_path.h"

#include <filesystem>
#include <system_error>

namespace shardscope::cli {

Status CheckOutputPath(std::string_view flag, const std::string& output,
                       const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  if (output.empty()) return InvalidArgument("{}: an empty path", flag);
  std::error_code ec;
  if (!fs::exists(output, ec)) return Status::Ok();  // a new file is no one's input
  for (const std::string& input : inputs) {
    std::error_code ec_eq;
    if (fs::equivalent(output, input, ec_eq) && !ec_eq) {
      return InvalidArgument("{} {}: is also an input; writing it would destroy that input", flag,
                             output);
    }
  }
  return Status::Ok();
}

}  // namespace shardscope::cli
