#include "sluice/store/redis/redis_url.h"

#include <charconv>
#include <limits>
#include <optional>
#include <utility>

namespace sluice::redis {
namespace {

Status url_error(std::string_view what) {
  return invalid_argument("redis URL: " + std::string(what));
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::optional<int> hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

// `field` names the part in the error; the value itself is never echoed (it may be a password).
StatusOr<std::string> percent_decode(std::string_view text, std::string_view field) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      return url_error(std::string(field) + " has a '%' not followed by two hex digits");
    }
    const std::optional<int> high = hex_value(text[i + 1]);
    const std::optional<int> low = hex_value(text[i + 2]);
    if (!high || !low) {
      return url_error(std::string(field) + " has a '%' not followed by two hex digits");
    }
    out.push_back(static_cast<char>((*high << 4) | *low));
    i += 2;
  }
  return out;
}

bool is_host_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

StatusOr<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty()) return url_error("missing port after ':'");
  if (!all_digits(text)) {
    return url_error("port \"" + std::string(text) + "\" is not a number");
  }
  unsigned long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value == 0 || value > 65535) {
    return url_error("port " + std::string(text) + " is out of range (1-65535)");
  }
  return static_cast<std::uint16_t>(value);
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
  NodeAddress address;
  address.port = default_port;
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return url_error("IPv6 host is missing its closing ']'");
    address.host = std::string(authority.substr(1, close - 1));
    if (address.host.empty()) return url_error("missing host");
    for (char c : address.host) {
      if (!is_ipv6_char(c)) {
        return url_error("host \"[" + address.host + "]\" is not an IPv6 address");
      }
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return url_error("unexpected \"" + std::string(after) + "\" after the IPv6 host");
      }
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    const std::size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      if (authority.find(':', colon + 1) != std::string_view::npos) {
        return url_error("IPv6 hosts must be written in brackets, e.g. redis://[::1]:6379");
      }
      port_text = authority.substr(colon + 1);
      has_port = true;
      authority = authority.substr(0, colon);
    }
    if (authority.empty()) return url_error("missing host");
    for (char c : authority) {
      if (!is_host_name_char(c)) {
        return url_error("host \"" + std::string(authority) +
                         "\" has a character that is not allowed in a host name");
      }
    }
    address.host = std::string(authority);
  }
  if (has_port) {
    StatusOr<std::uint16_t> port = parse_port(port_text);
    if (!port.ok()) return port.status();
    address.port = *port;
  }

  return address;
}

// `tls_ca=…&tls_cert=…&tls_key=…&tls_server_name=…` of a rediss:// URL.
Status parse_tls_query(std::string_view query, TlsOptions& tls) {
  for (std::size_t start = 0; start <= query.size();) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const std::size_t equals = pair.find('=');
    const std::string_view name = pair.substr(0, equals);
    if (equals == std::string_view::npos) {
      return url_error("query parameter \"" + std::string(name) + "\" has no value");
    }
    StatusOr<std::string> value = percent_decode(pair.substr(equals + 1), name);
    if (!value.ok()) return value.status();
    if (name == "tls_ca") {
      tls.ca_file = std::move(*value);
    } else if (name == "tls_cert") {
      tls.cert_file = std::move(*value);
    } else if (name == "tls_key") {
      tls.key_file = std::move(*value);
    } else if (name == "tls_server_name") {
      tls.server_name = std::move(*value);
    } else {
      return url_error("unknown query parameter \"" + std::string(name) +
                       "\"; expected tls_ca, tls_cert, tls_key or tls_server_name");
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
  parsed.tls.enabled = scheme.size() >= 6 && lower(scheme[5]) == 's';  // "rediss…"
  std::string_view rest = url.substr(scheme_end + 3);

  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    return url_error("fragments are not supported");
  }
  if (const std::size_t mark = rest.find('?'); mark != std::string_view::npos) {
    if (!parsed.tls.enabled) return url_error("query parameters are not supported");
    if (Status status = parse_tls_query(rest.substr(mark + 1), parsed.tls); !status.ok()) {
      return status;
    }
    rest = rest.substr(0, mark);
  }

  // The authority ends at the first '/'; a password containing '/' must be percent-encoded.
  std::string_view authority = rest;
  std::string_view path;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }

  // The last '@' ends the userinfo, so an unencoded '@' in a password still parses.
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    std::string_view user_part;
    std::string_view password_part = userinfo;
    if (const std::size_t colon = userinfo.find(':'); colon != std::string_view::npos) {
      user_part = userinfo.substr(0, colon);
      password_part = userinfo.substr(colon + 1);
    }
    StatusOr<std::string> username = percent_decode(user_part, "username");
    if (!username.ok()) return username.status();
    StatusOr<std::string> password = percent_decode(password_part, "password");
    if (!password.ok()) return password.status();
    if (!username->empty() && password->empty()) {
      return url_error("username \"" + *username + "\" needs a password (user:password@host)");
    }
    parsed.username = std::move(*username);
    parsed.password = std::move(*password);
  }

  if (parsed.topology == RedisTopology::kSentinel) {
    // "<master-name>[/db]" after the sentinels.
    const std::size_t slash = path.find('/');
    const std::string_view name = path.substr(0, slash);
    if (name.empty()) {
      return url_error(
          "redis+sentinel:// needs the master's name: redis+sentinel://host:port/<name>");
    }
    StatusOr<std::string> decoded = percent_decode(name, "master name");
    if (!decoded.ok()) return decoded.status();
    parsed.master_name = std::move(*decoded);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  if (parsed.topology != RedisTopology::kStandalone) {
    // Seed nodes or sentinels, comma-separated; one that answers is enough.
    for (std::size_t start = 0; start <= authority.size();) {
      std::size_t comma = authority.find(',', start);
      if (comma == std::string_view::npos) comma = authority.size();
      StatusOr<NodeAddress> node = parse_host_port(
          authority.substr(start, comma - start),
          parsed.topology == RedisTopology::kSentinel ? kDefaultSentinelPort : kDefaultRedisPort);
      if (!node.ok()) return node.status();
      parsed.nodes.push_back(std::move(*node));
      start = comma + 1;
    }
    if (parsed.topology == RedisTopology::kCluster && !path.empty() && path != "0") {
      return url_error("a Redis Cluster has only database 0; remove \"/" + std::string(path) +
                       "\" from the redis+cluster:// URL");
    }
    StatusOr<int> db = parse_db(path);
    if (!db.ok()) return db.status();
    parsed.db = *db;
    parsed.host = parsed.nodes.front().host;
    parsed.port = parsed.nodes.front().port;
    return parsed;
  }
  StatusOr<NodeAddress> address = parse_host_port(authority, kDefaultRedisPort);
  if (!address.ok()) return address.status();
  parsed.host = std::move(address->host);
  parsed.port = address->port;
  parsed.nodes.push_back(NodeAddress{parsed.host, parsed.port});

  StatusOr<int> db = parse_db(path);
  if (!db.ok()) return db.status();
  parsed.db = *db;
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
