// The HTTP vocabulary handlers see, free of Beast and Asio so only the server's own files
// (server_impl.h) pay for those headers: Request, Response, problem+json responses (their bodies:
// wire/problem_json.h) and Status errors as responses (the one mapping of codes to HTTP statuses:
// core/http_status.h).
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/core/ascii.h"
#include "sluice/core/http_status.h"
#include "sluice/status.h"
#include "sluice/wire/header.h"
#include "sluice/wire/problem_json.h"

namespace sluice::http {

using algorithm::FieldError;

// The codecs' header (wire/header.h), so their headers go onto a Response as they are.
using Header = wire::Header;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: "/v1/check?x=1"
  std::string path;    // target up to '?', not decoded
  std::string query;   // after '?', not decoded
  std::vector<Header> headers;
  std::string body;
  std::string request_id;  // X-Request-Id as received (if acceptable) or generated
  std::string remote;      // "127.0.0.1:50412"

  // The client's address alone: `remote` without its port ("127.0.0.1", "::1").
  std::string_view peer() const;
  // The first header named `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  // The first query parameter `name`, percent-decoded ('+' is a space), or nullopt.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<Header> headers;
  std::string body;
  // Close the connection after this response (the server also closes when draining).
  bool close = false;
};

inline constexpr std::string_view kJson = "application/json";

// Serialises `body` (invalid UTF-8 replaced, never throws) with `status`.
Response json_response(int status, const nlohmann::json& body);

// A problem+json response (wire/problem_json.h: the one writer of the body).
Response problem_response(int status, std::string_view detail,
                          const std::vector<FieldError>& errors = {}, std::string_view title = {},
                          std::string_view type = {});

// A problem response for a non-OK status.
Response status_response(const Status& status);

// 429 with `detail` and Retry-After: `wait` in whole seconds, rounded up.
Response too_many_requests(std::string_view detail, Micros wait);

// Case-insensitive ASCII comparison of header names (the one in core/ascii.h).
using ::sluice::iequals;

// A request id we echo: 1–128 characters from [A-Za-z0-9._:-]; anything else is replaced.
bool acceptable_request_id(std::string_view id);
// 16 hex digits, unique within the process and unlikely to repeat across processes.
std::string new_request_id();

// What the access log records about one request.
struct AccessLogEntry {
  std::string_view request_id;
  std::string_view remote;
  std::string_view method;
  std::string_view path;
  std::string_view route;  // the matched pattern, "-" when none
  int status = 0;
  std::size_t bytes_in = 0;
  std::size_t bytes_out = 0;
  std::int64_t duration_us = 0;
  std::int64_t unix_micros = 0;  // when the response was handed to the socket
};
// One JSON line (no trailing newline): ts (RFC 3339 UTC, µs), request_id, remote, method, path,
// route, status, bytes_in, bytes_out, duration_us.
std::string access_log_line(const AccessLogEntry& entry);

}  // namespace sluice::http
