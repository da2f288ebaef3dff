// sluice::Client — the library's one entry point: "may this caller do this now?" for the policies
// you name, decided in this process (memory:), on a Redis every instance shares (redis://…), or
// by a remote `sluice serve` (http://…). A guide with examples: docs/library.md.
//
// Thread safety: a Client is meant to be opened once and shared; every member function may be
// called from any number of threads at once. Moving a Client, or destroying it while another
// thread is inside one of its calls, is not thread-safe. Leases and pending callbacks keep what
// they need alive, so they may outlive the Client.
//
// Failure modes: a store that is down or slow is not an error. Each policy's `on_store_failure`
// (fail_open, fail_closed or local) decides while the store is unreachable, within the store
// timeout, and the decision says so (`degraded`). Errors are for the caller's own mistakes: a
// policy that does not exist or does not list the app (NotFound), bad input (InvalidArgument
// naming the field). Against a remote server, an unreachable server is an error (Unavailable,
// DeadlineExceeded): there is no policy at hand to decide by.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/decision.h"
#include "sluice/export.h"
#include "sluice/status.h"

namespace sluice {

struct ClientOptions {
  // Where decisions are made:
  //   "memory:"                                in this process; state ends with it
  //   "redis://[user:password@]host[:port][/db]" in Redis, on Redis's clock, shared by every client
  //   "redis+cluster://[user:password@]host:port[,host:port…]"  the same on a Redis Cluster,
  //                                            reached through these seed nodes
  //   "redis+sentinel://[user:password@]host:port[,…]/<master>[/db]"  the master Redis Sentinel
  //                                            names, followed through failovers
  //   "rediss…" for any of the three over TLS (docs/redis.md: ?tls_ca=…&tls_cert=…&tls_key=…)
  //   "http://host:port"                        by a `sluice serve`, which holds the policies
  std::string store = "memory:";
  // The app this client speaks for: a policy answers only the apps it lists (or "*").
  std::string app;

  // Where the policies come from, for memory: and redis:// (exactly one; none for http://):
  //   policy_text      YAML or JSON: a document, a list of them, or "---"-separated documents
  //   policy_file      a file of such documents, or a directory of .yaml/.yml/.json files
  //   policy_database  "sqlite:///path", "mysql://…" or "postgresql://…": read once, then
  //                    re-read within policy_refresh of every change, without blocking a call
  std::string policy_text;
  std::string policy_file;
  std::string policy_database;
  std::chrono::milliseconds policy_refresh{1'000};

  // A store call with no answer after this long is decided by the policy's failure mode
  // (redis:// ), or fails with DeadlineExceeded (http://). > 0.
  std::chrono::microseconds store_timeout{1'000'000};
  // Failure mode `local`: the share of each limit this process grants alone (1/N for N
  // processes), in (0, 1].
  double local_fraction = 1.0;
  // redis:// : a blocking call (acquire, try_acquire…) made while no other thread of the process
  // is blocked on one watches for its answer this long on its own core before it sleeps, sparing
  // the wake-up that makes up much of a lone caller's latency (docs/redis.md "Blocking callers").
  // 0: sleep at once, for processes that would rather keep the CPU. ≥ 0.
  std::chrono::microseconds blocking_spin{150};
};

class Lease;

class SLUICE_API Client {
 public:
  // Opens the store and reads the policies. Errors: InvalidArgument naming the option (a bad
  // URL, no or several policy sources, a policy document with errors, each field named);
  // Unavailable when a policy database cannot be read. An unreachable Redis is not an error: it
  // is connected to in the background and the failure modes decide meanwhile.
  static StatusOr<Client> open(ClientOptions options);

  // A moved-from Client may only be assigned to or destroyed.
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  // Waits for the callbacks of asynchronous calls still in flight, then closes the store.
  ~Client();

  // Decides `cost` units for `subject` under `policy` now, without waiting. A denial is a
  // decision (verdict.allowed false; verdict.retry_after says when the same request would pass).
  // Blocks the calling thread for one store round trip at most (none for memory:).
  StatusOr<Decision> try_acquire(std::string_view policy, std::string_view subject,
                                 std::int64_t cost = 1);

  // As try_acquire, but waits up to `max_wait` for an allowed answer (Guava's acquire, Bucket4j's
  // blocking consume): a denial is retried at its retry_after while that falls within max_wait.
  // Returns the allowed decision, or at once the denial that max_wait cannot outlast. Blocks the
  // calling thread; no other thread is held while it waits.
  StatusOr<Decision> acquire(std::string_view policy, std::string_view subject,
                             std::chrono::microseconds max_wait, std::int64_t cost = 1);

  // acquire without blocking. `done` runs exactly once: before this returns when the answer is
  // known at once (a memory: decision, an error), otherwise on one of the client's threads, where
  // it must not block. max_wait 0: try_acquire.
  using Callback = std::function<void(StatusOr<Decision>)>;
  void acquire_async(std::string_view policy, std::string_view subject,
                     std::chrono::microseconds max_wait, std::int64_t cost, Callback done);

