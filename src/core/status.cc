#include "core/status.h"

#include <cstdio>
#include <cstdlib>

#include "core/enum_names.h"

namespace shardscope {

namespace {

constexpr auto kStatusCodeNames = MakeEnumNames<StatusCode>({
    {StatusCode::kOk, "OK"},
    {StatusCode::kInvalidArgument, "invalid argument"},
    {StatusCode::kNotFound, "not found"},
    {StatusCode::kFailedPrecondition, "failed precondition"},
    {StatusCode::kOutOfRange, "out of range"},
    {StatusCode::kDataLoss, "data loss"},
    {StatusCode::kUnimplemented, "not implemented"},
    {StatusCode::kInternal, "internal error"},
    {StatusCode::kIoError, "I/O error"},
    {StatusCode::kCancelled, "cancelled"},
});
static_assert(kStatusCodeNames.InEnumOrder() &&
              kStatusCodeNames.entries().back().value == StatusCode::kCancelled);

}  // namespace

// The names are string literals, so a view's data() is NUL-terminated.
const char* StatusCodeName(StatusCode code) {
  return kStatusCodeNames.Name(code, "unknown").data();
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
