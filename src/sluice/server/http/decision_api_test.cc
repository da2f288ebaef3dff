#include "sluice/server/http/decision_api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "sluice/policy/document.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::http {
namespace {

using nlohmann::json;

constexpr Micros kEpoch = 1'700'000'000'000'000;

// Runs offloaded work at once. Waits are the limiter's: its timers fire when the test moves the
// manual clock and calls fire_due(), so they take no real time.
class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(ManualClock& clock) : clock_(clock) {}
  void respond(Response response) override {
    ++responses;
    last = std::move(response);
  }
  void after(std::chrono::microseconds delay, std::function<void()> fn) override {
    clock_.advance(delay.count());
    fn();
  }
  void offload(std::function<void()> fn) override { fn(); }

  int responses = 0;
  Response last;

 private:
  ManualClock& clock_;
};

policy::Policy parse_policy(std::string_view text) {
  policy::ParsedPolicy parsed = policy::policy_from_text(text);
  EXPECT_TRUE(parsed.policy) << policy::join_errors(parsed.errors);
  return *parsed.policy;
}

class DecisionApiTest : public ::testing::Test {
 protected:
  DecisionApiTest()
      : store_(clock_),
        lookup_({parse_policy(R"({"name": "demo.api", "apps": ["checkout"], "limits": [
                   {"algorithm": "token_bucket", "capacity": 2, "refill": 1, "period": "1s"}]})"),
                 parse_policy(R"({"name": "metered.api", "apps": ["checkout"], "max_debt": 10,
                   "limits": [{"algorithm": "token_bucket", "capacity": 10, "refill": 10,
                               "period": "1s"}]})"),
                 parse_policy(R"({"name": "leased.api", "apps": ["checkout"], "limits": [
                   {"algorithm": "concurrency", "limit": 2, "lease_ttl": "1s"}]})"),
                 parse_policy(R"({"name": "boxed.api", "apps": ["checkout"], "limits": [
                   {"algorithm": "fixed_window", "limit": 1, "window": "10s"}],
                   "penalty": {"after": 1, "within": "10s", "block": "1m", "escalate": 1},
                   "retry_jitter": "50%"})")}),
        limiter_(store_, &store_, {.policies = &lookup_, .timers = &timers_}),
        api_(limiter_, store_, metrics_, {.clock = &clock_}) {
    api_.add_routes(router_);
  }

  // Runs one request through the router, as the server would, and returns its answer.
  Response call(std::string method, std::string path, std::string body,
                std::vector<Header> headers = {}) {
    send(std::move(method), std::move(path), std::move(body), std::move(headers));
    EXPECT_EQ(transport_->responses, 1);
    return transport_->last;
  }

  // Hands one request to its handler; the answer may come later (transport_->responses). A POST
  // says Content-Type: application/json unless `headers` name a Content-Type (an empty value:
  // none at all).
  void send(std::string method, std::string path, std::string body,
            std::vector<Header> headers = {}) {
    const auto type = std::find_if(headers.begin(), headers.end(), [](const Header& header) {
      return iequals(header.name, "Content-Type");
    });
    if (type == headers.end() && method == "POST") {
      headers.push_back({"Content-Type", "application/json"});
    } else if (type != headers.end() && type->value.empty()) {
      headers.erase(type);
    }
    Request request{
        .method = method, .target = path, .headers = std::move(headers), .body = std::move(body)};
    const std::size_t question = path.find('?');
    request.path = path.substr(0, question);
    if (question != std::string::npos) request.query = path.substr(question + 1);
    Router::Match match = router_.match(request.method, request.path);
    EXPECT_NE(match.handler, nullptr) << method << " " << path;
    transport_ = std::make_shared<FakeTransport>(clock_);
    (*match.handler)(
        std::make_shared<Exchange>(std::move(request), std::move(match.params), transport_));
  }

  ManualClock clock_{kEpoch};
  TimerQueue timers_{clock_, kMicrosPerMilli, TimerQueue::Threading::kManual};
  store::MemoryStore store_;
  service::StaticPolicyLookup lookup_;
  service::Limiter limiter_;
  Metrics metrics_;
  DecisionApi api_;
  Router router_;
  std::shared_ptr<FakeTransport> transport_;
};

