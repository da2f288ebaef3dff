#include "sluice/app/server.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/app/recording.h"
#include "sluice/core/clock.h"
#include "sluice/core/connection_budget.h"
#include "sluice/core/invalid_input.h"
#include "sluice/core/log_throttle.h"
#include "sluice/core/logger.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/policy_files.h"
#include "sluice/server/grpc/grpc_server.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/server/http/console.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/metrics.h"
#include "sluice/server/http/server.h"
#include "sluice/service/backend.h"
#include "sluice/service/decision_history.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/service/readiness.h"
#include "sluice/service/token_batch_metrics.h"
#include "sluice/store/redis/engine_metrics.h"

namespace sluice::app {
namespace {

// Runs the readiness check every `interval` on a thread of its own (the check blocks) and
// reports each result, so grpc.health.v1 follows what GET /readyz would answer.
class ReadinessProber {
 public:
  ReadinessProber(Micros interval, const service::Readiness& readiness,
                  std::function<void(bool)> report)
      : thread_([this, interval, &readiness, report = std::move(report)] {
          run(interval, readiness, report);
        }) {}
  ~ReadinessProber() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
  }
  ReadinessProber(const ReadinessProber&) = delete;
  ReadinessProber& operator=(const ReadinessProber&) = delete;

 private:
  void run(Micros interval, const service::Readiness& readiness,
           const std::function<void(bool)>& report) {
    MutexLock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      report(readiness.check().ok());
      lock.lock();
      const auto next = std::chrono::steady_clock::now() + std::chrono::microseconds(interval);
      while (!stopping_ && stop_.wait_until(lock, next)) {
      }
    }
  }

  Mutex mutex_;
  CondVar stop_;
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: it runs once the members above exist
};

// Samples the decision counters once a second for the console's live charts.
std::jthread history_sampler(service::DecisionHistory& history) {
  return std::jthread([&history](const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!stop.stop_requested()) {
      history.sample(SystemClock::instance().now());
      wake.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    }
  });
}

std::optional<http::TlsOptions> tls_options(const Settings& s) {
  if (s.tls_cert.empty()) return std::nullopt;
  return http::TlsOptions{.cert_file = s.tls_cert,
                          .key_file = s.tls_key,
                          .client_ca_file = s.tls_client_ca,
                          .hsts_max_age = s.hsts_max_age};
}

StatusOr<ServePolicies> open_policies(const Settings& s, const ServeInputs& inputs) {
  StatusOr<std::vector<policy::Policy>> files = policy::load_policy_files(s.policy_files);
  StatusOr<std::vector<policy::Policy>> demo =
      policy::parse_policy_texts({{"built-in demo policy", std::string(inputs.demo_policies)}});
  if (!files.ok() || !demo.ok()) {
    return invalid_argument((files.ok() ? demo : files).status().message());
  }
  return open_serve_policies(
      inputs.database,
      {.url = s.policies,
       .imported = std::move(*files),
       .demo = std::move(*demo),
       .poll_interval = std::chrono::milliseconds(s.policy_poll / kMicrosPerMilli)});
}

