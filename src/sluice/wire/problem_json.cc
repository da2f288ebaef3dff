#include "sluice/wire/problem_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace sluice::wire {

nlohmann::json problem_json(int status, std::string_view detail,
                            const std::vector<FieldError>& errors, std::string_view title,
                            std::string_view type) {
  nlohmann::json problem = {
      {"type", type.empty() ? "about:blank" : type},
      {"title", title.empty() ? reason_phrase(status) : title},
      {"status", status},
      {"detail", detail},
  };
  if (!errors.empty()) {
    nlohmann::json list = nlohmann::json::array();
    const std::size_t shown = std::min(errors.size(), kMaxReportedErrors);
    for (std::size_t i = 0; i < shown; ++i) {
      list.push_back({{"field", errors[i].field}, {"message", errors[i].message}});
    }
    if (errors.size() > shown) {
      list.push_back(
          {{"field", ""},
           {"message", std::to_string(errors.size() - shown) + " more errors not shown"}});
    }
    problem["errors"] = std::move(list);
  }
  return problem;
}

std::string problem_body(int status, std::string_view detail, const std::vector<FieldError>& errors,
                         std::string_view title, std::string_view type) {
  return problem_json(status, detail, errors, title, type)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

}  // namespace sluice::wire
