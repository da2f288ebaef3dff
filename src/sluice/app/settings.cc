#include "sluice/app/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "sluice/app/recording.h"
#include "sluice/core/duration.h"
#include "sluice/core/invalid_input.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/store.h"

namespace sluice::app {
namespace {

using Setter = std::function<Status(Settings&, std::string_view)>;
using Shower = std::function<std::string(const Settings&)>;

StatusOr<bool> parse_bool(std::string_view text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  return invalid_argument("must be true or false, not \"" + std::string(text) + "\"");
}

Setter bool_setter(bool Settings::*field) {
  return [field](Settings& s, std::string_view text) -> Status {
    SLUICE_ASSIGN_OR_RETURN(const bool value, parse_bool(text));
    s.*field = value;
    return Status();
  };
}

Shower bool_shower(bool Settings::*field) {
  return [field](const Settings& s) { return std::string(s.*field ? "true" : "false"); };
}

template <typename T>
Setter integer_setter(T Settings::*field, std::int64_t min, std::int64_t max) {
  return [field, min, max](Settings& s, std::string_view text) -> Status {
    SLUICE_ASSIGN_OR_RETURN(const std::int64_t value, parse_integer(text, min, max));
    s.*field = static_cast<T>(value);
    return Status();
  };
}

// Whether a setting may be 0 (a duration) or empty (a string).
enum class Zero : std::uint8_t { kRefused, kAllowed };
enum class Empty : std::uint8_t { kRefused, kAllowed };

Setter duration_setter(Micros Settings::*field, Zero zero) {
  return [field, zero](Settings& s, std::string_view text) -> Status {
    SLUICE_ASSIGN_OR_RETURN(const Micros value, parse_duration(text));
    if (zero == Zero::kRefused && value <= 0) return invalid_argument("must be greater than 0");
    s.*field = value;
    return Status();
  };
}

Setter string_setter(std::string Settings::*field, Empty empty) {
  return [field, empty](Settings& s, std::string_view text) -> Status {
    if (empty == Empty::kRefused && text.empty()) return invalid_argument("must not be empty");
    s.*field = std::string(text);
    return Status();
  };
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

StatusOr<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return invalid_argument("must be an integer between " + std::to_string(min) + " and " +
                            std::to_string(max) + ", not \"" + std::string(text) + "\"");
  }
  return value;
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
        string_setter(&Settings::listen, Empty::kRefused),
        [](const Settings& s) { return s.listen; });
    add("grpc_listen",
        "Also serve Envoy's Rate Limit Service v3 (gRPC), grpc.health.v1 and reflection on "
        "HOST:PORT (empty: no gRPC; see docs/envoy.md)",
        string_setter(&Settings::grpc_listen, Empty::kAllowed),
        [](const Settings& s) { return s.grpc_listen; });
    add("grpc_max_message_bytes", "gRPC: largest request message (bytes)",
        integer_setter(&Settings::grpc_max_message_bytes, 1024, 64 << 20),
        [](const Settings& s) { return std::to_string(s.grpc_max_message_bytes); });
    add("grpc_max_concurrent_streams", "gRPC: most calls in flight on one HTTP/2 connection",
        integer_setter(&Settings::grpc_max_concurrent_streams, 1, 1 << 20),
        [](const Settings& s) { return std::to_string(s.grpc_max_concurrent_streams); });
    const auto grpc_integer = [&](const std::string& key, const std::string& help,
                                  std::int64_t Settings::*field, std::int64_t min,
                                  std::int64_t max) {
      add(key, "gRPC: " + help, integer_setter(field, min, max),
          [field](const Settings& s) { return std::to_string(s.*field); });
    };
    const auto grpc_duration = [&](const std::string& key, const std::string& help,
                                   Micros Settings::*field, Zero zero) {
      add(key, "gRPC: " + help, duration_setter(field, zero),
          [field](const Settings& s) { return format_duration(s.*field); });
    };
    grpc_integer("grpc_io_threads", "threads serving connections", &Settings::grpc_io_threads, 1,
                 256);
    grpc_integer("grpc_max_connections",
                 "open connections at most (at the cap the one idle longest is replaced; 0: a "
                 "quarter of the descriptor limit less 128, at most 1024)",
                 &Settings::grpc_max_connections, 0, 1'000'000);
    grpc_integer("grpc_max_connections_per_peer",
                 "open connections from one client address at most (0: half the cap)",
                 &Settings::grpc_max_connections_per_peer, 0, 1'000'000);
    grpc_duration("grpc_handshake_timeout", "time for a new connection's HTTP/2 preface",
                  &Settings::grpc_handshake_timeout, Zero::kRefused);
    grpc_duration("grpc_idle_timeout",
                  "a connection with no call open (or a write that does not move) this long closes",
                  &Settings::grpc_idle_timeout, Zero::kRefused);
    grpc_duration("grpc_stream_timeout", "time for a call's whole request to arrive, else reset",
                  &Settings::grpc_stream_timeout, Zero::kRefused);
    grpc_duration("grpc_max_connection_age", "GOAWAY to connections older than this (0: never)",
                  &Settings::grpc_max_connection_age, Zero::kAllowed);
    grpc_integer("grpc_max_header_list_bytes", "request header list and header block (bytes)",
                 &Settings::grpc_max_header_list_bytes, 64, 1 << 20);
    grpc_integer("grpc_max_connection_buffer_bytes",
                 "request bytes held for unfinished messages on one connection",
                 &Settings::grpc_max_connection_buffer_bytes, 1024, std::int64_t{1} << 32);
    grpc_integer("grpc_max_buffered_bytes",
                 "request bytes held for unfinished messages across connections",
                 &Settings::grpc_max_buffered_bytes, 1024, std::int64_t{1} << 40);
    grpc_integer("grpc_max_outbound_bytes",
                 "bytes queued for a connection's socket before it stops reading",
                 &Settings::grpc_max_outbound_bytes, 1024, std::int64_t{1} << 30);
    grpc_integer("grpc_max_descriptors", "descriptors one ShouldRateLimit may carry",
                 &Settings::grpc_max_descriptors, 1, 1'000'000);
    add("grpc_reflection", "gRPC: serve grpc.reflection.v1alpha (names every service and proto)",
        bool_setter(&Settings::grpc_reflection), bool_shower(&Settings::grpc_reflection));
    add(
        "grpc_headers",
        "gRPC: response_headers_to_add on answers: none (envoyproxy/ratelimit's default), "
        "x-ratelimit (x-ratelimit-limit/-remaining/-reset) or ratelimit (RateLimit-Limit/...)",
        [](Settings& s, std::string_view text) -> Status {
          SLUICE_ASSIGN_OR_RETURN(const wire::RlsHeaders headers, wire::parse_rls_headers(text));
          s.grpc_headers = headers;
          return Status();
        },
        [](const Settings& s) { return std::string(wire::rls_headers_name(s.grpc_headers)); });
    add("grpc_health_interval",
        "gRPC: how often readiness (store and policy database) is probed for grpc.health.v1",
        duration_setter(&Settings::grpc_health_interval, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.grpc_health_interval); });
    add("threads", "I/O threads (0: one per core)", integer_setter(&Settings::threads, 0, 256),
        [](const Settings& s) { return std::to_string(s.threads); });
    add("redis",
        "Decide on Redis: redis://[user:pass@]host:port/db, redis+cluster://h1:p1,h2:p2, "
        "redis+sentinel://s1:p1/MASTER, rediss… for TLS (empty: in-memory store)",
        string_setter(&Settings::redis, Empty::kAllowed),
        [](const Settings& s) { return s.redis; });
    add("policies",
        "Policy and account database: sqlite:///path.db, sqlite::memory:, "
        "mysql://user:pass@host:port/db or postgresql://user:pass@host:port/db (empty: the "
        "per-user SQLite file of `sluice policy`, ~/.local/share/sluice/policies.db)",
        string_setter(&Settings::policies, Empty::kAllowed),
        [](const Settings& s) { return s.policies; });
    add("policy_poll", "How often the policy database is polled for changes",
        duration_setter(&Settings::policy_poll, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.policy_poll); });
    add("session_ttl", "Admin API: lifetime of a password login's session cookie",
        duration_setter(&Settings::session_ttl, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.session_ttl); });
    add("secure_cookies",
        "Admin API: mark session cookies Secure (set when clients reach Sluice over HTTPS)",
        bool_setter(&Settings::secure_cookies), bool_shower(&Settings::secure_cookies));
    add("admin_kdf_concurrency",
        "Admin API: password hashes running at once on the admin threads; more get 429",
        integer_setter(&Settings::admin_kdf_concurrency, 1, 64),
        [](const Settings& s) { return std::to_string(s.admin_kdf_concurrency); });
    add("password_change_burst",
        "Admin API: own-password changes per user at once (each hashes), then one per "
        "password_change_interval",
        integer_setter(&Settings::password_change_burst, 1, 1'000'000),
        [](const Settings& s) { return std::to_string(s.password_change_burst); });
    add("password_change_interval", "Admin API: refill of password_change_burst",
        duration_setter(&Settings::password_change_interval, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.password_change_interval); });
    add("max_sessions", "Admin API: login sessions in memory at most (full: the oldest ends)",
        integer_setter(&Settings::max_sessions, 1, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_sessions); });
    add("max_sessions_per_user",
        "Admin API: sessions per user at most; a login beyond it ends the user's oldest",
        integer_setter(&Settings::max_sessions_per_user, 1, 1'000'000),
        [](const Settings& s) { return std::to_string(s.max_sessions_per_user); });
    add("max_tokens_per_user", "Admin API: API tokens one user may hold (0: no cap)",
        integer_setter(&Settings::max_tokens_per_user, 0, 1'000'000),
        [](const Settings& s) { return std::to_string(s.max_tokens_per_user); });
    add("max_token_description_bytes", "Admin API: longest API token description (bytes)",
        integer_setter(&Settings::max_token_description_bytes, 0, 65'536),
        [](const Settings& s) { return std::to_string(s.max_token_description_bytes); });
    add("admin_page_size", "Admin API: entries per page of GET /v1/users and /v1/tokens by default",
        integer_setter(&Settings::admin_page_size, 1, 100'000),
        [](const Settings& s) { return std::to_string(s.admin_page_size); });
    add("admin_max_page_size",
        "Admin API: most entries a ?limit= may ask for (the console asks 50; at least "
        "admin_page_size)",
        integer_setter(&Settings::admin_max_page_size, 50, 100'000),
        [](const Settings& s) { return std::to_string(s.admin_max_page_size); });
    add(
        "policy_file",
        "Policy document(s) imported into the policy database at start (created or updated, all "
        "or nothing): a YAML/JSON file (several documents allowed) or a directory of "
        "*.yaml/*.yml/*.json; repeatable (env: comma-separated)",
        [](Settings& s, std::string_view text) -> Status {
          if (text.empty()) return invalid_argument("must not be empty");
          s.policy_files.emplace_back(text);
          return Status();
        },
        [](const Settings& s) {
          std::string out;
          for (const auto& f : s.policy_files) out += (out.empty() ? "" : ",") + f;
          return out;
        },
        true);
    add(
        "store_threads",
        "Threads for the blocking probe of GET /readyz (the policy database); decisions never "
        "use them: they go through the asynchronous pipeline (auto: 1)",
        [](Settings& s, std::string_view text) -> Status {
          if (text == "auto") {
            s.store_threads = -1;
            return Status();
          }
          SLUICE_ASSIGN_OR_RETURN(const std::int64_t value,
                                  invalid_input("must be auto or ", parse_integer(text, 0, 1024)));
          s.store_threads = static_cast<int>(value);
          return Status();
        },
        [](const Settings& s) {
          return s.store_threads < 0 ? std::string("auto") : std::to_string(s.store_threads);
        });
    add("max_header_bytes", "Largest request line + headers (bytes; above: 431)",
        integer_setter(&Settings::max_header_bytes, 512, 1 << 20),
        [](const Settings& s) { return std::to_string(s.max_header_bytes); });
    add("max_body_bytes", "Largest request body (bytes; above: 413)",
        integer_setter(&Settings::max_body_bytes, 1, 64 << 20),
        [](const Settings& s) { return std::to_string(s.max_body_bytes); });
    add("max_buffered_body_bytes",
        "Request bodies held in memory at once across all connections, beyond each one's first "
        "small_body_bytes; a body that does not fit gets 503 (at least max_body_bytes)",
        integer_setter(&Settings::max_buffered_body_bytes, 1, std::int64_t{1} << 40),
        [](const Settings& s) { return std::to_string(s.max_buffered_body_bytes); });
    add("small_body_bytes",
        "Bodies up to this size never wait for max_buffered_body_bytes (decisions stay "
        "answerable)",
        integer_setter(&Settings::small_body_bytes, 0, 1 << 20),
        [](const Settings& s) { return std::to_string(s.small_body_bytes); });
    add("read_timeout", "Time to receive a whole request once it started, and to send a response",
        duration_setter(&Settings::read_timeout, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.read_timeout); });
    add("idle_timeout", "How long a keep-alive connection may wait for its next request",
        duration_setter(&Settings::idle_timeout, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.idle_timeout); });
    add("first_request_timeout", "How long a new connection may wait before sending anything",
        duration_setter(&Settings::first_request_timeout, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.first_request_timeout); });
    add("max_connections",
        "Open HTTP connections at most; at the cap a new one replaces the longest idle (0: the "
        "descriptor limit less 128)",
        integer_setter(&Settings::max_connections, 0, 10'000'000),
        [](const Settings& s) { return std::to_string(s.max_connections); });
    add("max_connections_per_peer",
        "Open HTTP connections from one client address at most (0: half of max_connections; "
        "raise it behind a proxy)",
        integer_setter(&Settings::max_connections_per_peer, 0, 10'000'000),
        [](const Settings& s) { return std::to_string(s.max_connections_per_peer); });
    add("shutdown_timeout",
        "On SIGTERM/SIGINT: how long in-flight requests may take before connections are cut",
        duration_setter(&Settings::shutdown_timeout, Zero::kAllowed),
        [](const Settings& s) { return format_duration(s.shutdown_timeout); });
    add("tls_cert",
        "HTTPS: PEM certificate chain (server certificate first); with tls_key, the HTTP port "
        "serves TLS 1.2+ only (default: plain HTTP)",
        string_setter(&Settings::tls_cert, Empty::kAllowed),
        [](const Settings& s) { return s.tls_cert; });
    add("tls_key", "HTTPS: the certificate's PEM private key (unencrypted; keep it mode 0600)",
        string_setter(&Settings::tls_key, Empty::kAllowed),
        [](const Settings& s) { return s.tls_key; });
    add("tls_client_ca",
        "HTTPS: require client certificates signed by a CA in this PEM file (default: none "
        "asked)",
        string_setter(&Settings::tls_client_ca, Empty::kAllowed),
        [](const Settings& s) { return s.tls_client_ca; });
    add("tls_handshake_timeout",
        "HTTPS: how long a new connection may take to finish its handshake",
        duration_setter(&Settings::tls_handshake_timeout, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.tls_handshake_timeout); });
    add("hsts_max_age",
        "HTTPS: Strict-Transport-Security max-age sent on every response over TLS (0: none)",
        duration_setter(&Settings::hsts_max_age, Zero::kAllowed),
        [](const Settings& s) { return format_duration(s.hsts_max_age); });
    add("max_wait", "Largest wait_ms a POST /v1/acquire may ask for",
        duration_setter(&Settings::max_wait, Zero::kAllowed),
        [](const Settings& s) { return format_duration(s.max_wait); });
    add("max_batch", "Most requests in one POST /v1/acquire/batch",
        integer_setter(&Settings::max_batch, 1, 100'000),
        [](const Settings& s) { return std::to_string(s.max_batch); });
    add("max_pending_decisions",
        "Decisions in flight at most (waiting for the store or a wait_ms retry); beyond it a "
        "decision request gets 503 with Retry-After (gRPC: UNAVAILABLE) at once (0: no bound)",
        integer_setter(&Settings::max_pending_decisions, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_pending_decisions); });
    add("max_pending_per_client",
        "Decisions in flight from one client address at most (0: half of max_pending_decisions; "
        "raise it behind a proxy)",
        integer_setter(&Settings::max_pending_per_client, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_pending_per_client); });
    add("max_waiting_decisions",
        "Decisions asked with a wait_ms in flight at most (0: half of max_pending_decisions)",
        integer_setter(&Settings::max_waiting_decisions, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_waiting_decisions); });
    add("max_waiting_per_client",
        "Waiting decisions from one client address at most (0: half of max_waiting_decisions)",
        integer_setter(&Settings::max_waiting_per_client, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_waiting_per_client); });
    add("max_waiting_per_policy",
        "Waiting decisions on one policy at most (0: half of max_waiting_decisions)",
        integer_setter(&Settings::max_waiting_per_policy, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.max_waiting_per_policy); });
    add("allow_cross_site_decisions",
        "Accept decision calls that change state with a Content-Type other than application/json "
        "or Sec-Fetch-Site: cross-site (default: refused, 415/403; docs/server.md)",
        bool_setter(&Settings::allow_cross_site_decisions),
        bool_shower(&Settings::allow_cross_site_decisions));
    add(
        "metrics", "Who may read GET /metrics: public, token (Bearer metrics_token) or off",
        [](Settings& s, std::string_view text) -> Status {
          SLUICE_ASSIGN_OR_RETURN(const http::MetricsAccess access,
                                  http::parse_metrics_access(text));
          s.metrics = access;
          return Status();
        },
        [](const Settings& s) { return std::string(http::metrics_access_name(s.metrics)); });
    add("metrics_token", "metrics: token: the bearer token GET /metrics must present",
        string_setter(&Settings::metrics_token, Empty::kAllowed),
        [](const Settings& s) { return s.metrics_token; });
    add(
        "rate_limit_headers",
        "Rate-limit header sets on decisions: all, none, or a comma list of github "
        "(X-RateLimit-*), draft6 (RateLimit-Limit/-Remaining/-Reset), draft10 (RateLimit, "
        "RateLimit-Policy)",
        [](Settings& s, std::string_view text) -> Status {
          SLUICE_ASSIGN_OR_RETURN(const wire::HeaderSets sets, wire::parse_header_sets(text));
          s.rate_limit_headers = sets;
          return Status();
        },
        [](const Settings& s) { return wire::format_header_sets(s.rate_limit_headers); });
    add("check_app_header", "GET /v1/check: header naming the app",
        string_setter(&Settings::check_app_header, Empty::kRefused),
        [](const Settings& s) { return s.check_app_header; });
    add("check_policy_header", "GET /v1/check: header naming the policy",
        string_setter(&Settings::check_policy_header, Empty::kRefused),
        [](const Settings& s) { return s.check_policy_header; });
    add("check_key_header", "GET /v1/check: header carrying the subject (key)",
        string_setter(&Settings::check_key_header, Empty::kRefused),
        [](const Settings& s) { return s.check_key_header; });
    add("check_cost_header", "GET /v1/check: optional header carrying the cost (default 1)",
        string_setter(&Settings::check_cost_header, Empty::kRefused),
        [](const Settings& s) { return s.check_cost_header; });
    add("check_deny_status",
        "GET /v1/check: status of a denial (nginx auth_request passes only 401/403; see "
        "docs/server.md)",
        integer_setter(&Settings::check_deny_status, 400, 499),
        [](const Settings& s) { return std::to_string(s.check_deny_status); });
    add(
        "access_log",
        "One JSON line per request: off, stderr, or a file to append to (true/false, the "
        "values of old, mean stderr/off)",
        [](Settings& s, std::string_view text) -> Status {
          if (text.empty()) return invalid_argument("must be off, stderr or a file");
          // A file named like a boolean would be a surprise; the booleans keep their old meaning.
          if (StatusOr<bool> on = parse_bool(text); on.ok()) {
            s.access_log = *on ? kAccessLogStderr : kAccessLogOff;
          } else {
            s.access_log = text;
          }
          return Status();
        },
        [](const Settings& s) { return s.access_log; });
    add("record_dir",
        "Record every decision for back-tests (sluice simulate --traffic) in rotating files "
        "under this directory, created if missing (empty: off; docs/backtesting.md)",
        string_setter(&Settings::record_dir, Empty::kAllowed),
        [](const Settings& s) { return s.record_dir; });
    add("record_max_bytes",
        "Recording: bytes of all its files at most (the oldest are deleted beyond)",
        integer_setter(&Settings::record_max_bytes, 1 << 16, std::int64_t{1} << 50),
        [](const Settings& s) { return std::to_string(s.record_max_bytes); });
    add("record_file_bytes", "Recording: a new file is started past this many bytes",
        integer_setter(&Settings::record_file_bytes, 1 << 16, std::int64_t{1} << 50),
        [](const Settings& s) { return std::to_string(s.record_file_bytes); });
    add(
        "record_sample",
        "Recording: share of subjects recorded, each whole or not at all (0.25 or 25%)",
        [](Settings& s, std::string_view text) -> Status {
          SLUICE_ASSIGN_OR_RETURN(s.record_sample, parse_sample(text));
          return Status();
        },
        [](const Settings& s) { return format_number(s.record_sample); });
    add(
        "record_subjects",
        "Recording: subjects in clear, or hashed (HMAC-SHA-256 under record_key: back-tests "
        "work, the real keys are not in the files)",
        [](Settings& s, std::string_view text) -> Status {
          if (text != "clear" && text != "hashed") {
            return invalid_argument("must be clear or hashed, not \"" + std::string(text) + "\"");
          }
          s.record_subjects = text == "clear" ? simulate::SubjectStorage::kClear
                                              : simulate::SubjectStorage::kHashed;
          return Status();
        },
        [](const Settings& s) {
          return std::string(s.record_subjects == simulate::SubjectStorage::kClear ? "clear"
                                                                                   : "hashed");
        });
    add("record_key",
        "Recording: secret keying the sample and the hashed subjects (give it in the config file "
        "or SLUICE_RECORD_KEY, not on the command line)",
        string_setter(&Settings::record_key, Empty::kAllowed),
        [](const Settings& s) { return s.record_key; });
    add(
        "local_fraction",
        "Failure mode `local`: share of each limit this node grants alone while Redis is down "
        "(0 < f <= 1; 1/N for N servers)",
        [](Settings& s, std::string_view text) -> Status {
          char* end = nullptr;
          const std::string copy(text);
          const double value = std::strtod(copy.c_str(), &end);
          if (copy.empty() || *end != '\0' || !(value > 0.0 && value <= 1.0)) {
            return invalid_argument("must be a number in (0, 1], not \"" + copy + "\"");
          }
          s.local_fraction = value;
          return Status();
        },
        [](const Settings& s) { return format_number(s.local_fraction); });
    add("node_id",
        "Failure mode `split`: this node's id in the Redis heartbeat set (default: random per "
        "start; docs/defences.md)",
        string_setter(&Settings::node_id, Empty::kAllowed),
        [](const Settings& s) { return s.node_id; });
    add("heartbeat_ttl",
        "Failure mode `split`: a node stops counting as live this long after its last heartbeat "
        "(beats every ttl/3)",
        duration_setter(&Settings::heartbeat_ttl, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.heartbeat_ttl); });
    add("memory_max_keys",
        "In-memory store: most records held (a subject's limit states, penalty box and "
        "reservations are one record; policies share it fairly)",
        integer_setter(&Settings::memory_max_keys, 1, std::int64_t{1} << 40),
        [](const Settings& s) { return std::to_string(s.memory_max_keys); });
    add("memory_max_bytes",
        "In-memory store: most bytes its records take, keys and overhead counted (policies share "
        "it fairly; docs/server.md)",
        integer_setter(&Settings::memory_max_bytes, 1 << 20, std::int64_t{1} << 46),
        [](const Settings& s) { return std::to_string(s.memory_max_bytes); });
    add(
        "reservation_max_ttl", "Reservations: the longest ttl_ms a reserve may ask for (up to 7d)",
        [](Settings& s, std::string_view text) -> Status {
          SLUICE_ASSIGN_OR_RETURN(const Micros value, parse_duration(text));
          if (value <= 0 || value > store::kMaxReservationTtl) {
            return invalid_argument("must be between 1us and 7d");
          }
          s.reservation_max_ttl = value;
          return Status();
        },
        [](const Settings& s) { return format_duration(s.reservation_max_ttl); });
    add("reservations_per_subject",
        "Reservations: most open (unsettled) reservations one subject may hold, in either store",
        integer_setter(&Settings::reservations_per_subject, 1,
                       static_cast<std::int64_t>(store::kMaxReservationsPerSubject)),
        [](const Settings& s) { return std::to_string(s.reservations_per_subject); });
    add("redis_connections", "Redis: pipelined connections shared by all requests",
        integer_setter(&Settings::redis_connections, 1, 64),
        [](const Settings& s) { return std::to_string(s.redis_connections); });
    add("redis_timeout", "Redis: per-command timeout (then the policy's on_store_failure decides)",
        duration_setter(&Settings::redis_timeout, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.redis_timeout); });
    add("over_limit_cache_entries",
        "Redis: subjects the local over-limit cache holds as denied until the retry point Redis "
        "gave, answered without a round trip (0: no cache; docs/defences.md)",
        integer_setter(&Settings::over_limit_cache_entries, 0, 100'000'000),
        [](const Settings& s) { return std::to_string(s.over_limit_cache_entries); });
    add("breaker_failures",
        "Redis: consecutive failed or timed-out calls that open the circuit breaker; while open, "
        "each policy's on_store_failure decides at once (0: never opens; docs/defences.md)",
        integer_setter(&Settings::breaker_failures, 0, 1'000'000),
        [](const Settings& s) { return std::to_string(s.breaker_failures); });
    add("breaker_open_for",
        "Redis: how long the circuit breaker stays open before one probe call tries Redis again",
        duration_setter(&Settings::breaker_open_for, Zero::kRefused),
        [](const Settings& s) { return format_duration(s.breaker_open_for); });
    return t;
  }();
  return table;
}

