// The library's Client (include/sluice/client.h) over two backends: a local one — the decision
// pipeline (service::Limiter) on the memory or Redis store with policies from text, files or a
// database — and a remote one, RemoteLimiter calling a `sluice serve`.
#include "sluice/client.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/client/http_url.h"
#include "sluice/client/remote_limiter.h"
#include "sluice/core/invalid_input.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/core/timer_queue.h"
#include "sluice/core/work_queue.h"
#include "sluice/db/stores.h"
#include "sluice/policy/policy_cache.h"
#include "sluice/policy/policy_files.h"
#include "sluice/policy/repository.h"
#include "sluice/service/backend.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"

namespace sluice {

using service::DecisionRequest;
using service::Operation;

// What both backends offer, and what the Client adds over them: counting calls in flight, so
// that destroying the Client waits for their callbacks instead of pulling the pipeline from under
// them; and the timers that pace callers after their decision.
class Client::Impl {
 public:
  explicit Impl(std::string app) : app_(std::move(app)) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Decides an acquire, waiting up to request.wait; `done` runs once, as Client::acquire_async
  // says.
  virtual void decide(DecisionRequest request, service::Limiter::Done done) = 0;
  // Decides any operation, blocking (a lease operation allows when the lease was live).
  virtual StatusOr<Decision> block_on(DecisionRequest request) = 0;

  // A request of this client's app.
  DecisionRequest request(Operation operation, std::string_view policy, std::string_view subject,
                          std::int64_t cost = 1) const {
    return {.app = app_,
            .policy = std::string(policy),
            .operation = operation,
            .subject = std::string(subject),
            .cost = cost};
  }
  DecisionRequest acquire_request(std::string_view policy, std::string_view subject,
                                  std::int64_t cost, std::chrono::microseconds max_wait) const {
    DecisionRequest made = request(Operation::kAcquire, policy, subject, cost);
    made.wait = max_wait.count();
    return made;
  }
  // Releases or renews `lease`: true when it was live.
  StatusOr<bool> lease_operation(Operation operation, std::string_view policy,
                                 std::string_view subject, std::string_view lease) {
    DecisionRequest made = request(operation, policy, subject);
    made.lease = std::string(lease);
    SLUICE_ASSIGN_OR_RETURN(const Decision decision, block_on(std::move(made)));
    return decision.verdict.allowed;
  }

  // `done`, counted as in flight until it has run.
  service::Limiter::Done track(Callback done) {
    {
      MutexLock lock(mutex_);
      ++in_flight_;
    }
    return [this, done = std::move(done)](service::Decided decided) {
      done(std::move(decided.decision));
      MutexLock lock(mutex_);
      if (--in_flight_ == 0) idle_.notify_all();
    };
  }
  // Blocks until every tracked callback has run.
  void drain() {
    MutexLock lock(mutex_);
    while (in_flight_ != 0) idle_.wait(lock);
  }

  // Runs `fire` after `delay` on the timer thread (pacing).
  void after(Micros delay, std::function<void()> fire) { timers().after(delay, std::move(fire)); }

 protected:
  TimerQueue& timers() {
    std::call_once(timers_started_, [this] { timers_ = std::make_unique<TimerQueue>(); });
    return *timers_;
  }
  // Stops the timer thread (timers still armed are dropped); before the pipeline goes away.
  void stop_timers() { timers_.reset(); }