service::BackendOptions backend_options(const Settings& s) {
  const service::PendingBounds shares = service::with_default_shares(
      {.total = static_cast<std::size_t>(s.max_pending_decisions),
       .per_client = static_cast<std::size_t>(s.max_pending_per_client),
       .waiting = static_cast<std::size_t>(s.max_waiting_decisions),
       .waiting_per_client = static_cast<std::size_t>(s.max_waiting_per_client),
       .waiting_per_policy = static_cast<std::size_t>(s.max_waiting_per_policy)});
  return {
      .url_name = "redis",
      .memory = {.max_keys = static_cast<std::size_t>(s.memory_max_keys),
                 .max_bytes = static_cast<std::size_t>(s.memory_max_bytes),
                 .reservations = {.max_ttl = s.reservation_max_ttl,
                                  .max_per_subject =
                                      static_cast<std::size_t>(s.reservations_per_subject)}},
      .redis = {.connections = s.redis_connections, .command_timeout = s.redis_timeout},
      .check_redis = true,
      .heartbeat = store::NodeHeartbeatOptions{.node_id = s.node_id.empty() ? store::new_unique_id()
                                                                            : s.node_id,
                                               .ttl = s.heartbeat_ttl},
      .limiter = {.local_fraction = s.local_fraction,
                  .store_timeout = s.redis_timeout,
                  .max_pending = static_cast<std::size_t>(s.max_pending_decisions),
                  .max_pending_per_client = shares.per_client,
                  .max_waiting = shares.waiting,
                  .max_waiting_per_client = shares.waiting_per_client,
                  .max_waiting_per_policy = shares.waiting_per_policy,
                  .over_limit_cache_entries = static_cast<std::size_t>(s.over_limit_cache_entries),
                  .circuit_breaker = {.failure_threshold = static_cast<int>(s.breaker_failures),
                                      .open_for = s.breaker_open_for}}};
}

http::HttpServerOptions http_options(const Settings& s, const HostPort& listen,
                                     std::size_t max_connections) {
  return {.host = listen.host,
          .port = listen.port,
          .io_threads = s.threads,
          .blocking_threads = s.store_threads >= 0 ? s.store_threads : 1,
          .max_header_bytes = static_cast<std::size_t>(s.max_header_bytes),
          .max_body_bytes = static_cast<std::size_t>(s.max_body_bytes),
          .max_buffered_body_bytes = static_cast<std::size_t>(s.max_buffered_body_bytes),
          .small_body_bytes = static_cast<std::size_t>(s.small_body_bytes),
          .read_timeout = s.read_timeout,
          .idle_timeout = s.idle_timeout,
          .shutdown_timeout = s.shutdown_timeout,
          .first_request_timeout = s.first_request_timeout,
          .max_connections = max_connections,
          .max_connections_per_peer = static_cast<std::size_t>(s.max_connections_per_peer),
          .tls = tls_options(s),
          .tls_handshake_timeout = s.tls_handshake_timeout,
          .access_log = s.access_log != kAccessLogOff};
}

grpc_server::GrpcServerOptions grpc_options(const Settings& s, const HostPort& listen,
                                            std::size_t max_connections) {
  return {
      .host = listen.host,
      .port = listen.port,
      .io_threads = static_cast<int>(s.grpc_io_threads),
      .max_message_bytes = s.grpc_max_message_bytes,
      .max_concurrent_streams = s.grpc_max_concurrent_streams,
      .max_connections = max_connections,
      .max_connections_per_peer = static_cast<std::size_t>(s.grpc_max_connections_per_peer),
      .handshake_timeout = s.grpc_handshake_timeout,
      .idle_timeout = s.grpc_idle_timeout,
      .stream_timeout = s.grpc_stream_timeout,
      .max_connection_age = s.grpc_max_connection_age,
      .max_header_list_bytes = static_cast<std::size_t>(s.grpc_max_header_list_bytes),
      .max_connection_buffer_bytes = static_cast<std::size_t>(s.grpc_max_connection_buffer_bytes),
      .max_buffered_bytes = static_cast<std::size_t>(s.grpc_max_buffered_bytes),
      .max_outbound_bytes = static_cast<std::size_t>(s.grpc_max_outbound_bytes),
      .reflection = s.grpc_reflection,
      .shutdown_timeout = s.shutdown_timeout,
      .rls = {.headers = s.grpc_headers,
              .store_timeout = s.redis_timeout,
              .max_descriptors = static_cast<std::size_t>(s.grpc_max_descriptors)}};
}

// A server that cannot start: InvalidArgument stays (a setting), anything else is Internal.
Status start_error(const Status& status) {
  if (status.ok() || status.code() == StatusCode::kInvalidArgument) return status;
  return Status(StatusCode::kInternal, status.message());
}
template <typename T>
StatusOr<T> start_error(StatusOr<T> started) {
  if (started.ok()) return started;
  return start_error(started.status());
}

