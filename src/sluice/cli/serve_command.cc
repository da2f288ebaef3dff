// `sluice serve`: the decision server and admin API (HTTP/JSON, DESIGN.md §5a) on the in-memory
// store or on Redis, with policies and accounts in the SQL database of --policies
// (serve_policies.h: policy files imported, the embedded demo policy of examples/ on a first
// start). Settings come from flags > environment (SLUICE_*) > a YAML config file (--config) >
// defaults; every setting is listed in `sluice serve --help` and docs/server.md. SIGTERM/SIGINT
// drain the server gracefully.
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stop_token>
#include <thread>

#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/cli/redis_at_start.h"
#include "sluice/cli/serve_policies.h"
#include "sluice/core/clock.h"
#include "sluice/core/connection_budget.h"
#include "sluice/core/duration.h"
#include "sluice/core/log_throttle.h"
#include "sluice/db/database_url.h"
#include "sluice/policy/document.h"
#include "sluice/policy/policy_files.h"
#include "sluice/policy/yaml_text.h"
#include "sluice/server/grpc/grpc_server.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/server/http/console.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/metrics.h"
#include "sluice/server/http/server.h"
#include "sluice/service/decision_history.h"
#include "sluice/service/lease_metrics.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/node_heartbeat.h"
#include "sluice/store/redis/redis_store.h"

namespace sluice::cli {

std::string_view demo_policies();  // examples/demo-policy.yaml, embedded at build time

namespace {

namespace fs = std::filesystem;

struct ServeSettings {
  std::string listen = "127.0.0.1:8080";
  std::string grpc_listen;  // empty: no gRPC server
  std::int64_t grpc_max_message_bytes = std::int64_t{4} * 1024 * 1024;
  std::int64_t grpc_max_concurrent_streams = 100;
  // The gRPC transport's bounds (docs/security/grpc.md), as GrpcServerOptions' defaults.
  std::int64_t grpc_io_threads = 1;
  std::int64_t grpc_max_connections = 0;
  std::int64_t grpc_max_connections_per_peer = 0;
  Micros grpc_handshake_timeout = 5 * kMicrosPerSecond;
  Micros grpc_idle_timeout = 60 * kMicrosPerSecond;
  Micros grpc_stream_timeout = 10 * kMicrosPerSecond;
  Micros grpc_max_connection_age = 0;
  std::int64_t grpc_max_header_list_bytes = std::int64_t{16} * 1024;
  std::int64_t grpc_max_connection_buffer_bytes = std::int64_t{4} * 1024 * 1024;
  std::int64_t grpc_max_buffered_bytes = std::int64_t{64} * 1024 * 1024;
  std::int64_t grpc_max_outbound_bytes = std::int64_t{64} * 1024;
  std::int64_t grpc_max_descriptors = 1000;
  bool grpc_reflection = true;
  grpc_server::RlsHeaders grpc_headers = grpc_server::RlsHeaders::kNone;
  Micros grpc_health_interval = 1 * kMicrosPerSecond;
  int threads = 0;
  std::string redis;
  std::string policies;  // empty: the per-user default database
  Micros policy_poll = 1 * kMicrosPerSecond;
  Micros session_ttl = Micros{12} * 3600 * kMicrosPerSecond;
  bool secure_cookies = false;
  // Admin API bounds (issue 32; docs/admin-api.md).
  std::int64_t admin_kdf_concurrency = 1;
  std::int64_t password_change_burst = 10;
  Micros password_change_interval = 30 * kMicrosPerSecond;
  std::int64_t max_sessions = 100'000;
  std::int64_t max_sessions_per_user = 20;
  std::int64_t max_tokens_per_user = 100;
  std::int64_t max_token_description_bytes = 1024;
  std::int64_t admin_page_size = 100;
  std::int64_t admin_max_page_size = 1000;
  std::vector<std::string> policy_files;
  int store_threads = -1;  // -1: auto
  std::int64_t max_header_bytes = std::int64_t{16} * 1024;
  std::int64_t max_body_bytes = std::int64_t{1024} * 1024;
  std::int64_t max_buffered_body_bytes = std::int64_t{64} << 20;  // issue 32 M8
  std::int64_t small_body_bytes = std::int64_t{8} << 10;
  Micros read_timeout = 10 * kMicrosPerSecond;
  Micros idle_timeout = 60 * kMicrosPerSecond;
  Micros first_request_timeout = 5 * kMicrosPerSecond;
  std::int64_t max_connections = 0;           // 0: from the descriptor limit
  std::int64_t max_connections_per_peer = 0;  // 0: half of max_connections
  Micros shutdown_timeout = 10 * kMicrosPerSecond;
  std::string tls_cert;  // empty (with tls_key): plain HTTP
  std::string tls_key;
  std::string tls_client_ca;
  Micros tls_handshake_timeout = 5 * kMicrosPerSecond;
  Micros hsts_max_age = Micros{365} * 24 * 3600 * kMicrosPerSecond;
  Micros max_wait = 60 * kMicrosPerSecond;
  std::int64_t max_batch = 1000;
  std::int64_t max_pending_decisions = 10'000;
  // Shares of it (issue 32 M6); 0: half of the bound each divides (pending_bound.h).
  std::int64_t max_pending_per_client = 0;
  std::int64_t max_waiting_decisions = 0;
  std::int64_t max_waiting_per_client = 0;
  std::int64_t max_waiting_per_policy = 0;
  bool allow_cross_site_decisions = false;  // issue 32 L2
  http::MetricsAccess metrics = http::MetricsAccess::kPublic;
  std::string metrics_token;
  http::HeaderSets rate_limit_headers;
  std::string check_app_header = "X-Sluice-App";
  std::string check_policy_header = "X-Sluice-Policy";
  std::string check_key_header = "X-Sluice-Key";
  std::string check_cost_header = "X-Sluice-Cost";
  int check_deny_status = 429;
  bool access_log = true;
  double local_fraction = 1.0;
  std::string node_id;  // empty: a random one per start
  Micros heartbeat_ttl = 3 * kMicrosPerSecond;
  std::int64_t memory_max_keys = 1'000'000;
  std::int64_t memory_max_bytes = std::int64_t{256} << 20;
  Micros reservation_max_ttl = kMicrosPerHour;
  std::int64_t reservations_per_subject = 1000;
  int redis_connections = 2;
  Micros redis_timeout = 1 * kMicrosPerSecond;
  // The defences in front of Redis (docs/defences.md).
  std::int64_t over_limit_cache_entries = 100'000;
  std::int64_t breaker_failures = 5;
  Micros breaker_open_for = 1 * kMicrosPerSecond;
};

StatusOr<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return invalid_argument("must be an integer between " + std::to_string(min) + " and " +
                            std::to_string(max) + ", not \"" + std::string(text) + "\"");
  }
  return value;
}

StatusOr<bool> parse_bool(std::string_view text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  return invalid_argument("must be true or false, not \"" + std::string(text) + "\"");
}

