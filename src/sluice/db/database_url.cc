#include "sluice/db/database_url.h"

#include <charconv>
#include <optional>
#include <utility>

#include "sluice/core/ascii.h"
#include "sluice/core/percent_encoding.h"
#include "sluice/core/status_macros.h"
#include "sluice/core/url.h"

namespace sluice::db {
namespace {

constexpr std::size_t kMaxPoolSize = 64;

Status url_error(std::string_view what) {
  return invalid_argument("database URL: " + std::string(what));
}

// `field` names the part in errors; the value is never echoed (it may be a password).
StatusOr<std::string> decode(std::string_view text, std::string_view field) {
  std::optional<std::string> decoded = percent_decode(text);
  if (!decoded) return url_error(std::string(field) + " has a '%' not followed by two hex digits");
  if (decoded->find('\0') != std::string::npos) {
    return url_error(std::string(field) + " must not contain a NUL byte");
  }
  return std::move(*decoded);
}

StatusOr<std::uint16_t> parse_port(std::string_view text) {
  if (!all_digits(text)) return url_error("port \"" + std::string(text) + "\" is not a number");
  const std::optional<std::uint16_t> port = url::parse_port(text);
  if (!port) return url_error("port " + std::string(text) + " is out of range (1-65535)");
  return *port;
}

// `?pool_size=N`; every other parameter is refused.
Status parse_query(std::string_view query, DatabaseUrl& out) {
  for (const url::QueryItem& item : url::split_query(query)) {
    if (item.name != "pool_size") {
      return url_error("unknown parameter \"" + std::string(item.name) +
                       "\" (supported: pool_size)");
    }
    const std::string_view value = item.value.value_or(std::string_view());
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
  SLUICE_ASSIGN_OR_RETURN(std::string decoded, decode(path, "path"));
  // SOCI's SQLite connection-string parser cannot escape a double quote.
  if (decoded.find('"') != std::string::npos) {
    return url_error("sqlite path must not contain '\"'");
  }
  out.path = std::move(decoded);
  return Status();
}

Status parse_server(std::string_view rest, DatabaseUrl& out) {
  if (!rest.starts_with("//")) return url_error("expected \"//\" after the scheme");
  const url::Components parts = url::split_components(rest.substr(2));
  if (!parts.path) return url_error("missing /database after the host");
  if (parts.userinfo) {
    const url::Userinfo userinfo = url::split_userinfo(*parts.userinfo);
    SLUICE_ASSIGN_OR_RETURN(out.user, decode(userinfo.user, "user"));
    if (userinfo.password) {
      SLUICE_ASSIGN_OR_RETURN(out.password, decode(*userinfo.password, "password"));
    }
    if (out.user.empty()) return url_error("empty user before '@'");
  }

  const url::HostPort split = url::split_host_port(parts.authority);
  out.host = std::string(split.host);
  if (split.bracketed) {
    if (split.unclosed) return url_error("IPv6 host is missing its closing ']'");
    if (!url::has_ipv6_characters(split.host)) {
      return url_error("host [" + out.host + "] is not an IPv6 address");
    }
    if (!split.unexpected.empty()) return url_error("unexpected text after the IPv6 host");
    if (split.port && split.port->empty()) return url_error("missing port after ':'");
  } else {
    if (split.port && split.port->empty()) return url_error("missing port after ':'");
    if (!url::is_host_name(split.host)) {
      return url_error("host \"" + out.host +
                       "\" has a character that is not allowed in a host name");
    }
  }
  if (out.host.empty()) return url_error("missing host");
  if (split.port) {
    SLUICE_ASSIGN_OR_RETURN(out.port, parse_port(*split.port));
  }

  SLUICE_ASSIGN_OR_RETURN(out.database, decode(*parts.path, "database"));
  if (out.database.empty()) return url_error("missing database name after '/'");
  if (out.database.find('/') != std::string::npos) {
    return url_error("database name must not contain '/'");
  }
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
  if (iequals(scheme, "sqlite") || iequals(scheme, "sqlite3")) {
    parsed.dialect = Dialect::kSqlite;
    SLUICE_RETURN_IF_ERROR(parse_sqlite(rest, parsed));
  } else if (iequals(scheme, "mysql") || iequals(scheme, "mariadb")) {
    parsed.dialect = Dialect::kMysql;
    parsed.port = kDefaultMysqlPort;
    SLUICE_RETURN_IF_ERROR(parse_server(rest, parsed));
  } else if (iequals(scheme, "postgresql") || iequals(scheme, "postgres")) {
    parsed.dialect = Dialect::kPostgresql;
    parsed.port = kDefaultPostgresqlPort;
    SLUICE_RETURN_IF_ERROR(parse_server(rest, parsed));
  } else {
    return url_error("unsupported scheme \"" + std::string(scheme) +
                     "\"; expected sqlite, mysql (mariadb) or postgresql (postgres)");
  }
  if (has_query) {
    SLUICE_RETURN_IF_ERROR(parse_query(query, parsed));
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
