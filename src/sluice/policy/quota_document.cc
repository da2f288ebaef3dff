#include "sluice/policy/quota_document.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "sluice/core/duration.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

constexpr std::string_view kDurationHint = "must be a duration string such as \"30s\" or \"5m\"";

std::optional<Micros> duration_field(const json& section, std::string_view key, bool required,
                                     std::vector<algorithm::FieldError>& errors) {
  const std::string field = "penalty." + std::string(key);
  const auto it = section.find(key);
  if (it == section.end() || it->is_null()) {
    if (required) errors.push_back({field, "is required"});
    return std::nullopt;
  }
  if (!it->is_string()) {
    errors.push_back({field, std::string(kDurationHint)});
    return std::nullopt;
  }
  StatusOr<Micros> parsed = parse_duration(it->get<std::string>());
  if (!parsed.ok()) {
    errors.push_back({field, std::string(parsed.status().message())});
    return std::nullopt;
  }
  return *parsed;
}

std::optional<std::int64_t> integer_field(const json& section, std::string_view key, bool required,
                                          std::vector<algorithm::FieldError>& errors) {
  const std::string field = "penalty." + std::string(key);
  const auto it = section.find(key);
  if (it == section.end() || it->is_null()) {
    if (required) errors.push_back({field, "is required"});
    return std::nullopt;
  }
  if (it->is_number_unsigned() &&
      it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    errors.push_back({field, "is too large"});
    return std::nullopt;
  }
  if (!it->is_number_integer()) {
    errors.push_back({field, "must be an integer"});
    return std::nullopt;
  }
  return it->get<std::int64_t>();
}

}  // namespace

std::optional<algorithm::Penalty> penalty_from_json(const json& section,
                                                    std::vector<algorithm::FieldError>& errors) {
  if (!section.is_object()) {
    errors.push_back({"penalty",
                      "must be an object such as {after: 5, within: 1m, block: 5m, "
                      "escalate: 2, max: 1h}"});
    return std::nullopt;
  }
  const std::size_t before = errors.size();
  for (const auto& [key, value] : section.items()) {
    static constexpr std::string_view kKnown[] = {"after",    "within", "block",
                                                  "escalate", "max",    "quiet"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      errors.push_back({"penalty." + key, "unknown field for a penalty"});
    }
  }
  algorithm::Penalty penalty;
  penalty.after = integer_field(section, "after", true, errors).value_or(0);
  penalty.within = duration_field(section, "within", true, errors).value_or(0);
  penalty.block = duration_field(section, "block", true, errors).value_or(0);
  penalty.escalate = integer_field(section, "escalate", false, errors).value_or(2);
  const std::optional<Micros> max = duration_field(section, "max", false, errors);
  if (!max && penalty.escalate != 1) {
    errors.push_back({"penalty.max", "is required when blocks escalate (escalate > 1)"});
  }
  penalty.max = max.value_or(penalty.block);
  penalty.quiet = duration_field(section, "quiet", false, errors).value_or(penalty.max);
  if (errors.size() != before) return std::nullopt;
  std::vector<algorithm::FieldError> invalid = algorithm::validate_penalty(penalty);
  if (!invalid.empty()) {
    errors.insert(errors.end(), invalid.begin(), invalid.end());
    return std::nullopt;
  }
  return penalty;
}

json penalty_to_json(const algorithm::Penalty& penalty) {
  return {{"after", penalty.after},
          {"within", format_duration(penalty.within)},
          {"block", format_duration(penalty.block)},
          {"escalate", penalty.escalate},
          {"max", format_duration(penalty.max)},
          {"quiet", format_duration(penalty.quiet)}};
}

std::optional<std::int64_t> retry_jitter_from_json(const json& value,
                                                   std::vector<algorithm::FieldError>& errors) {
  const std::string hint = "must be a percentage from \"0%\" to \"100%\", such as \"10%\"";
  if (!value.is_string()) {
    errors.push_back({"retry_jitter", hint});
    return std::nullopt;
  }
  std::string_view text = value.get_ref<const std::string&>();
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty() || text.back() != '%') {
    errors.push_back({"retry_jitter", hint});
    return std::nullopt;
  }
  text.remove_suffix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::int64_t percent = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
  if (ec != std::errc() || end != text.data() + text.size() || percent < 0 ||
      percent > kMaxRetryJitterPercent) {
    errors.push_back({"retry_jitter", hint + " (whole percent)"});
    return std::nullopt;
  }
  return percent;
}

std::optional<algorithm::FixedWindow> calendar_window_from_json(
    const json& document, const std::string& prefix, std::vector<algorithm::FieldError>& errors) {
  const std::size_t before = errors.size();
  for (const auto& [key, value] : document.items()) {
    if (key != "algorithm" && key != "limit" && key != "calendar" && key != "time_zone") {
      errors.push_back(
          {prefix + "." + key, key == "window"
                                   ? "must be absent with a calendar (the period is the window)"
                                   : "unknown field for a calendar fixed_window"});
    }
  }
  algorithm::FixedWindow window;
  const auto limit = document.find("limit");
  if (limit == document.end() || limit->is_null()) {
    errors.push_back({prefix + ".limit", "is required"});
  } else if (!limit->is_number_integer() ||
             (limit->is_number_unsigned() &&
              limit->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
    errors.push_back({prefix + ".limit", "must be an integer"});
  } else {
    window.limit = limit->get<std::int64_t>();
  }
  algorithm::Calendar calendar;
  const auto period = document.find("calendar");
  static constexpr std::string_view kPeriods[] = {"day", "week", "month", "year"};
  const auto named = period != document.end() && period->is_string()
                         ? std::find(std::begin(kPeriods), std::end(kPeriods),
                                     period->get_ref<const std::string&>())
                         : std::end(kPeriods);
  if (named == std::end(kPeriods)) {
    errors.push_back({prefix + ".calendar", "must be one of day, week, month, year"});
  } else {
    calendar.period = static_cast<algorithm::CalendarPeriod>(named - std::begin(kPeriods));
  }
  if (const auto zone = document.find("time_zone"); zone != document.end() && !zone->is_null()) {
    if (!zone->is_string()) {
      errors.push_back(
          {prefix + ".time_zone", "must be an IANA time zone such as \"Europe/Berlin\""});
    } else if (StatusOr<std::string_view> known =
                   algorithm::known_time_zone(zone->get_ref<const std::string&>());
               known.ok()) {
      calendar.time_zone = *known;
    } else {
      errors.push_back({prefix + ".time_zone", std::string(known.status().message())});
    }
  }
  if (errors.size() != before) return std::nullopt;
  window.window = algorithm::longest_period(calendar.period);
  window.calendar = calendar;
  return window;
}

void calendar_to_json(const algorithm::Calendar& calendar, json& limit) {
  limit.erase("window");
  limit["calendar"] = algorithm::calendar_period_name(calendar.period);
  limit["time_zone"] = std::string(calendar.time_zone);
}

}  // namespace sluice::policy
