// Limiter: the decision service every front end calls (DESIGN.md §5 "sluice::Limiter"). Given a
// policy, it checks the calling app, asks the store, and applies the policy's mode (shadow
// always allows but reports would-be denials) and failure mode (fail_open, fail_closed, or
// local: an in-process store granting a fraction of each limit) when the store is unreachable.
// Every degraded decision says so and is counted. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "sluice/policy/policy.h"
#include "sluice/service/decision.h"
#include "sluice/store/store.h"

namespace sluice::service {

struct LimiterOptions {
  // Failure mode `local`: the share of each limit this node grants alone (1/N for N nodes).
  double local_fraction = 1.0;
  // Failure mode `fail_closed`: the retry_after suggested with the denial.
  Micros fail_closed_retry_after = kMicrosPerSecond;
};

struct LimiterStats {
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t shadow_denied = 0;  // allowed only because the policy is in shadow mode
  std::uint64_t degraded = 0;       // decided by the failure mode
  std::uint64_t store_errors = 0;   // store calls that failed (each also degraded or an error)
};

class Limiter {
 public:
  // `store` holds the shared state; `local` serves failure mode `local` (nullptr: such policies
  // fail open). Both must outlive the limiter; they may be the same object.
  Limiter(store::Store& store, store::Store* local, LimiterOptions options = {});

  // Decides `cost` units for `subject` under `policy` on behalf of `app`.
  // NotFound "no such policy for this app" when the policy does not list `app` (nor "*");
  // InvalidArgument for bad input; store failures become degraded decisions, never errors.
  // A disabled policy allows everything without touching the store.
  StatusOr<Decision> try_acquire(const policy::Policy& policy, std::string_view app,
                                 std::string_view subject, std::int64_t cost);

  // As try_acquire, without blocking: `done` runs once with its result, at once for an answer
  // that needs no store (bad input, a disabled policy) or for a store that decides in process,
  // else on the store's I/O thread (Redis), where it must not block. `policy` must stay alive
  // until `done` runs; `subject` need not.
  using DecisionCallback = std::function<void(StatusOr<Decision>)>;
  void try_acquire_async(const policy::Policy& policy, std::string_view app,
                         std::string_view subject, std::int64_t cost, DecisionCallback done);

  // Lease operations; store failures are returned as errors (there is nothing to degrade to).
  StatusOr<bool> release(const policy::Policy& policy, std::string_view app,
                         std::string_view subject, std::string_view lease);
  StatusOr<bool> renew(const policy::Policy& policy, std::string_view app, std::string_view subject,
                       std::string_view lease);

  LimiterStats stats() const;

 private:
  // The answer when the store need not be asked (refused, or the policy is disabled).
  std::optional<StatusOr<Decision>> decide_without_store(const policy::Policy& policy,
                                                         std::string_view app, std::int64_t cost);
  // The decision from the store's answer: degraded on a store failure, shadow mode applied.
  StatusOr<Decision> finish(const policy::Policy& policy, std::string_view subject,
                            std::int64_t cost, StatusOr<store::StoreDecision> stored);
  Decision degrade(const policy::Policy& policy, std::string_view subject, std::int64_t cost);

  store::Store& store_;
  store::Store* local_;
  LimiterOptions options_;
  std::atomic<std::uint64_t> allowed_{0};
  std::atomic<std::uint64_t> denied_{0};
  std::atomic<std::uint64_t> shadow_denied_{0};
  std::atomic<std::uint64_t> degraded_{0};
  std::atomic<std::uint64_t> store_errors_{0};
};

// True for the store errors a failure mode covers (unreachable, timed out, overloaded, broken
// reply); false for the caller's own mistakes.
bool is_store_failure(const Status& status);

}  // namespace sluice::service
