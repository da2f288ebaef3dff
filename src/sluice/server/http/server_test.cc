// The server in process on a free port, spoken to over real sockets: a raw client that can send
// anything, and RemoteLimiter. Redis cases use a real redis-server (tests/testing).
#include "sluice/server/http/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "sluice/client/remote_limiter.h"
#include "sluice/policy/document.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/test_http_client.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/descriptor_shortage.h"
#include "testing/eventually.h"
#include "testing/redis_server.h"

namespace sluice::http {
namespace {

using nlohmann::json;
using test::http_request;
using test::RawConnection;
using test::RawResponse;

constexpr std::string_view kPolicies = R"([
  {"name": "demo.api", "apps": ["checkout"], "limits": [
     {"algorithm": "token_bucket", "capacity": 5, "refill": 2, "period": "1s"},
     {"algorithm": "fixed_window", "limit": 100, "window": "1h"}]},
  {"name": "jobs", "apps": ["*"], "limits": [
     {"algorithm": "concurrency", "limit": 2, "lease_ttl": "1m"}]},
  {"name": "slow", "apps": ["*"], "limits": [
     {"algorithm": "token_bucket", "capacity": 1, "refill": 1, "period": "200ms"}]},
  {"name": "hourly", "apps": ["*"], "limits": [
     {"algorithm": "fixed_window", "limit": 1, "window": "1h"}]},
  {"name": "shadowed", "apps": ["*"], "mode": "shadow", "limits": [
     {"algorithm": "fixed_window", "limit": 1, "window": "1h"}]}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

service::LimiterOptions with_lookup(service::LimiterOptions options,
                                    const service::PolicyLookup& lookup) {
  options.policies = &lookup;
  return options;
}

// A complete decision server: store, limiter, API, router, HTTP server.
class TestServer {
 public:
  explicit TestServer(store::Store& store, HttpServerOptions options = {},
                      service::LimiterOptions limiter_options = {})
      : local_(SystemClock::instance()),
        lookup_(policies()),
        limiter_(store, &local_, with_lookup(limiter_options, lookup_)),
        api_(limiter_, store, metrics_, {.store_metrics = [this](std::string& out) {
               if (const HttpServer* server = started_.load()) {
                 write_connection_metrics(out, server->connection_stats());
               }
             }}) {
    auto router = std::make_shared<Router>();
    api_.add_routes(*router);
    options.port = 0;
    options.io_threads = options.io_threads == 0 ? 2 : options.io_threads;
    options.access_log_sink = [this](std::string_view line) {
      std::lock_guard lock(mutex_);
      log_.emplace_back(line);
    };
    options.on_response = [this](std::string_view route, int status, Micros duration) {
      metrics_.record_http(route, status, duration);
    };
    StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::start(options, router);
    EXPECT_TRUE(server.ok()) << server.status().to_string();
    if (server.ok()) server_ = std::move(*server);
    started_.store(server_.get());
  }

  std::uint16_t port() const { return server_->port(); }
  HttpServer& server() { return *server_; }
  const service::Limiter& limiter() const { return limiter_; }
  std::vector<std::string> log() {
    std::lock_guard lock(mutex_);
    return log_;
  }

 private:
  store::MemoryStore local_;
  service::StaticPolicyLookup lookup_;
  service::Limiter limiter_;
  Metrics metrics_;
  DecisionApi api_;
  std::mutex mutex_;
  std::vector<std::string> log_;
  std::atomic<const HttpServer*> started_{nullptr};  // server_, for /metrics on I/O threads
  std::unique_ptr<HttpServer> server_;
};

std::string acquire_body(std::string_view key, std::string_view policy = "demo.api",
                         std::string_view app = "checkout") {
  return json{{"app", app}, {"policy", policy}, {"key", key}}.dump();
}

json body_of(const RawResponse& response) { return json::parse(response.body); }

class ServerTest : public ::testing::Test {
 protected:
  store::MemoryStore store_{SystemClock::instance()};
};

TEST_F(ServerTest, HealthReadinessOpenApiAndMetricsAnswer) {
  TestServer server(store_);
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.status().to_string();
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(body_of(*health)["status"], "ok");
  StatusOr<RawResponse> ready = http_request(server.port(), "GET", "/readyz");
  EXPECT_EQ(ready->status, 200);
  StatusOr<RawResponse> openapi = http_request(server.port(), "GET", "/openapi.json");
  EXPECT_EQ(openapi->status, 200);
  EXPECT_EQ(body_of(*openapi)["openapi"], "3.0.3");
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("m"))->status, 200);
  StatusOr<RawResponse> metrics = http_request(server.port(), "GET", "/metrics");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  for (const char* needle :
       {"sluice_decisions_total{policy=\"demo.api\",outcome=\"allowed\"} 1",
        "sluice_shadow_denials_total{policy=\"demo.api\"} 0",
        "sluice_degraded_decisions_total{policy=\"demo.api\"} 0", "sluice_store_errors_total 0",
        "sluice_decision_duration_seconds_bucket{policy=\"demo.api\",le=\"+Inf\"} 1",
        "sluice_http_requests_total{route=\"/v1/acquire\",code=\"200\"} 1"}) {
    EXPECT_NE(metrics->body.find(needle), std::string::npos) << needle << "\n" << metrics->body;
  }
}

TEST_F(ServerTest, AcquireCarriesEveryRateLimitHeaderAndEchoesTheRequestId) {
  TestServer server(store_);
  StatusOr<RawResponse> response = http_request(server.port(), "POST", "/v1/acquire",
                                                acquire_body("alice"), {{"X-Request-Id", "abc-1"}});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("Content-Type"), "application/json");
  EXPECT_EQ(response->header("X-Request-Id"), "abc-1");
  EXPECT_EQ(response->header("X-RateLimit-Limit"), "5");
  EXPECT_EQ(response->header("X-RateLimit-Remaining"), "4");
  const std::int64_t reset = std::stoll(response->header("X-RateLimit-Reset").value_or("0"));
  const std::int64_t now = SystemClock::instance().now() / kMicrosPerSecond;
  EXPECT_GE(reset, now);
  EXPECT_LE(reset, now + 2);
  EXPECT_EQ(response->header("RateLimit-Limit"), "5");
  EXPECT_EQ(response->header("RateLimit-Remaining"), "4");
  EXPECT_EQ(response->header("RateLimit-Reset"), "1");
  EXPECT_EQ(response->header("RateLimit-Policy"),
            "\"demo.api\";q=5;w=3, \"demo.api/1\";q=100;w=3600");
  EXPECT_EQ(response->header("RateLimit"), "\"demo.api\";r=4;t=1");
  const json decision = body_of(*response);
  for (const char* field : {"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms",
                            "delay_ms", "lease", "policy", "limit_index", "mode", "degraded"}) {
    EXPECT_TRUE(decision.contains(field)) << field;
  }
  // Without an id, one is generated; an unacceptable one is replaced.
  StatusOr<RawResponse> generated =
      http_request(server.port(), "GET", "/healthz", "", {{"X-Request-Id", "bad id"}});
  ASSERT_TRUE(generated->header("X-Request-Id"));
  EXPECT_EQ(generated->header("X-Request-Id")->size(), 16u);
  const std::vector<std::string> log = server.log();
  ASSERT_GE(log.size(), 2u);
  const json line = json::parse(log[0]);
  EXPECT_EQ(line["request_id"], "abc-1");
  EXPECT_EQ(line["route"], "/v1/acquire");
  EXPECT_EQ(line["status"], 200);
}