std::function<Status(ServeSettings&, std::string_view)> bool_setter(bool ServeSettings::*field) {
  return [field](ServeSettings& s, std::string_view text) -> Status {
    StatusOr<bool> value = parse_bool(text);
    if (!value.ok()) return value.status();
    s.*field = *value;
    return Status();
  };
}

std::function<std::string(const ServeSettings&)> bool_shower(bool ServeSettings::*field) {
  return [field](const ServeSettings& s) { return std::string(s.*field ? "true" : "false"); };
}

// One setting: its config-file key (the flag is --key with '-' for '_'), environment variable,
// help, and how to read it from text and show it.
struct Setting {
  std::string key;
  std::string env;
  std::string help;
  std::function<Status(ServeSettings&, std::string_view)> set;
  std::function<std::string(const ServeSettings&)> show;
  bool list = false;
};

template <typename T>
std::function<Status(ServeSettings&, std::string_view)> integer_setter(T ServeSettings::*field,
                                                                       std::int64_t min,
                                                                       std::int64_t max) {
  return [field, min, max](ServeSettings& s, std::string_view text) -> Status {
    StatusOr<std::int64_t> value = parse_integer(text, min, max);
    if (!value.ok()) return value.status();
    s.*field = static_cast<T>(*value);
    return Status();
  };
}

std::function<Status(ServeSettings&, std::string_view)> duration_setter(
    Micros ServeSettings::*field, bool allow_zero) {
  return [field, allow_zero](ServeSettings& s, std::string_view text) -> Status {
    StatusOr<Micros> value = parse_duration(text);
    if (!value.ok()) return value.status();
    if (!allow_zero && *value <= 0) return invalid_argument("must be greater than 0");
    s.*field = *value;
    return Status();
  };
}

