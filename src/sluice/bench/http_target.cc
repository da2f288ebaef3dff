#include "sluice/bench/http_target.h"

#include <atomic>
#include <vector>

#include "sluice/bench/http_async_target.h"
#include "sluice/client/http_url.h"
#include "sluice/client/remote_limiter.h"
#include "sluice/core/invalid_input.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"

namespace sluice::bench {
namespace {

constexpr std::string_view kPrimeSubject = "sluice-bench-prime";

}  // namespace

namespace {

// What every connection of one target shares: the request, and the first error for the report.
class Shared {
 public:
  explicit Shared(const HttpTargetOptions& options)
      : policy_(options.policy), app_(options.app), cost_(options.cost) {}

  Outcome decide(RemoteLimiter& client, std::string_view subject) {
    StatusOr<service::Decision> decision = client.decide(
        {.app = app_, .policy = policy_, .subject = std::string(subject), .cost = cost_});
    if (!decision.ok()) {
      remember(decision.status());
      return {.verdict = Verdict::kError};
    }
    if (decision->lease) {
      // Concurrency limits: give the lease back at once, as a request that completed would.
      (void)client.decide({.app = app_,
                           .policy = policy_,
                           .operation = service::Operation::kRelease,
                           .subject = std::string(subject),
                           .lease = *decision->lease});
    }
    return {.verdict = decision->verdict.allowed ? Verdict::kAllowed : Verdict::kDenied,
            .degraded = decision->degraded};
  }

  void remember(const Status& status) { first_error_.remember(status.to_string()); }

  std::string first_error() const { return first_error_.text(); }

 private:
  std::string policy_;
  std::string app_;
  std::int64_t cost_;
  FirstError first_error_;
};

// One load thread's client. RemoteLimiter keeps at most one idle connection here, and only this
// thread calls it, so all of the thread's requests travel on the same keep-alive connection.
class ThreadClient final : public Target {
 public:
  ThreadClient(Shared& shared, std::unique_ptr<RemoteLimiter> client)
      : shared_(shared), client_(std::move(client)) {}
  Outcome decide(std::string_view subject) override { return shared_.decide(*client_, subject); }
  RemoteLimiter& client() { return *client_; }

 private:
  Shared& shared_;
  std::unique_ptr<RemoteLimiter> client_;
};

class HttpTarget final : public Target {
 public:
  HttpTarget(const HttpTargetOptions& options, RemoteLimiterOptions client_options,
             std::unique_ptr<RemoteLimiter> client)
      : options_(options),
        shared_(options),
        client_options_(std::move(client_options)),
        client_(std::move(client)) {}

  // Callers that did not ask for a thread's view share one pooled client (thread-safe).
  Outcome decide(std::string_view subject) override { return shared_.decide(*client_, subject); }

  Target& for_thread(int index) override {
    ThreadClient* view = nullptr;
    bool fresh = false;
    {
      MutexLock lock(mu_);
      const auto slot = static_cast<std::size_t>(index);
      if (threads_.size() <= slot) threads_.resize(slot + 1);
      if (!threads_[slot]) {
        StatusOr<std::unique_ptr<RemoteLimiter>> client = RemoteLimiter::create(client_options_);
        if (!client.ok()) {
          // Resolving worked for the shared client; should it fail now, the thread shares that
          // client (the load still runs; the report counts connections, not this).
          shared_.remember(client.status());
          return *this;
        }
        threads_[slot] = std::make_unique<ThreadClient>(shared_, std::move(*client));
        fresh = true;
      }
      view = threads_[slot].get();
    }
    // Open the connection now, before the clock starts, with a call that charges nothing. Should
    // it fail, the first decision reconnects and reports the error.
    if (fresh) (void)view->client().ready();
    return *view;
  }

  std::string first_error() const override { return shared_.first_error(); }

  Status prime() {
    SLUICE_ASSIGN_OR_RETURN(const service::Decision decision,
                            client_->decide({.app = options_.app,
                                             .policy = options_.policy,
                                             .subject = std::string(kPrimeSubject),
                                             .cost = 0}));
    if (decision.degraded) return unavailable("the server's store did not answer a decision");
    return {};
  }

 private:
  HttpTargetOptions options_;
  Shared shared_;
  RemoteLimiterOptions client_options_;
  std::unique_ptr<RemoteLimiter> client_;
  Mutex mu_;
  // Index = load thread; kept across load points, so the 100-thread point reuses the connections
  // of the 10-thread one (the server closes a connection idle for 60 s; the client then
  // reconnects once).
  std::vector<std::unique_ptr<ThreadClient>> threads_ SLUICE_GUARDED_BY(mu_);
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_http_target(const HttpTargetOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const HttpUrl url, invalid_input("--url \"" + options.url + "\": ",
                                                           parse_http_url(options.url)));
  if (options.policy.empty()) return invalid_argument("--target http needs --policy NAME");
  RemoteLimiterOptions client_options{.host = url.host,
                                      .port = url.port,
                                      .max_idle_connections = 1,
                                      .connect_timeout = options.connect_timeout,
                                      .request_timeout = options.request_timeout};
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RemoteLimiter> client,
                          RemoteLimiter::create(client_options));
  auto target = std::make_unique<HttpTarget>(options, client_options, std::move(client));
  if (Status status = target->prime(); !status.ok()) {
    return Status(status.code(), format_http_url(url) + ", policy \"" + options.policy +
                                     "\", app \"" + options.app + "\": " + status.message());
  }
  if (options.asynchronous) return make_async_http_target(options, url);
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace sluice::bench
