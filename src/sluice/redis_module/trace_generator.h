// Random traces for the module's differential tests: policies over every algorithm kind (several
// limits each, some with a penalty box), and steps that send one SLUICE.EVALUATE / `evaluate`
// call each — acquire, inspect and penalized acquire, costs 0, 1, more, and more than a limit
// grants, repeats, batches of decisions — at a pinned time that mostly moves forward and
// sometimes steps back. The same step is sent to the script and to the module under two key
// prefixes, so their replies and keys can be compared byte for byte. (A clock stepping back is
// not among the steps: against Redis's real-time expiry it makes a live state vanish; the
// algorithms' own tests cover it.)
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/time.h"

namespace sluice::redis_module::test {

struct TracePolicy {
  std::vector<algorithm::Limit> limits;
  std::optional<algorithm::Penalty> penalty;
};

// One call: its keys (under `prefix`) and its requests, then the pinned time.
struct TraceCall {
  std::vector<std::string> keys;
  std::vector<std::string> args;  // requests, then the pinned time
};

class TraceGenerator {
 public:
  explicit TraceGenerator(std::uint64_t seed);

  const std::vector<TracePolicy>& policies() const { return policies_; }

  // Advances the pinned time and draws the next call's decisions; call(prefix) then spells them
  // out for one engine's keys. `real_elapsed`: the time since the previous step on the machine's
  // clock, added to the pinned time's own step. Redis expires keys on its real clock, so the
  // pinned time must never fall behind it: a key whose state is still live at the pinned time
  // would otherwise vanish between two reads a moment apart, on one engine's side only.
  void next_step(Micros real_elapsed);
  TraceCall call(const std::string& prefix) const;

  // Every key the trace may touch under `prefix`.
  std::vector<std::string> all_keys(const std::string& prefix) const;

  Micros now() const { return now_; }
  // Lease ids so far are "lease-1" .. "lease-<leases_issued()>".
  std::uint64_t leases_issued() const { return leases_; }
  // The key of `policy`'s limit `suffix` ("0", "1", ... or "penalty") for `subject`.
  static std::string key(const std::string& prefix, std::size_t policy, int subject,
                         const std::string& suffix);

 private:
  struct Decision {
    std::size_t policy = 0;
    std::vector<int> subjects;  // one per repeat
    int operation = 0;          // 0 acquire, 1 inspect, 2 penalized acquire
    std::int64_t cost = 0;
    std::string lease;
    Micros calendar_now = 0;
  };

  std::vector<std::string> decision_keys(const std::string& prefix, std::size_t policy,
                                         int subject) const;

  std::mt19937_64 random_;
  std::vector<TracePolicy> policies_;
  std::vector<Decision> step_;
  Micros now_;
  std::uint64_t leases_ = 0;
};

inline constexpr int kTraceSubjects = 3;

}  // namespace sluice::redis_module::test
