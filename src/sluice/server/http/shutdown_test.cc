// A handler may answer after the server is gone: a password hash on the admin API's work queue
// outlived the server in CI (ASan: a use after free in the response's dispatch to an I/O context
// already destroyed), and a store may answer late. Such late calls must do nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>

#include "sluice/server/http/router.h"
#include "sluice/server/http/server.h"
#include "sluice/server/http/test_http_client.h"

namespace sluice::http {
namespace {

using test::RawConnection;

TEST(ServerShutdownTest, AnExchangeAnsweredAfterTheServerIsGoneDoesNothing) {
  std::promise<std::shared_ptr<Exchange>> held;
  auto router = std::make_shared<Router>();
  router->add("GET", "/hold", [&held](std::shared_ptr<Exchange> exchange) {
    held.set_value(std::move(exchange));  // answered later, from another thread
  });
  StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::start({.port = 0, .io_threads = 1, .shutdown_timeout = 0}, router);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  StatusOr<RawConnection> client = RawConnection::open((*server)->port());
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  ASSERT_TRUE(client->send(test::format_request("GET", "/hold")).ok());
  std::future<std::shared_ptr<Exchange>> handed = held.get_future();
  ASSERT_EQ(handed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::shared_ptr<Exchange> exchange = handed.get();

  server->reset();  // shut down and destroyed while the exchange is still held
  EXPECT_TRUE(client->closed_by_peer(2'000));

  bool offloaded_ran = false;
  exchange->offload([&offloaded_ran] { offloaded_ran = true; });
  exchange->after(std::chrono::microseconds(1),
                  [] { ADD_FAILURE() << "a timer of a gone server"; });
  exchange->respond(Response{.status = 200, .body = "late"});
  exchange.reset();
  EXPECT_FALSE(offloaded_ran) << "work offloaded for a closed connection ran";
}

}  // namespace
}  // namespace sluice::http
