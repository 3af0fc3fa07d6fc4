// Status and StatusOr<T>: the result of every call that a user's input or the
// environment can make fail. A Status is either OK or carries a code and a
// message that names the file, the experiment and the field at fault.
// Value types; not thread-safe to mutate concurrently.
#ifndef SHARDSCOPE_CORE_STATUS_H_
#define SHARDSCOPE_CORE_STATUS_H_

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace shardscope {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: config, plan, flags
  kNotFound,         // a named file, model or cluster that does not exist
  kFailedPrecondition,
  kOutOfRange,
  kDataLoss,       // truncated or corrupt data
  kUnimplemented,  // a feature that is not built: the message says which
  kInternal,
  kIoError,
  kCancelled,  // stopped by the user (Ctrl-C, SIGTERM)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message" (context added on the way up).
  Status WithPrefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status InternalError(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status IoError(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kIoError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Cancelled(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kCancelled, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status DataLoss(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kDataLoss, fmt::format(f, std::forward<Args>(args)...));
}

namespace internal {
// Prints the status with the caller's context to stderr and aborts: reading the
// value of an error is a bug in every build type, never a silent run-on.
[[noreturn]] void DieOnBadValueAccess(const Status& status);
// The status a StatusOr built from an OK status holds instead (a bug, reported
// as an internal error when its value is read or its status returned).
Status OkStatusWithoutValue();
}  // namespace internal

// Holds either a T or a non-OK Status. value() (and *, ->) on an error aborts
// with the status message, in every build type.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status)  // NOLINT
      : status_(status.ok() ? internal::OkStatusWithoutValue() : status) {}
  StatusOr(Status&& status)  // NOLINT
      : status_(status.ok() ? internal::OkStatusWithoutValue() : std::move(status)) {}
  StatusOr(const T& value) : value_(value) {}        // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    if (!ok()) internal::DieOnBadValueAccess(status_);
    return *value_;
  }
  T& value() & {
    if (!ok()) internal::DieOnBadValueAccess(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieOnBadValueAccess(status_);
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace shardscope

#define SHARDSCOPE_CONCAT_INNER(a, b) a##b
#define SHARDSCOPE_CONCAT(a, b) SHARDSCOPE_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)              \
  do {                                     \
    ::shardscope::Status _status = (expr); \
    if (!_status.ok()) return _status;     \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(SHARDSCOPE_CONCAT(_status_or_, __LINE__), lhs, expr)

#endif  // SHARDSCOPE_CORE_STATUS_H_