 private:
  std::string app_;
  Mutex mutex_;
  CondVar idle_;
  std::size_t in_flight_ SLUICE_GUARDED_BY(mutex_) = 0;
  std::once_flag timers_started_;
  std::unique_ptr<TimerQueue> timers_;
};

namespace {

using Callback = Client::Callback;

Status option_error(std::string_view field, std::string_view message) {
  return invalid_argument(std::string(field) + ": " + std::string(message));
}

// The policies of the one source `options` names.
StatusOr<std::vector<policy::Policy>> policies_from(const ClientOptions& options) {
  if (!options.policy_text.empty()) {
    return policy::parse_policy_texts({{"policy_text", options.policy_text}});
  }
  return policy::load_policy_files({options.policy_file});
}

// The decision pipeline in this process, on the memory store or on Redis.
class LocalImpl final : public Client::Impl {
 public:
  static StatusOr<std::shared_ptr<LocalImpl>> open(const ClientOptions& options) {
    auto impl = std::shared_ptr<LocalImpl>(new LocalImpl(options.app));
    if (!options.policy_database.empty()) {
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<policy::PolicyRepository> repository,
                              db::open_policy_repository(options.policy_database));
      SLUICE_ASSIGN_OR_RETURN(impl->cache_,
                              policy::PolicyCache::open(std::move(repository),
                                                        {.poll_interval = options.policy_refresh}));
      impl->lookup_ = std::make_unique<service::CachedPolicyLookup>(*impl->cache_);
    } else {
      SLUICE_ASSIGN_OR_RETURN(std::vector<policy::Policy> policies, policies_from(options));
      impl->lookup_ = std::make_unique<service::StaticPolicyLookup>(std::move(policies));
    }
    SLUICE_ASSIGN_OR_RETURN(
        impl->backend_,
        service::open_backend(options.store,
                              {.url_name = "store",
                               .redis = {.blocking_spin = options.blocking_spin.count(),
                                         .command_timeout = options.store_timeout.count()},
                               .limiter = {.local_fraction = options.local_fraction,
                                           .store_timeout = options.store_timeout.count(),
                                           .blocking_spin = options.blocking_spin.count(),
                                           .policies = impl->lookup_.get(),
                                           .timers = &impl->timers()}}));
    impl->limiter_ = impl->backend_->limiter.get();
    return impl;
  }

  // The threads that answer store calls and fire timers stop before the pipeline they call into.
  ~LocalImpl() override {
    stop_timers();
    if (backend_) backend_->redis.reset();
  }

  void decide(DecisionRequest request, service::Limiter::Done done) override {
    limiter_->decide(std::move(request), std::move(done));
  }
  StatusOr<Decision> block_on(DecisionRequest request) override {
    return limiter_->block_on(std::move(request)).decision;
  }

 private:
  explicit LocalImpl(std::string app) : Impl(std::move(app)) {}

  std::unique_ptr<policy::PolicyCache> cache_;
  std::unique_ptr<service::PolicyLookup> lookup_;
  std::unique_ptr<service::Backend> backend_;  // the stores and the pipeline, over lookup_
  service::Limiter* limiter_ = nullptr;        // backend_'s
};

// A `sluice serve` decides; asynchronous calls run its blocking client on a few threads.
class RemoteImpl final : public Client::Impl {
 public:
  static StatusOr<std::shared_ptr<RemoteImpl>> open(const ClientOptions& options) {
    SLUICE_ASSIGN_OR_RETURN(const HttpUrl url,
                            invalid_input("store: ", parse_http_url(options.store)));
    SLUICE_ASSIGN_OR_RETURN(
        std::unique_ptr<RemoteLimiter> limiter,
        RemoteLimiter::create({.host = url.host,
                               .port = url.port,
                               .request_timeout = options.store_timeout.count()}));
    return std::shared_ptr<RemoteImpl>(new RemoteImpl(options.app, std::move(limiter)));
  }

  ~RemoteImpl() override { stop_timers(); }

  void decide(DecisionRequest request, service::Limiter::Done done) override {
    auto shared_done = std::make_shared<service::Limiter::Done>(std::move(done));
    const bool queued = work_.post([this, request = std::move(request), shared_done]() mutable {
      (*shared_done)({.decision = block_on(std::move(request))});
    });
    if (!queued) {
      (*shared_done)({.decision = Status(StatusCode::kResourceExhausted,
                                         "too many asynchronous calls waiting for the remote "
                                         "server")});
    }
  }
  StatusOr<Decision> block_on(DecisionRequest request) override { return remote_->decide(request); }

