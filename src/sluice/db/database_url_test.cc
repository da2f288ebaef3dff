#include "sluice/db/database_url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::db {
namespace {

TEST(DatabaseUrlTest, ParsesSqliteForms) {
  struct Case {
    std::string url;
    std::string path;
  };
  const std::vector<Case> cases = {
      {"sqlite:///var/lib/sluice.db", "/var/lib/sluice.db"},
      {"sqlite:relative/sluice.db", "relative/sluice.db"},
      {"SQLite:///tmp/with%20space.db", "/tmp/with space.db"},
      {"sqlite::memory:", ":memory:"},
      {"sqlite3:///x.db", "/x.db"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    StatusOr<DatabaseUrl> parsed = parse_database_url(c.url);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(parsed->dialect, Dialect::kSqlite);
    EXPECT_EQ(parsed->path, c.path);
    EXPECT_FALSE(parsed->pool_size.has_value());
  }
}

TEST(DatabaseUrlTest, ParsesServerUrlsWithDefaultsAndPercentDecoding) {
  StatusOr<DatabaseUrl> mysql =
      parse_database_url("mysql://root:p%40ss%3Aw%2Frd@db.internal/sluice");
  ASSERT_TRUE(mysql.ok()) << mysql.status().to_string();
  EXPECT_EQ(mysql->dialect, Dialect::kMysql);
  EXPECT_EQ(mysql->user, "root");
  EXPECT_EQ(mysql->password, "p@ss:w/rd");
  EXPECT_EQ(mysql->host, "db.internal");
  EXPECT_EQ(mysql->port, kDefaultMysqlPort);
  EXPECT_EQ(mysql->database, "sluice");

  StatusOr<DatabaseUrl> maria = parse_database_url("mariadb://u@10.0.0.1:3307/db?pool_size=8");
  ASSERT_TRUE(maria.ok()) << maria.status().to_string();
  EXPECT_EQ(maria->dialect, Dialect::kMysql);
  EXPECT_EQ(maria->port, 3307);
  EXPECT_EQ(maria->user, "u");
  EXPECT_EQ(maria->password, "");
  EXPECT_EQ(maria->pool_size, 8u);

  StatusOr<DatabaseUrl> postgres = parse_database_url("postgres://[::1]:6543/policies");
  ASSERT_TRUE(postgres.ok()) << postgres.status().to_string();
  EXPECT_EQ(postgres->dialect, Dialect::kPostgresql);
  EXPECT_EQ(postgres->host, "::1");
  EXPECT_EQ(postgres->port, 6543);
  EXPECT_EQ(postgres->user, "");
  EXPECT_EQ(postgres->database, "policies");

  StatusOr<DatabaseUrl> full = parse_database_url("postgresql://a:b@h/d");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->port, kDefaultPostgresqlPort);
}

TEST(DatabaseUrlTest, RefusesMalformedUrlsNamingThePartWithoutThePassword) {
  struct Case {
    std::string url;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", "missing scheme"},
      {"/var/lib/sluice.db", "missing scheme"},
      {"oracle://h/db", "unsupported scheme"},
      {"sqlite://host/x.db", "take no host"},
      {"sqlite:", "missing a file path"},
      {"sqlite:///a\"b.db", "'\"'"},
      {"mysql://h", "missing /database"},
      {"mysql://h/", "missing database name"},
      {"mysql://u:secret@/db", "missing host"},
      {"mysql://u:secret@h:0/db", "out of range"},
      {"mysql://u:secret@h:70000/db", "out of range"},
      {"mysql://u:secret@h:x/db", "not a number"},
      {"mysql://u:secret@h:/db", "missing port"},
      {"mysql://u:sec%2@h/db", "two hex digits"},
      {"mysql://:secret@h/db", "empty user"},
      {"mysql://h/db?pool_size=0", "pool_size"},
      {"mysql://h/db?pool_size=65", "pool_size"},
      {"mysql://h/db?sslmode=require", "unknown parameter"},
      {"mysql://h/db#x", "fragments"},
      {"postgresql://[::1/db", "closing ']'"},
      {"postgresql://h o/db", "not allowed in a host name"},
      {"postgresql://h/a/b", "must not contain '/'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    StatusOr<DatabaseUrl> parsed = parse_database_url(c.url);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(c.message_part), std::string::npos)
        << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find("secret"), std::string::npos);
  }
}

TEST(DatabaseUrlTest, RedactsPasswords) {
  EXPECT_EQ(redact_database_url("mysql://u:secret@h:1/db"), "mysql://u:***@h:1/db");
  EXPECT_EQ(redact_database_url("postgresql://u:p/a@ss@h/db?pool_size=2"),
            "postgresql://u:***@h/db?pool_size=2");
  EXPECT_EQ(redact_database_url("mysql://u@h/db"), "mysql://u@h/db");
  EXPECT_EQ(redact_database_url("sqlite:///x.db"), "sqlite:///x.db");
  EXPECT_EQ(redact_database_url("sqlite::memory:"), "sqlite::memory:");
}

}  // namespace
}  // namespace sluice::db