TEST_F(ServerTest, DenialIsA200WithAllowedFalse) {
  TestServer server(store_);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(
        body_of(*http_request(server.port(), "POST", "/v1/acquire", acquire_body("d")))["allowed"],
        true);
  }
  StatusOr<RawResponse> denied =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("d"));
  EXPECT_EQ(denied->status, 200);
  EXPECT_EQ(body_of(*denied)["allowed"], false);
  // Refill 2/s: the next token is at most 500 ms away (real time passed since the burst).
  const int retry_ms = body_of(*denied)["retry_after_ms"].get<int>();
  EXPECT_GT(retry_ms, 0);
  EXPECT_LE(retry_ms, 500);
  EXPECT_EQ(denied->header("RateLimit"), "\"demo.api\";r=0;t=1");
}

TEST_F(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  TestServer server(store_);
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  ASSERT_TRUE(connection.ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(connection->send(test::format_request("GET", "/healthz")).ok());
    StatusOr<RawResponse> response = connection->read();
    ASSERT_TRUE(response.ok()) << i << ": " << response.status().to_string();
    EXPECT_EQ(response->status, 200);
  }
  // Pipelined: two requests in one write, two answers in order.
  ASSERT_TRUE(
      connection
          ->send(test::format_request("GET", "/healthz") + test::format_request("GET", "/nope"))
          .ok());
  EXPECT_EQ(connection->read()->status, 200);
  EXPECT_EQ(connection->read()->status, 404);
}

TEST_F(ServerTest, InvalidInputIs400ProblemNamingTheFieldAndTheConnectionKeepsServing) {
  TestServer server(store_);
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  ASSERT_TRUE(connection.ok());
  struct Case {
    const char* name;
    std::string body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"malformed JSON", R"({"app": "checkout", "policy": )", "body"},
      {"not an object", "[1, 2]", "body"},
      {"unknown field", R"({"app": "checkout", "policy": "demo.api", "key": "k", "x": 1})", "x"},
      {"wrong type", R"({"app": "checkout", "policy": "demo.api", "key": 7})", "key"},
      {"missing field", R"({"app": "checkout", "key": "k"})", "policy"},
      {"cost out of range", R"({"app": "checkout", "policy": "demo.api", "key": "k",
                                "cost": 1000000001})",
       "cost"},
      {"negative wait", R"({"app": "checkout", "policy": "demo.api", "key": "k",
                           "wait_ms": -1})",
       "wait_ms"},
      {"empty body", "", "body"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(connection->send(test::format_request("POST", "/v1/acquire", c.body)).ok());
    StatusOr<RawResponse> response = connection->read();
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    EXPECT_EQ(response->status, 400);
    EXPECT_EQ(response->header("Content-Type"), "application/problem+json");
    const json problem = body_of(*response);
    EXPECT_EQ(problem["status"], 400);
    EXPECT_TRUE(problem["detail"].is_string());
    ASSERT_TRUE(problem["errors"].is_array());
    EXPECT_EQ(problem["errors"][0]["field"], c.field) << problem.dump();
  }
  ASSERT_TRUE(
      connection->send(test::format_request("POST", "/v1/acquire", acquire_body("after"))).ok());
  StatusOr<RawResponse> after = connection->read();
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(body_of(*after)["allowed"], true);
}

TEST_F(ServerTest, UnknownPolicyOrUnlistedAppIs404AndWrongMethodIs405) {
  TestServer server(store_);
  StatusOr<RawResponse> missing =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("k", "nope"));
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->header("Content-Type"), "application/problem+json");
  StatusOr<RawResponse> unlisted =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("k", "demo.api", "other"));
  EXPECT_EQ(unlisted->status, 404);
  EXPECT_NE(body_of(*unlisted)["detail"].get<std::string>().find("no such policy for this app"),
            std::string::npos);
  StatusOr<RawResponse> wrong = http_request(server.port(), "GET", "/v1/acquire");
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->header("Allow"), "POST");
  EXPECT_EQ(http_request(server.port(), "GET", "/v2/whatever")->status, 404);
}

TEST_F(ServerTest, OversizedBodyIs413AndOversizedHeadersAre431ThenTheServerStillServes) {
  TestServer server(store_, {.max_header_bytes = 2048, .max_body_bytes = 1024});
  {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    const std::string body(2000, ' ');
    ASSERT_TRUE(connection->send(test::format_request("POST", "/v1/acquire", body)).ok());
    StatusOr<RawResponse> response = connection->read();
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    EXPECT_EQ(response->status, 413);
    EXPECT_EQ(response->header("Content-Type"), "application/problem+json");
    EXPECT_EQ(body_of(*response)["status"], 413);
    EXPECT_TRUE(connection->closed_by_peer());
  }
  {
    // Chunked bodies have no Content-Length to refuse up front: the limit still holds.
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    std::string request =
        "POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 4; ++i) request += "200\r\n" + std::string(512, 'a') + "\r\n";
    request += "0\r\n\r\n";
    ASSERT_TRUE(connection->send(request).ok());
    EXPECT_EQ(connection->read()->status, 413);
  }
  {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(
        connection
            ->send(test::format_request("GET", "/healthz", "", {{"X-Big", std::string(4096, 'h')}}))
            .ok());
    StatusOr<RawResponse> response = connection->read();
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    EXPECT_EQ(response->status, 431);
    EXPECT_EQ(response->header("Content-Type"), "application/problem+json");
  }
  EXPECT_EQ(http_request(server.port(), "GET", "/healthz")->status, 200);
}

