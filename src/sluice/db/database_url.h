// DatabaseUrl: which SQL database holds the policies and accounts (DESIGN.md §4), parsed from the
// URL the CLI's `--policies` flag and config files take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::db {

enum class Dialect { kSqlite, kMysql, kPostgresql };

std::string_view dialect_name(Dialect dialect);  // "sqlite", "mysql", "postgresql"

inline constexpr std::uint16_t kDefaultMysqlPort = 3306;
inline constexpr std::uint16_t kDefaultPostgresqlPort = 5432;
inline constexpr std::string_view kSqliteMemory = ":memory:";

struct DatabaseUrl {
  Dialect dialect = Dialect::kSqlite;
  std::string path;  // SQLite: a file path, or kSqliteMemory
  std::string host;  // MySQL/PostgreSQL: a name or an IPv4/IPv6 address (no brackets)
  std::uint16_t port = 0;
  std::string user;      // empty: the client library's default
  std::string password;  // empty: none
  std::string database;
  std::optional<std::size_t> pool_size;  // `?pool_size=N`
};

// Parses
//   sqlite:///absolute/path.db   sqlite:relative/path.db   sqlite::memory:
//   mysql://[user[:password]@]host[:port]/database          (also mariadb://)
//   postgresql://[user[:password]@]host[:port]/database     (also postgres://)
// with an optional `?pool_size=N` (1-64). Schemes are case-insensitive; user, password, database
// and path are percent-decoded (`%40` for `@`); IPv6 hosts go in brackets. Unknown query
// parameters and fragments are refused rather than ignored.
//
// InvalidArgument naming the wrong part; messages never contain the password. Thread-safe.
StatusOr<DatabaseUrl> parse_database_url(std::string_view url);

// The URL with its password replaced by "***", for logs and error messages. Unparsable input is
// returned with everything between "://" and the last '@' masked.
std::string redact_database_url(std::string_view url);

}  // namespace sluice::db
