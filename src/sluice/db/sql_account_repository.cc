#include "sluice/db/sql_account_repository.h"

#include <soci/soci.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/text_checks.h"

namespace sluice::db {
namespace {

using auth::App;
using auth::Role;
using auth::TokenRecord;
using auth::User;

std::string role_name(Role role) { return role == Role::kOwner ? "owner" : "viewer"; }

std::optional<Role> parse_role(std::string_view name) {
  if (name == "owner") return Role::kOwner;
  if (name == "viewer") return Role::kViewer;
  return std::nullopt;
}

// Stored names pass the login rule, so every stored user can log in and no stored name is a
// padded or truncated variant of another.
Status check_user_name(std::string_view name) { return auth::validate_login_name(name, "user"); }

Status check_app_name(std::string_view name) { return validate_policy_name(name, "app"); }

// `column = :placeholder`, compared byte for byte on every backend. MySQL/MariaDB compare
// VARCHARs with a PAD SPACE collation even when it is binary (utf8mb4_bin): 'admin  ' = 'admin'.
// A BINARY operand makes the comparison one of byte strings, where trailing spaces count.
// SQLite and PostgreSQL compare text exactly already. Lookups by name also re-check the stored
// name in C++ (see same_name), so a backend quirk not known here still cannot match a variant.
std::string exact_match(Dialect dialect, std::string_view column, std::string_view placeholder) {
  std::string condition(column);
  condition += dialect == Dialect::kMysql ? " = BINARY " : " = ";
  condition += placeholder;
  return condition;
}

// A name no stored row can have is not looked up at all: PostgreSQL's client library would end
// it at a NUL byte and then find (and change) the row of the shorter name.
bool can_name_a_user(std::string_view name) { return check_user_name(name).ok(); }
bool can_name_an_app(std::string_view name) { return check_app_name(name).ok(); }
bool can_name_a_token(std::string_view id) {
  return check_text("token id", id, kMaxIdentifierBytes).ok();
}

// The database said it found `asked`; true only if it found exactly `asked`.
bool same_name(std::string_view stored, std::string_view asked) { return stored == asked; }

Status user_not_found(std::string_view name) {
  return not_found("user " + std::string(name) + " not found");
}
Status app_not_found(std::string_view name) {
  return not_found("app " + std::string(name) + " not found");
}
Status token_not_found(std::string_view id) {
  return not_found("token " + std::string(id) + " not found");
}

bool exists(soci::session& sql, const std::string& query, const std::string& key) {
  long long rows = 0;
  sql << query, soci::use(key), soci::into(rows);
  return rows > 0;
}

bool user_exists(soci::session& sql, Dialect dialect, const std::string& name) {
  return exists(sql, "SELECT COUNT(*) FROM users WHERE " + exact_match(dialect, "name", ":name"),
                name);
}
bool app_exists(soci::session& sql, Dialect dialect, const std::string& name) {
  return exists(sql, "SELECT COUNT(*) FROM apps WHERE " + exact_match(dialect, "name", ":name"),
                name);
}

long long affected(soci::statement&& st) {
  st.execute(true);
  return st.get_affected_rows();
}

// user -> (app -> role) for one user or all.
StatusOr<std::map<std::string, std::map<std::string, Role>>> select_roles(soci::session& sql,
                                                                          Dialect dialect,
                                                                          const std::string* user) {
  std::map<std::string, std::map<std::string, Role>> roles;
  std::string user_name;
  std::string app;
  std::string role;
  const std::string query = "SELECT user_name, app, role FROM app_roles";
  soci::statement st =
      user != nullptr
          ? (sql.prepare << query + " WHERE " + exact_match(dialect, "user_name", ":user"),
             soci::use(*user), soci::into(user_name), soci::into(app), soci::into(role))
          : (sql.prepare << query, soci::into(user_name), soci::into(app), soci::into(role));
  st.execute();
  while (st.fetch()) {
    const std::optional<Role> parsed = parse_role(role);
    if (!parsed) {
      std::string message = "user " + user_name;
      message += " has an unknown role \"" + role;
      message += "\" on app " + app;
      return Status(StatusCode::kDataLoss, std::move(message));
    }
    roles[user_name][app] = *parsed;
  }
  return roles;
}

class SqlAccountRepository final : public auth::AccountRepository {
 public:
  SqlAccountRepository(std::shared_ptr<Database> db, const Clock* clock)
      : db_(std::move(db)), clock_(clock != nullptr ? clock : &SystemClock::instance()) {}