// A chunked body's framing is parsed only in whole lines: a chunk-size line or a trailer section
// that never ends must be refused once it outgrows the header limit, not buffered without bound
// (one connection once grew the server by 1.8 GB this way). Extensions spread over many small
// chunks are capped per message.
TEST_F(ServerTest, EndlessChunkLinesTrailersAndExtensionsAreRefusedEarly) {
  TestServer server(store_, {.max_header_bytes = 2048, .max_body_bytes = 1024});
  const std::string head =
      "POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  struct Case {
    std::string name;
    std::string bytes;  // never a complete message
    int status;
    std::string detail;
  };
  std::string many_extensions = head;
  for (int i = 0; i < 100; ++i) many_extensions += "1;e=" + std::string(60, 'x') + "\r\na\r\n";
  std::string endless_trailer = head + "0\r\n";
  for (int i = 0; i < 600; ++i) endless_trailer += "X-T" + std::to_string(i) + ": v\r\n";
  const std::vector<Case> cases = {
      {"chunk-size line", head + "1;a=" + std::string(8192, 'b'), 400, "chunk-size line"},
      {"trailer section", endless_trailer, 431, "trailer section"},
      {"extensions", many_extensions, 400, "chunk extensions"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE(connection->send(c.bytes).ok());
    StatusOr<RawResponse> response = connection->read(3'000);
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    EXPECT_EQ(response->status, c.status) << response->body;
    EXPECT_EQ(response->header("Content-Type"), "application/problem+json");
    EXPECT_NE(body_of(*response)["detail"].get<std::string>().find(c.detail), std::string::npos)
        << response->body;
    EXPECT_TRUE(connection->closed_by_peer());
  }
  // A well-formed chunked request with a trailer and short extensions is still served.
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  const std::string body = acquire_body("chunked");
  ASSERT_TRUE(connection
                  ->send(head + "5;note=first\r\n" + body.substr(0, 5) + "\r\n" +
                         (std::stringstream() << std::hex << body.size() - 5).str() + "\r\n" +
                         body.substr(5) + "\r\n0\r\nX-Trailer: t\r\n\r\n")
                  .ok());
  StatusOr<RawResponse> response = connection->read();
  ASSERT_TRUE(response.ok()) << response.status().to_string();
  EXPECT_EQ(response->status, 200) << response->body;
}

TEST_F(ServerTest, MalformedHttpIs400AndCloses) {
  TestServer server(store_);
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  ASSERT_TRUE(connection->send("GARBAGE\x01 / HTTP/9.9\r\n\r\n").ok());
  StatusOr<RawResponse> response = connection->read();
  ASSERT_TRUE(response.ok()) << response.status().to_string();
  EXPECT_EQ(response->status, 400);
  EXPECT_TRUE(connection->closed_by_peer());
  EXPECT_EQ(http_request(server.port(), "GET", "/healthz")->status, 200);
}

TEST_F(ServerTest, ExpectContinueIsHonoured) {
  TestServer server(store_);
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  const std::string body = acquire_body("continue");
  ASSERT_TRUE(connection
                  ->send("POST /v1/acquire HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         "Content-Type: application/json\r\n"
                         "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n")
                  .ok());
  StatusOr<RawResponse> interim = connection->read();
  ASSERT_TRUE(interim.ok()) << interim.status().to_string();
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(connection->send(body).ok());
  StatusOr<RawResponse> response = connection->read();
  EXPECT_EQ(response->status, 200);
}

TEST_F(ServerTest, BatchDecidesInOrder) {
  TestServer server(store_);
  json requests = json::array();
  for (int i = 0; i < 6; ++i) requests.push_back(json::parse(acquire_body("batch")));
  requests.push_back({{"app", "checkout"}, {"policy", "missing"}, {"key", "k"}});
  StatusOr<RawResponse> response =
      http_request(server.port(), "POST", "/v1/acquire/batch", json{{"requests", requests}}.dump());
  ASSERT_EQ(response->status, 200);
  const json decisions = body_of(*response)["decisions"];
  ASSERT_EQ(decisions.size(), 7u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(decisions[i]["remaining"], 4 - i);
  EXPECT_EQ(decisions[5]["allowed"], false);
  EXPECT_EQ(decisions[6]["status"], 404);
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/acquire/batch", R"({"requests": 3})")->status,
            400);
}

TEST_F(ServerTest, CheckAnswers200Then429WithHeadersAndProblem) {
  TestServer server(store_);
  const std::vector<Header> headers = {
      {"X-Sluice-App", "checkout"}, {"X-Sluice-Policy", "demo.api"}, {"X-Sluice-Key", "gw"}};
  for (int i = 0; i < 5; ++i) {
    StatusOr<RawResponse> ok = http_request(server.port(), "GET", "/v1/check", "", headers);
    ASSERT_EQ(ok->status, 200);
    EXPECT_EQ(ok->header("X-RateLimit-Remaining"), std::to_string(4 - i));
  }
  StatusOr<RawResponse> denied = http_request(server.port(), "GET", "/v1/check", "", headers);
  EXPECT_EQ(denied->status, 429);
  EXPECT_EQ(denied->header("Content-Type"), "application/problem+json");
  EXPECT_EQ(denied->header("Retry-After"), "1");
  EXPECT_EQ(denied->header("X-RateLimit-Remaining"), "0");
  EXPECT_EQ(denied->header("RateLimit"), "\"demo.api\";r=0;t=1");
  const json problem = body_of(*denied);
  EXPECT_EQ(problem["type"], "https://iana.org/assignments/http-problem-types#quota-exceeded");
  EXPECT_EQ(problem["status"], 429);
  EXPECT_EQ(problem["violated-policies"], json::array({"demo.api"}));
}

TEST_F(ServerTest, ShadowPolicyAllowsAndCountsWouldBeDenials) {
  TestServer server(store_);
  const std::string body = acquire_body("s", "shadowed", "any");
  ASSERT_EQ(body_of(*http_request(server.port(), "POST", "/v1/acquire", body))["allowed"], true);
  const json second = body_of(*http_request(server.port(), "POST", "/v1/acquire", body));
  EXPECT_EQ(second["allowed"], true);
  EXPECT_EQ(second["shadow_denied"], true);
  EXPECT_EQ(second["mode"], "shadow");
  const std::string metrics = http_request(server.port(), "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_shadow_denials_total{policy=\"shadowed\"} 1"), std::string::npos);
}

TEST_F(ServerTest, WaitRetriesOnATimerUntilAllowed) {
  TestServer server(store_);
  StatusOr<std::unique_ptr<RemoteLimiter>> client = RemoteLimiter::create({.port = server.port()});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->try_acquire("slow", "a", "w", 1)->verdict.allowed);
  ASSERT_FALSE((*client)->try_acquire("slow", "a", "w", 1)->verdict.allowed);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<service::Decision> waited =
      (*client)->acquire("slow", "a", "w", 1, 2 * kMicrosPerSecond);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(waited.ok()) << waited.status().to_string();
  EXPECT_TRUE(waited->verdict.allowed);
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  // A wait that ends before retry_after answers the denial at once.
  ASSERT_TRUE((*client)->try_acquire("hourly", "a", "w", 1)->verdict.allowed);
  const auto start2 = std::chrono::steady_clock::now();
  StatusOr<service::Decision> short_wait =
      (*client)->acquire("hourly", "a", "w", 1, 2 * kMicrosPerSecond);
  EXPECT_FALSE(short_wait->verdict.allowed);
  EXPECT_LT(std::chrono::steady_clock::now() - start2, std::chrono::milliseconds(1500));
}

