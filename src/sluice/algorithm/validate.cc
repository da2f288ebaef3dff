#include "sluice/algorithm/validate.h"

#include <type_traits>
#include <utility>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/calendar.h"

namespace sluice::algorithm {
namespace {

class Checker {
 public:
  Checker(std::string_view prefix, std::vector<FieldError>& errors)
      : prefix_(prefix), errors_(errors) {}

  void fail(std::string_view field, std::string message) {
    std::string name(prefix_);
    if (!name.empty()) name += '.';
    name += field;
    errors_.push_back({.field = std::move(name), .message = std::move(message)});
  }

  // Returns whether the check passed so dependent checks can be skipped.
  bool at_least(std::string_view field, std::int64_t value, std::int64_t minimum) {
    if (value >= minimum) return below_exact(field, value);
    fail(field,
         minimum == 1 ? "must be greater than 0" : "must be at least " + std::to_string(minimum));
    return false;
  }

  bool at_most(std::string_view field, std::int64_t value, std::int64_t maximum) {
    if (value <= maximum) return true;
    fail(field, "must be at most " + std::to_string(maximum));
    return false;
  }

  // value < 2^53, so Lua computes it exactly.
  void exact(std::string_view field, std::string_view what, Int128 value) {
    if (value < kMaxExactInteger) return;
    fail(field, std::string(what) + " must be below 2^53 (" + std::to_string(kMaxExactInteger) +
                    ") so Redis's Lua arithmetic stays exact");
  }

 private:
  bool below_exact(std::string_view field, std::int64_t value) {
    if (value < kMaxExactInteger) return true;
    fail(field, "must be below 2^53");
    return false;
  }

  std::string_view prefix_;
  std::vector<FieldError>& errors_;
};

// A duration no state may reach beyond now: stored instants stay below 2^53 µs (year ~2255).
void within_horizon(Checker& c, std::string_view field, std::string_view what, Int128 micros) {
  if (micros <= kMaxHorizon) return;
  c.fail(field, std::string(what) + " must be at most 100 years");
}

void check(Checker& c, const TokenBucket& p, const ValidationOptions&) {
  const bool capacity_ok = c.at_least("capacity", p.capacity, 1);
  const bool refill_ok = c.at_least("refill", p.refill, 1);
  const bool period_ok = c.at_least("period", p.period, 1);
  if (p.initial && *p.initial < 0) c.fail("initial", "must not be negative");
  if (p.initial && capacity_ok && *p.initial > p.capacity) {
    c.fail("initial", "must not exceed capacity (" + std::to_string(p.capacity) + ")");
  }
  if (capacity_ok && period_ok && refill_ok) {
    c.exact("period", "capacity × period (µs) + refill", Int128{p.capacity} * p.period + p.refill);
    within_horizon(c, "period", "the time to refill an empty bucket",
                   (Int128{p.capacity} + p.refill - 1) / p.refill * p.period);
  }
}

void check(Checker& c, const Gcra& p, const ValidationOptions&) {
  const bool rate_ok = c.at_least("rate", p.rate, 1);
  const bool period_ok = c.at_least("period", p.period, 1);
  const bool burst_ok = c.at_least("burst", p.burst, 0);
  if (rate_ok && period_ok && burst_ok) {
    c.exact("burst", "(burst + 1) × period (µs) + rate", (Int128{p.burst} + 1) * p.period + p.rate);
    within_horizon(c, "period", "the time to earn burst + 1 cells",
                   (Int128{p.burst} + 1) * p.period / p.rate);
  }
}

void check(Checker& c, const LeakyBucket& p, const ValidationOptions&) {
  const bool rate_ok = c.at_least("rate", p.rate, 1);
  if (c.at_least("period", p.period, 1)) within_horizon(c, "period", "period", p.period);
  const bool delay_ok = c.at_least("max_delay", p.max_delay, 0);
  if (rate_ok && delay_ok) {
    c.exact("max_delay", "(max_delay (µs) + 1) × rate", (Int128{p.max_delay} + 1) * p.rate);
    within_horizon(c, "max_delay", "max_delay", p.max_delay);
  }
}

void check(Checker& c, const FixedWindow& p, const ValidationOptions&) {
  // A window that counts denials may admit nothing (envoyproxy/ratelimit's requests_per_unit: 0):
  // it still answers, counts and resets like any other.
  c.at_least("limit", p.limit, p.denied_cost == DeniedCost::kCounted ? 0 : 1);
  if (p.calendar) {
    if (p.denied_cost == DeniedCost::kCounted) {
      c.fail("denied_cost", "counted is not available with a calendar period");
    }
    // `window` is not the document's: the parser sets it to the longest period.
    if (Status zone = validate_time_zone(p.calendar->time_zone); !zone.ok()) {
      c.fail("time_zone", std::string(zone.message()));
    }
    if (p.window != longest_period(p.calendar->period)) {
      c.fail("calendar",
             "window must be the longest " + std::string(calendar_period_name(p.calendar->period)));
    }
    return;
  }
  if (c.at_least("window", p.window, 1)) within_horizon(c, "window", "window", p.window);
}

void check(Checker& c, const SlidingWindow& p, const ValidationOptions&) {
  const bool limit_ok = c.at_least("limit", p.limit, 1);
  const bool window_ok = c.at_least("window", p.window, 1);
  if (window_ok) within_horizon(c, "window", "window", p.window);
  if (limit_ok && window_ok) c.exact("window", "limit × window (µs)", Int128{p.limit} * p.window);
}

void check(Checker& c, const SlidingLog& p, const ValidationOptions& options) {
  if (c.at_least("limit", p.limit, 1)) c.at_most("limit", p.limit, options.sliding_log_max_limit);
  if (c.at_least("window", p.window, 1)) within_horizon(c, "window", "window", p.window);
}

void check(Checker& c, const Concurrency& p, const ValidationOptions& options) {
  if (c.at_least("limit", p.limit, 1)) c.at_most("limit", p.limit, options.concurrency_max_limit);
  if (c.at_least("lease_ttl", p.lease_ttl, 1)) {
    within_horizon(c, "lease_ttl", "lease_ttl", p.lease_ttl);
  }
}

}  // namespace

std::vector<FieldError> validate_limit(const Limit& limit, std::string_view prefix,
                                       const ValidationOptions& options) {
  std::vector<FieldError> errors;
  Checker checker(prefix, errors);
  std::visit([&](const auto& params) { check(checker, params, options); }, limit);
  return errors;
}

Status validate_cost(std::int64_t cost) {
  if (cost < 0) return invalid_argument("cost: must not be negative");
  if (cost > kMaxCost) return invalid_argument("cost: must be at most " + std::to_string(kMaxCost));
  return {};
}

}  // namespace sluice::algorithm
