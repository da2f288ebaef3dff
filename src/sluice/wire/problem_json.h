// Problem details (RFC 9457, DESIGN.md §5a), written in one place: every application/problem+json
// body the HTTP front end sends — a handler's error, the transport's refusals (404, 405, 413,
// 431, 500), GET /v1/check's denial, each refused item of a batch — is made by these functions.
// Free of any HTTP library; the server wraps the text in its own Response.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"

namespace sluice::wire {

using algorithm::FieldError;

// The media type of a problem body.
inline constexpr std::string_view kProblemJson = "application/problem+json";

// Field errors reported in one problem: a body with a million unknown fields must not draw an
// answer several times its size. Beyond this, one last error says how many were left out.
inline constexpr std::size_t kMaxReportedErrors = 20;

// A problem object: type (default "about:blank"), title (the status's reason phrase when
// empty), status, detail, and `errors: [{field, message}]` when there are field errors — the
// first kMaxReportedErrors, then {"field": "", "message": "N more errors not shown"}. A value, for
// callers that add members (GET /v1/check's "violated-policies") or embed it (a batch's items).
nlohmann::json problem_json(int status, std::string_view detail,
                            const std::vector<FieldError>& errors = {}, std::string_view title = {},
                            std::string_view type = {});

// The same object as compact text (invalid UTF-8 replaced, never throws).
std::string problem_body(int status, std::string_view detail,
                         const std::vector<FieldError>& errors = {}, std::string_view title = {},
                         std::string_view type = {});

// "Bad Request" for 400, ... ("Unknown" for statuses it does not know): a problem's default
// title and the HTTP status line's reason phrase.
std::string_view reason_phrase(int status);

}  // namespace sluice::wire