  Status create_user(const User& user, std::string_view password_hash) override {
    SLUICE_RETURN_IF_ERROR(check_user_name(user.name));
    SLUICE_RETURN_IF_ERROR(check_text("password_hash", password_hash, kMaxTextBytes));
    for (const auto& [app, role] : user.roles) {
      SLUICE_RETURN_IF_ERROR(check_app_name(app));
    }
    const std::string hash(password_hash);
    return db_->write(
        "creating user " + user.name, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          if (user_exists(sql, tx.dialect(), user.name)) {
            return Status(StatusCode::kAlreadyExists, "user " + user.name + " already exists");
          }
          for (const auto& [app, role] : user.roles) {
            if (!app_exists(sql, tx.dialect(), app)) return app_not_found(app);
          }
          int admin = user.admin ? 1 : 0;
          long long created_at = user.created_at != 0 ? user.created_at : clock_->now();
          // A revision never repeats, so a user re-created under a deleted one's name never
          // gets a generation the deleted one's sessions recorded.
          long long generation = tx.next_revision();
          sql << "INSERT INTO users (name, password_hash, is_admin, created_at, generation) "
                 "VALUES (:name, :hash, :admin, :created_at, :generation)",
              soci::use(user.name), soci::use(hash), soci::use(admin), soci::use(created_at),
              soci::use(generation);
          for (const auto& [app, role] : user.roles) {
            insert_role(sql, user.name, app, role);
          }
          return Status();
        });
  }

  StatusOr<User> get_user(std::string_view name_view) override {
    const std::string name(name_view);
    if (!can_name_a_user(name)) return user_not_found(name);
    User user;
    bool found = false;
    SLUICE_RETURN_IF_ERROR(db_->run("reading user " + name, [&](soci::session& sql) -> Status {
      std::string stored_name;
      int admin = 0;
      long long created_at = 0;
      long long generation = 0;
      soci::statement st =
          (sql.prepare << "SELECT name, is_admin, created_at, generation FROM users WHERE " +
                              exact_match(db_->dialect(), "name", ":name"),
           soci::use(name), soci::into(stored_name), soci::into(admin), soci::into(created_at),
           soci::into(generation));
      found = st.execute(true) && same_name(stored_name, name);
      if (!found) return Status();
      user = User{.name = stored_name,
                  .admin = admin != 0,
                  .created_at = created_at,
                  .generation = generation};
      SLUICE_ASSIGN_OR_RETURN(auto roles, select_roles(sql, db_->dialect(), &stored_name));
      if (auto it = roles.find(name); it != roles.end()) user.roles = std::move(it->second);
      return Status();
    }));
    if (!found) return user_not_found(name);
    return user;
  }

  StatusOr<std::string> password_hash(std::string_view user_view) override {
    const std::string name(user_view);
    if (!can_name_a_user(name)) return user_not_found(name);
    std::string hash;
    bool found = false;
    SLUICE_RETURN_IF_ERROR(db_->run("reading user " + name, [&](soci::session& sql) -> Status {
      std::string stored_name;
      soci::statement st = (sql.prepare << "SELECT name, password_hash FROM users WHERE " +
                                               exact_match(db_->dialect(), "name", ":name"),
                            soci::use(name), soci::into(stored_name), soci::into(hash));
      found = st.execute(true) && same_name(stored_name, name);
      return Status();
    }));
    if (!found) return user_not_found(name);
    return hash;
  }