TEST(ParseAcquireTest, ReadsEveryFieldWithDefaults) {
  const ParsedAcquire parsed =
      parse_acquire(json{{"app", "a"}, {"policy", "p"}, {"key", ""}}, 1000);
  ASSERT_TRUE(parsed.input) << parsed.errors.size();
  EXPECT_EQ(parsed.input->cost, 1);
  EXPECT_EQ(parsed.input->wait_ms, 0);
  EXPECT_EQ(parsed.input->key, "");
}

TEST(ParseAcquireTest, ReportsEveryProblemNamingItsField) {
  struct Case {
    const char* name;
    json body;
    std::vector<std::string> fields;
  };
  const std::vector<Case> cases = {
      {"not an object", json::array(), {"body"}},
      {"missing all", json::object(), {"app", "policy", "key"}},
      {"wrong types", {{"app", 1}, {"policy", true}, {"key", nullptr}}, {"app", "policy", "key"}},
      {"empty app", {{"app", ""}, {"policy", "p"}, {"key", "k"}}, {"app"}},
      {"cost negative", {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"cost", -1}}, {"cost"}},
      {"cost too big",
       {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"cost", 1'000'000'001}},
       {"cost"}},
      {"cost huge unsigned",
       {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"cost", 18'000'000'000'000'000'000u}},
       {"cost"}},
      {"cost float", {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"cost", 1.5}}, {"cost"}},
      {"cost string", {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"cost", "1"}}, {"cost"}},
      {"wait too long",
       {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"wait_ms", 1001}},
       {"wait_ms"}},
      {"unknown field", {{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"kee", "x"}}, {"kee"}},
      {"key too long", {{"app", "a"}, {"policy", "p"}, {"key", std::string(1025, 'k')}}, {"key"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ParsedAcquire parsed = parse_acquire(c.body, 1000);
    EXPECT_FALSE(parsed.input);
    std::vector<std::string> fields;
    for (const FieldError& e : parsed.errors) fields.push_back(e.field);
    EXPECT_EQ(fields, c.fields);
  }
}

TEST(ParseAcquireTest, WaitingIsRefusedWhereNotSupported) {
  const ParsedAcquire parsed =
      parse_acquire(json{{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"wait_ms", 5}}, 0);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0].field, "wait_ms");
  EXPECT_TRUE(
      parse_acquire(json{{"app", "a"}, {"policy", "p"}, {"key", "k"}, {"wait_ms", 0}}, 0).input);
}

TEST(ParseJsonBodyTest, RefusesMalformedAndDeeplyNestedJson) {
  Response error;
  EXPECT_TRUE(parse_json_body(R"({"a": [1, 2, {"b": "]]]"}]})", error));
  EXPECT_FALSE(parse_json_body("{\"app\": ", error));
  EXPECT_EQ(error.status, 400);
  EXPECT_NE(error.body.find("malformed JSON"), std::string::npos);
  EXPECT_FALSE(parse_json_body(std::string(100, '[') + std::string(100, ']'), error));
  EXPECT_NE(error.body.find("nested deeper"), std::string::npos);
  EXPECT_FALSE(parse_json_body("\"\xff\"", error));  // invalid UTF-8
}

TEST_F(DecisionApiTest, AcquireAnswersTheDecisionWithHeaders) {
  const Response response =
      call("POST", "/v1/acquire", R"({"app": "checkout", "policy": "demo.api", "key": "alice"})");
  EXPECT_EQ(response.status, 200);
  const json body = json::parse(response.body);
  EXPECT_EQ(body["allowed"], true);
  EXPECT_EQ(body["remaining"], 1);
  bool found = false;
  for (const Header& h : response.headers) found = found || h.name == "RateLimit-Policy";
  EXPECT_TRUE(found);
}

