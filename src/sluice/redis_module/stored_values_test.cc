#include "sluice/redis_module/stored_values.h"

#include <gtest/gtest.h>

#include <string>

#include "sluice/redis_module/request.h"

namespace sluice::redis_module {
namespace {

constexpr Micros kNow = 1'700'000'000'000'000;

TEST(StoredValuesTest, WholeTatIsDecimalTextAndFractionalTatIsPacked) {
  EXPECT_EQ(encode_tat({.tat = kNow, .fraction = 0}), "1700000000000000");
  const std::string packed = encode_tat({.tat = kNow, .fraction = 3});
  ASSERT_EQ(packed.size(), 17u);
  EXPECT_EQ(packed[0], 't');
  EXPECT_EQ(decode_tat(packed), (algorithm::TatState{.tat = kNow, .fraction = 3}));
  EXPECT_EQ(decode_tat("1700000000000000"), (algorithm::TatState{.tat = kNow, .fraction = 0}));
}

TEST(StoredValuesTest, ValuesOfOtherKindsReadAsAbsent) {
  const std::string interval = encode_interval({.tokens = 3, .refilled_at = kNow});
  const std::string window = encode_fixed_window({.window_start = kNow, .count = 2}, kNow + 10);
  EXPECT_EQ(decode_tat(interval), std::nullopt);
  EXPECT_EQ(decode_tat(window), std::nullopt);
  EXPECT_EQ(decode_tat("12:5"), std::nullopt);  // an older script's "<tat>:<frac>"
  EXPECT_EQ(decode_tat(""), std::nullopt);
  EXPECT_EQ(decode_interval(window, 1'000), std::nullopt);
  EXPECT_EQ(decode_fixed_window(interval), std::nullopt);
  EXPECT_EQ(decode_sliding_window(window, 1'000), std::nullopt);
  EXPECT_EQ(decode_calendar_window(interval), std::nullopt);
  EXPECT_EQ(decode_penalty(interval), std::nullopt);
  EXPECT_EQ(decode_lease("short"), std::nullopt);
}

TEST(StoredValuesTest, EveryEncodingReadsBackWhatItWrote) {
  const auto fixed = decode_fixed_window(encode_fixed_window({kNow, 7}, kNow + 5));
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->state, (algorithm::WindowState{kNow, 7}));
  EXPECT_EQ(fixed->expires, kNow + 5);
  const auto sliding = decode_sliding_window(encode_sliding_window({kNow, 4, 9}, kNow + 8), 1'000);
  ASSERT_TRUE(sliding.has_value());
  EXPECT_EQ(sliding->state, (algorithm::SlidingWindowState{kNow, 4, 9}));
  EXPECT_EQ(sliding->expires, kNow + 8);
  const auto interval = decode_interval(encode_interval({-2, kNow}), 1'000);
  EXPECT_EQ(interval, (algorithm::IntervalBucketState{-2, kNow}));
  const algorithm::PenaltyState box{
      .blocked_until = kNow, .blocks = 3, .strikes = {kNow - 2, kNow}};
  EXPECT_EQ(decode_penalty(encode_penalty(box)), box);
  const auto lease = decode_lease(encode_lease({.expires_at = kNow, .cost = 2}));
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->expires_at, kNow);
  EXPECT_EQ(lease->cost, 2);
}

TEST(StoredValuesTest, WindowsWithoutExpiresFromEarlierScriptsReadWithExpiresZero) {
  std::string old_fixed(1, 'w');
  append_double(old_fixed, static_cast<double>(kNow));
  append_double(old_fixed, 3);
  const auto fixed = decode_fixed_window(old_fixed);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->state.count, 3);
  EXPECT_EQ(fixed->expires, 0);
}

TEST(StoredValuesTest, NumbersTheScriptsNeverWriteReadAsAbsent) {
  std::string nan_tat(1, 't');
  append_double(nan_tat, 0.0 / 0.0 == 0.0 ? 0 : __builtin_nan(""));
  append_double(nan_tat, 0);
  EXPECT_EQ(decode_tat(nan_tat), std::nullopt);
  std::string half(1, 'f');
  append_double(half, 1.5);
  append_double(half, 1);
  append_double(half, 1);
  EXPECT_EQ(decode_fixed_window(half), std::nullopt);
  // previous · window would pass 2^53.
  EXPECT_EQ(decode_sliding_window(encode_sliding_window({0, 0, 1LL << 40}, 0), 1LL << 20),
            std::nullopt);
  EXPECT_EQ(decode_penalty(encode_penalty({.blocked_until = 1, .blocks = 65})), std::nullopt);
  EXPECT_EQ(decode_tat("99999999999999999999"), std::nullopt);
}

TEST(StoredValuesTest, TtlIsWholeMillisecondsRoundedUpAtLeastOne) {
  EXPECT_EQ(ttl_millis(1), 1);
  EXPECT_EQ(ttl_millis(1'000), 1);
  EXPECT_EQ(ttl_millis(1'001), 2);
  EXPECT_EQ(ttl_millis(0), 1);
  EXPECT_EQ(ttl_millis(-5'000), 1);
}

}  // namespace
}  // namespace sluice::redis_module
