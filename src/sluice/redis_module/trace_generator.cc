#include "sluice/redis_module/trace_generator.h"

#include <algorithm>

#include "sluice/algorithm/calendar.h"
#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/evaluate.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::redis_module::test {
namespace {

using namespace algorithm;

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kMs = kMicrosPerMilli;
constexpr Micros kSecond = kMicrosPerSecond;

template <typename T>
T pick(std::mt19937_64& random, std::initializer_list<T> values) {
  std::uniform_int_distribution<std::size_t> index(0, values.size() - 1);
  return *(values.begin() + index(random));
}

std::int64_t between(std::mt19937_64& random, std::int64_t low, std::int64_t high) {
  return std::uniform_int_distribution<std::int64_t>(low, high)(random);
}

// Small limits over short periods, so a trace keeps crossing their edges: full, empty, refilled.
Limit random_limit(std::mt19937_64& random) {
  switch (between(random, 0, 8)) {
    case 0:
      return Gcra{.rate = between(random, 1, 5),
                  .period = pick(random, {kSecond, 300 * kMs, 7 * kMs}),
                  .burst = between(random, 0, 4)};
    case 1: {
      const std::int64_t capacity = between(random, 1, 6);
      return TokenBucket{.capacity = capacity,
                         .refill = between(random, 1, 3),
                         .period = pick(random, {kSecond, 250 * kMs, 3 * kMs}),
                         .refill_mode = RefillMode::kSmooth,
                         .initial = between(random, 0, capacity)};
    }
    case 2: {
      const std::int64_t capacity = between(random, 1, 6);
      return TokenBucket{.capacity = capacity,
                         .refill = between(random, 1, 3),
                         .period = pick(random, {kSecond, 250 * kMs}),
                         .refill_mode = RefillMode::kInterval,
                         .initial = between(random, 0, capacity)};
    }
    case 3:
      return LeakyBucket{.rate = between(random, 1, 4),
                         .period = pick(random, {kSecond, 100 * kMs, 7 * kMs}),
                         .max_delay = pick(random, {Micros{0}, 300 * kMs, kSecond})};
    case 4: {
      // Half of them count denied costs (envoyproxy/ratelimit's rule), which admits a limit of 0.
      const bool counted = between(random, 0, 1) == 1;
      return FixedWindow{.limit = between(random, counted ? 0 : 1, 5),
                         .window = pick(random, {kSecond, 250 * kMs}),
                         .denied_cost = counted ? DeniedCost::kCounted : DeniedCost::kFree};
    }
    case 5:
      return SlidingWindow{.limit = between(random, 1, 6),
                           .window = pick(random, {kSecond, 300 * kMs})};
    case 6:
      return SlidingLog{.limit = between(random, 1, 5),
                        .window = pick(random, {kSecond, 200 * kMs})};
    case 7:
      return Concurrency{.limit = between(random, 1, 3),
                         .lease_ttl = pick(random, {kSecond, 400 * kMs})};
    default:
      return FixedWindow{.limit = between(random, 1, 4),
                         .window = longest_period(CalendarPeriod::kDay),
                         .calendar = Calendar{.period = CalendarPeriod::kDay,
                                              .time_zone = pick(random, {"UTC", "Europe/Berlin"})}};
  }
}

}  // namespace

TraceGenerator::TraceGenerator(std::uint64_t seed) : random_(seed), now_(kEpoch) {
  const int count = static_cast<int>(between(random_, 2, 4));
  for (int p = 0; p < count; ++p) {
    TracePolicy policy;
    const int limits = static_cast<int>(between(random_, 1, 3));
    for (int i = 0; i < limits; ++i) policy.limits.push_back(random_limit(random_));
    if (between(random_, 0, 2) == 0) {
      policy.penalty = Penalty{.after = between(random_, 1, 3),
                               .within = kSecond,
                               .block = 300 * kMs,
                               .escalate = between(random_, 1, 3),
                               .max = 2 * kSecond,
                               .quiet = 3 * kSecond};
    }
    policies_.push_back(std::move(policy));
  }
}