TEST_F(DecisionApiTest, ChargeAndRefundAnswerTheDecisionWithItsBalance) {
  const auto post = [&](std::string_view path, std::int64_t cost) {
    const Response response =
        call("POST", std::string(path),
             R"({"app": "checkout", "policy": "metered.api", "key": "tenant", "cost": )" +
                 std::to_string(cost) + "}");
    EXPECT_EQ(response.status, 200) << response.body;
    return json::parse(response.body);
  };
  // Capacity 10, 10 per second, max_debt 10.
  const json charged = post("/v1/charge", 15);
  EXPECT_EQ(charged["allowed"], true);
  EXPECT_EQ(charged["balance"], -5);
  EXPECT_EQ(charged["remaining"], 0);
  EXPECT_EQ(charged["reset_after_ms"], 1500);
  EXPECT_EQ(charged["policy"], "metered.api");
  const json refused = post("/v1/charge", 6);  // -11 < -10
  EXPECT_EQ(refused["allowed"], false);
  EXPECT_EQ(refused["balance"], -5);
  EXPECT_EQ(refused["retry_after_ms"], 100);
  const json acquired =
      json::parse(call("POST", "/v1/acquire",
                       R"({"app": "checkout", "policy": "metered.api", "key": "tenant"})")
                      .body);
  EXPECT_EQ(acquired["allowed"], false) << "the debt delays later requests";
  EXPECT_EQ(acquired["retry_after_ms"], 600);
  EXPECT_FALSE(acquired.contains("balance"));
  const json refunded = post("/v1/refund", 100);
  EXPECT_EQ(refunded["allowed"], true);
  EXPECT_EQ(refunded["balance"], 10) << "capped at capacity";
}

TEST_F(DecisionApiTest, ReserveAnswersAnIdThatSettleEndsOnce) {
  const Response reserved = call(
      "POST", "/v1/reserve",
      R"({"app": "checkout", "policy": "metered.api", "key": "llm", "cost": 8, "ttl_ms": 5000})");
  ASSERT_EQ(reserved.status, 200) << reserved.body;
  const json body = json::parse(reserved.body);
  EXPECT_EQ(body["allowed"], true);
  EXPECT_EQ(body["balance"], 2);
  ASSERT_TRUE(body["reservation"].is_string());
  const std::string settle =
      R"({"app": "checkout", "policy": "metered.api", "key": "llm", "cost": 3, "reservation": ")" +
      body["reservation"].get<std::string>() + "\"}";
  const Response settled = call("POST", "/v1/settle", settle);
  ASSERT_EQ(settled.status, 200) << settled.body;
  EXPECT_EQ(json::parse(settled.body)["balance"], 7) << "5 of the estimate refunded";
  EXPECT_FALSE(json::parse(settled.body).contains("reservation"));
  EXPECT_EQ(call("POST", "/v1/settle", settle).status, 404) << "settled once";
  // An expired reservation: its estimate stays charged.
  const json expiring = json::parse(
      call("POST", "/v1/reserve",
           R"({"app": "checkout", "policy": "metered.api", "key": "llm2", "cost": 4, "ttl_ms": 1})")
          .body);
  clock_.advance(kMicrosPerMilli);
  EXPECT_EQ(call("POST", "/v1/settle",
                 R"({"app": "checkout", "policy": "metered.api", "key": "llm2", "cost": 0,
                     "reservation": ")" +
                     expiring["reservation"].get<std::string>() + "\"}")
                .status,
            404);
  const Response no_id = call("POST", "/v1/settle",
                              R"({"app": "checkout", "policy": "metered.api", "key": "llm",
                                  "cost": 1})");
  EXPECT_EQ(no_id.status, 400);
  EXPECT_EQ(call("POST", "/v1/reserve",
                 R"({"app": "checkout", "policy": "metered.api", "key": "k", "cost": 1,
                     "ttl_ms": 0})")
                .status,
            400);
}

