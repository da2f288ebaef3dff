// LastSeenUsage: for failure mode `split`, what each subject had used of its deciding limit when
// the shared store last answered (docs/defences.md "Budget-preserving outage mode"). The first
// decision of a subject degraded by an outage takes it (once) and charges this node's share of
// that usage to its local store before deciding, so the window in which the outage begins does
// not grant the limit again on top of what was already admitted.
//
// Bounded: at most `max_subjects` entries (a shard that fills is cleared: forgetting only costs
// the seed). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"
#include "sluice/decision.h"

namespace sluice::service {

struct SeenUsage {
  std::size_t limit_index = 0;
  std::int64_t used = 0;  // limit - remaining when seen, > 0
  Micros until = 0;       // steady clock: the state is back to unused then (reset_after)
};

class LastSeenUsage {
 public:
  explicit LastSeenUsage(std::size_t max_subjects = 100'000);
  ~LastSeenUsage();

  // Remembers `decision` (a store's answer) for the subject, seen at `now` (steady clock).
  // Decisions that show no usage forget the subject.
  void record(std::string_view policy, std::string_view subject, const Decision& decision,
              Micros now);
  // The usage last seen for the subject if it is still current at `now`, forgotten as it is
  // returned (a subject is seeded once per outage).
  std::optional<SeenUsage> take(std::string_view policy, std::string_view subject, Micros now);

 private:
  struct Shard {
    Mutex mu;
    std::unordered_map<std::string, SeenUsage> seen SLUICE_GUARDED_BY(mu);
  };
  Shard& shard_for(const std::string& key);

  const std::size_t max_per_shard_;
  std::unique_ptr<Shard[]> shards_;
};

// The units of `used` this node charges as its share, `fraction` of the limit being its own:
// ceil(used · fraction), so the nodes together charge at least what was used.
std::int64_t seed_share(std::int64_t used, double fraction);

}  // namespace sluice::service
