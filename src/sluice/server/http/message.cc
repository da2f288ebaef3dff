#include "sluice/server/http/message.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "sluice/core/duration.h"
#include "sluice/core/json_text.h"
#include "sluice/core/percent_encoding.h"

namespace sluice::http {
namespace {

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string_view Request::peer() const {
  return std::string_view(remote).substr(0, remote.rfind(':'));
}

std::optional<std::string_view> Request::header(std::string_view name) const {
  for (const Header& h : headers) {
    if (iequals(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

std::optional<std::string> Request::query_param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const std::string key = percent_decode_lenient(pair.substr(0, eq), PlusSign::kSpace);
    if (key != name) continue;
    return eq == std::string_view::npos
               ? std::string()
               : percent_decode_lenient(pair.substr(eq + 1), PlusSign::kSpace);
  }
  return std::nullopt;
}

Response json_response(int status, const nlohmann::json& body) {
  return {.status = status, .content_type = std::string(kJson), .body = dump(body)};
}

Response problem_response(int status, std::string_view detail,
                          const std::vector<FieldError>& errors, std::string_view title,
                          std::string_view type) {
  return {.status = status,
          .content_type = std::string(wire::kProblemJson),
          .body = wire::problem_body(status, detail, errors, title, type)};
}

Response status_response(const Status& status) {
  return problem_response(http_status_for(status.code()), status.message());
}

Response too_many_requests(std::string_view detail, Micros wait) {
  Response response = problem_response(429, detail);
  const Micros seconds = (wait + kMicrosPerSecond - 1) / kMicrosPerSecond;
  response.headers.push_back({"Retry-After", std::to_string(seconds)});
  return response;
}

bool acceptable_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string new_request_id() {
  // A random per-process prefix plus a counter: unique here, collisions across processes
  // improbable, and no random draw per request.
  static const std::uint64_t prefix = [] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32 | device()) & 0xffffffff00000000ULL;
  }();
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t value = prefix ^ counter.fetch_add(1, std::memory_order_relaxed);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(16, '0');
  for (std::size_t i = 16; i-- > 0; value >>= 4) text[i] = kHex[value & 0xF];
  return text;
}

std::string access_log_line(const AccessLogEntry& entry) {
  // Written by hand, as the decision body is: a JSON value per request would cost more than the
  // decision it logs (docs/benchmarks.md, "JSON access log").
  std::string line;
  line.reserve(192 + entry.path.size());
  line += "{\"ts\":\"";
  line += format_timestamp(entry.unix_micros);
  line += "\",\"request_id\":";
  append_json_string(line, entry.request_id);
  line += ",\"remote\":";
  append_json_string(line, entry.remote);
  line += ",\"method\":";
  append_json_string(line, entry.method);
  line += ",\"path\":";
  append_json_string(line, entry.path);
  line += ",\"route\":";
  append_json_string(line, entry.route);
  line += ",\"status\":" + std::to_string(entry.status);
  line += ",\"bytes_in\":" + std::to_string(entry.bytes_in);
  line += ",\"bytes_out\":" + std::to_string(entry.bytes_out);
  line += ",\"duration_us\":" + std::to_string(entry.duration_us);
  line += '}';
  return line;
}

}  // namespace sluice::http
