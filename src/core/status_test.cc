#include "core/status.h"

#include <gtest/gtest.h>

namespace shardscope {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("{} is odd", x);
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = InvalidArgument("field '{}' is bad", "tp_size");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field 'tp_size' is bad");
  EXPECT_EQ(s.WithPrefix("a.yaml").message(), "a.yaml: field 'tp_size' is bad");
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).ok());
  EXPECT_EQ(Quarter(6).status().message(), "3 is odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

// Reading the value of an error aborts with the message in every build type
// (before, an assert that release builds compiled away let them run on).
TEST(StatusDeathTest, ValueOfAnErrorAbortsWithTheMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)*Half(3), "value of a failed StatusOr was read.*3 is odd");
  EXPECT_DEATH((void)Half(5).value(), "5 is odd");
}

TEST(StatusTest, EveryCodeHasItsName) {
  const std::pair<StatusCode, std::string_view> names[] = {
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
  };
  for (const auto& [code, name] : names) EXPECT_EQ(StatusCodeName(code), name);
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(99)), "unknown");
}

TEST(StatusTest, BuiltFromAnOkStatusIsAnInternalError) {
  StatusOr<int> s = Status::Ok();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace shardscope
