// Parameter validation: every problem of a limit at once, each naming its field and reason
// ("limits[1].window: must be greater than 0"). Nothing is clamped. Besides plain ranges it
// refuses parameters whose intermediate products would reach 2^53, where Lua's doubles in the
// Redis scripts stop being exact and Redis and memory would disagree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/status.h"

namespace sluice::algorithm {

struct FieldError {
  std::string field;    // "limits[1].window"
  std::string message;  // "must be greater than 0"
  friend bool operator==(const FieldError&, const FieldError&) = default;
};

struct ValidationOptions {
  // sliding_log keeps one entry per admitted request; this caps the memory of one subject.
  std::int64_t sliding_log_max_limit = 10'000;
  // concurrency keeps one entry per live lease.
  std::int64_t concurrency_max_limit = 100'000;
};

// `prefix` is prepended to field names, e.g. "limits[1]".
std::vector<FieldError> validate_limit(const Limit& limit, std::string_view prefix,
                                       const ValidationOptions& options = {});

// The longest any state may reach into the future (100 years): refill times, windows, delays,
// lease TTLs. Keeps every stored instant below 2^53 µs, where Lua's doubles are exact.
inline constexpr Micros kMaxHorizon = Micros{100} * 36'525 * kMicrosPerDay / 100;

// The largest cost one request may ask for; anything above is an input error, not a denial.
inline constexpr std::int64_t kMaxCost = 1'000'000'000;
// InvalidArgument naming "cost" when cost < 0 or cost > kMaxCost.
Status validate_cost(std::int64_t cost);

}  // namespace sluice::algorithm