void TraceGenerator::next_step(Micros real_elapsed) {
  // Forward, by steps around the limits' periods and ±1 µs off them.
  const Micros delta = pick<Micros>(random_, {0, Micros{1}, 999, 1'000, 1'001, 7 * kMs, 37 * kMs,
                                              150 * kMs, 250 * kMs, kSecond, 3 * kSecond});
  now_ += real_elapsed + delta;
  step_.clear();
  const int decisions = static_cast<int>(between(random_, 1, 3));
  for (int d = 0; d < decisions; ++d) {
    Decision decision;
    decision.policy = static_cast<std::size_t>(between(random_, 0, policies_.size() - 1));
    const TracePolicy& policy = policies_[decision.policy];
    const int roll = static_cast<int>(between(random_, 0, 9));
    decision.operation = roll == 0 ? 1 : (policy.penalty && roll < 7 ? 2 : 0);
    std::int64_t largest = 0;
    for (const Limit& limit : policy.limits) largest = std::max(largest, nominal_size(limit));
    decision.cost = pick(random_, {std::int64_t{0}, std::int64_t{1}, std::int64_t{1},
                                   std::int64_t{1}, std::int64_t{2}, largest + 1});
    if (decision.operation != 1 && uses_leases(policy.limits)) {
      decision.lease = "lease-" + std::to_string(++leases_);
    }
    const int repeats = decision.operation == 1 ? 1 : static_cast<int>(pick(random_, {1, 1, 1, 3}));
    for (int r = 0; r < repeats; ++r) {
      decision.subjects.push_back(static_cast<int>(between(random_, 0, kTraceSubjects - 1)));
    }
    // The client's clock, a little off Redis's: the calendar bounds follow it.
    decision.calendar_now = now_ + pick<Micros>(random_, {0, 0, kSecond, -kSecond});
    step_.push_back(std::move(decision));
  }
}

std::string TraceGenerator::key(const std::string& prefix, std::size_t policy, int subject,
                                const std::string& suffix) {
  return prefix + ":{p" + std::to_string(policy) + ":s" + std::to_string(subject) + "}:" + suffix;
}

std::vector<std::string> TraceGenerator::decision_keys(const std::string& prefix,
                                                       std::size_t policy, int subject) const {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < policies_[policy].limits.size(); ++i) {
    keys.push_back(key(prefix, policy, subject, std::to_string(i)));
  }
  if (policies_[policy].penalty) keys.push_back(key(prefix, policy, subject, "penalty"));
  return keys;
}

TraceCall TraceGenerator::call(const std::string& prefix) const {
  TraceCall call;
  for (const Decision& decision : step_) {
    const TracePolicy& policy = policies_[decision.policy];
    const store::ScriptOperation operation = decision.operation == 1
                                                 ? store::ScriptOperation::kInspect
                                                 : store::ScriptOperation::kAcquire;
    const Penalty* penalty = decision.operation == 2 ? &*policy.penalty : nullptr;
    std::string request = store::decision_request(operation, policy.limits, decision.cost,
                                                  decision.calendar_now, decision.lease, penalty);
    store::set_request_repeats(request, decision.subjects.size());
    call.args.push_back(std::move(request));
    for (const int subject : decision.subjects) {
      std::vector<std::string> keys = decision_keys(prefix, decision.policy, subject);
      // A plain acquire of a policy with a penalty box names no penalty key.
      if (policy.penalty && decision.operation != 2) keys.pop_back();
      call.keys.insert(call.keys.end(), keys.begin(), keys.end());
    }
  }
  call.args.push_back(std::to_string(now_));
  return call;
}

std::vector<std::string> TraceGenerator::all_keys(const std::string& prefix) const {
  std::vector<std::string> keys;
  for (std::size_t p = 0; p < policies_.size(); ++p) {
    for (int s = 0; s < kTraceSubjects; ++s) {
      const std::vector<std::string> some = decision_keys(prefix, p, s);
      keys.insert(keys.end(), some.begin(), some.end());
    }
  }
  return keys;
}

}  // namespace sluice::redis_module::test