TEST_F(ServerTest, WaitingRequestsDoNotHoldTheIoThread) {
  // A max_pending only so the limiter counts the decisions it holds (the gauge below).
  TestServer server(store_, {.io_threads = 1}, {.max_pending = 1000});
  StatusOr<std::unique_ptr<RemoteLimiter>> client = RemoteLimiter::create({.port = server.port()});
  ASSERT_TRUE((*client)->try_acquire("slow", "a", "busy", 1)->verdict.allowed);
  std::atomic<bool> waiter_done{false};
  std::thread waiter([&] {
    (void)(*client)->acquire("slow", "a", "busy", 1, 2 * kMicrosPerSecond);
    waiter_done = true;
  });
  // The waiter's decision is in the limiter: being decided on the one I/O thread, then parked on
  // a timer for ~200 ms. A request sent now is behind it on that thread: answered meanwhile only
  // if the parked one does not hold the thread.
  ASSERT_TRUE(test::eventually([&] { return server.limiter().metrics().pending() == 1; },
                               std::chrono::seconds(10)));
  EXPECT_EQ(http_request(server.port(), "GET", "/healthz")->status, 200);
  EXPECT_FALSE(waiter_done.load());
  waiter.join();
}

TEST_F(ServerTest, ConcurrencyLeasesAreSharedBetweenTwoRemoteClients) {
  TestServer server(store_);
  auto a = RemoteLimiter::create({.port = server.port()}).value();
  auto b = RemoteLimiter::create({.port = server.port()}).value();
  StatusOr<service::Decision> first = a->try_acquire("jobs", "worker", "queue", 1);
  StatusOr<service::Decision> second = b->try_acquire("jobs", "worker", "queue", 1);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(first->verdict.allowed && second->verdict.allowed);
  ASSERT_TRUE(first->lease && second->lease);
  EXPECT_NE(*first->lease, *second->lease);
  StatusOr<service::Decision> third = a->try_acquire("jobs", "worker", "queue", 1);
  EXPECT_FALSE(third->verdict.allowed);
  EXPECT_TRUE(third->verdict.retry_after);
  // b renews its own lease; a releases b's lease (leases are not owned by clients).
  EXPECT_EQ(b->renew("jobs", "worker", "queue", *second->lease).value(), true);
  EXPECT_EQ(a->release("jobs", "worker", "queue", *second->lease).value(), true);
  EXPECT_EQ(b->release("jobs", "worker", "queue", *second->lease).value(), false);  // idempotent
  EXPECT_EQ(b->renew("jobs", "worker", "queue", *second->lease).value(), false);
  StatusOr<service::Decision> fourth = b->try_acquire("jobs", "worker", "queue", 1);
  EXPECT_TRUE(fourth->verdict.allowed);
  // Lease calls check the app like acquire does.
  EXPECT_EQ(a->release("demo.api", "intruder", "queue", *first->lease).status().code(),
            StatusCode::kNotFound);
  // Both clients reuse their connections.
  EXPECT_LE(a->stats().connects, 1u);
  EXPECT_LE(b->stats().connects, 1u);
}

TEST_F(ServerTest, RemoteLimiterMapsErrorsAndBatches) {
  TestServer server(store_);
  auto client = RemoteLimiter::create({.port = server.port()}).value();
  EXPECT_EQ(client->try_acquire("nope", "a", "k", 1).status().code(), StatusCode::kNotFound);
  const Status bad = client->try_acquire("demo.api", "checkout", "k", -1).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("cost"), std::string::npos);
  StatusOr<std::vector<StatusOr<service::Decision>>> batch =
      client->try_acquire_batch({{.policy = "demo.api", .app = "checkout", .key = "rb"},
                                 {.policy = "demo.api", .app = "nobody", .key = "rb"}});
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_TRUE((*batch)[0].ok());
  EXPECT_EQ((*batch)[1].status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(client->ready().ok());
}

TEST_F(ServerTest, RemoteLimiterReconnectsAfterTheServerClosedAnIdleConnection) {
  TestServer server(store_, {.idle_timeout = 100 * kMicrosPerMilli});
  auto client = RemoteLimiter::create({.port = server.port()}).value();
  ASSERT_TRUE(client->try_acquire("demo.api", "checkout", "idle", 1).ok());
  ASSERT_TRUE(test::eventually([&] { return server.server().connection_stats().open == 0; },
                               std::chrono::seconds(10)))
      << "the server drops the idle connection";
  StatusOr<service::Decision> again = client->try_acquire("demo.api", "checkout", "idle", 1);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->verdict.remaining, 3);  // charged once per call, not twice
  EXPECT_EQ(client->stats().connects, 2u);
}

TEST_F(ServerTest, RemoteLimiterReportsAnUnreachableServer) {
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  auto client = RemoteLimiter::create({.port = *port}).value();
  EXPECT_EQ(client->try_acquire("demo.api", "checkout", "k", 1).status().code(),
            StatusCode::kUnavailable);
}

