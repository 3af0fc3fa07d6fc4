#include "trace/store_leftovers.h"

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <regex>
#include <system_error>

namespace shardscope::trace {
namespace {

namespace fs = std::filesystem;

// kill(pid, 0) succeeds, or fails for want of permission, while the process exists.
bool Running(int64_t pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

StatusOr<std::vector<Leftover>> FindLeftovers(const std::string& root) {
  std::vector<Leftover> out;
  std::error_code ec;
  if (!fs::exists(root, ec)) return out;
  if (!fs::is_directory(root, ec)) return InvalidArgument("{}: not a directory", root);
  // The trace writer's `.{name}.tmp-{pid}-{n}` and the store's `{name}.tmp-{pid}`.
  static const std::regex kTemp(R"(\.?(trace|metadata)_.+\.tmp-(\d{1,9})(-\d+)?)");
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it.depth() > 3) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec)) continue;
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kTemp)) continue;
    const int64_t pid = std::stoll(m[2].str());
    if (pid <= 0 || Running(pid)) continue;  // still being written
    Leftover l;
    l.path = it->path().string();
    l.bytes = static_cast<int64_t>(it->file_size(file_ec));
    l.pid = pid;
    out.push_back(std::move(l));
  }
  if (ec) return IoError("{}: cannot list the store: {}", root, ec.message());
  return out;
}

Status RemoveLeftovers(const std::vector<Leftover>& leftovers) {
  for (const Leftover& l : leftovers) {
    std::error_code ec;
    fs::remove(l.path, ec);
    if (ec) return IoError("{}: cannot remove: {}", l.path, ec.message());
  }
  return Status::Ok();
}

}  // namespace shardscope::trace