TEST_F(DecisionApiTest, ChargeAndRefundRefuseBadInputByField) {
  const Response no_cost =
      call("POST", "/v1/charge", R"({"app": "checkout", "policy": "metered.api", "key": "k"})");
  EXPECT_EQ(no_cost.status, 400);
  EXPECT_EQ(json::parse(no_cost.body)["errors"][0]["field"], "cost");
  const Response negative =
      call("POST", "/v1/refund",
           R"({"app": "checkout", "policy": "metered.api", "key": "k", "cost": -1, "wait_ms": 1})");
  EXPECT_EQ(negative.status, 400);
  EXPECT_EQ(json::parse(negative.body)["errors"].size(), 2u) << negative.body;
  const Response leases =
      call("POST", "/v1/charge",
           R"({"app": "checkout", "policy": "leased.api", "key": "k", "cost": 1})");
  EXPECT_EQ(leases.status, 400);
  EXPECT_NE(json::parse(leases.body)["detail"].get<std::string>().find("concurrency"),
            std::string::npos);
  EXPECT_EQ(call("POST", "/v1/refund",
                 R"({"app": "mobile", "policy": "metered.api", "key": "k", "cost": 1})")
                .status,
            404);
}

TEST_F(DecisionApiTest, UnknownPolicyAndUnlistedAppAreBoth404) {
  EXPECT_EQ(
      call("POST", "/v1/acquire", R"({"app": "checkout", "policy": "nope", "key": "k"})").status,
      404);
  const Response other =
      call("POST", "/v1/acquire", R"({"app": "mobile", "policy": "demo.api", "key": "k"})");
  EXPECT_EQ(other.status, 404);
  EXPECT_NE(json::parse(other.body)["detail"].get<std::string>().find("no such policy"),
            std::string::npos);
}

TEST_F(DecisionApiTest, WaitRetriesAtRetryAfterUntilAllowed) {
  const std::string body =
      R"({"app": "checkout", "policy": "demo.api", "key": "w", "cost": 2, "wait_ms": 5000})";
  EXPECT_EQ(json::parse(call("POST", "/v1/acquire", body).body)["allowed"], true);
  send("POST", "/v1/acquire", body);
  // Empty bucket, refill 1/s, cost 2: allowed exactly 2 s later, after one timer.
  clock_.advance(2 * kMicrosPerSecond - 1);
  timers_.fire_due();
  EXPECT_EQ(transport_->responses, 0);
  clock_.advance(1);
  EXPECT_EQ(timers_.fire_due(), 1u);
  ASSERT_EQ(transport_->responses, 1);
  EXPECT_EQ(json::parse(transport_->last.body)["allowed"], true);
}

TEST_F(DecisionApiTest, WaitGivesUpAtOnceWhenRetryAfterIsPastTheDeadline) {
  const std::string body =
      R"({"app": "checkout", "policy": "demo.api", "key": "w", "cost": 2, "wait_ms": 1000})";
  (void)call("POST", "/v1/acquire", body);
  const Response denied = call("POST", "/v1/acquire", body);
  EXPECT_EQ(json::parse(denied.body)["allowed"], false);
  EXPECT_EQ(json::parse(denied.body)["retry_after_ms"], 2000);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(DecisionApiTest, BatchAnswersInOrderWithProblemsInPlace) {
  const Response response = call("POST", "/v1/acquire/batch", R"({"requests": [
      {"app": "checkout", "policy": "demo.api", "key": "b"},
      {"app": "checkout", "policy": "missing", "key": "b"},
      {"app": "checkout", "policy": "demo.api", "key": "b", "cost": "x"},
      {"app": "checkout", "policy": "demo.api", "key": "b"},
      {"app": "checkout", "policy": "demo.api", "key": "b"}]})");
  ASSERT_EQ(response.status, 200);
  const json decisions = json::parse(response.body)["decisions"];
  ASSERT_EQ(decisions.size(), 5u);
  EXPECT_EQ(decisions[0]["allowed"], true);
  EXPECT_EQ(decisions[1]["status"], 404);
  EXPECT_EQ(decisions[2]["status"], 400);
  EXPECT_EQ(decisions[2]["errors"][0]["field"], "cost");
  EXPECT_EQ(decisions[3]["allowed"], true);
  EXPECT_EQ(decisions[4]["allowed"], false);
}