TEST_F(ServerTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  TestServer server(store_, {.idle_timeout = 100 * kMicrosPerMilli});
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  ASSERT_TRUE(connection->send(test::format_request("GET", "/healthz")).ok());
  EXPECT_EQ(connection->read()->status, 200);
  EXPECT_TRUE(connection->closed_by_peer(2'000));
}

TEST_F(ServerTest, SlowRequestsAreCutAfterTheReadTimeout) {
  TestServer server(store_, {.read_timeout = 100 * kMicrosPerMilli});
  StatusOr<RawConnection> connection = RawConnection::open(server.port());
  ASSERT_TRUE(connection->send("GET /healthz HTTP/1.1\r\nHost: x\r\n").ok());  // never finished
  EXPECT_TRUE(connection->closed_by_peer(2'000));
}

// Waits (bounded) until the server has accepted `count` connections.
bool accepted(HttpServer& server, std::size_t count) {
  for (int i = 0; i < 2000 && server.connections() < count; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return server.connections() == count;
}

// Issue 16: 1 100 idle connections against 1 024 descriptors made /healthz time out.
TEST_F(ServerTest, AtTheConnectionCapANewConnectionReplacesTheLongestIdleOne) {
  TestServer server(store_, {.io_threads = 1, .max_connections = 4, .max_connections_per_peer = 4});
  std::vector<RawConnection> idle;
  for (int i = 0; i < 4; ++i) {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok());
    idle.push_back(std::move(*connection));
    ASSERT_TRUE(accepted(server.server(), idle.size()));
  }
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.status().to_string();
  EXPECT_EQ(health->status, 200);
  EXPECT_TRUE(idle[0].closed_by_peer(2'000));  // idle the longest
  const HttpServer::ConnectionStats stats = server.server().connection_stats();
  EXPECT_EQ(stats.evicted, 1u);
  EXPECT_EQ(stats.refused, 0u);
  // The others still work.
  ASSERT_TRUE(idle[3].send(test::format_request("GET", "/healthz")).ok());
  EXPECT_EQ(idle[3].read()->status, 200);
}

// Issue 32 H1, on the HTTP port too: out of descriptors, accept fails (EMFILE). A client waiting
// in the backlog is accepted and closed at once with the reserved descriptor (it learns now
// instead of hanging), and once descriptors are free the port answers again within seconds.
// The clients' sockets are made before the shortage and only connected during it (connect takes
// no descriptor), so the one descriptor the reserve frees cannot go to a client socket instead of
// the server's accept: that race failed this test once in CI, and once under TSan.
TEST_F(ServerTest, OutOfDescriptorsWaitingClientsAreToldAndThePortAnswersOnceTheyAreBack) {
  TestServer server(store_, {.io_threads = 1});
  std::vector<RawConnection> waiting;
  for (int i = 0; i < 4; ++i) {
    StatusOr<RawConnection> connection = RawConnection::unconnected();
    ASSERT_TRUE(connection.ok()) << connection.status().to_string();
    waiting.push_back(std::move(*connection));
  }
  test::DescriptorShortage shortage(/*room=*/0);
  ASSERT_TRUE(shortage.ok());
  for (RawConnection& client : waiting) ASSERT_TRUE(client.connect(server.port()).ok());
  // No descriptor is left for the server: every accept fails, and each client in the backlog is
  // taken with the reserve and closed.
  const bool told = std::any_of(waiting.begin(), waiting.end(),
                                [](RawConnection& client) { return client.closed_by_peer(1'500); });
  const std::uint64_t accept_errors = server.server().connection_stats().accept_errors;
  waiting.clear();
  shortage.end();
  EXPECT_GT(accept_errors, 0u) << "accept never ran out of descriptors";
  EXPECT_TRUE(told) << "a client waiting while descriptors ran out was never closed";
  const auto freed = std::chrono::steady_clock::now();
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.status().to_string();
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - freed, std::chrono::seconds(5));
}

TEST_F(ServerTest, OneAddressCannotTakeEveryConnectionAndBusyOnesAreNeverCut) {
  TestServer server(store_,
                    {.io_threads = 1, .max_connections = 100, .max_connections_per_peer = 2});
  EXPECT_EQ(server.server().max_connections_per_peer(), 2u);
  // Two requests from 127.0.0.1 that have started and not finished: busy, not idle.
  std::vector<RawConnection> busy;
  for (int i = 0; i < 2; ++i) {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE(connection->send("GET /healthz HTTP/1.1\r\nHost: x\r\n").ok());
    busy.push_back(std::move(*connection));
  }
  // Answered from another address, on the same I/O thread: the bytes above have been read.
  StatusOr<RawConnection> other = RawConnection::open(server.port(), 2);
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  ASSERT_TRUE(other->send(test::format_request("GET", "/healthz")).ok());
  EXPECT_EQ(other->read()->status, 200);

  StatusOr<RawConnection> third = RawConnection::open(server.port());
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->closed_by_peer(2'000));
  EXPECT_EQ(server.server().connection_stats().refused, 1u);
  for (RawConnection& connection : busy) {  // both finish their requests
    ASSERT_TRUE(connection.send("\r\n").ok());
    EXPECT_EQ(connection.read()->status, 200);
  }
  ASSERT_TRUE(other->send(test::format_request("GET", "/healthz")).ok());
  EXPECT_EQ(other->read()->status, 200);
}

TEST_F(ServerTest, ANewConnectionThatSendsNothingIsClosedSoonerThanAnIdleKeepAlive) {
  TestServer server(store_, {.first_request_timeout = 100 * kMicrosPerMilli});
  StatusOr<RawConnection> silent = RawConnection::open(server.port());
  StatusOr<RawConnection> answered = RawConnection::open(server.port());
  ASSERT_TRUE(silent.ok() && answered.ok());
  ASSERT_TRUE(answered->send(test::format_request("GET", "/healthz")).ok());
  EXPECT_EQ(answered->read()->status, 200);
  EXPECT_TRUE(silent->closed_by_peer(2'000));
  EXPECT_FALSE(answered->closed_by_peer(300));  // the 60 s idle_timeout applies now
}

TEST_F(ServerTest, GracefulShutdownFinishesInFlightRequestsAndClosesIdleOnes) {
  TestServer server(store_, {}, {.max_pending = 1000});  // counts the decisions it holds
  auto client = RemoteLimiter::create({.port = server.port()}).value();
  ASSERT_TRUE(client->try_acquire("slow", "a", "drain", 1)->verdict.allowed);
  StatusOr<RawConnection> idle = RawConnection::open(server.port());
  ASSERT_TRUE(idle->send(test::format_request("GET", "/healthz")).ok());
  ASSERT_EQ(idle->read()->status, 200);

  StatusOr<service::Decision> in_flight = unavailable("not run");
  std::thread waiter(
      [&] { in_flight = client->acquire("slow", "a", "drain", 1, 2 * kMicrosPerSecond); });
  ASSERT_TRUE(test::eventually([&] { return server.limiter().metrics().pending() == 1; },
                               std::chrono::seconds(10)))
      << "the request is parked";
  server.server().shutdown();
  waiter.join();
  ASSERT_TRUE(in_flight.ok()) << in_flight.status().to_string();
  EXPECT_TRUE(in_flight->verdict.allowed);
  EXPECT_TRUE(idle->closed_by_peer(1'000));
  EXPECT_FALSE(RawConnection::open(server.port()).ok());  // no longer accepting
}

TEST_F(ServerTest, RandomBytesAndTruncatedRequestsNeverCrashTheServer) {
  TestServer server(store_, {.read_timeout = 200 * kMicrosPerMilli});
  std::mt19937_64 random(20251122);
  const std::vector<std::string> seeds = {
      test::format_request("POST", "/v1/acquire", acquire_body("fuzz")),
      test::format_request(
          "POST", "/v1/acquire/batch",
          R"({"requests": [{"app": "checkout", "policy": "demo.api", "key": "f"}]})"),
      test::format_request(
          "GET", "/v1/check", "",
          {{"X-Sluice-App", "checkout"}, {"X-Sluice-Policy", "demo.api"}, {"X-Sluice-Key", "f"}}),
      test::format_request("POST", "/v1/leases/abc/release",
                           R"({"app": "x", "policy": "jobs", "key": "k"})"),
  };
  for (int round = 0; round < 300; ++round) {
    std::string bytes;
    const int kind = static_cast<int>(random() % 4);
    const std::string& seed = seeds[random() % seeds.size()];
    if (kind == 0) {  // random bytes
      bytes.resize(random() % 512);
      for (char& c : bytes) c = static_cast<char>(random());
    } else if (kind == 1) {  // truncated request
      bytes = seed.substr(0, random() % seed.size());
    } else if (kind == 2) {  // flipped bytes
      bytes = seed;
      for (int i = 0; i < 4; ++i) bytes[random() % bytes.size()] = static_cast<char>(random());
    } else {  // body replaced by random JSON-ish characters
      const std::string alphabet = "{}[]\":,0123456789-eE.truefalsn\\ ";
      const std::size_t at = seed.find("\r\n\r\n") + 4;
      std::string body(seed.size() - at, ' ');
      for (char& c : body) c = alphabet[random() % alphabet.size()];
      bytes = seed.substr(0, at) + body;
    }
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok()) << "round " << round;
    (void)connection->send(bytes);
    if (round % 10 == 0) (void)connection->read(300);  // sometimes wait for the answer
  }
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("fine"))->status, 200);
}

// Issue 32 (info): JSON answers lacked X-Content-Type-Options: nosniff. Every response carries
// it once: decisions, problems from handlers, the server's own refusals, /metrics.
TEST_F(ServerTest, EveryResponseSaysNosniffOnce) {
  TestServer server(store_, {.max_body_bytes = 64});
  const auto nosniff_once = [](const RawResponse& response) {
    int count = 0;
    for (const Header& header : response.headers) {
      if (iequals(header.name, "X-Content-Type-Options")) {
        ++count;
        if (header.value != "nosniff") return false;
      }
    }
    return count == 1;
  };
  std::vector<StatusOr<RawResponse>> answers;
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", acquire_body("n")));
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", "{"));
  answers.push_back(http_request(server.port(), "GET", "/no/such/path"));
  answers.push_back(http_request(server.port(), "DELETE", "/healthz"));
  answers.push_back(http_request(server.port(), "GET", "/metrics"));
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", std::string(100, ' ')));
  StatusOr<RawConnection> malformed = RawConnection::open(server.port());
  ASSERT_TRUE(malformed.ok());
  ASSERT_TRUE(malformed->send("NOT HTTP\r\n\r\n").ok());
  answers.push_back(malformed->read());
  const std::vector<int> statuses = {200, 400, 404, 405, 200, 413, 400};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(answers[i].ok()) << answers[i].status().to_string();
    EXPECT_EQ(answers[i]->status, statuses[i]);
    EXPECT_TRUE(nosniff_once(*answers[i]));
  }
}

// JSON answers end their line, whoever wrote them: a decision, the OpenAPI document, a handler's
// problem, the router's 404 and 405, the body limit's 413 and the parser's 400; exactly once.
TEST_F(ServerTest, EveryJsonBodyEndsWithOneNewline) {
  TestServer server(store_, {.max_body_bytes = 64});
  std::vector<StatusOr<RawResponse>> answers;
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", acquire_body("nl")));
  answers.push_back(http_request(server.port(), "GET", "/healthz"));
  answers.push_back(http_request(server.port(), "GET", "/openapi.json"));
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", "{"));
  answers.push_back(http_request(server.port(), "GET", "/no/such/path"));
  answers.push_back(http_request(server.port(), "DELETE", "/healthz"));
  answers.push_back(http_request(server.port(), "POST", "/v1/acquire", std::string(100, ' ')));
  StatusOr<RawConnection> malformed = RawConnection::open(server.port());
  ASSERT_TRUE(malformed.ok());
  ASSERT_TRUE(malformed->send("NOT HTTP\r\n\r\n").ok());
  answers.push_back(malformed->read());
  for (std::size_t i = 0; i < answers.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(answers[i].ok()) << answers[i].status().to_string();
    const std::string& body = answers[i]->body;
    ASSERT_GE(body.size(), 2u);
    EXPECT_EQ(body.back(), '\n') << body;
    EXPECT_NE(body[body.size() - 2], '\n') << body;
    EXPECT_TRUE(json::accept(body)) << body;
  }
}

// Sanitizers shadow memory and keep freed blocks in quarantine: resident memory then says
// nothing about what the server holds, and only the budget's own counter is checked.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kResidentMemoryIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kResidentMemoryIsMeaningful = false;
#else
constexpr bool kResidentMemoryIsMeaningful = true;
#endif
#else
constexpr bool kResidentMemoryIsMeaningful = true;
#endif

// The process's resident memory (bytes), from /proc/self/statm.
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0;
  std::int64_t resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Reads /metrics and returns the value of the unlabelled sample `name` (-1 when absent).
std::int64_t metric_value(std::uint16_t port, std::string_view name) {
  StatusOr<RawResponse> metrics = http_request(port, "GET", "/metrics");
  if (!metrics.ok()) return -1;
  const std::string needle = "\n" + std::string(name) + " ";
  const std::size_t at = metrics->body.find(needle);
  if (at == std::string::npos) return -1;
  return std::stoll(metrics->body.substr(at + needle.size()));
}

// Issue 32 M6: 10 200 connections each parking a wait_ms acquire filled max_pending_decisions,
// and another client's acquires on an unrelated policy got 503. Now one client address parks at
// most its share; another client's decisions, on another policy, are still decided.
TEST(PendingShareTest, OneClientParkingWaitsCannotStarveAnotherClientsDecisions) {
  ManualClock clock(1'700'000'000'000'000);
  store::MemoryStore store(clock);
  TimerQueue timers(clock, kMicrosPerMilli, TimerQueue::Threading::kManual);
  constexpr int kMaxPending = 8;
  // `sluice serve`'s shares: a client holds at most half the places, waits at most half, a
  // client or a policy at most half of those.
  const service::PendingBounds bounds = service::with_default_shares({.total = kMaxPending});
  TestServer server(store, {.io_threads = 1},
                    {.timers = &timers,
                     .max_pending = bounds.total,
                     .max_pending_per_client = bounds.per_client,
                     .max_waiting = bounds.waiting,
                     .max_waiting_per_client = bounds.waiting_per_client,
                     .max_waiting_per_policy = bounds.waiting_per_policy});
  // The attacker (127.0.0.1) takes the one token of "slow" (1 per 200 ms), then parks waits.
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("a", "slow"))->status,
            200);
  const std::string park =
      json{{"app", "x"}, {"policy", "slow"}, {"key", "a"}, {"wait_ms", 1000}}.dump();
  std::vector<RawConnection> parked;
  for (int i = 0; i < kMaxPending; ++i) {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE(connection->send(test::format_request("POST", "/v1/acquire", park)).ok());
    parked.push_back(std::move(*connection));
  }
  // Every one of them is parked or refused (the clock stands still: none can be allowed).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const auto settled = [&] {
    return metric_value(server.port(), "sluice_decisions_pending") +
               metric_value(server.port(), "sluice_decisions_overloaded_total") ==
           kMaxPending;
  };
  while (!settled() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(settled());
  const std::int64_t held = metric_value(server.port(), "sluice_decisions_pending");
  EXPECT_LT(held, kMaxPending) << "one client holds every pending place";
  EXPECT_LE(held, static_cast<std::int64_t>(bounds.waiting_per_client));

  // Another client (127.0.0.2), another policy: decided.
  StatusOr<RawConnection> other = RawConnection::open(server.port(), 2);
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(other->send(test::format_request("POST", "/v1/acquire", acquire_body("b"))).ok());
    StatusOr<RawResponse> answer = other->read();
    ASSERT_TRUE(answer.ok()) << answer.status().to_string();
    EXPECT_EQ(answer->status, 200) << answer->body;
  }
  // ... and so is a wait of its own.
  ASSERT_TRUE(
      other
          ->send(test::format_request(
              "POST", "/v1/acquire",
              json{{"app", "checkout"}, {"policy", "demo.api"}, {"key", "b"}, {"wait_ms", 1000}}
                  .dump()))
          .ok());
  StatusOr<RawResponse> waited = other->read();
  ASSERT_TRUE(waited.ok()) << waited.status().to_string();
  EXPECT_EQ(waited->status, 200) << waited->body;

  // The parked waits end within their wait_ms of (manual) time; each is answered once.
  for (int step = 0; step < 8; ++step) {
    clock.advance(200 * kMicrosPerMilli);
    timers.fire_due();
  }
  for (RawConnection& connection : parked) {
    StatusOr<RawResponse> answer = connection.read();
    ASSERT_TRUE(answer.ok()) << answer.status().to_string();
    EXPECT_TRUE(answer->status == 200 || answer->status == 503) << answer->status;
  }
}

// Issue 32 M8: 3 000 connections each sending 1 MiB − 1 byte of body held about 1 MB each
// (2.7–3.0 GB) and slowed /healthz to seconds. Bodies in memory now share one budget: the
// resident memory stays under it (plus a stated slack), /healthz and small decision requests
// keep answering at once.
TEST_F(ServerTest, ManySlowLargeBodiesStayWithinTheBodyBudget) {
  constexpr std::size_t kBody = std::size_t{1} << 20;
  constexpr int kFlood = 200;
  constexpr std::int64_t kBudget = std::int64_t{8} << 20;
  constexpr std::int64_t kSlack = std::int64_t{32} << 20;  // allocator, buffers, threads
  TestServer server(store_, {.io_threads = 2,
                             .max_body_bytes = kBody,
                             .max_buffered_body_bytes = static_cast<std::size_t>(kBudget)});
  ASSERT_EQ(http_request(server.port(), "GET", "/healthz")->status, 200);
  const std::int64_t before = resident_bytes();
  const std::string head =
      "POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(kBody) + "\r\n\r\n";
  const std::string body(kBody - 1, ' ');  // all but the last byte: the request never completes
  std::vector<RawConnection> flood;
  for (int i = 0; i < kFlood; ++i) {
    StatusOr<RawConnection> connection = RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok()) << connection.status().to_string();
    // A refused body closes the connection: later sends may fail, which is the point.
    if (connection->send(head).ok()) (void)connection->send(body);
    flood.push_back(std::move(*connection));
  }
  const auto started = std::chrono::steady_clock::now();
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok()) << health.status().to_string();
  EXPECT_EQ(health->status, 200);
  StatusOr<RawResponse> decided =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("small"));
  ASSERT_TRUE(decided.ok()) << decided.status().to_string();
  EXPECT_EQ(decided->status, 200) << decided->body;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  const std::int64_t grown = resident_bytes() - before;
  if (kResidentMemoryIsMeaningful) {
    EXPECT_LT(grown, kBudget + kSlack) << "resident memory grew by " << (grown >> 20) << " MiB";
  }
  const HttpServer::ConnectionStats stats = server.server().connection_stats();
  EXPECT_LE(stats.buffered_body_bytes, static_cast<std::size_t>(kBudget));
  EXPECT_GT(stats.body_budget_refusals, 0u);
  EXPECT_EQ(metric_value(server.port(), "sluice_http_body_budget_refusals_total"),
            static_cast<std::int64_t>(stats.body_budget_refusals));
  // The budget comes back as the bodies go.
  flood.clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.server().connection_stats().buffered_body_bytes != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(server.server().connection_stats().buffered_body_bytes, 0u);
}

TEST(ServerOptionsTest, BindFailureIsReported) {
  store::MemoryStore store(SystemClock::instance());
  TestServer first(store);
  auto router = std::make_shared<Router>();
  StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::start({.port = first.port(), .io_threads = 1}, router);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("bind"), std::string::npos);
}

// Redis: two servers over one Redis share every decision; a dead Redis makes /readyz 503 and
// decisions degrade by the policy's failure mode.
class RedisServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    redis_ = std::move(*server);
  }

  std::unique_ptr<store::RedisStore> make_store() {
    StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
        {.host = "127.0.0.1", .port = redis_->port(), .command_timeout = 200 * kMicrosPerMilli});
    EXPECT_TRUE(client.ok());
    return std::make_unique<store::RedisStore>(
        std::shared_ptr<redis::Multiplexer>(std::move(*client)));
  }

  std::unique_ptr<test::RedisServer> redis_;
};

TEST_F(RedisServerTest, TwoServersShareDecisions) {
  auto store_a = make_store();
  auto store_b = make_store();
  TestServer a(*store_a, {.blocking_threads = 4});
  TestServer b(*store_b, {.blocking_threads = 4});
  auto client_a = RemoteLimiter::create({.port = a.port()}).value();
  auto client_b = RemoteLimiter::create({.port = b.port()}).value();
  for (int i = 0; i < 5; ++i) {
    RemoteLimiter& client = i % 2 == 0 ? *client_a : *client_b;
    StatusOr<service::Decision> d = client.try_acquire("demo.api", "checkout", "shared", 1);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_TRUE(d->verdict.allowed);
    EXPECT_EQ(d->verdict.remaining, 4 - i);
  }
  EXPECT_FALSE(client_a->try_acquire("demo.api", "checkout", "shared", 1)->verdict.allowed);
  EXPECT_FALSE(client_b->try_acquire("demo.api", "checkout", "shared", 1)->verdict.allowed);
  // Leases taken through one server are released through the other.
  StatusOr<service::Decision> lease = client_a->try_acquire("jobs", "w", "q", 1);
  ASSERT_TRUE(lease.ok() && lease->lease);
  EXPECT_EQ(client_b->release("jobs", "w", "q", *lease->lease).value(), true);
  EXPECT_EQ(http_request(a.port(), "GET", "/readyz")->status, 200);
}

TEST_F(RedisServerTest, DeadRedisMakesReadyz503AndDecisionsDegrade) {
  auto store = make_store();
  TestServer server(*store, {.blocking_threads = 4});
  ASSERT_EQ(http_request(server.port(), "GET", "/readyz")->status, 200);
  ASSERT_TRUE(redis_->kill_hard().ok());
  StatusOr<RawResponse> ready = http_request(server.port(), "GET", "/readyz");
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->header("Content-Type"), "application/problem+json");
  StatusOr<RawResponse> degraded =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("down"));
  ASSERT_EQ(degraded->status, 200);
  EXPECT_EQ(body_of(*degraded)["degraded"], true);  // demo.api fails open
  StatusOr<RawResponse> lease = http_request(server.port(), "POST", "/v1/leases/x/release",
                                             R"({"app": "a", "policy": "jobs", "key": "q"})");
  EXPECT_EQ(lease->status, 503);
  const std::string metrics = http_request(server.port(), "GET", "/metrics")->body;
  EXPECT_NE(metrics.find("sluice_degraded_decisions_total{policy=\"demo.api\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("sluice_store_errors_total 0"), std::string::npos);
  ASSERT_TRUE(redis_->restart().ok());
}

// A stalled Redis (paused for 3 s) holds no thread of the server: /healthz answers at once, and a
// decision is answered by its failure mode at its store deadline, long before Redis wakes up.
TEST_F(RedisServerTest, StalledRedisBlocksNoThreadAndDecisionsMeetTheirDeadline) {
  StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
      {.host = "127.0.0.1", .port = redis_->port(), .command_timeout = 10 * kMicrosPerSecond});
  ASSERT_TRUE(client.ok());
  store::RedisStore store(std::shared_ptr<redis::Multiplexer>(std::move(*client)));
  TestServer server(store, {.io_threads = 1}, {.store_timeout = 100 * kMicrosPerMilli});
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("warm"))->status, 200);

  StatusOr<std::unique_ptr<redis::Multiplexer>> sleeper =
      redis::Multiplexer::create({.host = "127.0.0.1", .port = redis_->port()});
  ASSERT_TRUE(sleeper.ok());
  // CLIENT PAUSE stalls every other client's commands as DEBUG SLEEP would, but answers its own
  // caller first: once it has answered, Redis is stalled, with no guessing how long to wait.
  StatusOr<redis::Reply> paused = (*sleeper)->command({"CLIENT", "PAUSE", "3000", "ALL"});
  ASSERT_TRUE(paused.ok()) << paused.status().to_string();

  const auto started = std::chrono::steady_clock::now();
  StatusOr<RawResponse> degraded =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("stalled"));
  ASSERT_TRUE(degraded.ok()) << degraded.status().to_string();
  EXPECT_EQ(degraded->status, 200);
  EXPECT_EQ(body_of(*degraded)["degraded"], true) << degraded->body;  // demo.api fails open
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_LT(elapsed, std::chrono::seconds(2)) << "answers waited for the stalled Redis";
  (void)(*sleeper)->command({"CLIENT", "UNPAUSE"});
}

