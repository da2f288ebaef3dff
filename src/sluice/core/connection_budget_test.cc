#include "sluice/core/connection_budget.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(ConnectionBudgetTest, BothPortsTogetherNeverPassTheDescriptorsLeftAfterTheReserve) {
  struct Case {
    std::uint64_t limit;
    std::size_t http;
    std::size_t grpc;
  };
  const Case cases[] = {
      {1024, 672, 224},        // ulimit -n 1024: (1024 - 128) / 4 for gRPC, the rest for HTTP
      {20'000, 18'848, 1024},  // gRPC's share stops at 1024
      {4224, 3072, 1024},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.limit);
    const ConnectionBudget budget = connection_budget(c.limit, /*with_grpc=*/true);
    EXPECT_EQ(budget.http, c.http);
    EXPECT_EQ(budget.grpc, c.grpc);
    EXPECT_LE(budget.http + budget.grpc, c.limit - kReservedDescriptors);
  }
}

TEST(ConnectionBudgetTest, WithoutGrpcHttpTakesAllButTheReserve) {
  EXPECT_EQ(connection_budget(1024, false).http, 896U);
  EXPECT_EQ(connection_budget(1024, false).grpc, 0U);
  // 0 (or unlimited) counts as a million; nothing passes a million less the reserve.
  EXPECT_EQ(connection_budget(0, false).http, 1'000'000U - kReservedDescriptors);
}

TEST(ConnectionBudgetTest, TinyLimitsStillLeaveEachPortSixteen) {
  const ConnectionBudget budget = connection_budget(100, true);
  EXPECT_EQ(budget.http, 16U);
  EXPECT_EQ(budget.grpc, 16U);
}

}  // namespace
}  // namespace sluice
