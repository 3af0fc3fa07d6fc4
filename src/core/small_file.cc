#include "core/small_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shardscope {
namespace {

// "file" or the caller's role with its article ("the prompts file").
std::string Role(std::string_view what) { return what.empty() ? "file" : std::string(what); }

// "64 MiB", "1.5 KiB", "12 bytes".
std::string Mib(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{:.3g} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.3g} KiB", bytes / 1024.0);
  return fmt::format("{} bytes", bytes);
}

const char* Kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

StatusOr<int> OpenRegularFile(const std::string& path, std::string_view what) {
  if (path.empty()) return InvalidArgument("an empty path given for {}", Role(what));
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      return NotFound("{}: cannot read {} ({})", path, Role(what), std::strerror(err));
    return IoError("{}: cannot read {} ({})", path, Role(what), std::strerror(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return IoError("{}: cannot read {} ({})", path, Role(what), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument("{}: {} is {}, not a regular file", path, Role(what), Kind(st.st_mode));
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

StatusOr<std::string> ReadSmallFile(const std::string& path, std::string_view what,
                                    int64_t max_bytes) {
  ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, what));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return IoError("{}: cannot read {}", path, Role(what));
  if (st.st_size > max_bytes) {
    return InvalidArgument("{}: {} is {}, more than the {} it may be", path, Role(what),
                           Mib(static_cast<int64_t>(st.st_size)), Mib(max_bytes));
  }
  std::string data;
  data.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("{}: read failed: {}", path, std::strerror(errno));
    }
    if (n == 0) break;
    // A file that grows while read (e.g. /proc files report size 0) is still capped.
    if (static_cast<int64_t>(data.size()) + n > max_bytes) {
      return InvalidArgument("{}: {} is more than the {} it may be", path, Role(what),
                             Mib(max_bytes));
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  return data;
}

}  // namespace shardscope
