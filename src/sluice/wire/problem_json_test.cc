// problem+json bodies: the members, the bound on reported field errors, invalid UTF-8.
#include "sluice/wire/problem_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::wire {
namespace {

using nlohmann::json;

TEST(ProblemJsonTest, ProblemReportsTheFirstErrorsAndCountsTheRest) {
  std::vector<FieldError> errors;
  for (int i = 0; i < 100'000; ++i)
    errors.push_back({"field" + std::to_string(i), "unknown field"});
  const json body = json::parse(problem_body(400, "unknown fields in the body", errors));
  ASSERT_EQ(body["errors"].size(), kMaxReportedErrors + 1);
  EXPECT_EQ(body["errors"][0]["field"], "field0");
  EXPECT_EQ(body["errors"][kMaxReportedErrors - 1]["field"], "field19");
  EXPECT_EQ(body["errors"][kMaxReportedErrors]["field"], "");
  EXPECT_EQ(body["errors"][kMaxReportedErrors]["message"], "99980 more errors not shown");

  errors.resize(kMaxReportedErrors);  // exactly the bound: no summary
  EXPECT_EQ(json::parse(problem_body(400, "x", errors))["errors"].size(), kMaxReportedErrors);
}

TEST(ProblemJsonTest, ProblemWithoutFieldErrorsHasNoErrorsMember) {
  const json body = json::parse(problem_body(404, "no such policy"));
  EXPECT_FALSE(body.contains("errors"));
  EXPECT_EQ(body["title"], "Not Found");
}

TEST(ProblemJsonTest, InvalidUtf8InDetailsIsReplacedNotThrown) {
  EXPECT_FALSE(json::parse(problem_body(400, "bad key \xff\xfe"), nullptr, false).is_discarded());
}

TEST(ProblemJsonTest, TitlesAreTheReasonPhrasesAndUnknownStatusesSaySo) {
  EXPECT_EQ(json::parse(problem_body(431, "x"))["title"], "Request Header Fields Too Large");
  EXPECT_EQ(reason_phrase(418), "Unknown");
}

}  // namespace
}  // namespace sluice::wire
