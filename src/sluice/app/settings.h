// Settings of `sluice serve` as data: every value the server is configured with (Settings, one
// field per setting, with its default) and the table describing each one (Setting: its config-file
// key, environment variable, help, how it is read from text and shown). The table is the one list
// `sluice serve --help`, --print-config, the config file, the environment and the flags are
// built from; docs/server.md documents the same names. Loading them: settings_loader.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/server/grpc/grpc_server.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/simulate/recorder.h"
#include "sluice/status.h"
#include "sluice/time.h"
#include "sluice/wire/rate_limit_headers.h"
#include "sluice/wire/rls_mapping.h"

namespace sluice::app {

// The gRPC server's own defaults, which the settings start from.
inline const grpc_server::GrpcServerOptions kGrpcDefaults{};
// A size as the settings hold it (signed, as they are parsed and printed).
constexpr std::int64_t as_setting(std::size_t size) { return static_cast<std::int64_t>(size); }
// The access log's two named places; any other value of `access_log` is a file.
inline constexpr std::string_view kAccessLogOff = "off";
inline constexpr std::string_view kAccessLogStderr = "stderr";

struct Settings {
  std::string listen = "127.0.0.1:8080";
  std::string grpc_listen;  // empty: no gRPC server
  // The gRPC transport's bounds (docs/security/grpc.md): GrpcServerOptions' defaults, stated
  // there once.
  std::int64_t grpc_max_message_bytes = kGrpcDefaults.max_message_bytes;
  std::int64_t grpc_max_concurrent_streams = kGrpcDefaults.max_concurrent_streams;
  std::int64_t grpc_io_threads = kGrpcDefaults.io_threads;
  std::int64_t grpc_max_connections = as_setting(kGrpcDefaults.max_connections);
  std::int64_t grpc_max_connections_per_peer = as_setting(kGrpcDefaults.max_connections_per_peer);
  Micros grpc_handshake_timeout = kGrpcDefaults.handshake_timeout;
  Micros grpc_idle_timeout = kGrpcDefaults.idle_timeout;
  Micros grpc_stream_timeout = kGrpcDefaults.stream_timeout;
  Micros grpc_max_connection_age = kGrpcDefaults.max_connection_age;
  std::int64_t grpc_max_header_list_bytes = as_setting(kGrpcDefaults.max_header_list_bytes);
  std::int64_t grpc_max_connection_buffer_bytes =
      as_setting(kGrpcDefaults.max_connection_buffer_bytes);
  std::int64_t grpc_max_buffered_bytes = as_setting(kGrpcDefaults.max_buffered_bytes);
  std::int64_t grpc_max_outbound_bytes = as_setting(kGrpcDefaults.max_outbound_bytes);
  std::int64_t grpc_max_descriptors = as_setting(kGrpcDefaults.rls.max_descriptors);
  bool grpc_reflection = kGrpcDefaults.reflection;
  wire::RlsHeaders grpc_headers = kGrpcDefaults.rls.headers;
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
  wire::HeaderSets rate_limit_headers;
  std::string check_app_header = "X-Sluice-App";
  std::string check_policy_header = "X-Sluice-Policy";
  std::string check_key_header = "X-Sluice-Key";
  std::string check_cost_header = "X-Sluice-Cost";
  int check_deny_status = 429;
  // The access log: "off", "stderr", or a file the lines are appended to (docs/server.md).
  std::string access_log = std::string(kAccessLogOff);
  // Recording decisions for back-tests (docs/backtesting.md): off while record_dir is empty.
  std::string record_dir;
  std::int64_t record_max_bytes = std::int64_t{1} << 30;
  std::int64_t record_file_bytes = std::int64_t{64} << 20;
  double record_sample = 1.0;  // share of subjects recorded, 0 to 1
  simulate::SubjectStorage record_subjects = simulate::SubjectStorage::kClear;
  std::string record_key;  // keys the sample and the hashed subjects
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

// One setting: its config-file key (the flag is --key with '-' for '_'), environment variable
// (SLUICE_ and the key in capitals), help, and how to read it from text and show it. A list
// setting (policy_file) takes several values; each source that names it replaces the list.
struct Setting {
  std::string key;
  std::string env;
  std::string help;
  std::function<Status(Settings&, std::string_view)> set;
  std::function<std::string(const Settings&)> show;
  bool list = false;
};

// Every setting, in the order --help and --print-config list them.
const std::vector<Setting>& settings();

// "--key-with-dashes".
std::string flag_name(const Setting& setting);

// An integer in [min, max]; InvalidArgument "must be an integer between MIN and MAX, not ...".
StatusOr<std::int64_t> parse_integer(std::string_view text, std::int64_t min, std::int64_t max);

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "HOST:PORT" or "[IPv6]:PORT"; InvalidArgument "listen: ..." otherwise.
StatusOr<HostPort> split_listen(const std::string& listen);

// What no single setting can check: both listen addresses, and the settings that depend on each
// other (admin page sizes, the TLS files, the metrics token). InvalidArgument naming the setting.
// The TLS files themselves are read when the server starts (http::check_tls_options).
Status check_settings(const Settings& settings);

}  // namespace sluice::app
