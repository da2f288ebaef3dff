#include "sluice/wire/rate_limit_headers.h"

#include <algorithm>

#include "sluice/algorithm/catalogue.h"

namespace sluice::wire {
namespace {

std::string sf_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back((c < 0x20 || c == 0x7f) ? '?' : c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

StatusOr<HeaderSets> parse_header_sets(std::string_view text) {
  if (text == "all") return HeaderSets{};
  HeaderSets sets{.github = false, .draft6 = false, .draft10 = false};
  if (text == "none" || text.empty()) return sets;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view word = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    if (word == "github") {
      sets.github = true;
    } else if (word == "draft6") {
      sets.draft6 = true;
    } else if (word == "draft10") {
      sets.draft10 = true;
    } else {
      return invalid_argument("rate-limit header set \"" + std::string(word) +
                              "\" is not one of github, draft6, draft10, all, none");
    }
  }
  return sets;
}

std::string format_header_sets(const HeaderSets& sets) {
  std::string out;
  for (auto [on, name] : {std::pair{sets.github, "github"}, std::pair{sets.draft6, "draft6"},
                          std::pair{sets.draft10, "draft10"}}) {
    if (!on) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out.empty() ? "none" : out;
}

std::int64_t ceil_seconds(Micros duration) {
  if (duration <= 0) return 0;
  return duration / kMicrosPerSecond + (duration % kMicrosPerSecond > 0 ? 1 : 0);
}

QuotaPolicy quota_policy(const algorithm::Limit& limit) {
  const std::string_view unit = algorithm::algorithm_of(limit).quota_unit;
  const std::optional<Micros> window = algorithm::quota_window(limit);
  return {.quota = algorithm::nominal_size(limit),
          .window_seconds = window ? std::optional(ceil_seconds(*window)) : std::nullopt,
          .unit = unit.empty() ? std::nullopt : std::optional(unit)};
}

std::string policy_item_name(std::string_view policy, std::size_t index) {
  std::string name(policy);
  if (index > 0) name += "/" + std::to_string(index);
  return name;
}

Micros reset_delay(const service::Decision& decision) {
  const algorithm::Verdict& v = decision.verdict;
  if (!v.allowed && v.retry_after) return *v.retry_after;
  return v.reset_after;
}

std::vector<Header> rate_limit_headers(const service::Decision& decision,
                                       std::span<const algorithm::Limit> limits, Micros now,
                                       const HeaderSets& sets) {
  std::vector<Header> headers;
  headers.reserve(8);  // the most any style writes, plus Retry-After
  const algorithm::Verdict& v = decision.verdict;
  if (v.limit <= 0) return headers;
  const std::string limit = std::to_string(v.limit);
  const std::string remaining = std::to_string(v.remaining);
  const std::int64_t delta = ceil_seconds(reset_delay(decision));
  if (sets.github) {
    const std::int64_t reset_at = ceil_seconds(now + reset_delay(decision));
    headers.push_back({"X-RateLimit-Limit", limit});
    headers.push_back({"X-RateLimit-Remaining", remaining});
    headers.push_back({"X-RateLimit-Reset", std::to_string(reset_at)});
  }
  if (sets.draft6) {
    headers.push_back({"RateLimit-Limit", limit});
    headers.push_back({"RateLimit-Remaining", remaining});
    headers.push_back({"RateLimit-Reset", std::to_string(delta)});
  }
  if (sets.draft10) {
    std::string policies;
    for (std::size_t i = 0; i < limits.size(); ++i) {
      const QuotaPolicy quota = quota_policy(limits[i]);
      if (!policies.empty()) policies += ", ";
      policies += sf_string(policy_item_name(decision.policy, i));
      policies += ";q=" + std::to_string(quota.quota);
      if (quota.unit) policies += ";qu=" + sf_string(*quota.unit);
      if (quota.window_seconds) policies += ";w=" + std::to_string(*quota.window_seconds);
    }
    if (!policies.empty()) headers.push_back({"RateLimit-Policy", std::move(policies)});
    headers.push_back(
        {"RateLimit", sf_string(policy_item_name(decision.policy, decision.limit_index)) +
                          ";r=" + remaining + ";t=" + std::to_string(delta)});
  }
  return headers;
}

std::optional<std::int64_t> retry_after_seconds(const service::Decision& decision) {
  const algorithm::Verdict& v = decision.verdict;
  if (v.allowed || !v.retry_after) return std::nullopt;
  return std::max<std::int64_t>(1, ceil_seconds(*v.retry_after));
}

std::optional<std::int64_t> jittered_retry_after_seconds(const service::Decision& decision,
                                                         std::int64_t percent, double draw) {
  const std::optional<std::int64_t> exact = retry_after_seconds(decision);
  if (!exact || percent <= 0) return exact;
  // retry_after < 2^53 µs and percent <= 100: the product stays exact in a double and in int64.
  const Micros retry = *decision.verdict.retry_after;
  const std::int64_t latest =
      std::max(*exact, ceil_seconds(retry + retry / 100 * percent + retry % 100 * percent / 100));
  const auto choices = static_cast<double>(latest - *exact + 1);
  const auto offset = static_cast<std::int64_t>(std::clamp(draw, 0.0, 1.0) * choices);
  return std::min(latest, *exact + offset);
}

}  // namespace sluice::wire