 private:
  // Threads for asynchronous calls, and how many may wait for one.
  static constexpr int kThreads = 4;
  static constexpr std::size_t kQueued = 10'000;

  RemoteImpl(std::string app, std::unique_ptr<RemoteLimiter> remote)
      : Impl(std::move(app)), remote_(std::move(remote)) {}

  std::unique_ptr<RemoteLimiter> remote_;
  WorkQueue work_{kThreads, kQueued};  // last: its threads stop before remote_ goes
};

Status check_options(const ClientOptions& options) {
  if (options.app.empty()) return option_error("app", "must name the app this client speaks for");
  if (options.store_timeout.count() <= 0) return option_error("store_timeout", "must be > 0");
  if (options.blocking_spin.count() < 0) return option_error("blocking_spin", "must be >= 0");
  if (!(options.local_fraction > 0 && options.local_fraction <= 1)) {
    return option_error("local_fraction", "must be in (0, 1]");
  }
  const int sources = static_cast<int>(!options.policy_text.empty()) +
                      static_cast<int>(!options.policy_file.empty()) +
                      static_cast<int>(!options.policy_database.empty());
  const bool remote = options.store.starts_with("http://");
  if (remote && sources > 0) {
    return option_error("policy_text/policy_file/policy_database",
                        "an http:// store decides with the server's own policies");
  }
  if (!remote && sources != 1) {
    return option_error(
        "policy_text/policy_file/policy_database",
        sources == 0 ? "name where the policies come from" : "name only one source of policies");
  }
  // Every Redis scheme (redis, rediss, +cluster, +sentinel) is checked by the store's URL parser.
  if (!remote && options.store != "memory:" && !options.store.starts_with("redis")) {
    return option_error("store",
                        "expected memory:, redis://…, redis+cluster://…, "
                        "redis+sentinel://… (rediss for TLS) or http://…, not \"" +
                            options.store + "\"");
  }
  return {};
}

}  // namespace

StatusOr<Client> Client::open(ClientOptions options) {
  SLUICE_RETURN_IF_ERROR(check_options(options));
  if (options.store.starts_with("http://")) {
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<RemoteImpl> remote, RemoteImpl::open(options));
    return Client(std::move(remote));
  }
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<LocalImpl> local, LocalImpl::open(options));
  return Client(std::move(local));
}

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->drain();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Client::~Client() {
  if (impl_) impl_->drain();
}

StatusOr<Decision> Client::try_acquire(std::string_view policy, std::string_view subject,
                                       std::int64_t cost) {
  return impl_->block_on(impl_->acquire_request(policy, subject, cost, {}));
}

StatusOr<Decision> Client::acquire(std::string_view policy, std::string_view subject,
                                   std::chrono::microseconds max_wait, std::int64_t cost) {
  return impl_->block_on(impl_->acquire_request(policy, subject, cost, max_wait));
}

void Client::acquire_async(std::string_view policy, std::string_view subject,
                           std::chrono::microseconds max_wait, std::int64_t cost, Callback done) {
  impl_->decide(impl_->acquire_request(policy, subject, cost, max_wait),
                impl_->track(std::move(done)));
}

StatusOr<Lease> Client::lease(std::string_view policy, std::string_view subject,
                              std::chrono::microseconds max_wait, std::int64_t cost) {
  SLUICE_ASSIGN_OR_RETURN(Decision decision, acquire(policy, subject, max_wait, cost));
  return Lease(impl_, std::string(policy), std::string(subject), std::move(decision));
}

StatusOr<bool> Client::release(std::string_view policy, std::string_view subject,
                               std::string_view lease) {
  return impl_->lease_operation(Operation::kRelease, policy, subject, lease);
}