TEST_F(DecisionApiTest, CheckDeniesWithQuotaExceededProblemAndRetryAfter) {
  const std::vector<Header> headers = {{"x-sluice-app", "checkout"},
                                       {"X-Sluice-Policy", "demo.api"},
                                       {"X-Sluice-Key", "gw"},
                                       {"X-Sluice-Cost", "2"}};
  EXPECT_EQ(call("GET", "/v1/check", "", headers).status, 200);
  const Response denied = call("GET", "/v1/check", "", headers);
  EXPECT_EQ(denied.status, 429);
  EXPECT_EQ(denied.content_type, "application/problem+json");
  const json problem = json::parse(denied.body);
  EXPECT_EQ(problem["type"], "https://iana.org/assignments/http-problem-types#quota-exceeded");
  EXPECT_EQ(problem["violated-policies"], json::array({"demo.api"}));
  std::string retry_after;
  for (const Header& h : denied.headers) {
    if (h.name == "Retry-After") retry_after = h.value;
  }
  EXPECT_EQ(retry_after, "2");
  EXPECT_EQ(call("GET", "/v1/check?deny_status=403", "", headers).status, 403);
}

// The penalty box and Retry-After jitter on the wire: the blocked decision's JSON carries
// blocked_until (Unix ms) and the exact retry_after_ms; /v1/check's Retry-After is spread over
// [60, 90] s (retry_jitter 50 %) while its problem detail keeps the exact 60 s.
TEST_F(DecisionApiTest, APenaltyBlockShowsInTheBodyAndRetryAfterIsJittered) {
  const std::string acquire = R"({"app": "checkout", "policy": "boxed.api", "key": "mallory"})";
  EXPECT_EQ(json::parse(call("POST", "/v1/acquire", acquire).body)["allowed"], true);
  const json blocked = json::parse(call("POST", "/v1/acquire", acquire).body);
  EXPECT_EQ(blocked["allowed"], false);
  EXPECT_EQ(blocked["blocked_until"], (kEpoch + 60 * kMicrosPerSecond) / kMicrosPerMilli);
  EXPECT_EQ(blocked["retry_after_ms"], 60'000);
  const std::vector<Header> headers = {
      {"X-Sluice-App", "checkout"}, {"X-Sluice-Policy", "boxed.api"}, {"X-Sluice-Key", "mallory"}};
  std::set<int> seen;
  for (int i = 0; i < 50; ++i) {
    const Response denied = call("GET", "/v1/check", "", headers);
    ASSERT_EQ(denied.status, 429);
    EXPECT_NE(json::parse(denied.body)["detail"].get<std::string>().find("again in 60 s"),
              std::string::npos);
    for (const Header& h : denied.headers) {
      if (h.name == "Retry-After") seen.insert(std::stoi(h.value));
    }
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_GE(*seen.begin(), 60);
  EXPECT_LE(*seen.rbegin(), 90);
  EXPECT_GT(seen.size(), 1u) << "50 draws from 31 seconds all fell on one";
}

TEST_F(DecisionApiTest, CheckNamesMissingHeaders) {
  const Response response = call("GET", "/v1/check", "", {{"X-Sluice-App", "checkout"}});
  EXPECT_EQ(response.status, 400);
  const json problem = json::parse(response.body);
  ASSERT_EQ(problem["errors"].size(), 2u);
  EXPECT_EQ(problem["errors"][0]["field"], "X-Sluice-Policy");
  EXPECT_EQ(problem["errors"][1]["field"], "X-Sluice-Key");
}

TEST_F(DecisionApiTest, MetricsCountDecisionsByPolicyAndOutcome) {
  const std::string body = R"({"app": "checkout", "policy": "demo.api", "key": "m", "cost": 2})";
  (void)call("POST", "/v1/acquire", body);
  (void)call("POST", "/v1/acquire", body);
  const std::string text = call("GET", "/metrics", "").body;
  EXPECT_NE(text.find("sluice_decisions_total{policy=\"demo.api\",outcome=\"allowed\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_decisions_total{policy=\"demo.api\",outcome=\"denied\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("sluice_decision_duration_seconds_count{policy=\"demo.api\"} 2"),
            std::string::npos);
}

TEST_F(DecisionApiTest, OpenApiDocumentIsEmbeddedJson) {
  const Response response = call("GET", "/openapi.json", "");
  const json document = json::parse(response.body);
  EXPECT_EQ(document["openapi"], "3.0.3");
  EXPECT_TRUE(document["paths"].contains("/v1/acquire"));
}

}  // namespace
}  // namespace sluice::http

namespace sluice::http {
namespace {

// Issue 32 L2: a page on another site made the victim's browser POST a text/plain acquire
// (no-cors, no preflight) and charged a tenant into debt. Every state-changing decision call now
// refuses what a browser sends without a preflight, and Sec-Fetch-Site: cross-site.
TEST_F(DecisionApiTest, StateChangingCallsRefuseWhatABrowserSendsFromAnotherSite) {
  const std::string acquire = R"({"app": "checkout", "policy": "demo.api", "key": "victim"})";
  const std::string charge =
      R"({"app": "checkout", "policy": "metered.api", "key": "victim", "cost": 5})";
  const std::string lease = R"({"app": "checkout", "policy": "leased.api", "key": "victim"})";
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"/v1/acquire", acquire},
      {"/v1/acquire/batch", "{\"requests\": [" + acquire + "]}"},
      {"/v1/leases/abc/release", lease},
      {"/v1/leases/abc/renew", lease},
      {"/v1/charge", charge},
      {"/v1/refund", charge},
      {"/v1/reserve", charge},
      {"/v1/settle", R"({"app": "checkout", "policy": "metered.api", "key": "victim",
                         "cost": 5, "reservation": "r"})"}};
  // What a page may send with fetch(..., {mode: "no-cors"}) or a form: no preflight.
  const std::vector<std::string> simple_types = {"text/plain;charset=UTF-8",
                                                 "application/x-www-form-urlencoded",
                                                 "multipart/form-data; boundary=x", ""};
  for (const auto& [path, body] : calls) {
    for (const std::string& type : simple_types) {
      SCOPED_TRACE(path + " with Content-Type \"" + type + "\"");
      const Response refused = call("POST", path, body, {{"Content-Type", type}});
      EXPECT_EQ(refused.status, 415);
      EXPECT_EQ(refused.content_type, wire::kProblemJson);
      EXPECT_NE(refused.body.find("application/json"), std::string::npos) << refused.body;
    }
    SCOPED_TRACE(path + " cross-site");
    const Response cross_site =
        call("POST", path, body,
             {{"Content-Type", "application/json"}, {"Sec-Fetch-Site", "cross-site"}});
    EXPECT_EQ(cross_site.status, 403);
  }
  // Nothing was charged: the bucket (capacity 2) and the debt are untouched.
  const json first = json::parse(call("POST", "/v1/acquire", acquire).body);
  EXPECT_EQ(first["remaining"], 1);
  const json balance = json::parse(
      call("POST", "/v1/refund",
           R"({"app": "checkout", "policy": "metered.api", "key": "victim", "cost": 0})")
          .body);
  EXPECT_EQ(balance["balance"], 10);
}

TEST_F(DecisionApiTest, JsonTypesAndSameSiteFetchesAreDecided) {
  const std::string body = R"({"app": "checkout", "policy": "metered.api", "key": "k"})";
  for (const std::vector<Header>& headers : std::vector<std::vector<Header>>{
           {{"Content-Type", "application/json; charset=utf-8"}},
           {{"Content-Type", "Application/JSON"}},
           {{"Content-Type", "application/vnd.sluice+json"}},
           {{"Content-Type", "application/json"}, {"Sec-Fetch-Site", "same-origin"}},
           {{"Content-Type", "application/json"}, {"Sec-Fetch-Site", "same-site"}},
           {{"Content-Type", "application/json"}, {"Sec-Fetch-Site", "none"}}}) {
    SCOPED_TRACE(headers.back().name + ": " + headers.back().value);
    EXPECT_EQ(call("POST", "/v1/acquire", body, headers).status, 200);
  }
  // The gateway check is a GET a gateway forwards with the browser's own headers: not refused.
  EXPECT_EQ(call("GET", "/v1/check", "",
                 {{"X-Sluice-App", "checkout"},
                  {"X-Sluice-Policy", "metered.api"},
                  {"X-Sluice-Key", "k"},
                  {"Sec-Fetch-Site", "cross-site"}})
                .status,
            200);
}

TEST(DecisionApiCrossSiteTest, AllowCrossSiteAcceptsAnyContentTypeAndSite) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  service::StaticPolicyLookup lookup({parse_policy(
      R"({"name": "p", "apps": ["*"], "limits": [{"algorithm": "fixed_window", "limit": 5,
          "window": "1m"}]})")});
  service::Limiter limiter(store, &store, {.policies = &lookup});
  Metrics metrics;
  DecisionApi api(limiter, store, metrics, {.allow_cross_site = true});
  Router router;
  api.add_routes(router);
  Router::Match match = router.match("POST", "/v1/acquire");
  ASSERT_NE(match.handler, nullptr);
  auto transport = std::make_shared<FakeTransport>(clock);
  (*match.handler)(std::make_shared<Exchange>(
      Request{.method = "POST",
              .target = "/v1/acquire",
              .path = "/v1/acquire",
              .headers = {{"Content-Type", "text/plain"}, {"Sec-Fetch-Site", "cross-site"}},
              .body = R"({"app": "a", "policy": "p", "key": "k"})"},
      PathParams{}, transport));
  EXPECT_EQ(transport->last.status, 200) << transport->last.body;
}