std::function<Status(ServeSettings&, std::string_view)> string_setter(
    std::string ServeSettings::*field, bool allow_empty) {
  return [field, allow_empty](ServeSettings& s, std::string_view text) -> Status {
    if (!allow_empty && text.empty()) return invalid_argument("must not be empty");
    s.*field = std::string(text);
    return Status();
  };
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t;
    const auto add = [&](std::string key, std::string help, auto set, auto show,
                         bool list = false) {
      std::string env = "SLUICE_" + key;
      std::transform(env.begin(), env.end(), env.begin(), ::toupper);
      t.push_back({key, env, std::move(help), set, show, list});
    };
    add("listen", "Address to serve on: HOST:PORT ([v6]:PORT for IPv6; port 0 picks one)",
        string_setter(&ServeSettings::listen, false),
        [](const ServeSettings& s) { return s.listen; });
    add("grpc_listen",
        "Also serve Envoy's Rate Limit Service v3 (gRPC), grpc.health.v1 and reflection on "
        "HOST:PORT (empty: no gRPC; see docs/envoy.md)",
        string_setter(&ServeSettings::grpc_listen, true),
        [](const ServeSettings& s) { return s.grpc_listen; });
    add("grpc_max_message_bytes", "gRPC: largest request message (bytes)",
        integer_setter(&ServeSettings::grpc_max_message_bytes, 1024, 64 << 20),
        [](const ServeSettings& s) { return std::to_string(s.grpc_max_message_bytes); });
    add("grpc_max_concurrent_streams", "gRPC: most calls in flight on one HTTP/2 connection",
        integer_setter(&ServeSettings::grpc_max_concurrent_streams, 1, 1 << 20),
        [](const ServeSettings& s) { return std::to_string(s.grpc_max_concurrent_streams); });
    const auto grpc_integer = [&](const std::string& key, const std::string& help,
                                  std::int64_t ServeSettings::*field, std::int64_t min,
                                  std::int64_t max) {
      add(key, "gRPC: " + help, integer_setter(field, min, max),
          [field](const ServeSettings& s) { return std::to_string(s.*field); });
    };
    const auto grpc_duration = [&](const std::string& key, const std::string& help,
                                   Micros ServeSettings::*field, bool allow_zero) {
      add(key, "gRPC: " + help, duration_setter(field, allow_zero),
          [field](const ServeSettings& s) { return format_duration(s.*field); });
    };
    grpc_integer("grpc_io_threads", "threads serving connections", &ServeSettings::grpc_io_threads,
                 1, 256);
    grpc_integer("grpc_max_connections",
                 "open connections at most (at the cap the one idle longest is replaced; 0: a "
                 "quarter of the descriptor limit less 128, at most 1024)",
                 &ServeSettings::grpc_max_connections, 0, 1'000'000);
    grpc_integer("grpc_max_connections_per_peer",
                 "open connections from one client address at most (0: half the cap)",
                 &ServeSettings::grpc_max_connections_per_peer, 0, 1'000'000);
    grpc_duration("grpc_handshake_timeout", "time for a new connection's HTTP/2 preface",
                  &ServeSettings::grpc_handshake_timeout, false);
    grpc_duration("grpc_idle_timeout",
                  "a connection with no call open (or a write that does not move) this long closes",
                  &ServeSettings::grpc_idle_timeout, false);
    grpc_duration("grpc_stream_timeout", "time for a call's whole request to arrive, else reset",
                  &ServeSettings::grpc_stream_timeout, false);
    grpc_duration("grpc_max_connection_age", "GOAWAY to connections older than this (0: never)",
                  &ServeSettings::grpc_max_connection_age, true);
    grpc_integer("grpc_max_header_list_bytes", "request header list and header block (bytes)",
                 &ServeSettings::grpc_max_header_list_bytes, 64, 1 << 20);
    grpc_integer("grpc_max_connection_buffer_bytes",
                 "request bytes held for unfinished messages on one connection",
                 &ServeSettings::grpc_max_connection_buffer_bytes, 1024, std::int64_t{1} << 32);
    grpc_integer("grpc_max_buffered_bytes",
                 "request bytes held for unfinished messages across connections",
                 &ServeSettings::grpc_max_buffered_bytes, 1024, std::int64_t{1} << 40);
    grpc_integer("grpc_max_outbound_bytes",
                 "bytes queued for a connection's socket before it stops reading",
                 &ServeSettings::grpc_max_outbound_bytes, 1024, std::int64_t{1} << 30);
    grpc_integer("grpc_max_descriptors", "descriptors one ShouldRateLimit may carry",
                 &ServeSettings::grpc_max_descriptors, 1, 1'000'000);
    add("grpc_reflection", "gRPC: serve grpc.reflection.v1alpha (names every service and proto)",
        bool_setter(&ServeSettings::grpc_reflection), bool_shower(&ServeSettings::grpc_reflection));
    add(
        "grpc_headers",
        "gRPC: response_headers_to_add on answers: none (envoyproxy/ratelimit's default), "
        "x-ratelimit (x-ratelimit-limit/-remaining/-reset) or ratelimit (RateLimit-Limit/...)",
        [](ServeSettings& s, std::string_view text) -> Status {
          StatusOr<grpc_server::RlsHeaders> headers = grpc_server::parse_rls_headers(text);
          if (!headers.ok()) return headers.status();
          s.grpc_headers = *headers;
          return Status();
        },
        [](const ServeSettings& s) {
          return std::string(grpc_server::rls_headers_name(s.grpc_headers));
        });
    add("grpc_health_interval",
        "gRPC: how often readiness (store and policy database) is probed for grpc.health.v1",
        duration_setter(&ServeSettings::grpc_health_interval, false),
        [](const ServeSettings& s) { return format_duration(s.grpc_health_interval); });
    add("threads", "I/O threads (0: one per core)", integer_setter(&ServeSettings::threads, 0, 256),
        [](const ServeSettings& s) { return std::to_string(s.threads); });
    add("redis",
        "Decide on Redis: redis://[user:pass@]host:port/db, redis+cluster://h1:p1,h2:p2, "
        "redis+sentinel://s1:p1/MASTER, rediss… for TLS (empty: in-memory store)",
        string_setter(&ServeSettings::redis, true), [](const ServeSettings& s) { return s.redis; });
    add("policies",
        "Policy and account database: sqlite:///path.db, sqlite::memory:, "
        "mysql://user:pass@host:port/db or postgresql://user:pass@host:port/db (empty: the "
        "per-user SQLite file of `sluice policy`, ~/.local/share/sluice/policies.db)",
        string_setter(&ServeSettings::policies, true),
        [](const ServeSettings& s) { return s.policies; });
    add("policy_poll", "How often the policy database is polled for changes",
        duration_setter(&ServeSettings::policy_poll, false),
        [](const ServeSettings& s) { return format_duration(s.policy_poll); });
    add("session_ttl", "Admin API: lifetime of a password login's session cookie",
        duration_setter(&ServeSettings::session_ttl, false),
        [](const ServeSettings& s) { return format_duration(s.session_ttl); });
    add("secure_cookies",
        "Admin API: mark session cookies Secure (set when clients reach Sluice over HTTPS)",
        bool_setter(&ServeSettings::secure_cookies), bool_shower(&ServeSettings::secure_cookies));
    add("admin_kdf_concurrency",
        "Admin API: password hashes running at once on the admin threads; more get 429",
        integer_setter(&ServeSettings::admin_kdf_concurrency, 1, 64),
        [](const ServeSettings& s) { return std::to_string(s.admin_kdf_concurrency); });
    add("password_change_burst",
        "Admin API: own-password changes per user at once (each hashes), then one per "
        "password_change_interval",
        integer_setter(&ServeSettings::password_change_burst, 1, 1'000'000),
        [](const ServeSettings& s) { return std::to_string(s.password_change_burst); });
    add("password_change_interval", "Admin API: refill of password_change_burst",
        duration_setter(&ServeSettings::password_change_interval, false),
        [](const ServeSettings& s) { return format_duration(s.password_change_interval); });
    add("max_sessions", "Admin API: login sessions in memory at most (full: the oldest ends)",
        integer_setter(&ServeSettings::max_sessions, 1, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_sessions); });
    add("max_sessions_per_user",
        "Admin API: sessions per user at most; a login beyond it ends the user's oldest",
        integer_setter(&ServeSettings::max_sessions_per_user, 1, 1'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_sessions_per_user); });
    add("max_tokens_per_user", "Admin API: API tokens one user may hold (0: no cap)",
        integer_setter(&ServeSettings::max_tokens_per_user, 0, 1'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_tokens_per_user); });
    add("max_token_description_bytes", "Admin API: longest API token description (bytes)",
        integer_setter(&ServeSettings::max_token_description_bytes, 0, 65'536),
        [](const ServeSettings& s) { return std::to_string(s.max_token_description_bytes); });
    add("admin_page_size", "Admin API: entries per page of GET /v1/users and /v1/tokens by default",
        integer_setter(&ServeSettings::admin_page_size, 1, 100'000),
        [](const ServeSettings& s) { return std::to_string(s.admin_page_size); });
    add("admin_max_page_size",
        "Admin API: most entries a ?limit= may ask for (the console asks 50; at least "
        "admin_page_size)",
        integer_setter(&ServeSettings::admin_max_page_size, 50, 100'000),
        [](const ServeSettings& s) { return std::to_string(s.admin_max_page_size); });
    add(
        "policy_file",
        "Policy document(s) imported into the policy database at start (created or updated, all "
        "or nothing): a YAML/JSON file (several documents allowed) or a directory of "
        "*.yaml/*.yml/*.json; repeatable (env: comma-separated)",
        [](ServeSettings& s, std::string_view text) -> Status {
          if (text.empty()) return invalid_argument("must not be empty");
          s.policy_files.emplace_back(text);
          return Status();
        },
        [](const ServeSettings& s) {
          std::string out;
          for (const auto& f : s.policy_files) out += (out.empty() ? "" : ",") + f;
          return out;
        },
        true);
    add(
        "store_threads",
        "Threads for the blocking probe of GET /readyz (the policy database); decisions never "
        "use them: they go through the asynchronous pipeline (auto: 1)",
        [](ServeSettings& s, std::string_view text) -> Status {
          if (text == "auto") {
            s.store_threads = -1;
            return Status();
          }
          StatusOr<std::int64_t> value = parse_integer(text, 0, 1024);
          if (!value.ok()) return invalid_argument("must be auto or " + value.status().message());
          s.store_threads = static_cast<int>(*value);
          return Status();
        },
        [](const ServeSettings& s) {
          return s.store_threads < 0 ? std::string("auto") : std::to_string(s.store_threads);
        });
    add("max_header_bytes", "Largest request line + headers (bytes; above: 431)",
        integer_setter(&ServeSettings::max_header_bytes, 512, 1 << 20),
        [](const ServeSettings& s) { return std::to_string(s.max_header_bytes); });
    add("max_body_bytes", "Largest request body (bytes; above: 413)",
        integer_setter(&ServeSettings::max_body_bytes, 1, 64 << 20),
        [](const ServeSettings& s) { return std::to_string(s.max_body_bytes); });
    add("max_buffered_body_bytes",
        "Request bodies held in memory at once across all connections, beyond each one's first "
        "small_body_bytes; a body that does not fit gets 503 (at least max_body_bytes)",
        integer_setter(&ServeSettings::max_buffered_body_bytes, 1, std::int64_t{1} << 40),
        [](const ServeSettings& s) { return std::to_string(s.max_buffered_body_bytes); });
    add("small_body_bytes",
        "Bodies up to this size never wait for max_buffered_body_bytes (decisions stay "
        "answerable)",
        integer_setter(&ServeSettings::small_body_bytes, 0, 1 << 20),
        [](const ServeSettings& s) { return std::to_string(s.small_body_bytes); });
    add("read_timeout", "Time to receive a whole request once it started, and to send a response",
        duration_setter(&ServeSettings::read_timeout, false),
        [](const ServeSettings& s) { return format_duration(s.read_timeout); });
    add("idle_timeout", "How long a keep-alive connection may wait for its next request",
        duration_setter(&ServeSettings::idle_timeout, false),
        [](const ServeSettings& s) { return format_duration(s.idle_timeout); });
    add("first_request_timeout", "How long a new connection may wait before sending anything",
        duration_setter(&ServeSettings::first_request_timeout, false),
        [](const ServeSettings& s) { return format_duration(s.first_request_timeout); });
    add("max_connections",
        "Open HTTP connections at most; at the cap a new one replaces the longest idle (0: the "
        "descriptor limit less 128)",
        integer_setter(&ServeSettings::max_connections, 0, 10'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_connections); });
    add("max_connections_per_peer",
        "Open HTTP connections from one client address at most (0: half of max_connections; "
        "raise it behind a proxy)",
        integer_setter(&ServeSettings::max_connections_per_peer, 0, 10'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_connections_per_peer); });
    add("shutdown_timeout",
        "On SIGTERM/SIGINT: how long in-flight requests may take before connections are cut",
        duration_setter(&ServeSettings::shutdown_timeout, true),
        [](const ServeSettings& s) { return format_duration(s.shutdown_timeout); });
    add("tls_cert",
        "HTTPS: PEM certificate chain (server certificate first); with tls_key, the HTTP port "
        "serves TLS 1.2+ only (default: plain HTTP)",
        string_setter(&ServeSettings::tls_cert, true),
        [](const ServeSettings& s) { return s.tls_cert; });
    add("tls_key", "HTTPS: the certificate's PEM private key (unencrypted; keep it mode 0600)",
        string_setter(&ServeSettings::tls_key, true),
        [](const ServeSettings& s) { return s.tls_key; });
    add("tls_client_ca",
        "HTTPS: require client certificates signed by a CA in this PEM file (default: none "
        "asked)",
        string_setter(&ServeSettings::tls_client_ca, true),
        [](const ServeSettings& s) { return s.tls_client_ca; });
    add("tls_handshake_timeout",
        "HTTPS: how long a new connection may take to finish its handshake",
        duration_setter(&ServeSettings::tls_handshake_timeout, false),
        [](const ServeSettings& s) { return format_duration(s.tls_handshake_timeout); });
    add("hsts_max_age",
        "HTTPS: Strict-Transport-Security max-age sent on every response over TLS (0: none)",
        duration_setter(&ServeSettings::hsts_max_age, true),
        [](const ServeSettings& s) { return format_duration(s.hsts_max_age); });
    add("max_wait", "Largest wait_ms a POST /v1/acquire may ask for",
        duration_setter(&ServeSettings::max_wait, true),
        [](const ServeSettings& s) { return format_duration(s.max_wait); });
    add("max_batch", "Most requests in one POST /v1/acquire/batch",
        integer_setter(&ServeSettings::max_batch, 1, 100'000),
        [](const ServeSettings& s) { return std::to_string(s.max_batch); });
    add("max_pending_decisions",
        "Decisions in flight at most (waiting for the store or a wait_ms retry); beyond it a "
        "decision request gets 503 with Retry-After (gRPC: UNAVAILABLE) at once (0: no bound)",
        integer_setter(&ServeSettings::max_pending_decisions, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_pending_decisions); });
    add("max_pending_per_client",
        "Decisions in flight from one client address at most (0: half of max_pending_decisions; "
        "raise it behind a proxy)",
        integer_setter(&ServeSettings::max_pending_per_client, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_pending_per_client); });
    add("max_waiting_decisions",
        "Decisions asked with a wait_ms in flight at most (0: half of max_pending_decisions)",
        integer_setter(&ServeSettings::max_waiting_decisions, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_waiting_decisions); });
    add("max_waiting_per_client",
        "Waiting decisions from one client address at most (0: half of max_waiting_decisions)",
        integer_setter(&ServeSettings::max_waiting_per_client, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_waiting_per_client); });
    add("max_waiting_per_policy",
        "Waiting decisions on one policy at most (0: half of max_waiting_decisions)",
        integer_setter(&ServeSettings::max_waiting_per_policy, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.max_waiting_per_policy); });
    add("allow_cross_site_decisions",
        "Accept decision calls that change state with a Content-Type other than application/json "
        "or Sec-Fetch-Site: cross-site (default: refused, 415/403; docs/server.md)",
        bool_setter(&ServeSettings::allow_cross_site_decisions),
        bool_shower(&ServeSettings::allow_cross_site_decisions));
    add(
        "metrics", "Who may read GET /metrics: public, token (Bearer metrics_token) or off",
        [](ServeSettings& s, std::string_view text) -> Status {
          StatusOr<http::MetricsAccess> access = http::parse_metrics_access(text);
          if (!access.ok()) return access.status();
          s.metrics = *access;
          return Status();
        },
        [](const ServeSettings& s) { return std::string(http::metrics_access_name(s.metrics)); });
    add("metrics_token", "metrics: token: the bearer token GET /metrics must present",
        string_setter(&ServeSettings::metrics_token, true),
        [](const ServeSettings& s) { return s.metrics_token; });
    add(
        "rate_limit_headers",
        "Rate-limit header sets on decisions: all, none, or a comma list of github "
        "(X-RateLimit-*), draft6 (RateLimit-Limit/-Remaining/-Reset), draft10 (RateLimit, "
        "RateLimit-Policy)",
        [](ServeSettings& s, std::string_view text) -> Status {
          StatusOr<http::HeaderSets> sets = http::parse_header_sets(text);
          if (!sets.ok()) return sets.status();
          s.rate_limit_headers = *sets;
          return Status();
        },
        [](const ServeSettings& s) { return http::format_header_sets(s.rate_limit_headers); });
    add("check_app_header", "GET /v1/check: header naming the app",
        string_setter(&ServeSettings::check_app_header, false),
        [](const ServeSettings& s) { return s.check_app_header; });
    add("check_policy_header", "GET /v1/check: header naming the policy",
        string_setter(&ServeSettings::check_policy_header, false),
        [](const ServeSettings& s) { return s.check_policy_header; });
    add("check_key_header", "GET /v1/check: header carrying the subject (key)",
        string_setter(&ServeSettings::check_key_header, false),
        [](const ServeSettings& s) { return s.check_key_header; });
    add("check_cost_header", "GET /v1/check: optional header carrying the cost (default 1)",
        string_setter(&ServeSettings::check_cost_header, false),
        [](const ServeSettings& s) { return s.check_cost_header; });
    add("check_deny_status",
        "GET /v1/check: status of a denial (nginx auth_request passes only 401/403; see "
        "docs/server.md)",
        integer_setter(&ServeSettings::check_deny_status, 400, 499),
        [](const ServeSettings& s) { return std::to_string(s.check_deny_status); });
    add("access_log", "One JSON line per request on stderr (true/false)",
        bool_setter(&ServeSettings::access_log), bool_shower(&ServeSettings::access_log));
    add(
        "local_fraction",
        "Failure mode `local`: share of each limit this node grants alone while Redis is down "
        "(0 < f <= 1; 1/N for N servers)",
        [](ServeSettings& s, std::string_view text) -> Status {
          char* end = nullptr;
          const std::string copy(text);
          const double value = std::strtod(copy.c_str(), &end);
          if (copy.empty() || *end != '\0' || !(value > 0.0 && value <= 1.0)) {
            return invalid_argument("must be a number in (0, 1], not \"" + copy + "\"");
          }
          s.local_fraction = value;
          return Status();
        },
        [](const ServeSettings& s) {
          std::ostringstream out;
          out << s.local_fraction;
          return out.str();
        });
    add("node_id",
        "Failure mode `split`: this node's id in the Redis heartbeat set (default: random per "
        "start; docs/defences.md)",
        string_setter(&ServeSettings::node_id, true),
        [](const ServeSettings& s) { return s.node_id; });
    add("heartbeat_ttl",
        "Failure mode `split`: a node stops counting as live this long after its last heartbeat "
        "(beats every ttl/3)",
        duration_setter(&ServeSettings::heartbeat_ttl, false),
        [](const ServeSettings& s) { return format_duration(s.heartbeat_ttl); });
    add("memory_max_keys",
        "In-memory store: most records held (a subject's limit states, penalty box and "
        "reservations are one record; policies share it fairly)",
        integer_setter(&ServeSettings::memory_max_keys, 1, std::int64_t{1} << 40),
        [](const ServeSettings& s) { return std::to_string(s.memory_max_keys); });
    add("memory_max_bytes",
        "In-memory store: most bytes its records take, keys and overhead counted (policies share "
        "it fairly; docs/server.md)",
        integer_setter(&ServeSettings::memory_max_bytes, 1 << 20, std::int64_t{1} << 46),
        [](const ServeSettings& s) { return std::to_string(s.memory_max_bytes); });
    add(
        "reservation_max_ttl", "Reservations: the longest ttl_ms a reserve may ask for (up to 7d)",
        [](ServeSettings& s, std::string_view text) -> Status {
          StatusOr<Micros> value = parse_duration(text);
          if (!value.ok()) return value.status();
          if (*value <= 0 || *value > store::kMaxReservationTtl) {
            return invalid_argument("must be between 1us and 7d");
          }
          s.reservation_max_ttl = *value;
          return Status();
        },
        [](const ServeSettings& s) { return format_duration(s.reservation_max_ttl); });
    add("reservations_per_subject",
        "Reservations: most open (unsettled) reservations one subject may hold, in either store",
        integer_setter(&ServeSettings::reservations_per_subject, 1,
                       static_cast<std::int64_t>(store::kMaxReservationsPerSubject)),
        [](const ServeSettings& s) { return std::to_string(s.reservations_per_subject); });
    add("redis_connections", "Redis: pipelined connections shared by all requests",
        integer_setter(&ServeSettings::redis_connections, 1, 64),
        [](const ServeSettings& s) { return std::to_string(s.redis_connections); });
    add("redis_timeout", "Redis: per-command timeout (then the policy's on_store_failure decides)",
        duration_setter(&ServeSettings::redis_timeout, false),
        [](const ServeSettings& s) { return format_duration(s.redis_timeout); });
    add("over_limit_cache_entries",
        "Redis: subjects the local over-limit cache holds as denied until the retry point Redis "
        "gave, answered without a round trip (0: no cache; docs/defences.md)",
        integer_setter(&ServeSettings::over_limit_cache_entries, 0, 100'000'000),
        [](const ServeSettings& s) { return std::to_string(s.over_limit_cache_entries); });
    add("breaker_failures",
        "Redis: consecutive failed or timed-out calls that open the circuit breaker; while open, "
        "each policy's on_store_failure decides at once (0: never opens; docs/defences.md)",
        integer_setter(&ServeSettings::breaker_failures, 0, 1'000'000),
        [](const ServeSettings& s) { return std::to_string(s.breaker_failures); });
    add("breaker_open_for",
        "Redis: how long the circuit breaker stays open before one probe call tries Redis again",
        duration_setter(&ServeSettings::breaker_open_for, false),
        [](const ServeSettings& s) { return format_duration(s.breaker_open_for); });
    return t;
  }();
  return table;
}

std::string flag_name(const Setting& setting) {
  std::string flag = "--" + setting.key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

Status setting_error(std::string_view source, const Status& status) {
  return invalid_argument(std::string(source) + ": " + status.message());
}

// Reads the YAML config file: a map of setting keys (policy_file may be a list). Relative
// policy paths are relative to the file's directory.
Status apply_file(ServeSettings& s, const std::string& path) {
  std::ifstream file(path);
  if (!file) return invalid_argument("config file " + path + ": cannot be read");
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  StatusOr<std::vector<YAML::Node>> documents = policy::load_yaml_documents(text);
  if (!documents.ok()) {
    return invalid_argument("config file " + path + ": " + documents.status().message());
  }
  if (documents->size() > 1) {
    return invalid_argument("config file " + path + ": holds several YAML documents; one is read");
  }
  const YAML::Node root = documents->empty() ? YAML::Node() : documents->front();
  if (root.IsNull()) return Status();
  if (!root.IsMap()) return invalid_argument("config file " + path + ": must be a YAML map");
  const fs::path base = fs::path(path).parent_path();
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    std::string where = "config file ";  // "config file PATH: KEY", built once per setting
    where.append(path).append(": ").append(key);
    const auto it = std::find_if(settings().begin(), settings().end(),
                                 [&](const Setting& st) { return st.key == key; });
    if (it == settings().end()) {
      return invalid_argument(where + ": unknown setting");
    }
    std::vector<std::string> values;
    if (entry.second.IsSequence() && it->list) {
      for (const auto& item : entry.second) values.push_back(item.as<std::string>(""));
    } else if (entry.second.IsScalar()) {
      values.push_back(entry.second.as<std::string>());
    } else if (entry.second.IsNull()) {
      values.push_back("");
    } else {
      return invalid_argument(where + ": must be a " +
                              (it->list ? "string or a list of strings" : "scalar"));
    }
    if (it->list) s.policy_files.clear();
    for (std::string value : values) {
      if (it->key == "policy_file" && !value.empty() && fs::path(value).is_relative()) {
        value = (base / value).lexically_normal().string();
      }
      if (Status status = it->set(s, value); !status.ok()) {
        return setting_error(where, status);
      }
    }
  }
  return Status();
}

Status apply_env(ServeSettings& s) {
  for (const Setting& setting : settings()) {
    const char* value = std::getenv(setting.env.c_str());
    if (value == nullptr) continue;
    std::vector<std::string> values;
    if (setting.list) {
      s.policy_files.clear();
      std::string_view rest = value;
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        if (!rest.substr(0, comma).empty()) values.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else {
      values.emplace_back(value);
    }
    for (const std::string& v : values) {
      if (Status status = setting.set(s, v); !status.ok()) {
        return setting_error(setting.env, status);
      }
    }
  }
  return Status();
}

struct ServeCommand {
  std::string config;
  bool print_config = false;
  std::map<std::string, std::vector<std::string>> flags;  // by setting key
  std::map<std::string, CLI::Option*> options;
};

Status apply_flags(ServeSettings& s, const ServeCommand& command) {
  for (const Setting& setting : settings()) {
    const CLI::Option* option = command.options.at(setting.key);
    if (option->count() == 0) continue;
    if (setting.list) s.policy_files.clear();
    for (const std::string& value : command.flags.at(setting.key)) {
      if (Status status = setting.set(s, value); !status.ok()) {
        return setting_error(flag_name(setting), status);
      }
    }
  }
  return Status();
}

StatusOr<std::pair<std::string, std::uint16_t>> split_listen(const std::string& listen) {
  std::string host;
  std::string port;
  if (listen.starts_with('[')) {
    const std::size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return invalid_argument("listen: expected [IPv6]:PORT, not \"" + listen + "\"");
    }
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    const std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return invalid_argument("listen: expected HOST:PORT, not \"" + listen + "\"");
    }
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.empty()) return invalid_argument("listen: the host is missing (use 0.0.0.0 for all)");
  StatusOr<std::int64_t> number = parse_integer(port, 0, 65535);
  if (!number.ok()) return invalid_argument("listen: port " + number.status().message());
  return std::pair{host, static_cast<std::uint16_t>(*number)};
}

// One line per call, written at once: store threads log too.
void log_json(const nlohmann::json& line) {
  std::cerr << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
            << std::flush;
}

std::string print_settings(const ServeSettings& s) {
  std::string out;
  for (const Setting& setting : settings()) {
    if (setting.list) {
      out += setting.key + ":";
      if (s.policy_files.empty()) out += " []";
      out += "\n";
      for (const std::string& f : s.policy_files) out += "  - " + f + "\n";
    } else {
      // Secrets are masked (issue 32, L4): the output ends up in terminals, tickets and CI logs.
      // URLs keep everything but their password; a secret setting shows only whether it is set.
      const bool may_hold_password = setting.key == "redis" || setting.key == "policies";
      const bool is_secret = setting.key == "metrics_token";
      std::string shown = setting.show(s);
      if (may_hold_password) shown = db::redact_database_url(shown);
      if (is_secret && !shown.empty()) shown = "***";
      const nlohmann::json value = shown;
      out += setting.key + ": " + value.dump() + "\n";
    }
  }
  return out;
}

// Probes readiness every `interval` on a thread of its own (the probe blocks) and reports each
// result, so grpc.health.v1 follows what GET /readyz would answer.
class ReadinessProbe {
 public:
  ReadinessProbe(Micros interval, std::function<bool()> probe, std::function<void(bool)> report)
      : thread_([this, interval, probe = std::move(probe), report = std::move(report)] {
          std::unique_lock lock(mutex_);
          while (!stopping_) {
            lock.unlock();
            report(probe());
            lock.lock();
            stop_.wait_for(lock, std::chrono::microseconds(interval), [this] { return stopping_; });
          }
        }) {}
  ~ReadinessProbe() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

int run_serve(const ServeCommand& command) {
  // Signals are taken by sigwait at the end: block them before any thread starts (the policy
  // poller, admin workers, I/O threads), so every thread inherits the mask and a SIGTERM can
  // only reach sigwait, never kill the process from a thread with the default action.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ServeSettings s;
  std::string config = command.config;
  if (config.empty()) {
    if (const char* env = std::getenv("SLUICE_CONFIG")) config = env;
  }
  for (const Status& status :
       {config.empty() ? Status() : apply_file(s, config), apply_env(s), apply_flags(s, command)}) {
    if (!status.ok()) {
      std::cerr << "sluice serve: " << status.message() << "\n";
      return 2;
    }
  }
  if (command.print_config) {
    std::cout << print_settings(s);
    return 0;
  }
  StatusOr<std::pair<std::string, std::uint16_t>> listen = split_listen(s.listen);
  if (!listen.ok()) {
    std::cerr << "sluice serve: " << listen.status().message() << "\n";
    return 2;
  }
  std::optional<std::pair<std::string, std::uint16_t>> grpc_listen;
  if (!s.grpc_listen.empty()) {
    StatusOr<std::pair<std::string, std::uint16_t>> split = split_listen(s.grpc_listen);
    if (!split.ok()) {
      std::cerr << "sluice serve: grpc-" << split.status().message() << "\n";
      return 2;
    }
    grpc_listen = *split;
  }
  if (s.admin_page_size > s.admin_max_page_size) {
    std::cerr << "sluice serve: admin_page_size: must be at most admin_max_page_size ("
              << s.admin_max_page_size << "), not " << s.admin_page_size << "\n";
    return 2;
  }
  if (s.tls_cert.empty() != s.tls_key.empty()) {
    std::cerr << "sluice serve: " << (s.tls_cert.empty() ? "tls_key" : "tls_cert") << ": set, but "
              << (s.tls_cert.empty() ? "tls_cert" : "tls_key")
              << " is not; HTTPS needs both (--tls-cert and --tls-key)\n";
    return 2;
  }
  if (s.tls_cert.empty() && !s.tls_client_ca.empty()) {
    std::cerr << "sluice serve: tls_client_ca: needs HTTPS (--tls-cert and --tls-key)\n";
    return 2;
  }
  std::optional<http::TlsOptions> tls;
  if (!s.tls_cert.empty()) {
    tls = http::TlsOptions{.cert_file = s.tls_cert,
                           .key_file = s.tls_key,
                           .client_ca_file = s.tls_client_ca,
                           .hsts_max_age = s.hsts_max_age};
    // Load the files now, before any database or Redis is opened: never start half-configured.
    if (Status status = http::check_tls_options(*tls); !status.ok()) {
      std::cerr << "sluice serve: " << status.message() << "\n";
      return 2;
    }
  }
  if (s.metrics == http::MetricsAccess::kToken && s.metrics_token.empty()) {
    std::cerr << "sluice serve: metrics_token: must be set when metrics is token\n";
    return 2;
  }
  StatusOr<std::vector<policy::Policy>> files = policy::load_policy_files(s.policy_files);
  StatusOr<std::vector<policy::Policy>> demo =
      policy::parse_policy_texts({{"built-in demo policy", std::string(demo_policies())}});
  if (!files.ok() || !demo.ok()) {
    std::cerr << "sluice serve: " << (files.ok() ? demo : files).status().message() << "\n";
    return 2;
  }
  StatusOr<ServePolicies> policies = open_serve_policies(
      *default_environment(),
      {.url = s.policies,
       .imported = std::move(*files),
       .demo = std::move(*demo),
       .poll_interval = std::chrono::milliseconds(s.policy_poll / kMicrosPerMilli),
       .log = log_json});
  if (!policies.ok()) {
    std::cerr << "sluice serve: " << policies.status().message() << "\n";
    return exit_code_for(policies.status().code());
  }

  const store::ReservationLimits reservation_limits{
      .max_ttl = s.reservation_max_ttl,
      .max_per_subject = static_cast<std::size_t>(s.reservations_per_subject)};
  store::MemoryStore memory(SystemClock::instance(),
                            {.max_keys = static_cast<std::size_t>(s.memory_max_keys),
                             .max_bytes = static_cast<std::size_t>(s.memory_max_bytes),
                             .reservations = reservation_limits});
  std::unique_ptr<store::RedisStore> redis;
  if (!s.redis.empty()) {
    RedisAtStart opened = open_redis_at_start(
        "serve", "redis", s.redis,
        {.connections = s.redis_connections, .command_timeout = s.redis_timeout},
        "until it does, each policy's on_store_failure decides and /readyz answers 503");
    if (opened.exit_code != 0) return opened.exit_code;
    redis = std::move(opened.store);
    redis->set_reservation_limits(reservation_limits);
  }
  store::Store& store = redis ? static_cast<store::Store&>(*redis) : memory;
  // Failure mode split: the live nodes sharing this Redis (node_heartbeat.h).
  std::unique_ptr<store::NodeHeartbeat> heartbeat;
  if (redis) {
    StatusOr<std::unique_ptr<store::NodeHeartbeat>> created = store::NodeHeartbeat::create(
        redis->client(),
        {.node_id = s.node_id.empty() ? store::new_lease_id() : s.node_id, .ttl = s.heartbeat_ttl});
    if (!created.ok()) {
      std::cerr << "sluice serve: " << created.status().message() << "\n";
      return 2;
    }
    heartbeat = std::move(*created);
  }
  service::CachedPolicyLookup lookup(*policies->cache);
  // A credential revoked while serving fails every decision; say so loudly, but once per 10 s.
  LogThrottle refusal_log(SteadyClock::instance(), 10 * kMicrosPerSecond);
  const std::string redis_address = redis ? redis->address() : "";
  const service::PendingBounds shares = service::with_default_shares(
      {.total = static_cast<std::size_t>(s.max_pending_decisions),
       .per_client = static_cast<std::size_t>(s.max_pending_per_client),
       .waiting = static_cast<std::size_t>(s.max_waiting_decisions),
       .waiting_per_client = static_cast<std::size_t>(s.max_waiting_per_client),
       .waiting_per_policy = static_cast<std::size_t>(s.max_waiting_per_policy)});
  service::Limiter limiter(
      store, &memory,
      {.local_fraction = s.local_fraction,
       .store_timeout = s.redis_timeout,
       .policies = &lookup,
       .on_store_refusal =
           [&refusal_log, &redis_address](const Status& status) {
             if (std::optional<std::uint64_t> count = refusal_log.occurred()) {
               log_json({{"level", "error"},
                         {"msg",
                          "redis refuses sluice's credentials or permissions; each policy's "
                          "on_store_failure decides until they are fixed"},
                         {"redis", redis_address},
                         {"error", status.message()},
                         {"refused_calls", *count}});
             }
           },
       .max_pending = static_cast<std::size_t>(s.max_pending_decisions),
       .max_pending_per_client = shares.per_client,
       .max_waiting = shares.waiting,
       .max_waiting_per_client = shares.waiting_per_client,
       .max_waiting_per_policy = shares.waiting_per_policy,
       .over_limit_cache_entries = static_cast<std::size_t>(s.over_limit_cache_entries),
       .circuit_breaker = {.failure_threshold = static_cast<int>(s.breaker_failures),
                           .open_for = s.breaker_open_for},
       .live_nodes = [&heartbeat]() -> std::size_t {
         return heartbeat ? heartbeat->live_nodes() : 0;
       }});
  std::optional<store::HeartbeatLoop> heartbeat_loop;
  if (heartbeat) heartbeat_loop.emplace(*heartbeat);
  http::Metrics metrics;
  // The HTTP server starts after the API it serves; /metrics reads its connection counts once set.
  std::atomic<const http::HttpServer*> http_server{nullptr};
  http::DecisionApi api(
      limiter, lookup, store, metrics,
      {.app_header = s.check_app_header,
       .policy_header = s.check_policy_header,
       .key_header = s.check_key_header,
       .cost_header = s.check_cost_header,
       .check_deny_status = s.check_deny_status,
       .header_sets = s.rate_limit_headers,
       .max_wait = s.max_wait,
       .max_batch = static_cast<std::size_t>(s.max_batch),
       .policies_ready = [&policies] { return policies->policies->revision().status(); },
       .store_metrics =
           [&memory, &http_server, &limiter, &heartbeat](std::string& out) {
             http::write_memory_store_metrics(out, memory.stats());
             service::write_lease_metrics(out, limiter.token_lease_stats(),
                                          heartbeat ? heartbeat->live_nodes() : 0);
             if (const http::HttpServer* server = http_server.load()) {
               http::write_connection_metrics(out, server->connection_stats());
             }
           },
       .metrics_access = s.metrics,
       .metrics_token = s.metrics_token,
       .allow_cross_site = s.allow_cross_site_decisions});
  // The console's live charts: per-second counts sampled from the decision counters.
  service::DecisionHistory history(limiter.metrics());
  std::jthread history_sampler([&history](const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!stop.stop_requested()) {
      history.sample(SystemClock::instance().now());
      wake.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    }
  });
  http::AdminAuth admin_auth(
      *policies->accounts, SystemClock::instance(),
      {.session_ttl = s.session_ttl,
       // Over HTTPS a session cookie never needs to travel in clear.
       .secure_cookies = s.secure_cookies || tls.has_value(),
       .max_sessions = static_cast<std::size_t>(s.max_sessions),
       .max_sessions_per_user = static_cast<std::size_t>(s.max_sessions_per_user),
       .password_change_burst = s.password_change_burst,
       .password_change_interval = s.password_change_interval});
  http::AdminApi admin(
      *policies->policies, *policies->accounts, store, admin_auth, SystemClock::instance(),
      [cache = policies->cache.get()] { (void)cache->refresh_now(); },
      {.kdf_concurrency = static_cast<std::size_t>(s.admin_kdf_concurrency),
       .max_token_description_bytes = static_cast<std::size_t>(s.max_token_description_bytes),
       .max_tokens_per_user = static_cast<std::size_t>(s.max_tokens_per_user),
       .default_page_size = static_cast<std::size_t>(s.admin_page_size),
       .max_page_size = static_cast<std::size_t>(s.admin_max_page_size),
       .decisions = &limiter.metrics(),
       .history = &history,
       .subject_cleared = [&limiter](std::string_view policy, std::string_view subject) {
         limiter.forget_denial(policy, subject);
       }});
  auto router = std::make_shared<http::Router>();
  api.add_routes(*router);
  admin.add_routes(*router);
  http::add_console_routes(*router);

  const int store_threads = s.store_threads >= 0 ? s.store_threads : 1;
  // Both ports share one descriptor budget (issue 32, H1): unset caps default to their share, so
  // floods on both at once still leave the store and the database their descriptors.
  const ConnectionBudget budget = connection_budget(descriptor_limit(), grpc_listen.has_value());
  const std::size_t http_connections =
      s.max_connections != 0 ? static_cast<std::size_t>(s.max_connections) : budget.http;
  const std::size_t grpc_connections =
      s.grpc_max_connections != 0 ? static_cast<std::size_t>(s.grpc_max_connections) : budget.grpc;
  StatusOr<std::unique_ptr<http::HttpServer>> server = http::HttpServer::start(
      {.host = listen->first,
       .port = listen->second,
       .io_threads = s.threads,
       .blocking_threads = store_threads,
       .max_header_bytes = static_cast<std::size_t>(s.max_header_bytes),
       .max_body_bytes = static_cast<std::size_t>(s.max_body_bytes),
       .max_buffered_body_bytes = static_cast<std::size_t>(s.max_buffered_body_bytes),
       .small_body_bytes = static_cast<std::size_t>(s.small_body_bytes),
       .read_timeout = s.read_timeout,
       .idle_timeout = s.idle_timeout,
       .shutdown_timeout = s.shutdown_timeout,
       .first_request_timeout = s.first_request_timeout,
       .max_connections = http_connections,
       .max_connections_per_peer = static_cast<std::size_t>(s.max_connections_per_peer),
       .tls = tls,
       .tls_handshake_timeout = s.tls_handshake_timeout,
       .access_log = s.access_log,
       .on_response = [&metrics](
                          std::string_view route, int status,
                          Micros duration) { metrics.record_http(route, status, duration); }},
      router);
  if (!server.ok()) {
    std::cerr << "sluice serve: " << server.status().message() << "\n";
    return server.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  http_server.store(server->get());
  log_json({{"msg", "listening"},
            {"address", listen->first + ":" + std::to_string((*server)->port())},
            {"max_connections", (*server)->max_connections()},
            {"max_connections_per_peer", (*server)->max_connections_per_peer()},
            {"port", (*server)->port()},
            {"scheme", tls ? "https" : "http"},
            {"client_certificates", !s.tls_client_ca.empty()},
            {"store", redis ? "redis" : "memory"},
            {"policies", policies->cache->snapshot()->policies.size()}});
  std::unique_ptr<grpc_server::GrpcServer> grpc;
  std::unique_ptr<ReadinessProbe> readiness;
  if (grpc_listen) {
    StatusOr<std::unique_ptr<grpc_server::GrpcServer>> started = grpc_server::GrpcServer::start(
        {.host = grpc_listen->first,
         .port = grpc_listen->second,
         .io_threads = static_cast<int>(s.grpc_io_threads),
         .max_message_bytes = s.grpc_max_message_bytes,
         .max_concurrent_streams = s.grpc_max_concurrent_streams,
         .max_connections = grpc_connections,
         .max_connections_per_peer = static_cast<std::size_t>(s.grpc_max_connections_per_peer),
         .handshake_timeout = s.grpc_handshake_timeout,
         .idle_timeout = s.grpc_idle_timeout,
         .stream_timeout = s.grpc_stream_timeout,
         .max_connection_age = s.grpc_max_connection_age,
         .max_header_list_bytes = static_cast<std::size_t>(s.grpc_max_header_list_bytes),
         .max_connection_buffer_bytes =
             static_cast<std::size_t>(s.grpc_max_connection_buffer_bytes),
         .max_buffered_bytes = static_cast<std::size_t>(s.grpc_max_buffered_bytes),
         .max_outbound_bytes = static_cast<std::size_t>(s.grpc_max_outbound_bytes),
         .reflection = s.grpc_reflection,
         .shutdown_timeout = s.shutdown_timeout,
         .rls = {.headers = s.grpc_headers,
                 .store_timeout = s.redis_timeout,
                 .max_descriptors = static_cast<std::size_t>(s.grpc_max_descriptors)}},
        limiter, lookup);
    if (!started.ok()) {
      std::cerr << "sluice serve: " << started.status().message() << "\n";
      (*server)->shutdown();
      return 1;
    }
    grpc = std::move(*started);
    for (const std::string& conflict : lookup.descriptors()->conflicts()) {
      log_json({{"msg", "descriptor conflict"}, {"detail", conflict}});
    }
    grpc_server::GrpcServer* health = grpc.get();
    readiness = std::make_unique<ReadinessProbe>(
        s.grpc_health_interval,
        [&store, &policies] {
          static const std::vector<algorithm::Limit> kProbe = {
              algorithm::Gcra{.rate = 1, .period = kMicrosPerSecond, .burst = 0}};
          return store
                     .acquire({.policy = "sluice.readyz", .limits = kProbe, .subject = "readyz"}, 0)
                     .ok() &&
                 policies->policies->revision().ok();
        },
        [health](bool ready) { health->set_serving(ready); });
    log_json({{"msg", "listening"},
              {"protocol", "grpc"},
              {"address", grpc_listen->first + ":" + std::to_string(grpc->port())},
              {"port", grpc->port()}});
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  log_json({{"msg", "shutting down"},
            {"signal", signal_number == SIGTERM ? "SIGTERM" : "SIGINT"},
            {"open_connections", (*server)->connections()}});
  readiness.reset();
  if (grpc) grpc->shutdown(s.shutdown_timeout);
  (*server)->shutdown();
  http_server.store(nullptr);
  log_json({{"msg", "stopped"}});
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto command = std::make_shared<ServeCommand>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve rate-limit decisions over HTTP/JSON (default: 127.0.0.1:8080, in-memory store, the "
      "built-in demo policy).\nEvery setting below is also read from the environment (SLUICE_*) "
      "and from a YAML config file (--config, keys as the flags with '_' for '-').\nPrecedence: "
      "flags > environment > config file > defaults. See docs/server.md.");
  serve->add_option("--config", command->config,
                    "YAML config file of settings (env SLUICE_CONFIG)");
  serve->add_flag("--print-config", command->print_config,
                  "Print the effective settings (after precedence) as YAML and exit");
  const ServeSettings defaults;
  for (const Setting& setting : settings()) {
    std::string help = setting.help + "\n  env " + setting.env + ", file key " + setting.key;
    const std::string shown = setting.show(defaults);
    help += ", default " + (shown.empty() ? std::string("(none)") : shown);
    CLI::Option* option = serve->add_option(flag_name(setting), command->flags[setting.key], help);
    if (!setting.list) option->expected(1);
    command->options[setting.key] = option;
  }
  serve->callback([command] { set_exit_code(run_serve(*command)); });
}

}  // namespace sluice::cli