  StatusOr<std::size_t> change_password_hash(std::string_view user_view,
                                             std::string_view password_hash,
                                             auth::TokenRevocation tokens) override {
    SLUICE_RETURN_IF_ERROR(check_text("password_hash", password_hash, kMaxTextBytes));
    const std::string name(user_view);
    if (!can_name_a_user(name)) return user_not_found(name);
    const std::string hash(password_hash);
    std::size_t revoked = 0;
    SLUICE_RETURN_IF_ERROR(db_->write(
        "changing the password of user " + name, Counter::kAccounts,
        [&](WriteTransaction& tx) -> Status {
          long long generation = tx.next_revision();  // ends the old sessions
          if (affected((tx.sql().prepare << "UPDATE users SET password_hash = :hash, generation "
                                            "= :generation WHERE " +
                                                exact_match(tx.dialect(), "name", ":name"),
                        soci::use(hash), soci::use(generation), soci::use(name))) == 0) {
            return user_not_found(name);  // rolls the revision back too
          }
          // In the same transaction as the new generation: a token insert checked against the
          // old generation waits for this lock and then sees the new one (insert_token).
          if (tokens == auth::TokenRevocation::kRevokeAll) {
            revoked = static_cast<std::size_t>(
                affected((tx.sql().prepare << "DELETE FROM tokens WHERE " +
                                                  exact_match(tx.dialect(), "user_name", ":user"),
                          soci::use(name))));
          }
          return Status();
        }));
    return revoked;
  }

  StatusOr<std::vector<User>> list_users() override {
    std::vector<User> users;
    SLUICE_RETURN_IF_ERROR(db_->run("listing users", [&](soci::session& sql) -> Status {
      std::string name;
      int admin = 0;
      long long created_at = 0;
      long long generation = 0;
      soci::statement st =
          (sql.prepare << "SELECT name, is_admin, created_at, generation FROM users",
           soci::into(name), soci::into(admin), soci::into(created_at), soci::into(generation));
      st.execute();
      while (st.fetch()) {
        users.push_back(User{
            .name = name, .admin = admin != 0, .created_at = created_at, .generation = generation});
      }
      SLUICE_ASSIGN_OR_RETURN(auto roles, select_roles(sql, db_->dialect(), nullptr));
      for (User& user : users) {
        if (auto it = roles.find(user.name); it != roles.end()) user.roles = it->second;
      }
      return Status();
    }));
    std::sort(users.begin(), users.end(),
              [](const User& a, const User& b) { return a.name < b.name; });
    return users;
  }

  Status delete_user(std::string_view name_view) override {
    const std::string name(name_view);
    if (!can_name_a_user(name)) return user_not_found(name);
    return db_->write(
        "deleting user " + name, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          const Dialect dialect = tx.dialect();
          // Counted inside the transaction, which holds the accounts lock: two admins deleting
          // each other at once cannot both see the other one left.
          const std::string named = exact_match(dialect, "name", ":name");
          if (exists(sql, "SELECT COUNT(*) FROM users WHERE is_admin <> 0 AND " + named, name) &&
              !exists(sql, "SELECT COUNT(*) FROM users WHERE is_admin <> 0 AND NOT (" + named + ")",
                      name)) {
            return auth::last_admin_refusal(name);
          }
          sql << "DELETE FROM tokens WHERE " + exact_match(dialect, "user_name", ":name"),
              soci::use(name);
          sql << "DELETE FROM app_roles WHERE " + exact_match(dialect, "user_name", ":name"),
              soci::use(name);
          if (affected((
                  sql.prepare << "DELETE FROM users WHERE " + exact_match(dialect, "name", ":name"),
                  soci::use(name))) == 0) {
            return user_not_found(name);  // rolls the deletes above back
          }
          tx.next_revision();
          return Status();
        });
  }

  StatusOr<std::size_t> count_admins() override {
    long long admins = 0;
    SLUICE_RETURN_IF_ERROR(db_->run("counting admins", [&](soci::session& sql) -> Status {
      sql << "SELECT COUNT(*) FROM users WHERE is_admin <> 0", soci::into(admins);
      return Status();
    }));
    return static_cast<std::size_t>(admins);
  }