std::string flag_name(const Setting& setting) {
  std::string flag = "--" + setting.key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

StatusOr<HostPort> split_listen(const std::string& listen) {
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
  SLUICE_ASSIGN_OR_RETURN(const std::int64_t number,
                          invalid_input("listen: port ", parse_integer(port, 0, 65535)));
  return HostPort{.host = host, .port = static_cast<std::uint16_t>(number)};
}

Status check_settings(const Settings& s) {
  SLUICE_RETURN_IF_ERROR(split_listen(s.listen).status());
  if (!s.grpc_listen.empty()) {
    SLUICE_RETURN_IF_ERROR(invalid_input("grpc-", split_listen(s.grpc_listen).status()));
  }
  if (s.admin_page_size > s.admin_max_page_size) {
    return invalid_argument("admin_page_size: must be at most admin_max_page_size (" +
                            std::to_string(s.admin_max_page_size) + "), not " +
                            std::to_string(s.admin_page_size));
  }
  if (s.tls_cert.empty() != s.tls_key.empty()) {
    const std::string set = s.tls_cert.empty() ? "tls_key" : "tls_cert";
    const std::string unset = s.tls_cert.empty() ? "tls_cert" : "tls_key";
    return invalid_argument(set + ": set, but " + unset +
                            " is not; HTTPS needs both (--tls-cert and --tls-key)");
  }
  if (s.tls_cert.empty() && !s.tls_client_ca.empty()) {
    return invalid_argument("tls_client_ca: needs HTTPS (--tls-cert and --tls-key)");
  }
  if (s.metrics == http::MetricsAccess::kToken && s.metrics_token.empty()) {
    return invalid_argument("metrics_token: must be set when metrics is token");
  }
  return check_record_settings(s);
}

}  // namespace sluice::app
