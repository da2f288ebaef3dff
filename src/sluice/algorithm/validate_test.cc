// Tests of validate.h (DESIGN.md §2): one test per validation error, each naming its field
// ("limits[1].window") and reason; products that would reach 2^53 in Redis's Lua doubles;
// sliding_log and concurrency caps; request costs; several errors at once; nothing clamped.
#include "sluice/algorithm/validate.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sluice::algorithm {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;
constexpr std::int64_t k2To53 = std::int64_t{1} << 53;
constexpr std::int64_t k2To52 = std::int64_t{1} << 52;
constexpr std::int64_t k2To50 = std::int64_t{1} << 50;  // ≈ 35.7 years in µs: within the horizon

// "field: message; field: message", in the order reported.
std::string describe(const std::vector<FieldError>& errors) {
  std::string text;
  for (const FieldError& error : errors) {
    if (!text.empty()) text += "; ";
    text += error.field + ": " + error.message;
  }
  return text;
}

std::string errors_of(const Limit& limit, const ValidationOptions& options = {}) {
  return describe(validate_limit(limit, "limits[0]", options));
}

std::string exact_message(const std::string& product) {
  return product + " must be below 2^53 (9007199254740992) so Redis's Lua arithmetic stays exact";
}

// ---- valid limits ----

TEST(ValidateTest, RealisticLimitsOfEveryAlgorithmHaveNoErrors) {
  const std::vector<Limit> limits = {
      TokenBucket{.capacity = 100, .refill = 50, .period = kSecond},
      TokenBucket{.capacity = 100,
                  .refill = 10,
                  .period = kMicrosPerMinute,
                  .refill_mode = RefillMode::kInterval,
                  .initial = 0},
      TokenBucket{.capacity = 5, .refill = 1, .period = kSecond, .initial = 5},
      Gcra{.rate = 10, .period = kSecond, .burst = 0},
      LeakyBucket{.rate = 10, .period = kSecond, .max_delay = 0},
      LeakyBucket{.rate = 100, .period = kSecond, .max_delay = 5 * kSecond},
      FixedWindow{.limit = 1000, .window = kMicrosPerHour},
      SlidingWindow{.limit = 100, .window = kMicrosPerMinute},
      SlidingLog{.limit = 10'000, .window = kMicrosPerDay},
      Concurrency{.limit = 100'000, .lease_ttl = 30 * kSecond},
  };
  for (const Limit& limit : limits) {
    SCOPED_TRACE(algorithm_name(limit));
    EXPECT_EQ(validate_limit(limit, "limits[0]"), std::vector<FieldError>{});
  }
}

TEST(ValidateTest, ReportsFieldAndMessageAsSeparateValues) {
  EXPECT_EQ(validate_limit(FixedWindow{.limit = 1, .window = 0}, "limits[1]"),
            (std::vector<FieldError>{
                {.field = "limits[1].window", .message = "must be greater than 0"}}));
}

TEST(ValidateTest, AnEmptyPrefixNamesTheBareField) {
  EXPECT_EQ(describe(validate_limit(FixedWindow{.limit = 1, .window = 0}, "")),
            "window: must be greater than 0");
}

// ---- zero / negative values ----

TEST(ValidateTest, RejectsAZeroTokenBucketCapacity) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 0, .refill = 1, .period = kSecond}),
            "limits[0].capacity: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeTokenBucketRefill) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 1, .refill = -1, .period = kSecond}),
            "limits[0].refill: must be greater than 0");
}

TEST(ValidateTest, RejectsAZeroTokenBucketPeriod) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 1, .refill = 1, .period = 0}),
            "limits[0].period: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeInitialTokenCount) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 10, .refill = 1, .period = kSecond, .initial = -1}),
            "limits[0].initial: must not be negative");
}

TEST(ValidateTest, RejectsInitialTokensAboveCapacity) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 10, .refill = 1, .period = kSecond, .initial = 11}),
            "limits[0].initial: must not exceed capacity (10)");
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 10, .refill = 1, .period = kSecond, .initial = 10}),
            "");
}

TEST(ValidateTest, RejectsAZeroGcraRate) {
  EXPECT_EQ(errors_of(Gcra{.rate = 0, .period = kSecond, .burst = 1}),
            "limits[0].rate: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeGcraPeriod) {
  EXPECT_EQ(errors_of(Gcra{.rate = 1, .period = -kSecond, .burst = 1}),
            "limits[0].period: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeBurst) {
  EXPECT_EQ(errors_of(Gcra{.rate = 1, .period = kSecond, .burst = -1}),
            "limits[0].burst: must be at least 0");
}

TEST(ValidateTest, RejectsANegativeLeakyRate) {
  EXPECT_EQ(errors_of(LeakyBucket{.rate = -3, .period = kSecond, .max_delay = 0}),
            "limits[0].rate: must be greater than 0");
}

TEST(ValidateTest, RejectsAZeroLeakyPeriod) {
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 1, .period = 0, .max_delay = 0}),
            "limits[0].period: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeMaxDelay) {
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 1, .period = kSecond, .max_delay = -1}),
            "limits[0].max_delay: must be at least 0");
}