  // Concurrency limits: acquire (waiting up to max_wait) and hold a lease until the returned
  // guard is released or destroyed. The guard is empty (false) when denied; its decision says
  // why and when to retry. Policies without a concurrency limit give a guard with nothing to
  // release.
  StatusOr<Lease> lease(std::string_view policy, std::string_view subject,
                        std::chrono::microseconds max_wait = {}, std::int64_t cost = 1);
  // Lease operations by id, for leases taken with try_acquire / acquire: true when a live lease
  // was released / renewed (renewal extends it by the limit's lease_ttl). Store failures are
  // errors here: there is nothing to degrade to.
  StatusOr<bool> release(std::string_view policy, std::string_view subject, std::string_view lease);
  StatusOr<bool> renew(std::string_view policy, std::string_view subject, std::string_view lease);

  // Usage quotas (docs/quotas.md), for costs known only after the work (tokens of a response,
  // bytes sent): charge `cost` units to `subject` without asking first. The balance may go below
  // zero, down to the policy's `max_debt`, and the debt delays later requests until the refill
  // repays it; a charge that would pass max_debt is refused (verdict.allowed false, nothing
  // charged, verdict.retry_after says when it would fit). refund gives units back, capped at each
  // limit's size. verdict.balance is the signed balance after the operation. Errors: NotFound
  // and InvalidArgument as acquire; FailedPrecondition for a policy with a concurrency limit;
  // Unavailable / DeadlineExceeded when the store does not answer (a failure mode cannot decide a
  // charge: retry it). Blocks for one store round trip at most.
  StatusOr<Decision> charge(std::string_view policy, std::string_view subject, std::int64_t cost);
  StatusOr<Decision> refund(std::string_view policy, std::string_view subject, std::int64_t cost);
  // Reservations, for a cost estimated before the work and known after it (an LLM call): reserve
  // charges `estimate` now, as charge does, and answers the id to settle (Decision::reservation;
  // absent when refused); settle, before `ttl` passes, charges actual - estimate or refunds
  // estimate - actual. An unknown, settled or expired reservation is NotFound: an expired one
  // leaves its estimate charged. ttl: 1 µs to 7 days.
  StatusOr<Decision> reserve(std::string_view policy, std::string_view subject,
                             std::int64_t estimate,
                             std::chrono::microseconds ttl = std::chrono::seconds(60));
  StatusOr<Decision> settle(std::string_view policy, std::string_view subject,
                            std::string_view reservation, std::int64_t actual);

  // Leaky-bucket pacing: waits up to `max_wait` for a place in the policy's queue, then until
  // this caller's turn (the decision's verdict.delay), and returns the decision: when it is
  // allowed, act now. A denial (the queue stays full beyond max_wait) returns at once. Policies
  // without a leaky bucket give no delay, so pace acts as acquire.
  StatusOr<Decision> pace(std::string_view policy, std::string_view subject,
                          std::chrono::microseconds max_wait, std::int64_t cost = 1);
  // pace without blocking: `done` runs at the caller's turn (or with the denial), as
  // acquire_async's does.
  void pace_async(std::string_view policy, std::string_view subject,
                  std::chrono::microseconds max_wait, std::int64_t cost, Callback done);

  class Impl;  // defined in the library, not part of the API

 private:
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// A concurrency lease held until release() or destruction (RAII), as std::unique_lock holds a
// mutex. Move-only. Not thread-safe: one thread at a time per guard.
class SLUICE_API Lease {
 public:
  Lease() = default;
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;  // releases what this guard held first
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  // Releases the lease if still held, ignoring errors: a lease nobody renews expires after its
  // lease_ttl anyway. Blocks for a store round trip: do not destroy a held Lease inside a
  // callback of an asynchronous call.
  ~Lease();

  // True while the acquisition is held: allowed and not yet released (nor found expired).
  explicit operator bool() const { return held_; }
  // The decision that took (or refused) the lease.
  const Decision& decision() const { return decision_; }
  // The lease's id; empty when denied, or when the policy has no concurrency limit.
  const std::string& id() const;

  // Extends the lease by its lease_ttl: false when it had already expired (it is then no longer
  // held). Errors as Client::renew.
  StatusOr<bool> renew();
  // Frees the lease now: true when a live lease was freed. Afterwards the guard is empty.
  StatusOr<bool> release();

 private:
  friend class Client;
  Lease(std::shared_ptr<Client::Impl> client, std::string policy, std::string subject,
        Decision decision);

  std::shared_ptr<Client::Impl> client_;
  std::string policy_;
  std::string subject_;
  Decision decision_;
  bool held_ = false;
};

}  // namespace sluice