// Issue 32 (info): /metrics was open to anyone who reached the port. metrics: public | token |
// off.
TEST(DecisionApiMetricsTest, MetricsArePublicBehindATokenOrOff) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  service::StaticPolicyLookup lookup({});
  service::Limiter limiter(store, &store, {.policies = &lookup});
  Metrics metrics;
  const auto scrape = [&](const DecisionApiOptions& options,
                          std::vector<Header> headers) -> std::optional<Response> {
    DecisionApi api(limiter, store, metrics, options);
    Router router;
    api.add_routes(router);
    Router::Match match = router.match("GET", "/metrics");
    if (match.handler == nullptr) return std::nullopt;
    auto transport = std::make_shared<FakeTransport>(clock);
    (*match.handler)(std::make_shared<Exchange>(
        Request{.method = "GET", .target = "/metrics", .path = "/metrics", .headers = headers},
        PathParams{}, transport));
    return transport->last;
  };
  EXPECT_EQ(scrape({}, {})->status, 200);
  EXPECT_FALSE(scrape({.metrics_access = MetricsAccess::kOff}, {}).has_value());
  const DecisionApiOptions token{.metrics_access = MetricsAccess::kToken,
                                 .metrics_token = "s3cret-scrape-token"};
  const std::optional<Response> anonymous = scrape(token, {});
  EXPECT_EQ(anonymous->status, 401);
  const auto challenge =
      std::find_if(anonymous->headers.begin(), anonymous->headers.end(),
                   [](const Header& header) { return header.name == "WWW-Authenticate"; });
  ASSERT_NE(challenge, anonymous->headers.end());
  EXPECT_TRUE(challenge->value.starts_with("Bearer"));
  for (const char* wrong : {"Bearer s3cret-scrape-toke", "Bearer s3cret-scrape-token2",
                            "Basic s3cret-scrape-token", "s3cret-scrape-token", "Bearer "}) {
    SCOPED_TRACE(wrong);
    EXPECT_EQ(scrape(token, {{"Authorization", wrong}})->status, 401);
  }
  const std::optional<Response> granted =
      scrape(token, {{"Authorization", "Bearer s3cret-scrape-token"}});
  EXPECT_EQ(granted->status, 200);
  EXPECT_NE(granted->body.find("sluice_"), std::string::npos);

  EXPECT_EQ(*parse_metrics_access("token"), MetricsAccess::kToken);
  EXPECT_EQ(parse_metrics_access("private").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::http
