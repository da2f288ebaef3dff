// What the Redis store's tests share (redis_store_*_test.cc): a redis-server of the test's own on
// a free loopback port, stopped by PID, and a client on it over which each test makes its stores.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/store.h"
#include "testing/redis_server.h"

namespace sluice::store {

class RedisServerTest : public testing::Test {
 protected:
  // Subclasses that make stores call this first and return on HasFatalFailure().
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Multiplexer>> client =
        redis::Multiplexer::create({.port = server_->port()});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    client_ = std::shared_ptr<redis::Multiplexer>(std::move(*client));
  }

  // The balance a quota peek (cost 0) reports; -999 999 when it fails (and the test fails).
  static std::int64_t balance(Store& store, const SubjectRef& ref) {
    StatusOr<Decision> peek = store::apply_quota_now(store, ref, {.cost = 0});
    EXPECT_TRUE(peek.ok()) << peek.status().to_string();
    return peek.ok() ? peek->verdict.balance.value_or(-999'999) : -999'999;
  }

  std::unique_ptr<test::RedisServer> server_;
  std::shared_ptr<redis::Multiplexer> client_;
};

}  // namespace sluice::store