TEST(ValidateTest, RejectsAZeroFixedWindowLimit) {
  EXPECT_EQ(errors_of(FixedWindow{.limit = 0, .window = kSecond}),
            "limits[0].limit: must be greater than 0");
}

TEST(ValidateTest, RejectsAnEmptyFixedWindow) {
  EXPECT_EQ(describe(validate_limit(FixedWindow{.limit = 10, .window = 0}, "limits[1]")),
            "limits[1].window: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeFixedWindow) {
  EXPECT_EQ(errors_of(FixedWindow{.limit = 10, .window = -kSecond}),
            "limits[0].window: must be greater than 0");
}

TEST(ValidateTest, RejectsANegativeSlidingWindowLimit) {
  EXPECT_EQ(errors_of(SlidingWindow{.limit = -1, .window = kSecond}),
            "limits[0].limit: must be greater than 0");
}

TEST(ValidateTest, RejectsAnEmptySlidingWindow) {
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 10, .window = 0}),
            "limits[0].window: must be greater than 0");
}

TEST(ValidateTest, RejectsAZeroSlidingLogLimit) {
  EXPECT_EQ(errors_of(SlidingLog{.limit = 0, .window = kSecond}),
            "limits[0].limit: must be greater than 0");
}

TEST(ValidateTest, RejectsAnEmptySlidingLogWindow) {
  EXPECT_EQ(errors_of(SlidingLog{.limit = 10, .window = 0}),
            "limits[0].window: must be greater than 0");
}

TEST(ValidateTest, RejectsAZeroConcurrencyLimit) {
  EXPECT_EQ(errors_of(Concurrency{.limit = 0, .lease_ttl = kSecond}),
            "limits[0].limit: must be greater than 0");
}

TEST(ValidateTest, RejectsAZeroLeaseTtl) {
  EXPECT_EQ(errors_of(Concurrency{.limit = 1, .lease_ttl = 0}),
            "limits[0].lease_ttl: must be greater than 0");
}

// ---- 2^53: values and intermediate products Lua must compute exactly ----

TEST(ValidateTest, RejectsASingleValueReaching2To53) {
  EXPECT_EQ(errors_of(FixedWindow{.limit = 1, .window = k2To53}),
            "limits[0].window: must be below 2^53");
  EXPECT_EQ(errors_of(FixedWindow{.limit = k2To53, .window = 1}),
            "limits[0].limit: must be below 2^53");
}

TEST(ValidateTest, RejectsASlidingWindowWhoseLimitTimesWindowReaches2To53) {
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 8, .window = k2To50}),
            "limits[0].window: " + exact_message("limit × window (µs)"));
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 7, .window = k2To50}), "");
  // Realistic: 105 000 per day is 9.07e15 µs·units; 100 000 per day (8.64e15) still fits.
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 105'000, .window = kMicrosPerDay}),
            "limits[0].window: " + exact_message("limit × window (µs)"));
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 100'000, .window = kMicrosPerDay}), "");
}

TEST(ValidateTest, RejectsATokenBucketWhoseCapacityTimesPeriodPlusRefillReaches2To53) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 1, .refill = k2To53 - k2To50, .period = k2To50}),
            "limits[0].period: " + exact_message("capacity × period (µs) + refill"));
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 1, .refill = k2To53 - k2To50 - 1, .period = k2To50}),
            "");
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 1'000'000, .refill = 1000, .period = kMicrosPerDay}),
            "limits[0].period: " + exact_message("capacity × period (µs) + refill"));
}

TEST(ValidateTest, RejectsAGcraWhoseBurstPlusOneTimesPeriodPlusRateReaches2To53) {
  EXPECT_EQ(errors_of(Gcra{.rate = k2To53 - k2To50, .period = k2To50, .burst = 0}),
            "limits[0].burst: " + exact_message("(burst + 1) × period (µs) + rate"));
  EXPECT_EQ(errors_of(Gcra{.rate = k2To53 - k2To50 - 1, .period = k2To50, .burst = 0}), "");
  EXPECT_EQ(errors_of(Gcra{.rate = 1 << 20, .period = k2To52, .burst = 1}),
            "limits[0].burst: " + exact_message("(burst + 1) × period (µs) + rate"));
}

