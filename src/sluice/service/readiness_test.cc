#include "sluice/service/readiness.h"

#include <gtest/gtest.h>

#include "sluice/core/clock.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::service {
namespace {

TEST(Readiness, AnsweringStoreWithoutPolicyDatabaseIsReady) {
  store::MemoryStore memory(SystemClock::instance());
  const Readiness readiness(memory);
  bool answered = false;
  readiness.check_store([&answered](const Status& store, Micros latency) {
    EXPECT_TRUE(store.ok()) << store.to_string();
    EXPECT_GE(latency, 0);
    answered = true;
  });
  EXPECT_TRUE(answered);  // the memory store answers inside the call
  EXPECT_FALSE(readiness.has_policies());
  EXPECT_TRUE(readiness.check().ok());
}

TEST(Readiness, PolicyDatabaseThatDoesNotAnswerIsNotReady) {
  store::MemoryStore memory(SystemClock::instance());
  const Readiness readiness(memory, [] { return unavailable("database down"); });
  EXPECT_TRUE(readiness.has_policies());
  EXPECT_EQ(readiness.check_policies().code(), StatusCode::kUnavailable);
  EXPECT_EQ(readiness.check().message(), "database down");
}

TEST(Readiness, TheProbeChangesNothingItCouldBeAskedAgainForever) {
  store::MemoryStore memory(SystemClock::instance());
  const Readiness readiness(memory);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(readiness.check().ok()) << i;
}

}  // namespace
}  // namespace sluice::service
