// The replay engine of back-testing (docs/backtesting.md): decides a time-ordered stream of
// events against one or more policy variants on a simulated clock, exactly as the memory store
// would decide the same sequence (replay_test.cc checks it decision for decision), and tallies
// what each variant would have done.
//
// Why not drive store::MemoryStore itself: a replay's subjects are dense ids (traffic.h), so
// their states live in one array indexed by id — no hashing, no lock, no per-record allocation,
// no expiry sweep — which is what makes millions of events per second on one core possible.
// The decision itself is the memory store's: the same algorithm::evaluate on the same states,
// with the same rules for when a state is made afresh (absent, expired, or never charged).
//
// Memory grows with the subjects seen (their states and tallies) and the time buckets, never
// with the number of events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "sluice/algorithm/penalty.h"
#include "sluice/algorithm/state.h"
#include "sluice/decision.h"
#include "sluice/policy/policy.h"
#include "sluice/simulate/traffic.h"
#include "sluice/status.h"

namespace sluice::simulate {

// A policy as one candidate of a back-test: `label` tells two variants of one policy apart
// (e.g. the file it came from).
struct Variant {
  std::string label;
  policy::Policy policy;
};

struct ReplayOptions {
  // Width of the "denials over time" buckets, aligned to the epoch.
  Micros bucket = kMicrosPerMinute;
  // How many of the most denied subjects a report lists.
  std::size_t top = 10;
};

// FailedPrecondition naming the limit when `policy` cannot be replayed: a concurrency limit,
// whose releases are not in the traffic.
Status check_replayable(const policy::Policy& policy);

struct DeniedSubject {
  std::string key;
  std::uint64_t denied = 0;
  std::uint64_t requests = 0;
  friend bool operator==(const DeniedSubject&, const DeniedSubject&) = default;
};

struct TimeBucket {
  Micros start = 0;  // µs since the epoch
  std::uint64_t requests = 0;
  std::uint64_t denied = 0;
  friend bool operator==(const TimeBucket&, const TimeBucket&) = default;
};

struct VariantReport {
  std::string label;
  std::string policy;
  std::uint64_t requests = 0;  // events decided (peeks included)
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t subjects = 0;         // distinct subjects decided
  std::uint64_t subjects_denied = 0;  // subjects denied at least once
  // Events naming an app the policy does not list: the service answers "no such policy".
  std::uint64_t other_app = 0;
  std::vector<DeniedSubject> top_denied;  // most denied first (ties: by key)
  std::vector<TimeBucket> over_time;      // buckets with at least one request, in time order
};

// Two variants of one policy: the subjects each denies that the other never does.
struct OutcomeChanges {
  std::string policy;
  std::string first;   // label of the first variant
  std::string second;  // label of the second
  std::uint64_t denied_only_by_first = 0;
  std::uint64_t denied_only_by_second = 0;
  // At most ReplayOptions::top of each: the first seen, sorted by key.
  std::vector<std::string> examples_first;
  std::vector<std::string> examples_second;
};

// One variant's replay. Not thread-safe; movable.
class VariantReplay {
 public:
  // Errors: check_replayable's; InvalidArgument for a policy with no limits.
  static StatusOr<VariantReplay> create(Variant variant, const ReplayOptions& options);

  // Decides `cost` (>= 0, validated by the reader) for subject id `subject` at `now` (never
  // earlier than the previous call's), as MemoryStore::acquire would, and tallies it.
  Decision decide(std::uint32_t subject, std::int64_t cost, Micros now);

  const Variant& variant() const { return variant_; }
  // Times subject `subject` was denied (0 for a subject never seen).
  std::uint64_t denied_of(std::uint32_t subject) const {
    return subject < tallies_.size() ? tallies_[subject].denied : 0;
  }
  std::uint64_t requests() const { return requests_; }
  std::uint64_t denied() const { return denied_; }
  std::uint64_t subjects() const { return subjects_; }
  std::uint64_t subjects_denied() const { return subjects_denied_; }
  void count_other_app() { ++other_app_; }

  VariantReport report(const NameTable& subjects) const;

 private:
  struct Tally {
    std::uint64_t requests = 0;
    std::uint64_t denied = 0;
    // The memory store holds a record only once a request was charged: until then (and after
    // the record expired) each decision starts from initial states made at its own `now`.
    bool held = false;
    Micros expires_at = 0;  // held: when every state is back to unused (the record's expiry)
  };

  VariantReplay(Variant variant, const ReplayOptions& options);
  void grow_to(std::uint32_t subject);

  Variant variant_;
  ReplayOptions options_;
  std::size_t width_;                          // limits per subject
  std::vector<algorithm::LimitState> states_;  // width_ per subject, by subject id
  std::vector<Tally> tallies_;
  std::uint64_t requests_ = 0;
  std::uint64_t denied_ = 0;
  std::uint64_t subjects_ = 0;
  std::uint64_t subjects_denied_ = 0;
  std::uint64_t other_app_ = 0;
  // Penalty boxes of the subjects that have one (policy.penalty): few subjects are ever struck.
  std::unordered_map<std::uint32_t, algorithm::PenaltyState> penalties_;
  std::map<Micros, TimeBucket> buckets_;
  TimeBucket* last_bucket_ = nullptr;  // events come in time order: usually the same bucket
};

// Replays events against several variants: each event goes to the variants of the policy it
// names (all of them when it names none), unless its app is not among the policy's apps.
class Replay {
 public:
  // `names` must outlive the replay (policy and app names are interned into it).
  static StatusOr<Replay> create(std::vector<Variant> variants, TrafficNames& names,
                                 const ReplayOptions& options);

  // Events in time order (the readers check it).
  void add(const Event& event);

  std::vector<VariantReplay>& variants() { return variants_; }
  std::vector<VariantReport> reports() const;
  // For every pair of variants of one policy name, the subjects whose outcome changes.
  std::vector<OutcomeChanges> outcome_changes() const;

 private:
  Replay(TrafficNames& names, ReplayOptions options) : names_(&names), options_(options) {}
  bool admits(std::size_t variant, std::uint32_t app);

  TrafficNames* names_;
  ReplayOptions options_;
  std::vector<VariantReplay> variants_;
  std::vector<std::uint32_t> policy_ids_;  // per variant: its policy name's id in names_
  // Per variant, by app id: 0 unknown yet, 1 admitted, 2 not.
  std::vector<std::vector<std::uint8_t>> admitted_;
};

}  // namespace sluice::simulate
