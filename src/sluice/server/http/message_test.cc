#include "sluice/server/http/message.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace sluice::http {
namespace {

using nlohmann::json;

TEST(MessageTest, HeaderLookupIsCaseInsensitiveAndTakesTheFirst) {
  Request request{.headers = {{"X-Sluice-Key", "alice"}, {"x-sluice-key", "bob"}}};
  EXPECT_EQ(request.header("x-SLUICE-key"), "alice");
  EXPECT_EQ(request.header("X-Other"), std::nullopt);
}

TEST(MessageTest, ThePeerIsTheRemoteAddressWithoutItsPort) {
  EXPECT_EQ(Request{.remote = "127.0.0.2:50412"}.peer(), "127.0.0.2");
  EXPECT_EQ(Request{.remote = "::1:50412"}.peer(), "::1");
  EXPECT_EQ(Request{.remote = "-"}.peer(), "-");
}

TEST(MessageTest, QueryParametersArePercentDecoded) {
  Request request{.query = "a=1&deny_status=403&key=caf%C3%A9+x&flag"};
  EXPECT_EQ(request.query_param("deny_status"), "403");
  EXPECT_EQ(request.query_param("key"), "caf\xC3\xA9 x");
  EXPECT_EQ(request.query_param("flag"), "");
  EXPECT_EQ(request.query_param("missing"), std::nullopt);
}

TEST(MessageTest, ProblemResponsesCarryTypeTitleStatusDetailAndFieldErrors) {
  const Response response =
      problem_response(400, "invalid acquire request", {{"cost", "must be between 0 and 9"}});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.content_type, "application/problem+json");
  const json body = json::parse(response.body);
  EXPECT_EQ(body["type"], "about:blank");
  EXPECT_EQ(body["title"], "Bad Request");
  EXPECT_EQ(body["status"], 400);
  EXPECT_EQ(body["detail"], "invalid acquire request");
  EXPECT_EQ(body["errors"][0]["field"], "cost");
  EXPECT_EQ(body["errors"][0]["message"], "must be between 0 and 9");
}

TEST(MessageTest, StatusCodesMapToHttpInOnePlace) {
  const std::vector<std::pair<StatusCode, int>> table = {
      {StatusCode::kOk, 200},
      {StatusCode::kInvalidArgument, 400},
      {StatusCode::kOutOfRange, 400},
      {StatusCode::kFailedPrecondition, 400},
      {StatusCode::kUnauthenticated, 401},
      {StatusCode::kPermissionDenied, 403},
      {StatusCode::kNotFound, 404},
      {StatusCode::kAlreadyExists, 409},
      {StatusCode::kAborted, 409},
      {StatusCode::kResourceExhausted, 429},
      {StatusCode::kCancelled, 499},
      {StatusCode::kUnimplemented, 501},
      {StatusCode::kUnavailable, 503},
      {StatusCode::kDeadlineExceeded, 504},
      {StatusCode::kInternal, 500},
      {StatusCode::kDataLoss, 500},
  };
  for (const auto& [code, status] : table) {
    SCOPED_TRACE(std::string(status_code_name(code)));
    EXPECT_EQ(http_status_for(code), status);
  }
}

TEST(MessageTest, ClientMapsStatusesBackToCodes) {
  for (StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kUnauthenticated, StatusCode::kPermissionDenied,
        StatusCode::kNotFound, StatusCode::kResourceExhausted, StatusCode::kUnimplemented,
        StatusCode::kUnavailable, StatusCode::kDeadlineExceeded, StatusCode::kInternal}) {
    SCOPED_TRACE(std::string(status_code_name(code)));
    EXPECT_EQ(status_code_for_http(http_status_for(code)), code);
  }
  EXPECT_EQ(status_code_for_http(413), StatusCode::kInvalidArgument);
  EXPECT_EQ(status_code_for_http(204), StatusCode::kOk);
}

TEST(MessageTest, RequestIdsAreAcceptedOnlyWhenShortAndPlain) {
  EXPECT_TRUE(acceptable_request_id("abc-123_x.y:z"));
  EXPECT_FALSE(acceptable_request_id(""));
  EXPECT_FALSE(acceptable_request_id(std::string(129, 'a')));
  EXPECT_FALSE(acceptable_request_id("a b"));
  EXPECT_FALSE(acceptable_request_id("a\"b"));
  EXPECT_FALSE(acceptable_request_id("a\nb"));
}

TEST(MessageTest, GeneratedRequestIdsAreDistinctHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_request_id();
    EXPECT_EQ(id.size(), 16u);
    EXPECT_TRUE(acceptable_request_id(id));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(MessageTest, AccessLogLineIsOneJsonObject) {
  const std::string line = access_log_line({.request_id = "r1",
                                            .remote = "127.0.0.1:5000",
                                            .method = "POST",
                                            .path = "/v1/acquire",
                                            .route = "/v1/acquire",
                                            .status = 200,
                                            .bytes_in = 42,
                                            .bytes_out = 300,
                                            .duration_us = 17,
                                            .unix_micros = 1'700'000'000'123'456});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json entry = json::parse(line);
  EXPECT_EQ(entry["ts"], "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(entry["request_id"], "r1");
  EXPECT_EQ(entry["status"], 200);
  EXPECT_EQ(entry["bytes_in"], 42);
  EXPECT_EQ(entry["duration_us"], 17);
}

TEST(MessageTest, AccessLogLineEscapesWhatTheClientSent) {
  // A path is the client's bytes: quotes, a control character, invalid UTF-8.
  const std::string line = access_log_line({.request_id = "r2",
                                            .remote = "[::1]:1",
                                            .method = "GET",
                                            .path = "/x\"y\x01\xff",
                                            .route = "-"});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const json entry = json::parse(line);
  EXPECT_EQ(entry["path"], "/x\"y\x01\xEF\xBF\xBD");
  EXPECT_EQ(entry["route"], "-");
}

}  // namespace
}  // namespace sluice::http