  Status set_role(std::string_view user_view, std::string_view app_view,
                  std::optional<Role> role) override {
    const std::string user(user_view);
    const std::string app(app_view);
    if (!can_name_a_user(user)) return user_not_found(user);
    if (!can_name_an_app(app)) return app_not_found(app);
    return db_->write("setting the role of user " + user + " on app " + app, Counter::kAccounts,
                      [&](WriteTransaction& tx) -> Status {
                        soci::session& sql = tx.sql();
                        const Dialect dialect = tx.dialect();
                        if (!user_exists(sql, dialect, user)) return user_not_found(user);
                        if (!app_exists(sql, dialect, app)) return app_not_found(app);
                        sql << "DELETE FROM app_roles WHERE " +
                                   exact_match(dialect, "user_name", ":user") + " AND " +
                                   exact_match(dialect, "app", ":app"),
                            soci::use(user), soci::use(app);
                        if (role) insert_role(sql, user, app, *role);
                        // A role change ends the user's sessions: what the user may do was
                        // decided anew, so is who holds a session for it.
                        long long generation = tx.next_revision();
                        sql << "UPDATE users SET generation = :generation WHERE " +
                                   exact_match(dialect, "name", ":name"),
                            soci::use(generation), soci::use(user);
                        return Status();
                      });
  }