// A gRPC server that cannot start is Internal whatever the cause: its settings were checked
// before it starts.
template <typename T>
StatusOr<T> internal_if_error(StatusOr<T> started) {
  if (started.ok()) return started;
  return Status(StatusCode::kInternal, started.status().message());
}

}  // namespace

// Declared in the order they are built; destroyed in reverse, each before what it uses.
struct RunningServer::Parts {
  Settings settings;
  // The access log's file when `access_log` names one; open while the HTTP server writes to it.
  struct AccessLogFile {
    int fd = -1;
    AccessLogFile() = default;
    AccessLogFile(const AccessLogFile&) = delete;
    AccessLogFile& operator=(const AccessLogFile&) = delete;
    ~AccessLogFile() {
      if (fd >= 0) ::close(fd);
    }
  } access_log_file;
  ServePolicies policies;
  std::unique_ptr<service::CachedPolicyLookup> lookup;
  // Records decisions when record_dir is set; declared before the backend, whose limiter
  // hands it decisions, so it is destroyed after (writing what is still queued).
  std::unique_ptr<simulate::Recorder> recorder;
  // A credential revoked while serving fails every decision; say so loudly, but once per 10 s.
  LogThrottle refusal_log{SteadyClock::instance(), 10 * kMicrosPerSecond};
  std::unique_ptr<service::Backend> backend;
  http::Metrics metrics;
  // The HTTP server starts after the API it serves; /metrics reads its connection counts once set.
  std::atomic<const http::HttpServer*> http_server{nullptr};
  std::unique_ptr<http::DecisionApi> api;
  std::unique_ptr<service::DecisionHistory> history;
  std::jthread sampler;
  std::unique_ptr<http::AdminAuth> admin_auth;
  std::unique_ptr<http::AdminApi> admin;
  std::shared_ptr<http::Router> router = std::make_shared<http::Router>();
  std::unique_ptr<http::HttpServer> server;
  std::unique_ptr<grpc_server::GrpcServer> grpc;
  std::unique_ptr<service::Readiness> readiness;
  std::unique_ptr<ReadinessProber> prober;
  bool stopped = false;

  // Ready when the policy database answers (GET /readyz and gRPC health ask it alike).
  Status policies_ready() const { return policies.policies->revision().status(); }
  Status open_backend_for(const ServeInputs& inputs);
  void add_routes();
  Status start_http();
  Status start_grpc();
};

Status RunningServer::Parts::open_backend_for(const ServeInputs& inputs) {
  service::BackendOptions options = backend_options(settings);
  options.limiter.policies = lookup.get();
  options.limiter.on_store_refusal = [this](const Status& status) {
    if (std::optional<std::uint64_t> count = refusal_log.occurred()) {
      log_error(
          "redis refuses sluice's credentials or permissions; each policy's on_store_failure "
          "decides until they are fixed",
          {{"redis", backend->redis_address()},
           {"error", status.message()},
           {"refused_calls", *count}});
    }
  };
  SLUICE_ASSIGN_OR_RETURN(recorder, start_recorder(settings));
  if (recorder) {
    options.limiter.on_decision = record_decisions(*recorder, SystemClock::instance());
    log_info(
        "recording decisions",
        {{"dir", settings.record_dir},
         {"subjects",
          settings.record_subjects == simulate::SubjectStorage::kHashed ? "hashed" : "clear"}});
  }
  SLUICE_ASSIGN_OR_RETURN(backend, service::open_backend(settings.redis, std::move(options)));
  if (backend->redis && backend->unanswered_at_start.ok()) {
    // Which engine each node runs (store/redis/script_engine.h), as probed at connect.
    std::string engines;
    for (const auto& [node, engine] : backend->redis->client().engines()) {
      engines +=
          (engines.empty() ? "" : ",") + node + "=" + std::string(redis::engine_name(engine));
    }
    log_info("redis engines", {{"redis", backend->redis_address()}, {"engines", engines}});
  }
  if (!backend->unanswered_at_start.ok() && inputs.warn) {
    inputs.warn(backend->unanswered_warning(
        "until it does, each policy's on_store_failure decides and /readyz answers 503"));
  }
  return Status();
}

