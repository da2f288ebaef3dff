#include "sluice/wire/decision_json.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "sluice/core/json_text.h"
#include "sluice/policy/policy.h"

namespace sluice::wire {
namespace {

using nlohmann::json;
using service::millis_rounded_up;

void append_optional_millis(std::string& out, const std::optional<Micros>& value) {
  if (value) {
    out += std::to_string(millis_rounded_up(*value));
  } else {
    out += "null";
  }
}

}  // namespace

std::string decision_json(const Decision& d) {
  const algorithm::Verdict& v = d.verdict;
  std::string out;
  out.reserve(256);
  out += v.allowed ? "{\"allowed\":true" : "{\"allowed\":false";
  // Quota operations only (charge, refund): the signed balance; absent from acquire decisions.
  if (v.balance) out += ",\"balance\":" + std::to_string(*v.balance);
  // Penalty box only: when the block ends, Unix ms on the store's clock (rounded up).
  if (v.blocked_until) {
    out += ",\"blocked_until\":" + std::to_string(millis_rounded_up(*v.blocked_until));
  }
  out += d.degraded ? ",\"degraded\":true" : ",\"degraded\":false";
  out += ",\"delay_ms\":";
  append_optional_millis(out, v.delay);
  out += ",\"lease\":";
  if (d.lease) {
    append_json_string(out, *d.lease);
  } else {
    out += "null";
  }
  out += ",\"limit\":" + std::to_string(v.limit);
  out += ",\"limit_index\":" + std::to_string(d.limit_index);
  out += ",\"mode\":";
  append_json_string(out, policy::mode_name(d.mode));
  out += ",\"policy\":";
  append_json_string(out, d.policy);
  out += ",\"remaining\":" + std::to_string(v.remaining);
  if (d.reservation) {  // reserve only
    out += ",\"reservation\":";
    append_json_string(out, *d.reservation);
  }
  out += ",\"reset_after_ms\":" + std::to_string(millis_rounded_up(v.reset_after));
  out += ",\"retry_after_ms\":";
  append_optional_millis(out, v.retry_after);
  out += d.shadow_denied ? ",\"shadow_denied\":true}" : ",\"shadow_denied\":false}";
  return out;
}

StatusOr<Decision> decision_from_json(const json& j) {
  if (!j.is_object()) return invalid_argument("decision: must be a JSON object");
  Decision d;
  const auto integer = [&](const char* field,
                           bool nullable) -> StatusOr<std::optional<std::int64_t>> {
    const auto it = j.find(field);
    if (it == j.end() || it->is_null()) {
      if (nullable) return std::optional<std::int64_t>();
      return invalid_argument(std::string("decision.") + field + ": is required");
    }
    if (!it->is_number_integer()) {
      return invalid_argument(std::string("decision.") + field + ": must be an integer");
    }
    return std::optional<std::int64_t>(it->get<std::int64_t>());
  };
  const auto millis = [](std::optional<std::int64_t> v) -> std::optional<Micros> {
    if (!v) return std::nullopt;
    return *v * kMicrosPerMilli;
  };
  if (!j.contains("allowed") || !j["allowed"].is_boolean()) {
    return invalid_argument("decision.allowed: must be a boolean");
  }
  d.verdict.allowed = j["allowed"].get<bool>();
  StatusOr<std::optional<std::int64_t>> limit = integer("limit", false);
  StatusOr<std::optional<std::int64_t>> remaining = integer("remaining", false);
  StatusOr<std::optional<std::int64_t>> retry = integer("retry_after_ms", true);
  StatusOr<std::optional<std::int64_t>> reset = integer("reset_after_ms", false);
  StatusOr<std::optional<std::int64_t>> delay = integer("delay_ms", true);
  StatusOr<std::optional<std::int64_t>> index = integer("limit_index", false);
  StatusOr<std::optional<std::int64_t>> balance = integer("balance", true);
  StatusOr<std::optional<std::int64_t>> blocked_until = integer("blocked_until", true);
  for (const auto* field :
       {&limit, &remaining, &retry, &reset, &delay, &index, &balance, &blocked_until}) {
    if (!field->ok()) return field->status();
  }
  d.verdict.limit = **limit;
  d.verdict.remaining = **remaining;
  d.verdict.retry_after = millis(*retry);
  d.verdict.reset_after = **reset * kMicrosPerMilli;
  d.verdict.delay = millis(*delay);
  d.limit_index = static_cast<std::size_t>(**index);
  d.verdict.balance = *balance;
  d.verdict.blocked_until = millis(*blocked_until);
  if (j.contains("lease") && j["lease"].is_string()) d.lease = j["lease"].get<std::string>();
  if (j.contains("reservation") && j["reservation"].is_string()) {
    d.reservation = j["reservation"].get<std::string>();
  }
  d.policy = j.value("policy", "");
  d.mode = j.value("mode", "enforce") == "shadow" ? Mode::kShadow : Mode::kEnforce;
  d.degraded = j.value("degraded", false);
  d.shadow_denied = j.value("shadow_denied", false);
  return d;
}

}  // namespace sluice::wire