StatusOr<bool> Client::renew(std::string_view policy, std::string_view subject,
                             std::string_view lease) {
  return impl_->lease_operation(Operation::kRenew, policy, subject, lease);
}

namespace {

// How long an allowed decision must wait for its turn (leaky bucket), or 0.
Micros turn_delay(const StatusOr<Decision>& decision) {
  if (!decision.ok() || !decision->verdict.allowed) return 0;
  return decision->verdict.delay.value_or(0);
}

}  // namespace

StatusOr<Decision> Client::charge(std::string_view policy, std::string_view subject,
                                  std::int64_t cost) {
  return impl_->block_on(impl_->request(Operation::kCharge, policy, subject, cost));
}

StatusOr<Decision> Client::refund(std::string_view policy, std::string_view subject,
                                  std::int64_t cost) {
  return impl_->block_on(impl_->request(Operation::kRefund, policy, subject, cost));
}

StatusOr<Decision> Client::reserve(std::string_view policy, std::string_view subject,
                                   std::int64_t estimate, std::chrono::microseconds ttl) {
  DecisionRequest request = impl_->request(Operation::kReserve, policy, subject, estimate);
  request.reservation_ttl = ttl.count();
  return impl_->block_on(std::move(request));
}

StatusOr<Decision> Client::settle(std::string_view policy, std::string_view subject,
                                  std::string_view reservation, std::int64_t actual) {
  DecisionRequest request = impl_->request(Operation::kSettle, policy, subject, actual);
  request.reservation = std::string(reservation);
  return impl_->block_on(std::move(request));
}

StatusOr<Decision> Client::pace(std::string_view policy, std::string_view subject,
                                std::chrono::microseconds max_wait, std::int64_t cost) {
  StatusOr<Decision> decision = acquire(policy, subject, max_wait, cost);
  if (const Micros delay = turn_delay(decision); delay > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
  }
  return decision;
}

void Client::pace_async(std::string_view policy, std::string_view subject,
                        std::chrono::microseconds max_wait, std::int64_t cost, Callback done) {
  Impl* impl = impl_.get();
  auto paced = [impl, done = impl_->track(std::move(done))](service::Decided decided) {
    const Micros delay = turn_delay(decided.decision);
    if (delay <= 0) return done(std::move(decided));
    impl->after(delay, [done, decided = std::move(decided)] { done(decided); });
  };
  impl_->decide(impl_->acquire_request(policy, subject, cost, max_wait), std::move(paced));
}

Lease::Lease(std::shared_ptr<Client::Impl> client, std::string policy, std::string subject,
             Decision decision)
    : client_(std::move(client)),
      policy_(std::move(policy)),
      subject_(std::move(subject)),
      decision_(std::move(decision)),
      held_(decision_.verdict.allowed) {}

Lease::Lease(Lease&& other) noexcept
    : client_(std::move(other.client_)),
      policy_(std::move(other.policy_)),
      subject_(std::move(other.subject_)),
      decision_(std::move(other.decision_)),
      held_(std::exchange(other.held_, false)) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    (void)release();
    client_ = std::move(other.client_);
    policy_ = std::move(other.policy_);
    subject_ = std::move(other.subject_);
    decision_ = std::move(other.decision_);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

Lease::~Lease() { (void)release(); }

const std::string& Lease::id() const {
  static const std::string kNone;
  return decision_.lease ? *decision_.lease : kNone;
}

StatusOr<bool> Lease::renew() {
  if (!held_ || !decision_.lease) return false;
  StatusOr<bool> renewed =
      client_->lease_operation(service::Operation::kRenew, policy_, subject_, id());
  if (renewed.ok() && !*renewed) held_ = false;
  return renewed;
}

StatusOr<bool> Lease::release() {
  if (!held_) return false;
  held_ = false;
  if (!decision_.lease) return false;  // allowed, with no concurrency limit to free
  return client_->lease_operation(service::Operation::kRelease, policy_, subject_, id());
}

}  // namespace sluice
