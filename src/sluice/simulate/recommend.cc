#include "sluice/simulate/recommend.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <utility>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/status_macros.h"

namespace sluice::simulate {
namespace {

using algorithm::Limit;

// The index of the size parameter (recommend.h) in the algorithm's catalogue row: its first count
// (token_bucket capacity, gcra and leaky_bucket rate, the windows' limit), so what is tuned is
// read where every algorithm is described rather than decided here per algorithm.
std::optional<std::size_t> size_index(const Limit& limit) {
  const std::span<const algorithm::Parameter> parameters =
      algorithm::algorithm_of(limit).parameters;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i].type == algorithm::ParameterType::kCount) return i;
  }
  return std::nullopt;
}

// `limit` with its size parameter (at `index`) set to `value`.
Limit with_size(const Limit& limit, std::size_t index, std::int64_t value) {
  auto values = algorithm::parameter_values(limit);
  values[index] = value;
  return algorithm::make_limit(algorithm::algorithm_of(limit), values);
}

// Replays the traffic once for every value in `values` (limit `index` of `policy` set to each)
// and adds the points to `curve`. Values whose limit fails validation are left out.
Status replay_values(const policy::Policy& policy, std::size_t index, std::size_t size,
                     const std::vector<std::int64_t>& values, const Target& target,
                     TrafficNames& names, const TrafficPass& pass,
                     std::map<std::int64_t, CurvePoint>& curve) {
  std::vector<Variant> variants;
  std::vector<std::int64_t> tried;
  for (const std::int64_t value : values) {
    if (curve.contains(value)) continue;
    policy::Policy candidate = policy;
    candidate.limits[index] = with_size(policy.limits[index], size, value);
    if (!algorithm::validate_limit(candidate.limits[index], "limit").empty()) continue;
    variants.push_back({.label = std::to_string(value), .policy = std::move(candidate)});
    tried.push_back(value);
  }
  if (variants.empty()) return Status();
  // One bucket for the whole replay: the curve needs totals, not denials over time.
  SLUICE_ASSIGN_OR_RETURN(
      Replay replay,
      Replay::create(std::move(variants), names, {.bucket = algorithm::kMaxHorizon, .top = 0}));
  SLUICE_RETURN_IF_ERROR(pass([&replay](const Event& event) { replay.add(event); }));
  for (std::size_t i = 0; i < tried.size(); ++i) {
    const VariantReplay& one = replay.variants()[i];
    curve[tried[i]] =
        target.of == ShareOf::kSubjects
            ? CurvePoint{.value = tried[i],
                         .denied = one.subjects_denied(),
                         .total = one.subjects()}
            : CurvePoint{.value = tried[i], .denied = one.denied(), .total = one.requests()};
  }
  return Status();
}

// Whether the last kPlateau values (doublings) denied the same: growing this parameter no longer
// changes anything, so the rest is decided by the policy's other limits or parameters, and
// searching on to max_value would only repeat it.
constexpr std::size_t kPlateau = 4;
bool plateaued(const std::map<std::int64_t, CurvePoint>& curve) {
  if (curve.size() < kPlateau) return false;
  auto point = curve.rbegin();
  const std::uint64_t denied = point->second.denied;
  for (std::size_t i = 0; i < kPlateau; ++i, ++point) {
    if (point->second.denied != denied) return false;
  }
  return true;
}

bool meets(const CurvePoint& point, const Target& target) {
  // Compared in integers where it matters: denied <= share × total, without rounding a 1 %
  // target of 300 subjects (3) into 2.9999.
  return static_cast<double>(point.denied) <=
         target.share * static_cast<double>(point.total) + 1e-9;
}

}  // namespace