TEST(ValidateTest, RejectsALeakyBucketWhoseMaxDelayPlusOneTimesRateReaches2To53) {
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 8, .period = kSecond, .max_delay = k2To50 - 1}),
            "limits[0].max_delay: " + exact_message("(max_delay (µs) + 1) × rate"));
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 7, .period = kSecond, .max_delay = k2To50 - 1}), "");
}

TEST(ValidateTest, ProductsDoNotOverflowInt64BeforeBeingChecked) {
  constexpr std::int64_t kHuge = k2To53 - 1;  // each factor alone is acceptable
  EXPECT_EQ(errors_of(SlidingWindow{.limit = kHuge, .window = kHuge}),
            "limits[0].window: window must be at most 100 years; limits[0].window: " +
                exact_message("limit × window (µs)"));
  EXPECT_EQ(errors_of(TokenBucket{.capacity = kHuge, .refill = kHuge, .period = kHuge}),
            "limits[0].period: " + exact_message("capacity × period (µs) + refill") +
                "; limits[0].period: the time to refill an empty bucket must be at most 100 "
                "years");
}

// ---- caps ----

TEST(ValidateTest, RejectsASlidingLogLimitAboveTheDefaultCap) {
  EXPECT_EQ(errors_of(SlidingLog{.limit = 10'001, .window = kSecond}),
            "limits[0].limit: must be at most 10000");
  EXPECT_EQ(errors_of(SlidingLog{.limit = 10'000, .window = kSecond}), "");
}

TEST(ValidateTest, RejectsASlidingLogLimitAboveACustomCap) {
  const ValidationOptions lower{.sliding_log_max_limit = 500};
  EXPECT_EQ(errors_of(SlidingLog{.limit = 501, .window = kSecond}, lower),
            "limits[0].limit: must be at most 500");
  EXPECT_EQ(errors_of(SlidingLog{.limit = 500, .window = kSecond}, lower), "");
  const ValidationOptions higher{.sliding_log_max_limit = 50'000};
  EXPECT_EQ(errors_of(SlidingLog{.limit = 50'000, .window = kSecond}, higher), "");
}

TEST(ValidateTest, RejectsAConcurrencyLimitAboveTheDefaultCap) {
  EXPECT_EQ(errors_of(Concurrency{.limit = 100'001, .lease_ttl = kSecond}),
            "limits[0].limit: must be at most 100000");
  EXPECT_EQ(errors_of(Concurrency{.limit = 100'000, .lease_ttl = kSecond}), "");
}

TEST(ValidateTest, RejectsAConcurrencyLimitAboveACustomCap) {
  const ValidationOptions options{.concurrency_max_limit = 64};
  EXPECT_EQ(errors_of(Concurrency{.limit = 65, .lease_ttl = kSecond}, options),
            "limits[0].limit: must be at most 64");
  EXPECT_EQ(errors_of(Concurrency{.limit = 64, .lease_ttl = kSecond}, options), "");
}

TEST(ValidateTest, CapsApplyOnlyToTheirOwnAlgorithm) {
  const ValidationOptions options{.sliding_log_max_limit = 5, .concurrency_max_limit = 5};
  EXPECT_EQ(errors_of(FixedWindow{.limit = 1'000'000, .window = kSecond}, options), "");
  EXPECT_EQ(errors_of(SlidingWindow{.limit = 1'000'000, .window = kSecond}, options), "");
  EXPECT_EQ(errors_of(SlidingLog{.limit = 6, .window = kSecond}, options),
            "limits[0].limit: must be at most 5");
  EXPECT_EQ(errors_of(Concurrency{.limit = 6, .lease_ttl = kSecond}, options),
            "limits[0].limit: must be at most 5");
}

// ---- request cost ----

TEST(ValidateTest, RejectsANegativeCost) {
  const Status status = validate_cost(-1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "cost: must not be negative");
}

TEST(ValidateTest, RejectsACostAboveMaxCost) {
  const Status status = validate_cost(kMaxCost + 1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "cost: must be at most 1000000000");
}

TEST(ValidateTest, AcceptsCostsFromZeroToMaxCost) {
  EXPECT_TRUE(validate_cost(0).ok());  // a peek
  EXPECT_TRUE(validate_cost(1).ok());
  EXPECT_TRUE(validate_cost(kMaxCost).ok());
}

// ---- several errors, nothing clamped ----

TEST(ValidateTest, ReportsEveryErrorOfALimitAtOnceInFieldOrder) {
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 0, .refill = 0, .period = -1, .initial = -1}),
            "limits[0].capacity: must be greater than 0; limits[0].refill: must be greater than "
            "0; limits[0].period: must be greater than 0; limits[0].initial: must not be "
            "negative");
  EXPECT_EQ(describe(validate_limit(SlidingWindow{.limit = 0, .window = 0}, "limits[2]")),
            "limits[2].limit: must be greater than 0; limits[2].window: must be greater than 0");
  EXPECT_EQ(errors_of(Gcra{.rate = -1, .period = 0, .burst = -1}),
            "limits[0].rate: must be greater than 0; limits[0].period: must be greater than 0; "
            "limits[0].burst: must be at least 0");
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 0, .period = 0, .max_delay = -1}),
            "limits[0].rate: must be greater than 0; limits[0].period: must be greater than 0; "
            "limits[0].max_delay: must be at least 0");
  EXPECT_EQ(errors_of(Concurrency{.limit = 0, .lease_ttl = 0}),
            "limits[0].limit: must be greater than 0; limits[0].lease_ttl: must be greater than 0");
}

TEST(ValidateTest, ReportsACapAndAnInvalidWindowTogether) {
  EXPECT_EQ(errors_of(SlidingLog{.limit = 20'000, .window = -1}),
            "limits[0].limit: must be at most 10000; limits[0].window: must be greater than 0");
}

TEST(ValidateTest, SkipsProductChecksWhoseFactorsAreAlreadyInvalid) {
  // No "limit × window" error on top of the field errors that explain it.
  EXPECT_EQ(errors_of(SlidingWindow{.limit = k2To53, .window = 2}),
            "limits[0].limit: must be below 2^53");
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 10, .refill = 1, .period = 0, .initial = 11}),
            "limits[0].period: must be greater than 0; limits[0].initial: must not exceed "
            "capacity (10)");
}

TEST(ValidateTest, OutOfRangeValuesAreRefusedNeverClampedToTheNearestValidOne) {
  // Each of these is one step past a bound; clamping would quietly accept it.
  const std::vector<std::pair<Limit, std::string>> cases = {
      {SlidingLog{.limit = 10'001, .window = kSecond}, "limits[0].limit"},
      {Concurrency{.limit = 100'001, .lease_ttl = kSecond}, "limits[0].limit"},
      {TokenBucket{.capacity = 10, .refill = 1, .period = kSecond, .initial = 11},
       "limits[0].initial"},
      {SlidingWindow{.limit = 8, .window = k2To50}, "limits[0].window"},
      {Gcra{.rate = 1, .period = kSecond, .burst = -1}, "limits[0].burst"},
      {LeakyBucket{.rate = 1, .period = kSecond, .max_delay = -1}, "limits[0].max_delay"},
      {FixedWindow{.limit = 10, .window = 0}, "limits[0].window"},
  };
  for (const auto& [limit, field] : cases) {
    SCOPED_TRACE(algorithm_name(limit));
    const std::vector<FieldError> errors = validate_limit(limit, "limits[0]");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors.front().field, field);
  }
  EXPECT_FALSE(validate_cost(kMaxCost + 1).ok());
  EXPECT_FALSE(validate_cost(-1).ok());
}

// ---- horizon: no state may reach more than 100 years ahead ----

TEST(ValidateTest, RejectsABucketThatTakesMoreThanAHundredYearsToRefill) {
  EXPECT_EQ(errors_of(Gcra{.rate = 1, .period = kMicrosPerDay, .burst = 100'000}),
            "limits[0].period: the time to earn burst + 1 cells must be at most 100 years");
  EXPECT_EQ(errors_of(TokenBucket{.capacity = 40'000, .refill = 1, .period = kMicrosPerDay}),
            "limits[0].period: the time to refill an empty bucket must be at most 100 years");
  EXPECT_EQ(errors_of(Gcra{.rate = 1, .period = kMicrosPerDay, .burst = 36'000}), "");
}

TEST(ValidateTest, RejectsWindowsDelaysAndLeasesBeyondAHundredYears) {
  const Micros too_long = kMaxHorizon + 1;
  EXPECT_EQ(errors_of(FixedWindow{.limit = 1, .window = too_long}),
            "limits[0].window: window must be at most 100 years");
  EXPECT_EQ(errors_of(SlidingLog{.limit = 1, .window = too_long}),
            "limits[0].window: window must be at most 100 years");
  EXPECT_EQ(errors_of(Concurrency{.limit = 1, .lease_ttl = too_long}),
            "limits[0].lease_ttl: lease_ttl must be at most 100 years");
  EXPECT_EQ(errors_of(LeakyBucket{.rate = 1, .period = kSecond, .max_delay = too_long}),
            "limits[0].max_delay: max_delay must be at most 100 years");
  EXPECT_EQ(errors_of(FixedWindow{.limit = 1, .window = kMaxHorizon}), "");
}

}  // namespace
}  // namespace sluice::algorithm