void RunningServer::Parts::add_routes() {
  const Settings& s = settings;
  service::Limiter& limiter = *backend->limiter;
  api = std::make_unique<http::DecisionApi>(
      limiter, backend->store(), metrics,
      http::DecisionApiOptions{
          .app_header = s.check_app_header,
          .policy_header = s.check_policy_header,
          .key_header = s.check_key_header,
          .cost_header = s.check_cost_header,
          .check_deny_status = s.check_deny_status,
          .header_sets = s.rate_limit_headers,
          .max_wait = s.max_wait,
          .max_batch = static_cast<std::size_t>(s.max_batch),
          .policies_ready = [this] { return policies_ready(); },
          .store_metrics =
              [this](std::string& out) {
                http::write_memory_store_metrics(out, backend->memory->stats());
                if (backend->redis) redis::write_engine_metrics(out, backend->redis->client());
                service::write_token_batch_metrics(out, backend->limiter->token_batch_stats(),
                                                   backend->live_nodes());
                if (recorder) write_recording_metrics(out, recorder->stats());
                if (const http::HttpServer* running = http_server.load()) {
                  http::write_connection_metrics(out, running->connection_stats());
                }
              },
          .metrics_access = s.metrics,
          .metrics_token = s.metrics_token,
          .allow_cross_site = s.allow_cross_site_decisions});
  history = std::make_unique<service::DecisionHistory>(limiter.metrics());
  sampler = history_sampler(*history);
  admin_auth = std::make_unique<http::AdminAuth>(
      *policies.accounts, SystemClock::instance(),
      http::AdminAuthOptions{
          .session_ttl = s.session_ttl,
          // Over HTTPS a session cookie never needs to travel in clear.
          .secure_cookies = s.secure_cookies || !s.tls_cert.empty(),
          .max_sessions = static_cast<std::size_t>(s.max_sessions),
          .max_sessions_per_user = static_cast<std::size_t>(s.max_sessions_per_user),
          .password_change_burst = s.password_change_burst,
          .password_change_interval = s.password_change_interval});
  admin = std::make_unique<http::AdminApi>(
      *policies.policies, *policies.accounts, backend->store(), *admin_auth,
      SystemClock::instance(), [cache = policies.cache.get()] { (void)cache->refresh_now(); },
      http::AdminApiOptions{
          .kdf_concurrency = static_cast<std::size_t>(s.admin_kdf_concurrency),
          .max_token_description_bytes = static_cast<std::size_t>(s.max_token_description_bytes),
          .max_tokens_per_user = static_cast<std::size_t>(s.max_tokens_per_user),
          .default_page_size = static_cast<std::size_t>(s.admin_page_size),
          .max_page_size = static_cast<std::size_t>(s.admin_max_page_size),
          .decisions = &limiter.metrics(),
          .history = history.get(),
          .subject_cleared = [&limiter](std::string_view policy, std::string_view subject) {
            limiter.forget_denial(policy, subject);
          }});
  api->add_routes(*router);
  admin->add_routes(*router);
  http::add_console_routes(*router);
}

