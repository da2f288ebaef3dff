#include "sluice/db/database_url.h"

#include <charconv>
#include <utility>

namespace sluice::db {
namespace {

constexpr std::size_t kMaxPoolSize = 64;

Status url_error(std::string_view what) {
  return invalid_argument("database URL: " + std::string(what));
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `field` names the part in errors; the value is never echoed (it may be a password).
StatusOr<std::string> percent_decode(std::string_view text, std::string_view field) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const int high = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return url_error(std::string(field) + " has a '%' not followed by two hex digits");
    }
    out.push_back(static_cast<char>((high << 4) | low));
    i += 2;
  }
  if (out.find('\0') != std::string::npos) {
    return url_error(std::string(field) + " must not contain a NUL byte");
  }
  return out;
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool is_ipv6_char(char c) { return hex_value(c) >= 0 || c == ':' || c == '.'; }

StatusOr<std::uint16_t> parse_port(std::string_view text) {
  if (!all_digits(text)) return url_error("port \"" + std::string(text) + "\" is not a number");
  unsigned long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value == 0 || value > 65535) {
    return url_error("port " + std::string(text) + " is out of range (1-65535)");
  }
  return static_cast<std::uint16_t>(value);
}

// `?pool_size=N`; every other parameter is refused.
Status parse_query(std::string_view query, DatabaseUrl& out) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (key != "pool_size") {
      return url_error("unknown parameter \"" + std::string(key) + "\" (supported: pool_size)");
    }
    std::size_t size = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), size);
    if (!all_digits(value) || error != std::errc{} || end != value.data() + value.size() ||
        size == 0 || size > kMaxPoolSize) {
      return url_error("pool_size must be an integer from 1 to " + std::to_string(kMaxPoolSize));
    }
    out.pool_size = size;
  }
  return Status();
}

Status parse_sqlite(std::string_view rest, DatabaseUrl& out) {
  // `rest` follows "sqlite:". "//" introduces an (empty) authority, so the path is what follows
  // it: sqlite:///var/x.db is /var/x.db. Without "//" the rest is the path itself.
  std::string_view path = rest;
  if (rest.starts_with("//")) {
    path = rest.substr(2);
    if (!path.starts_with("/")) {
      return url_error(
          "sqlite URLs take no host: write sqlite:///absolute/path.db or sqlite:relative.db");
    }
  }
  if (path.empty()) return url_error("sqlite URL is missing a file path");
  if (path == kSqliteMemory) {
    out.path = std::string(kSqliteMemory);
    return Status();
  }
  StatusOr<std::string> decoded = percent_decode(path, "path");
  if (!decoded.ok()) return decoded.status();
  // SOCI's SQLite connection-string parser cannot escape a double quote.
  if (decoded->find('"') != std::string::npos) {
    return url_error("sqlite path must not contain '\"'");
  }
  out.path = std::move(*decoded);
  return Status();
}

Status parse_server(std::string_view rest, DatabaseUrl& out) {
  if (!rest.starts_with("//")) return url_error("expected \"//\" after the scheme");
  rest.remove_prefix(2);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return url_error("missing /database after the host");
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = rest.substr(slash + 1);

  // The last '@' ends the userinfo, so an unencoded '@' in a password still parses.
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    StatusOr<std::string> user = percent_decode(userinfo.substr(0, colon), "user");
    if (!user.ok()) return user.status();
    out.user = std::move(*user);
    if (colon != std::string_view::npos) {
      StatusOr<std::string> password = percent_decode(userinfo.substr(colon + 1), "password");
      if (!password.ok()) return password.status();
      out.password = std::move(*password);
    }
    if (out.user.empty()) return url_error("empty user before '@'");
  }

  std::string_view port_text;
  if (authority.starts_with("[")) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return url_error("IPv6 host is missing its closing ']'");
    out.host = std::string(authority.substr(1, close - 1));
    for (char c : out.host) {
      if (!is_ipv6_char(c)) return url_error("host [" + out.host + "] is not an IPv6 address");
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) return url_error("unexpected text after the IPv6 host");
      port_text = after.substr(1);
      if (port_text.empty()) return url_error("missing port after ':'");
    }
  } else {
    const std::size_t colon = authority.find(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return url_error("missing port after ':'");
      authority = authority.substr(0, colon);
    }
    for (char c : authority) {
      if (!is_host_char(c)) {
        return url_error("host \"" + std::string(authority) +
                         "\" has a character that is not allowed in a host name");
      }
    }
    out.host = std::string(authority);
  }
  if (out.host.empty()) return url_error("missing host");
  if (!port_text.empty()) {
    StatusOr<std::uint16_t> port = parse_port(port_text);
    if (!port.ok()) return port.status();
    out.port = *port;
  }

  StatusOr<std::string> database = percent_decode(path, "database");
  if (!database.ok()) return database.status();
  if (database->empty()) return url_error("missing database name after '/'");
  if (database->find('/') != std::string::npos) {
    return url_error("database name must not contain '/'");
  }
  out.database = std::move(*database);
  return Status();
}

}  // namespace

std::string_view dialect_name(Dialect dialect) {
  switch (dialect) {
    case Dialect::kSqlite:
      return "sqlite";
    case Dialect::kMysql:
      return "mysql";
    case Dialect::kPostgresql:
      return "postgresql";
  }
  return "sqlite";
}

StatusOr<DatabaseUrl> parse_database_url(std::string_view url) {
  const std::size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return url_error(
        "missing scheme; expected sqlite:///path.db, mysql://user:password@host/db or "
        "postgresql://user:password@host/db");
  }
  const std::string_view scheme = url.substr(0, colon);
  std::string_view rest = url.substr(colon + 1);
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    return url_error("fragments are not supported");
  }
  std::string_view query;
  const bool has_query = rest.find('?') != std::string_view::npos;
  if (has_query) {
    query = rest.substr(rest.find('?') + 1);
    rest = rest.substr(0, rest.find('?'));
  }

  DatabaseUrl parsed;
  Status status;
  if (iequals(scheme, "sqlite") || iequals(scheme, "sqlite3")) {
    parsed.dialect = Dialect::kSqlite;
    status = parse_sqlite(rest, parsed);
  } else if (iequals(scheme, "mysql") || iequals(scheme, "mariadb")) {
    parsed.dialect = Dialect::kMysql;
    parsed.port = kDefaultMysqlPort;
    status = parse_server(rest, parsed);
  } else if (iequals(scheme, "postgresql") || iequals(scheme, "postgres")) {
    parsed.dialect = Dialect::kPostgresql;
    parsed.port = kDefaultPostgresqlPort;
    status = parse_server(rest, parsed);
  } else {
    return url_error("unsupported scheme \"" + std::string(scheme) +
                     "\"; expected sqlite, mysql (mariadb) or postgresql (postgres)");
  }
  if (!status.ok()) return status;
  if (has_query) {
    if (Status query_status = parse_query(query, parsed); !query_status.ok()) return query_status;
  }
  return parsed;
}

std::string redact_database_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const std::size_t authority_start = scheme_end + 3;
  // The last '@' before any query ends the userinfo: a password with an unencoded '/' or '@' is
  // still masked, even though it does not parse.
  const std::string_view head = url.substr(0, url.find('?'));
  const std::size_t at = head.rfind('@');
  if (at == std::string_view::npos || at < authority_start) return std::string(url);
  const std::size_t colon = head.find(':', authority_start);
  if (colon == std::string_view::npos || colon > at) return std::string(url);
  return std::string(url.substr(0, colon)) + ":***" + std::string(url.substr(at));
}

}  // namespace sluice::db