  Status create_app(const App& app) override {
    SLUICE_RETURN_IF_ERROR(check_app_name(app.name));
    SLUICE_RETURN_IF_ERROR(
        check_text("description", app.description, kMaxTextBytes, Emptiness::kAllowed));
    return db_->write(
        "creating app " + app.name, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          if (app_exists(sql, tx.dialect(), app.name)) {
            return Status(StatusCode::kAlreadyExists, "app " + app.name + " already exists");
          }
          long long created_at = app.created_at != 0 ? app.created_at : clock_->now();
          sql << "INSERT INTO apps (name, description, created_at) "
                 "VALUES (:name, :description, :created_at)",
              soci::use(app.name), soci::use(app.description), soci::use(created_at);
          tx.next_revision();
          return Status();
        });
  }

  StatusOr<std::vector<App>> list_apps() override {
    std::vector<App> apps;
    SLUICE_RETURN_IF_ERROR(db_->run("listing apps", [&](soci::session& sql) -> Status {
      std::string name;
      std::string description;
      long long created_at = 0;
      soci::statement st = (sql.prepare << "SELECT name, description, created_at FROM apps",
                            soci::into(name), soci::into(description), soci::into(created_at));
      st.execute();
      while (st.fetch()) {
        apps.push_back(App{.name = name, .description = description, .created_at = created_at});
      }
      return Status();
    }));
    std::sort(apps.begin(), apps.end(), [](const App& a, const App& b) { return a.name < b.name; });
    return apps;
  }

  Status delete_app(std::string_view name_view) override {
    const std::string name(name_view);
    if (!can_name_an_app(name)) return app_not_found(name);
    return db_->write(
        "deleting app " + name, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          const Dialect dialect = tx.dialect();
          sql << "DELETE FROM app_roles WHERE " + exact_match(dialect, "app", ":name"),
              soci::use(name);
          if (affected(
                  (sql.prepare << "DELETE FROM apps WHERE " + exact_match(dialect, "name", ":name"),
                   soci::use(name))) == 0) {
            return app_not_found(name);
          }
          tx.next_revision();
          return Status();
        });
  }

  Status insert_token(const TokenRecord& token, const auth::TokenInsertChecks& checks) override {
    SLUICE_RETURN_IF_ERROR(check_text("token id", token.id, kMaxIdentifierBytes));
    SLUICE_RETURN_IF_ERROR(check_user_name(token.user));
    SLUICE_RETURN_IF_ERROR(
        check_text("description", token.description, kMaxTextBytes, Emptiness::kAllowed));
    SLUICE_RETURN_IF_ERROR(check_text("secret_hash", token.secret_hash, 128));
    return db_->write(
        "creating token " + token.id, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          if (!user_exists(sql, tx.dialect(), token.user)) return user_not_found(token.user);
          // Under the accounts lock, which every password, role and user change takes: the
          // generation read here is the latest committed one.
          if (checks.issuer && !issuer_still_current(sql, tx.dialect(), *checks.issuer)) {
            return Status(StatusCode::kAborted,
                          "the account of " + checks.issuer->user +
                              " changed (password, roles or deletion) while the token was being "
                              "issued; authenticate again");
          }
          if (checks.max_tokens_per_user > 0) {
            long long held = 0;
            sql << "SELECT COUNT(*) FROM tokens WHERE " +
                       exact_match(tx.dialect(), "user_name", ":user"),
                soci::use(token.user), soci::into(held);
            if (static_cast<std::size_t>(held) >= checks.max_tokens_per_user) {
              return auth::too_many_tokens(token.user, checks.max_tokens_per_user);
            }
          }
          if (exists(sql,
                     "SELECT COUNT(*) FROM tokens WHERE " + exact_match(tx.dialect(), "id", ":id"),
                     token.id)) {
            return Status(StatusCode::kAlreadyExists, "token " + token.id + " already exists");
          }
          long long created_at = token.created_at != 0 ? token.created_at : clock_->now();
          long long expires_at = token.expires_at.value_or(0);
          soci::indicator expires = token.expires_at ? soci::i_ok : soci::i_null;
          sql << "INSERT INTO tokens (id, user_name, description, secret_hash, created_at, "
                 "expires_at) VALUES (:id, :user_name, :description, :secret_hash, :created_at, "
                 ":expires_at)",
              soci::use(token.id), soci::use(token.user), soci::use(token.description),
              soci::use(token.secret_hash), soci::use(created_at), soci::use(expires_at, expires);
          tx.next_revision();
          return Status();
        });
  }

  StatusOr<TokenRecord> get_token(std::string_view id_view) override {
    const std::string id(id_view);
    if (!can_name_a_token(id)) return token_not_found(id);
    std::vector<TokenRecord> tokens;
    SLUICE_RETURN_IF_ERROR(select_tokens("reading token " + id, "id", id, tokens));
    if (tokens.empty()) return token_not_found(id);
    return std::move(tokens.front());
  }

  StatusOr<std::vector<TokenRecord>> list_tokens(std::string_view user_view) override {
    const std::string user(user_view);
    if (!can_name_a_user(user)) return std::vector<TokenRecord>{};
    std::vector<TokenRecord> tokens;
    SLUICE_RETURN_IF_ERROR(
        select_tokens("listing the tokens of user " + user, "user_name", user, tokens));
    std::sort(tokens.begin(), tokens.end(), [](const TokenRecord& a, const TokenRecord& b) {
      return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
    });
    return tokens;
  }

  StatusOr<std::vector<TokenRecord>> list_tokens_after(
      std::string_view user_view, const std::optional<auth::TokenPosition>& after,
      std::size_t limit) override {
    const std::string user(user_view);
    std::vector<TokenRecord> tokens;
    if (!can_name_a_user(user) || limit == 0) return tokens;
    long long after_at = after ? after->created_at : 0;
    const std::string after_id = after ? after->id : std::string();
    // `limit` is a number, never input text.
    const std::string query =
        "SELECT id, user_name, description, secret_hash, created_at, expires_at FROM tokens "
        "WHERE " +
        exact_match(db_->dialect(), "user_name", ":user") +
        (after ? " AND (created_at > :after_at OR (created_at = :same_at AND id > :after_id))"
               : "") +
        " ORDER BY created_at, id LIMIT " + std::to_string(limit);
    SLUICE_RETURN_IF_ERROR(
        db_->run("listing the tokens of user " + user, [&](soci::session& sql) -> Status {
          TokenRecord row;
          long long created_at = 0;
          long long expires_at = 0;
          soci::indicator expires = soci::i_null;
          soci::statement st(sql);
          st.exchange(soci::use(user, "user"));
          if (after) {
            st.exchange(soci::use(after_at, "after_at"));
            st.exchange(soci::use(after_at, "same_at"));
            st.exchange(soci::use(after_id, "after_id"));
          }
          st.exchange(soci::into(row.id));
          st.exchange(soci::into(row.user));
          st.exchange(soci::into(row.description));
          st.exchange(soci::into(row.secret_hash));
          st.exchange(soci::into(created_at));
          st.exchange(soci::into(expires_at, expires));
          st.alloc();
          st.prepare(query);
          st.define_and_bind();
          st.execute();
          while (st.fetch()) {
            row.created_at = created_at;
            row.expires_at =
                expires == soci::i_ok ? std::optional<Micros>(expires_at) : std::nullopt;
            if (same_name(row.user, user)) tokens.push_back(row);
          }
          return Status();
        }));
    return tokens;
  }

  StatusOr<std::size_t> delete_user_tokens(std::string_view user_view) override {
    const std::string user(user_view);
    if (!can_name_a_user(user)) return user_not_found(user);
    std::size_t deleted = 0;
    SLUICE_RETURN_IF_ERROR(db_->write(
        "revoking the tokens of user " + user, Counter::kAccounts,
        [&](WriteTransaction& tx) -> Status {
          soci::session& sql = tx.sql();
          if (!user_exists(sql, tx.dialect(), user)) return user_not_found(user);
          deleted = static_cast<std::size_t>(
              affected((sql.prepare << "DELETE FROM tokens WHERE " +
                                           exact_match(tx.dialect(), "user_name", ":user"),
                        soci::use(user))));
          tx.next_revision();
          return Status();
        }));
    return deleted;
  }

  Status delete_token(std::string_view id_view) override {
    const std::string id(id_view);
    if (!can_name_a_token(id)) return token_not_found(id);
    return db_->write(
        "deleting token " + id, Counter::kAccounts, [&](WriteTransaction& tx) -> Status {
          if (affected((tx.sql().prepare
                            << "DELETE FROM tokens WHERE " + exact_match(tx.dialect(), "id", ":id"),
                        soci::use(id))) == 0) {
            return token_not_found(id);
          }
          tx.next_revision();
          return Status();
        });
  }

 private:
  static bool issuer_still_current(soci::session& sql, Dialect dialect,
                                   const auth::TokenIssuer& issuer) {
    long long generation = 0;
    soci::indicator found = soci::i_null;
    sql << "SELECT generation FROM users WHERE " + exact_match(dialect, "name", ":name"),
        soci::use(issuer.user), soci::into(generation, found);
    return sql.got_data() && found == soci::i_ok && generation == issuer.generation;
  }

  static void insert_role(soci::session& sql, const std::string& user, const std::string& app,
                          Role role) {
    const std::string name = role_name(role);
    sql << "INSERT INTO app_roles (user_name, app, role) VALUES (:user, :app, :role)",
        soci::use(user), soci::use(app), soci::use(name);
  }

  // `column` is a fixed column name, never input.
  Status select_tokens(const std::string& what, std::string_view column, const std::string& key,
                       std::vector<TokenRecord>& out) {
    return db_->run(what, [&](soci::session& sql) -> Status {
      TokenRecord row;
      long long created_at = 0;
      long long expires_at = 0;
      soci::indicator expires = soci::i_null;
      soci::statement st =
          (sql.prepare << "SELECT id, user_name, description, secret_hash, created_at, expires_at "
                          "FROM tokens WHERE " +
                              exact_match(db_->dialect(), column, ":key"),
           soci::use(key), soci::into(row.id), soci::into(row.user), soci::into(row.description),
           soci::into(row.secret_hash), soci::into(created_at), soci::into(expires_at, expires));
      st.execute();
      while (st.fetch()) {
        row.created_at = created_at;
        row.expires_at = expires == soci::i_ok ? std::optional<Micros>(expires_at) : std::nullopt;
        out.push_back(row);
      }
      return Status();
    });
  }

  std::shared_ptr<Database> db_;
  const Clock* clock_;
};

}  // namespace

std::unique_ptr<auth::AccountRepository> make_sql_account_repository(std::shared_ptr<Database> db,
                                                                     const Clock* clock) {
  return std::make_unique<SqlAccountRepository>(std::move(db), clock);
}

}  // namespace sluice::db