Status RunningServer::Parts::start_http() {
  const Settings& s = settings;
  // Both ports share one descriptor budget (issue 32, H1): unset caps default to their share, so
  // floods on both at once still leave the store and the database their descriptors.
  const ConnectionBudget budget = connection_budget(descriptor_limit(), !s.grpc_listen.empty());
  const HostPort listen = *split_listen(s.listen);
  http::HttpServerOptions options = http_options(
      s, listen,
      s.max_connections != 0 ? static_cast<std::size_t>(s.max_connections) : budget.http);
  options.on_response = [this](std::string_view route, int status, Micros duration) {
    metrics.record_http(route, status, duration);
  };
  if (options.access_log && s.access_log != kAccessLogStderr) {
    // Appended to, so that logrotate's copytruncate (or a reader's tail -F) works.
    access_log_file.fd =
        ::open(s.access_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (access_log_file.fd < 0) {
      return invalid_argument("access_log: cannot open " + s.access_log + ": " +
                              std::strerror(errno));
    }
    options.access_log_fd = access_log_file.fd;
  }
  SLUICE_ASSIGN_OR_RETURN(server, start_error(http::HttpServer::start(options, router)));
  http_server.store(server.get());
  log_info("listening", {{"address", listen.host + ":" + std::to_string(server->port())},
                         {"max_connections", server->max_connections()},
                         {"max_connections_per_peer", server->max_connections_per_peer()},
                         {"port", server->port()},
                         {"scheme", s.tls_cert.empty() ? "http" : "https"},
                         {"client_certificates", !s.tls_client_ca.empty()},
                         {"store", backend->redis ? "redis" : "memory"},
                         {"policies", policies.cache->snapshot()->policies.size()}});
  return Status();
}

Status RunningServer::Parts::start_grpc() {
  const Settings& s = settings;
  const ConnectionBudget budget = connection_budget(descriptor_limit(), true);
  const HostPort listen = *split_listen(s.grpc_listen);
  SLUICE_ASSIGN_OR_RETURN(grpc,
                          internal_if_error(grpc_server::GrpcServer::start(
                              grpc_options(s, listen,
                                           s.grpc_max_connections != 0
                                               ? static_cast<std::size_t>(s.grpc_max_connections)
                                               : budget.grpc),
                              *backend->limiter)));
  for (const std::string& conflict : lookup->descriptors()->conflicts()) {
    log_warn("descriptor conflict", {{"detail", conflict}});
  }
  readiness =
      std::make_unique<service::Readiness>(backend->store(), [this] { return policies_ready(); });
  prober = std::make_unique<ReadinessProber>(
      s.grpc_health_interval, *readiness,
      [health = grpc.get()](bool ready) { health->set_serving(ready); });
  log_info("listening", {{"protocol", "grpc"},
                         {"address", listen.host + ":" + std::to_string(grpc->port())},
                         {"port", grpc->port()}});
  return Status();
}

StatusOr<std::unique_ptr<RunningServer>> RunningServer::start(const Settings& settings,
                                                              ServeInputs inputs) {
  auto parts = std::make_unique<Parts>();
  parts->settings = settings;
  // Load the TLS files now, before any database or Redis is opened: never start half-configured.
  if (std::optional<http::TlsOptions> tls = tls_options(settings)) {
    SLUICE_RETURN_IF_ERROR(invalid_input("", http::check_tls_options(*tls)));
  }
  SLUICE_ASSIGN_OR_RETURN(parts->policies, open_policies(settings, inputs));
  parts->lookup = std::make_unique<service::CachedPolicyLookup>(*parts->policies.cache);
  SLUICE_RETURN_IF_ERROR(parts->open_backend_for(inputs));
  parts->add_routes();
  // From here on a failure stops what started (the destructor).
  auto running = std::unique_ptr<RunningServer>(new RunningServer(std::move(parts)));
  SLUICE_RETURN_IF_ERROR(running->parts_->start_http());
  if (!settings.grpc_listen.empty()) {
    SLUICE_RETURN_IF_ERROR(running->parts_->start_grpc());
  }
  return running;
}

RunningServer::RunningServer(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

RunningServer::~RunningServer() {
  if (parts_->stopped) return;
  parts_->prober.reset();
  if (parts_->grpc) parts_->grpc->shutdown(parts_->settings.shutdown_timeout);
  if (parts_->server) parts_->server->shutdown();
  parts_->http_server.store(nullptr);
}

void RunningServer::stop(std::string_view signal) {
  Parts& p = *parts_;
  log_info("shutting down", {{"signal", signal}, {"open_connections", p.server->connections()}});
  p.prober.reset();
  if (p.grpc) p.grpc->shutdown(p.settings.shutdown_timeout);
  p.server->shutdown();
  p.http_server.store(nullptr);
  p.stopped = true;
  log_info("stopped");
}

}  // namespace sluice::app
