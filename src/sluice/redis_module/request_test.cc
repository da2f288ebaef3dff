#include "sluice/redis_module/request.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace sluice::redis_module {
namespace {

std::string request_of(std::initializer_list<double> fields, std::string_view tail = {}) {
  std::string out;
  for (const double field : fields) append_double(out, field);
  out += tail;
  return out;
}

TEST(RequestTest, ReadsHeaderLimitsAndLease) {
  // repeats 2, acquire, cost 3, two limits: a gcra-shaped smooth bucket and a concurrency limit.
  const StatusOr<Request> request =
      parse_request(request_of({2, 0, 3, 2, 1, 5, 10, 1'000'000, 5, 7, 4, 30'000'000, 0, 0}, "L1"));
  ASSERT_TRUE(request.ok()) << request.status().message();
  EXPECT_EQ(request->repeats, 2);
  EXPECT_EQ(request->operation, Operation::kAcquire);
  EXPECT_EQ(request->cost, 3);
  ASSERT_EQ(request->limits.size(), 2u);
  EXPECT_EQ(request->limits[0].kind, algorithm::ScriptKind::kSmoothBucket);
  EXPECT_EQ(std::get<algorithm::TokenBucket>(request->limits[0].limit).capacity, 5);
  EXPECT_EQ(std::get<algorithm::Concurrency>(request->limits[1].limit).limit, 4);
  EXPECT_EQ(request->lease, "L1");
  EXPECT_FALSE(request->penalty.has_value());
  EXPECT_EQ(keys_per_decision(*request), 2u);
}

TEST(RequestTest, PenalizedAcquireTakesThePenaltyFromTheLastSixFields) {
  std::string bytes = request_of({1, 2, 1, 1, 4, 10, 1'000'000, 0, 0}, "lease");
  for (const double field : {3.0, 60e6, 10e6, 2.0, 60e6, 120e6}) append_double(bytes, field);
  const StatusOr<Request> request = parse_request(bytes);
  ASSERT_TRUE(request.ok()) << request.status().message();
  EXPECT_EQ(request->lease, "lease");
  ASSERT_TRUE(request->penalty.has_value());
  EXPECT_EQ(request->penalty->after, 3);
  EXPECT_EQ(request->penalty->quiet, 120'000'000);
  EXPECT_EQ(keys_per_decision(*request), 2u);
}

TEST(RequestTest, RefusesWhatTheStoreNeverSends) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const struct {
    const char* name;
    std::string bytes;
  } cases[] = {
      {"empty", ""},
      {"header only", request_of({1, 0, 1, 1})},
      {"no limits", request_of({1, 0, 1, 0, 4, 10, 1'000, 0, 0})},
      {"more limits than bytes", request_of({1, 0, 1, 2, 4, 10, 1'000, 0, 0})},
      {"unknown operation", request_of({1, 7, 1, 1, 4, 10, 1'000, 0, 0})},
      {"unknown kind", request_of({1, 0, 1, 1, 99, 10, 1'000, 0, 0})},
      {"NaN cost", request_of({1, 0, nan, 1, 4, 10, 1'000, 0, 0})},
      {"infinite parameter", request_of({1, 0, 1, 1, 4, inf, 1'000, 0, 0})},
      {"fractional cost", request_of({1, 0, 0.5, 1, 4, 10, 1'000, 0, 0})},
      {"huge cost", request_of({1, 0, 1e15, 1, 4, 10, 1'000, 0, 0})},
      {"negative cost", request_of({1, 0, -1, 1, 4, 10, 1'000, 0, 0})},
      {"negative repeats", request_of({-1, 0, 1, 1, 4, 10, 1'000, 0, 0})},
      {"zero window", request_of({1, 0, 1, 1, 4, 10, 0, 0, 0})},
      {"product past 2^53", request_of({1, 0, 1, 1, 5, 1e9, 1e9, 0, 0})},
      {"calendar bounds out of order", request_of({1, 0, 1, 1, 8, 10, 30, 20, 40})},
      {"penalty cut short", request_of({1, 2, 1, 1, 4, 10, 1'000, 0, 0, 3})},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const StatusOr<Request> request = parse_request(c.bytes);
    EXPECT_FALSE(request.ok());
  }
}

}  // namespace
}  // namespace sluice::redis_module