StatusOr<Target> parse_target(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return invalid_argument("--recommend: expected subjects=P% or requests=P%");
  }
  Target target;
  const std::string_view of = text.substr(0, equals);
  if (of == "subjects") {
    target.of = ShareOf::kSubjects;
  } else if (of == "requests") {
    target.of = ShareOf::kRequests;
  } else {
    return invalid_argument("--recommend: " + std::string(of) + ": expected subjects or requests");
  }
  std::string_view percent = text.substr(equals + 1);
  if (percent.empty() || percent.back() != '%') {
    return invalid_argument("--recommend: the share is a percentage ending in %, e.g. 1%");
  }
  percent.remove_suffix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(percent.data(), percent.data() + percent.size(), value);
  if (error != std::errc() || end != percent.data() + percent.size() || value < 0 || value > 100) {
    return invalid_argument("--recommend: " + std::string(percent) +
                            "%: the share must be a number from 0 to 100");
  }
  target.share = value / 100;
  return target;
}

StatusOr<std::vector<LimitRecommendation>> recommend(const policy::Policy& policy,
                                                     const Target& target, TrafficNames& names,
                                                     const TrafficPass& pass,
                                                     const RecommendOptions& options) {
  SLUICE_RETURN_IF_ERROR(check_replayable(policy));
  const std::size_t per_pass = std::max<std::size_t>(2, options.candidates_per_pass);
  std::vector<LimitRecommendation> recommendations;
  for (std::size_t index = 0; index < policy.limits.size(); ++index) {
    LimitRecommendation out{
        .limit_index = index,
        .algorithm = std::string(algorithm::algorithm_name(policy.limits[index]))};
    const Limit& limit = policy.limits[index];
    const std::optional<std::size_t> size = size_index(limit);
    if (!size || algorithm::calendar_of(limit) != nullptr) {
      // make_limit builds from parameters only, and a calendar is not one.
      out.note = size ? "calendar windows are not tuned yet" : "no size parameter to tune";
      recommendations.push_back(std::move(out));
      continue;
    }
    out.parameter = algorithm::algorithm_of(limit).parameters[*size].name;
    out.current = *algorithm::parameter_values(limit)[*size];
    std::map<std::int64_t, CurvePoint> curve;

    // Bracket: powers of two from 1 upwards, a pass at a time, until one meets the target.
    std::int64_t failing = 0;  // the largest value known to miss (0: none, 1 is the floor)
    std::optional<std::int64_t> passing;
    std::int64_t next = 1;
    while (!passing && next <= options.max_value) {
      std::vector<std::int64_t> values;
      for (std::size_t i = 0; i < per_pass && next <= options.max_value; ++i, next *= 2) {
        values.push_back(next);
      }
      SLUICE_RETURN_IF_ERROR(
          replay_values(policy, index, *size, values, target, names, pass, curve));
      for (const auto& [value, point] : curve) {
        if (meets(point, target)) {
          passing = value;
          break;
        }
        failing = value;
      }
      if (curve.empty()) break;  // no valid value at all
      if (!passing && plateaued(curve)) {
        out.plateau = true;
        break;
      }
    }
    // Narrow (failing, passing] with evenly spaced candidates until they are adjacent.
    while (passing && *passing - failing > 1) {
      const std::int64_t gap = *passing - failing;
      std::vector<std::int64_t> values;
      const auto steps = static_cast<std::int64_t>(per_pass) + 1;
      for (std::int64_t i = 1; i < steps; ++i) {
        const std::int64_t value = failing + gap * i / steps;
        if (value > failing && value < *passing) values.push_back(value);
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      const std::size_t before = curve.size();
      SLUICE_RETURN_IF_ERROR(
          replay_values(policy, index, *size, values, target, names, pass, curve));
      if (curve.size() == before) break;  // every value between was invalid
      for (const std::int64_t value : values) {
        auto found = curve.find(value);
        if (found == curve.end()) continue;
        if (meets(found->second, target)) {
          passing = std::min(*passing, value);
          break;
        }
        failing = std::max(failing, value);
      }
    }
    out.recommended = passing;
    for (const auto& [value, point] : curve) out.curve.push_back(point);
    recommendations.push_back(std::move(out));
  }
  return recommendations;
}

}  // namespace sluice::simulate
