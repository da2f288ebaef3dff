// RedisUrl: where a Redis server is and how to log in, parsed from a `redis://` URL (the form the
// CLI's `--redis` flag and config files take).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/store/redis/script_engine.h"

namespace sluice::redis {

inline constexpr std::uint16_t kDefaultRedisPort = 6379;
inline constexpr std::uint16_t kDefaultSentinelPort = 26379;

// One Redis server's address.
struct NodeAddress {
  std::string host;  // a name or an IP address (IPv6 without brackets)
  std::uint16_t port = 0;

  // "host:port" ("[::1]:7000" for IPv6): how messages name the node.
  std::string text() const;
  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
  friend auto operator<=>(const NodeAddress&, const NodeAddress&) = default;
};

// TLS to Redis (rediss://, rediss+cluster://). The server's certificate is always verified: it must
// chain to `ca_file` (or the system's trust store) and name the host (or `server_name`).
struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM; empty: the system's trust store
  std::string cert_file;    // PEM client certificate, for servers that require one
  std::string key_file;     // its private key (PEM); needed with cert_file
  std::string server_name;  // the name the certificate must carry (and SNI); empty: the host
};

enum class RedisTopology : std::uint8_t {
  kStandalone,  // redis://: one server (a primary; replicas are not followed)
  kCluster,     // redis+cluster://: a Redis Cluster, reached through seed nodes
  kSentinel,    // redis+sentinel://: the master Redis Sentinel names, followed through failovers
};

struct RedisUrl {
  RedisTopology topology = RedisTopology::kStandalone;
  // Standalone: the one server (as host and port). Cluster: the seed nodes; Sentinel: the
  // sentinels; in the URL's order, host and port repeating the first.
  std::vector<NodeAddress> nodes;
  std::string master_name;  // Sentinel: the name the sentinels monitor the master under
  std::string host;         // a name, an IPv4 address or an IPv6 address (no brackets)
  std::uint16_t port = kDefaultRedisPort;
  TlsOptions tls;        // rediss://, rediss+cluster://
  std::string username;  // empty: Redis's `default` user
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECT index
  // `engine=` and `clock=` (script_engine.h): how script calls run, and on whose clock.
  EngineChoice engine = EngineChoice::kAuto;
  ScriptClock clock = ScriptClock::kRedis;
};

// Parses `redis://[[username]:password@]host[:port][/db]`,
// `redis+cluster://[[username]:password@]host[:port][,host[:port]…]` (seed nodes; db 0 only) and
// `redis+sentinel://[[username]:password@]host[:port][,host[:port]…]/<master-name>[/db]`
// (sentinels; the port defaults to 26379; the credentials are the master's).
//
// - The scheme is case-insensitive. `rediss://` and `rediss+cluster://` are the same over TLS;
// their
//   query may set `tls_ca`, `tls_cert`, `tls_key` and `tls_server_name` (file paths and a name,
//   percent-decoded; see TlsOptions), as may `rediss+sentinel://`'s. Every other scheme is
//   InvalidArgument.
// - Userinfo follows redis-cli: `user:pass@` is an ACL user and its password, `:pass@` and `pass@`
//   are a password for the default user. Both parts are percent-decoded (`%40` for `@`).
// - IPv6 hosts go in brackets: `redis://[::1]:6380`.
// - `port` defaults to 6379 and must be 1–65535; `db` defaults to 0 and must be a non-negative
//   integer.
// - Any scheme's query may set `engine=auto|module|functions|scripts` and `clock=redis|client`
//   (script_engine.h; defaults auto and redis).
// - Other query parameters (tls_* on a scheme without TLS), and fragments, are refused rather
//   than silently ignored.
//
// Errors are InvalidArgument with a message naming the part that is wrong. Messages never contain
// the password. Thread-safe (pure function).
StatusOr<RedisUrl> parse_redis_url(std::string_view url);

// The URL back as text with any credentials masked ("redis://:***@h:6379/0",
// "redis+cluster://alice:***@a:7000,b:7001"): how logs and reports name it.
std::string redacted_url(const RedisUrl& url);

}  // namespace sluice::redis
