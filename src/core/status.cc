#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace shardscope {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kUnimplemented:
      return "not implemented";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return message_;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", prefix, message_));
}

namespace internal {

void DieOnBadValueAccess(const Status& status) {
  std::fprintf(stderr, "shardscope: fatal: the value of a failed StatusOr was read (%s): %s\n",
               StatusCodeName(status.code()), status.message().c_str());
  std::fflush(stderr);
  std::abort();
}

Status OkStatusWithoutValue() {
  return Status(StatusCode::kInternal, "a StatusOr was built from an OK status without a value");
}

}  // namespace internal

}  // namespace shardscope
