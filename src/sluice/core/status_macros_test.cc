#include "sluice/core/status_macros.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sluice {
namespace {

// Records each call, so the tests can check that an expression runs once and that nothing after a
// failing step runs.
struct Steps {
  std::vector<std::string> ran;

  Status step(std::string name, Status result) {
    ran.push_back(std::move(name));
    return result;
  }
  StatusOr<int> number(std::string name, StatusOr<int> result) {
    ran.push_back(std::move(name));
    return result;
  }
};

Status two_steps(Steps& steps, Status first, Status second) {
  SLUICE_RETURN_IF_ERROR(steps.step("first", first));
  SLUICE_RETURN_IF_ERROR(steps.step("second", second));
  return Status();
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheFirstErrorAndRunsNothingAfterIt) {
  Steps steps;
  const Status result = two_steps(steps, invalid_argument("bad first"), Status());
  EXPECT_EQ(result, invalid_argument("bad first"));
  EXPECT_EQ(steps.ran, std::vector<std::string>{"first"});
}

TEST(StatusMacrosTest, ReturnIfErrorGoesOnWhenOkAndEvaluatesEachExpressionOnce) {
  Steps steps;
  EXPECT_TRUE(two_steps(steps, Status(), Status()).ok());
  EXPECT_EQ(steps.ran, (std::vector<std::string>{"first", "second"}));

  Steps failing_second;
  EXPECT_EQ(two_steps(failing_second, Status(), not_found("no second")), not_found("no second"));
  EXPECT_EQ(failing_second.ran, (std::vector<std::string>{"first", "second"}));
}

StatusOr<std::string> checked_name(Steps& steps, Status check) {
  SLUICE_RETURN_IF_ERROR(steps.step("check", check));
  return std::string("name");
}

TEST(StatusMacrosTest, ReturnIfErrorWorksInAFunctionReturningStatusOr) {
  Steps steps;
  StatusOr<std::string> failed = checked_name(steps, unavailable("down"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status(), unavailable("down"));
  StatusOr<std::string> named = checked_name(steps, Status());
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(*named, "name");
}

StatusOr<int> sum(Steps& steps, StatusOr<int> a, StatusOr<int> b) {
  SLUICE_ASSIGN_OR_RETURN(const int first, steps.number("a", a));
  int second = 0;
  SLUICE_ASSIGN_OR_RETURN(second, steps.number("b", b));
  return first + second;
}

TEST(StatusMacrosTest, AssignOrReturnDeclaresOrAssignsTheValue) {
  Steps steps;
  StatusOr<int> total = sum(steps, 2, 40);
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, 42);
  EXPECT_EQ(steps.ran, (std::vector<std::string>{"a", "b"}));
}

TEST(StatusMacrosTest, AssignOrReturnReturnsTheErrorAndRunsNothingAfterIt) {
  Steps steps;
  StatusOr<int> total = sum(steps, invalid_argument("a is wrong"), 1);
  ASSERT_FALSE(total.ok());
  EXPECT_EQ(total.status(), invalid_argument("a is wrong"));
  EXPECT_EQ(steps.ran, std::vector<std::string>{"a"});

  Steps second;
  EXPECT_EQ(sum(second, 1, internal_error("b broke")).status(), internal_error("b broke"));
  EXPECT_EQ(second.ran, (std::vector<std::string>{"a", "b"}));
}

StatusOr<std::unique_ptr<int>> boxed(StatusOr<int> value) {
  SLUICE_ASSIGN_OR_RETURN(const int number, value);
  return std::make_unique<int>(number);
}

// A Status-returning caller of a StatusOr of a move-only type: the value is moved out, and the
// error converts to the caller's return type.
Status unbox(StatusOr<int> value, int& out) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<int> box, boxed(value));
  out = *box;
  return Status();
}

TEST(StatusMacrosTest, AssignOrReturnMovesMoveOnlyValuesAndConvertsErrors) {
  int out = 0;
  EXPECT_TRUE(unbox(7, out).ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(unbox(deadline_exceeded("late"), out), deadline_exceeded("late"));
  EXPECT_EQ(out, 7);
}

// The shape of a database transaction: the body, a lambda, propagates its own errors inside the
// expression of the caller's macro.
Status run(const std::function<Status()>& body) { return body(); }

Status nested(Steps& steps, Status inner) {
  SLUICE_RETURN_IF_ERROR(run([&]() -> Status {
    SLUICE_RETURN_IF_ERROR(steps.step("inner", inner));
    SLUICE_ASSIGN_OR_RETURN(const int n, steps.number("number", 1));
    return n == 1 ? Status() : internal_error("n");
  }));
  return steps.step("after", Status());
}

TEST(StatusMacrosTest, MacrosNestInsideALambdaInsideAMacro) {
  Steps steps;
  EXPECT_EQ(nested(steps, not_found("inner")), not_found("inner"));
  EXPECT_EQ(steps.ran, std::vector<std::string>{"inner"});
  Steps ok;
  EXPECT_TRUE(nested(ok, Status()).ok());
  EXPECT_EQ(ok.ran, (std::vector<std::string>{"inner", "number", "after"}));
}

}  // namespace
}  // namespace sluice
