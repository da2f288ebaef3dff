#include "sluice/store/redis/redis_url.h"

#include <charconv>
#include <optional>
#include <utility>

#include "sluice/core/ascii.h"
#include "sluice/core/percent_encoding.h"
#include "sluice/core/status_macros.h"
#include "sluice/core/url.h"

namespace sluice::redis {
namespace {

Status url_error(std::string_view what) {
  return invalid_argument("redis URL: " + std::string(what));
}

// `field` names the part in the error; the value itself is never echoed (it may be a password).
StatusOr<std::string> decode(std::string_view text, std::string_view field) {
  std::optional<std::string> decoded = percent_decode(text);
  if (!decoded) return url_error(std::string(field) + " has a '%' not followed by two hex digits");
  return std::move(*decoded);
}

StatusOr<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty()) return url_error("missing port after ':'");
  if (!all_digits(text)) {
    return url_error("port \"" + std::string(text) + "\" is not a number");
  }
  const std::optional<std::uint16_t> port = url::parse_port(text);
  if (!port) return url_error("port " + std::string(text) + " is out of range (1-65535)");
  return *port;
}

StatusOr<int> parse_db(std::string_view text) {
  if (text.empty()) return 0;
  if (!all_digits(text)) {
    return url_error("database \"" + std::string(text) + "\" is not a non-negative integer");
  }
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) {
    return url_error("database " + std::string(text) + " is out of range");
  }
  return value;
}

// "host[:port]" or "[v6][:port]"; the port defaults to `default_port`.
StatusOr<NodeAddress> parse_host_port(std::string_view authority, std::uint16_t default_port) {
  const url::HostPort split = url::split_host_port(authority);
  NodeAddress address{.host = std::string(split.host), .port = default_port};
  if (split.bracketed) {
    if (split.unclosed) return url_error("IPv6 host is missing its closing ']'");
    if (split.host.empty()) return url_error("missing host");
    if (!url::has_ipv6_characters(split.host)) {
      return url_error("host \"[" + address.host + "]\" is not an IPv6 address");
    }
    if (!split.unexpected.empty()) {
      return url_error("unexpected \"" + std::string(split.unexpected) + "\" after the IPv6 host");
    }
  } else {
    if (split.port && split.port->find(':') != std::string_view::npos) {
      return url_error("IPv6 hosts must be written in brackets, e.g. redis://[::1]:6379");
    }
    if (split.host.empty()) return url_error("missing host");
    if (!url::is_host_name(split.host)) {
      return url_error("host \"" + address.host +
                       "\" has a character that is not allowed in a host name");
    }
  }
  if (split.port) {
    SLUICE_ASSIGN_OR_RETURN(address.port, parse_port(*split.port));
  }
  return address;
}

// `engine=…&clock=…` on any URL, and `tls_ca=…&tls_cert=…&tls_key=…&tls_server_name=…` on a
// rediss:// one.
Status parse_query(std::string_view query, RedisUrl& parsed) {
  TlsOptions& tls = parsed.tls;
  for (const url::QueryItem& item : url::split_query(query)) {
    if (item.name.empty() && !item.value) continue;
    if (!item.value) {
      return url_error("query parameter \"" + std::string(item.name) + "\" has no value");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string value, decode(*item.value, item.name));
    if (item.name == "engine") {
      SLUICE_ASSIGN_OR_RETURN(parsed.engine, parse_engine_choice(value));
      continue;
    }
    if (item.name == "clock") {
      SLUICE_ASSIGN_OR_RETURN(parsed.clock, parse_script_clock(value));
      continue;
    }
    if (!tls.enabled) {
      return url_error("query parameter \"" + std::string(item.name) +
                       "\" is unknown; expected engine or clock (tls_* only on rediss://)");
    }
    if (item.name == "tls_ca") {
      tls.ca_file = std::move(value);
    } else if (item.name == "tls_cert") {
      tls.cert_file = std::move(value);
    } else if (item.name == "tls_key") {
      tls.key_file = std::move(value);
    } else if (item.name == "tls_server_name") {
      tls.server_name = std::move(value);
    } else {
      return url_error("unknown query parameter \"" + std::string(item.name) +
                       "\"; expected engine, clock, tls_ca, tls_cert, tls_key or "
                       "tls_server_name");
    }
  }
  return {};
}

}  // namespace

std::string NodeAddress::text() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

