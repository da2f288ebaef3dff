#include "sluice/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice {
namespace {

TEST(StatusTest, CodesMatchGrpcNumbersAndNames) {
  struct Case {
    StatusCode code;
    int grpc_number;
    std::string_view name;
  };
  const std::vector<Case> cases = {
      {StatusCode::kOk, 0, "OK"},
      {StatusCode::kCancelled, 1, "CANCELLED"},
      {StatusCode::kUnknown, 2, "UNKNOWN"},
      {StatusCode::kInvalidArgument, 3, "INVALID_ARGUMENT"},
      {StatusCode::kDeadlineExceeded, 4, "DEADLINE_EXCEEDED"},
      {StatusCode::kNotFound, 5, "NOT_FOUND"},
      {StatusCode::kAlreadyExists, 6, "ALREADY_EXISTS"},
      {StatusCode::kPermissionDenied, 7, "PERMISSION_DENIED"},
      {StatusCode::kResourceExhausted, 8, "RESOURCE_EXHAUSTED"},
      {StatusCode::kFailedPrecondition, 9, "FAILED_PRECONDITION"},
      {StatusCode::kAborted, 10, "ABORTED"},
      {StatusCode::kOutOfRange, 11, "OUT_OF_RANGE"},
      {StatusCode::kUnimplemented, 12, "UNIMPLEMENTED"},
      {StatusCode::kInternal, 13, "INTERNAL"},
      {StatusCode::kUnavailable, 14, "UNAVAILABLE"},
      {StatusCode::kDataLoss, 15, "DATA_LOSS"},
      {StatusCode::kUnauthenticated, 16, "UNAUTHENTICATED"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name));
    EXPECT_EQ(static_cast<int>(c.code), c.grpc_number);
    EXPECT_EQ(status_code_name(c.code), c.name);
  }
}

TEST(StatusTest, NamesAnOutOfRangeCodeUnknown) {
  EXPECT_EQ(status_code_name(static_cast<StatusCode>(17)), "UNKNOWN");
  EXPECT_EQ(status_code_name(static_cast<StatusCode>(-1)), "UNKNOWN");
}

TEST(StatusTest, DefaultStatusIsOkWithoutMessage) {
  const Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status, Status::ok_status());
}

TEST(StatusTest, ToStringJoinsCodeNameAndMessage) {
  EXPECT_EQ(invalid_argument("limits[0].window: must be greater than 0").to_string(),
            "INVALID_ARGUMENT: limits[0].window: must be greater than 0");
  EXPECT_EQ(Status(StatusCode::kUnauthenticated, "no token").to_string(),
            "UNAUTHENTICATED: no token");
}

TEST(StatusTest, ToStringOmitsTheSeparatorWithoutMessage) {
  EXPECT_EQ(Status().to_string(), "OK");
  EXPECT_EQ(Status(StatusCode::kAborted, "").to_string(), "ABORTED");
}

TEST(StatusTest, HelpersSetTheirCodeAndKeepTheMessage) {
  struct Case {
    Status status;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {invalid_argument("m"), StatusCode::kInvalidArgument},
      {not_found("m"), StatusCode::kNotFound},
      {unavailable("m"), StatusCode::kUnavailable},
      {internal_error("m"), StatusCode::kInternal},
      {deadline_exceeded("m"), StatusCode::kDeadlineExceeded},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(status_code_name(c.code)));
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
  }
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(not_found("a"), Status(StatusCode::kNotFound, "a"));
  EXPECT_NE(not_found("a"), not_found("b"));
  EXPECT_NE(not_found("a"), unavailable("a"));
}

TEST(StatusOrTest, HoldsAValueAndReportsOk) {
  StatusOr<int> result = 42;
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(), 42);
  EXPECT_EQ(*result, 42);
  EXPECT_TRUE(result.status().ok());
  EXPECT_EQ(result.status(), Status());
}

TEST(StatusOrTest, HoldsAnErrorAndReturnsItUnchanged) {
  const StatusOr<int> result = not_found("no such policy");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status(), not_found("no such policy"));
  EXPECT_EQ(result.status().to_string(), "NOT_FOUND: no such policy");
}

TEST(StatusOrTest, ValueIsMutableThroughEveryAccessor) {
  StatusOr<std::string> result = std::string("abc");
  result.value() += "d";
  *result += "e";
  result->push_back('f');
  EXPECT_EQ(result.value(), "abcdef");
  EXPECT_EQ(result->size(), 6u);
  const StatusOr<std::string>& view = result;
  EXPECT_EQ(*view, "abcdef");
  EXPECT_EQ(view->size(), 6u);
}

TEST(StatusOrTest, MovesAMoveOnlyValueOut) {
  StatusOr<std::unique_ptr<int>> result = std::make_unique<int>(7);
  ASSERT_TRUE(result.ok());
  std::unique_ptr<int> taken = std::move(result).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
}

TEST(StatusOrTest, ValueOfStatusTypeIsNotMistakenForAnError) {
  // A function returning StatusOr<T> where T is a plain string never confuses value and error.
  const StatusOr<std::string> value = std::string("INVALID_ARGUMENT");
  EXPECT_TRUE(value.ok());
  const StatusOr<std::string> error = invalid_argument("x");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, DetailTellsApartErrorsOfOneCodeWhateverTheirMessage) {
  const Status overloaded(StatusCode::kUnavailable, "circuit open: worded alike",
                          StatusDetail::kOverloaded);
  const Status plain = unavailable("overloaded: worded alike");
  EXPECT_EQ(overloaded.detail(), StatusDetail::kOverloaded);
  EXPECT_EQ(plain.detail(), StatusDetail::kNone) << "a message never makes an identity";
  EXPECT_NE(overloaded, Status(StatusCode::kUnavailable, "circuit open: worded alike"));
  const StatusOr<int> carried = overloaded;
  EXPECT_EQ(carried.status().detail(), StatusDetail::kOverloaded);
}

}  // namespace
}  // namespace sluice
