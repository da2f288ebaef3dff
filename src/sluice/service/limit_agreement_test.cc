// The `limit` a decision reports is the algorithm catalogue's nominal size, whoever decides: the
// store (memory here; Redis in the conformance traces) or the failure mode while the store is
// unreachable. (A degraded leaky-bucket decision once reported 1, its queue capacity otherwise.)
#include <gtest/gtest.h>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/catalogue_samples.h"
#include "sluice/core/clock.h"
#include "sluice/service/limiter.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice::service {
namespace {

using namespace sluice::algorithm;

constexpr Micros kEpoch = 1'700'000'000'000'000;

policy::Policy policy_of(const Limit& limit, policy::FailureMode on_failure) {
  return {.name = "agreement", .apps = {"*"}, .on_store_failure = on_failure, .limits = {limit}};
}

// One acquire of cost 1 on subject "a", for a policy the test holds.
StatusOr<Decision> decide_once(Limiter& limiter, policy::Policy policy) {
  return limiter
      .block_on({.app = "app",
                 .held = std::make_shared<const policy::Policy>(std::move(policy)),
                 .subject = "a",
                 .cost = 1})
      .decision;
}

TEST(LimitAgreementTest, StoreAndFailureModesReportTheCataloguesLimit) {
  ManualClock clock(kEpoch);
  store::MemoryStore memory(clock);
  Limiter decided(memory, &memory);

  // Nothing listens on the port: every store call fails, and the failure mode decides.
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok()) << port.status().to_string();
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::create({.port = *port,
                                  .connect_timeout = 50 * kMicrosPerMilli,
                                  .command_timeout = 50 * kMicrosPerMilli});
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  store::RedisStore unreachable(std::shared_ptr<redis::Multiplexer>(std::move(*client)));
  store::MemoryStore local(clock);
  Limiter degraded(unreachable, &local, LimiterOptions{.local_fraction = 1.0});

  for (const Limit& limit : one_limit_of_each_kind()) {
    SCOPED_TRACE(limit_words(limit));
    const std::int64_t size = nominal_size(limit);
    StatusOr<Decision> normal =
        decide_once(decided, policy_of(limit, policy::FailureMode::kFailOpen));
    ASSERT_TRUE(normal.ok()) << normal.status().to_string();
    EXPECT_FALSE(normal->degraded);
    EXPECT_EQ(normal->verdict.limit, size);
    for (const policy::FailureMode mode :
         {policy::FailureMode::kFailOpen, policy::FailureMode::kFailClosed,
          policy::FailureMode::kLocal}) {
      StatusOr<Decision> failed = decide_once(degraded, policy_of(limit, mode));
      ASSERT_TRUE(failed.ok()) << failed.status().to_string();
      EXPECT_TRUE(failed->degraded);
      EXPECT_EQ(failed->verdict.limit, size) << "failure mode " << static_cast<int>(mode);
    }
  }
}

}  // namespace
}  // namespace sluice::service