// Issue 16 (overload): decisions waiting on a stalled Redis are bounded. Beyond max_pending a
// decision request gets 503 with Retry-After at once, while /healthz keeps answering and the
// decisions in flight are answered when Redis wakes up.
TEST_F(RedisServerTest, BeyondMaxPendingDecisionsASaturatedServerAnswers503WithRetryAfter) {
  StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
      {.host = "127.0.0.1", .port = redis_->port(), .command_timeout = 30 * kMicrosPerSecond});
  ASSERT_TRUE(client.ok());
  store::RedisStore store(std::shared_ptr<redis::Multiplexer>(std::move(*client)));
  TestServer server(store, {.io_threads = 1},
                    {.store_timeout = 30 * kMicrosPerSecond, .max_pending = 2});
  ASSERT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("warm"))->status, 200);
  StatusOr<std::unique_ptr<redis::Multiplexer>> pauser =
      redis::Multiplexer::create({.host = "127.0.0.1", .port = redis_->port()});
  ASSERT_TRUE(pauser.ok());
  // WRITE mode stalls every script (EVALSHA) yet lets CLIENT UNPAUSE through.
  ASSERT_TRUE((*pauser)->command({"CLIENT", "PAUSE", "30000", "WRITE"}).ok());

  std::vector<test::RawConnection> held;
  for (const char* key : {"held-1", "held-2"}) {
    StatusOr<test::RawConnection> connection = test::RawConnection::open(server.port());
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE(
        connection->send(test::format_request("POST", "/v1/acquire", acquire_body(key))).ok());
    held.push_back(std::move(*connection));
  }
  // Both are in flight once the gauge says so (each stalls in Redis).
  const auto metric = [&](std::string_view line) {
    StatusOr<RawResponse> metrics = http_request(server.port(), "GET", "/metrics");
    return metrics.ok() && metrics->body.find(line) != std::string::npos;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!metric("sluice_decisions_pending 2\n") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(metric("sluice_decisions_pending 2\n"));

  StatusOr<RawResponse> refused =
      http_request(server.port(), "POST", "/v1/acquire", acquire_body("third"));
  ASSERT_TRUE(refused.ok()) << refused.status().to_string();
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->header("Retry-After"), "1");
  EXPECT_NE(body_of(*refused)["detail"].get<std::string>().find("overloaded"), std::string::npos)
      << refused->body;
  StatusOr<RawResponse> check = http_request(
      server.port(), "GET", "/v1/check", {},
      {{"X-Sluice-App", "checkout"}, {"X-Sluice-Policy", "demo.api"}, {"X-Sluice-Key", "k"}});
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->status, 503);
  EXPECT_EQ(check->header("Retry-After"), "1");
  StatusOr<RawResponse> batch = http_request(
      server.port(), "POST", "/v1/acquire/batch",
      json{{"requests", {json::parse(acquire_body("b1")), json::parse(acquire_body("b2"))}}}
          .dump());
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->status, 503);
  EXPECT_EQ(batch->header("Retry-After"), "1");
  StatusOr<RawResponse> health = http_request(server.port(), "GET", "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_TRUE(metric("sluice_decisions_overloaded_total 4\n"));  // 1 + 1 + a batch of 2

  ASSERT_TRUE((*pauser)->command({"CLIENT", "UNPAUSE"}).ok());
  for (test::RawConnection& connection : held) {
    StatusOr<RawResponse> answered = connection.read(10'000);
    ASSERT_TRUE(answered.ok()) << answered.status().to_string();
    EXPECT_EQ(answered->status, 200);
    EXPECT_EQ(body_of(*answered)["degraded"], false) << answered->body;
  }
  EXPECT_EQ(http_request(server.port(), "POST", "/v1/acquire", acquire_body("after"))->status, 200);
}

}  // namespace
}  // namespace sluice::http