StatusOr<RedisUrl> parse_redis_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return url_error("missing scheme; expected redis://[[user]:password@]host[:port][/db]");
  }
  const std::string_view scheme = url.substr(0, scheme_end);
  RedisUrl parsed;
  if (iequals(scheme, "redis+cluster") || iequals(scheme, "rediss+cluster")) {
    parsed.topology = RedisTopology::kCluster;
  } else if (iequals(scheme, "redis+sentinel") || iequals(scheme, "rediss+sentinel")) {
    parsed.topology = RedisTopology::kSentinel;
  } else if (!iequals(scheme, "redis") && !iequals(scheme, "rediss")) {
    return url_error("unsupported scheme \"" + std::string(scheme) +
                     "\"; expected redis://, redis+cluster:// or redis+sentinel:// (rediss for "
                     "TLS)");
  }
  parsed.tls.enabled = scheme.size() >= 6 && ascii_lower(scheme[5]) == 's';  // "rediss…"

  // The authority ends at the first '/', so a password containing '/' must be percent-encoded.
  const url::Components parts = url::split_components(url.substr(scheme_end + 3));
  if (parts.fragment) return url_error("fragments are not supported");
  if (parts.query) SLUICE_RETURN_IF_ERROR(parse_query(*parts.query, parsed));
  const std::string_view authority = parts.authority;
  std::string_view path = parts.path.value_or(std::string_view());
  if (parts.userinfo) {
    // redis-cli's reading: "user:pass" an ACL user, ":pass" and "pass" the default user's password.
    const url::Userinfo userinfo = url::split_userinfo(*parts.userinfo);
    const std::string_view user_part = userinfo.password ? userinfo.user : std::string_view();
    SLUICE_ASSIGN_OR_RETURN(std::string username, decode(user_part, "username"));
    SLUICE_ASSIGN_OR_RETURN(std::string password,
                            decode(userinfo.password.value_or(userinfo.user), "password"));
    if (!username.empty() && password.empty()) {
      return url_error("username \"" + username + "\" needs a password (user:password@host)");
    }
    parsed.username = std::move(username);
    parsed.password = std::move(password);
  }

  if (parsed.topology == RedisTopology::kSentinel) {
    // "<master-name>[/db]" after the sentinels.
    const std::size_t slash = path.find('/');
    const std::string_view name = path.substr(0, slash);
    if (name.empty()) {
      return url_error(
          "redis+sentinel:// needs the master's name: redis+sentinel://host:port/<name>");
    }
    SLUICE_ASSIGN_OR_RETURN(parsed.master_name, decode(name, "master name"));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  if (parsed.topology != RedisTopology::kStandalone) {
    // Seed nodes or sentinels, comma-separated; one that answers is enough.
    for (std::size_t start = 0; start <= authority.size();) {
      std::size_t comma = authority.find(',', start);
      if (comma == std::string_view::npos) comma = authority.size();
      SLUICE_ASSIGN_OR_RETURN(
          NodeAddress node,
          parse_host_port(authority.substr(start, comma - start),
                          parsed.topology == RedisTopology::kSentinel ? kDefaultSentinelPort
                                                                      : kDefaultRedisPort));
      parsed.nodes.push_back(std::move(node));
      start = comma + 1;
    }
    if (parsed.topology == RedisTopology::kCluster && !path.empty() && path != "0") {
      return url_error("a Redis Cluster has only database 0; remove \"/" + std::string(path) +
                       "\" from the redis+cluster:// URL");
    }
    SLUICE_ASSIGN_OR_RETURN(parsed.db, parse_db(path));
    parsed.host = parsed.nodes.front().host;
    parsed.port = parsed.nodes.front().port;
    return parsed;
  }
  SLUICE_ASSIGN_OR_RETURN(NodeAddress address, parse_host_port(authority, kDefaultRedisPort));
  parsed.host = std::move(address.host);
  parsed.port = address.port;
  parsed.nodes.push_back(NodeAddress{parsed.host, parsed.port});

  SLUICE_ASSIGN_OR_RETURN(parsed.db, parse_db(path));
  return parsed;
}

std::string redacted_url(const RedisUrl& url) {
  std::string out = url.tls.enabled ? "rediss" : "redis";
  if (url.topology == RedisTopology::kCluster) out += "+cluster";
  if (url.topology == RedisTopology::kSentinel) out += "+sentinel";
  out += "://";
  if (!url.username.empty()) out += url.username + ":***@";
  if (url.username.empty() && !url.password.empty()) out += ":***@";
  if (url.topology != RedisTopology::kStandalone) {
    for (std::size_t i = 0; i < url.nodes.size(); ++i) {
      out += (i > 0 ? "," : "") + url.nodes[i].text();
    }
    if (url.topology == RedisTopology::kSentinel) {
      out += "/" + url.master_name + "/" + std::to_string(url.db);
    }
    return out;
  }
  return out + NodeAddress{url.host, url.port}.text() + "/" + std::to_string(url.db);
}

}  // namespace sluice::redis
