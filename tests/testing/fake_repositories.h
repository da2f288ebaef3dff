// In-memory PolicyRepository and AccountRepository with the contracts of the SQL ones
// (versions, stale-update conflicts, history kept after deletion, all-or-nothing import,
// cascading deletes), for tests of code written against the interfaces: auth, the CLI, the
// server. Thread-safe. `fail_with` makes every call fail, to test error paths.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/policy/repository.h"

namespace sluice::test {

class FakePolicyRepository final : public policy::PolicyRepository {
 public:
  // `clock` stamps created_at/updated_at and history entries; null: always 0.
  explicit FakePolicyRepository(const Clock* clock = nullptr) : clock_(clock) {}

  StatusOr<std::vector<policy::Policy>> list(std::optional<std::string_view> app = {}) override;
  StatusOr<policy::Policy> get(std::string_view name) override;
  StatusOr<policy::Policy> create(policy::Policy policy, std::string_view actor) override;
  StatusOr<policy::Policy> update(policy::Policy policy, std::int64_t expected_version,
                                  std::string_view actor) override;
  Status remove(std::string_view name, std::int64_t expected_version,
                std::string_view actor) override;
  StatusOr<std::vector<policy::PolicyChange>> history(std::string_view name) override;
  Status import(const std::vector<policy::Policy>& policies, std::string_view actor) override;
  StatusOr<std::int64_t> revision() override;

  // Every later call returns `status` until fail_with(Status{}) clears it.
  void fail_with(Status status);

 private:
  Micros now() const { return clock_ != nullptr ? clock_->now() : 0; }
  // Requires mutex_.
  policy::Policy store_create(policy::Policy policy, std::string_view actor);
  policy::Policy store_update(policy::Policy policy, std::string_view actor);

  const Clock* clock_;
  mutable std::mutex mutex_;
  Status failure_;
  std::map<std::string, policy::Policy, std::less<>> policies_;
  std::vector<policy::PolicyChange> history_;
  std::int64_t revision_ = 0;
};

class FakeAccountRepository final : public auth::AccountRepository {
 public:
  Status create_user(const auth::User& user, std::string_view password_hash) override;
  StatusOr<auth::User> get_user(std::string_view name) override;
  StatusOr<std::string> password_hash(std::string_view user) override;
  StatusOr<std::size_t> change_password_hash(std::string_view user, std::string_view password_hash,
                                             auth::TokenRevocation tokens) override;
  StatusOr<std::vector<auth::User>> list_users() override;
  Status delete_user(std::string_view name) override;
  StatusOr<std::size_t> count_admins() override;
  Status set_role(std::string_view user, std::string_view app,
                  std::optional<auth::Role> role) override;

  Status create_app(const auth::App& app) override;
  StatusOr<std::vector<auth::App>> list_apps() override;
  Status delete_app(std::string_view name) override;

  Status insert_token(const auth::TokenRecord& token,
                      const auth::TokenInsertChecks& checks) override;
  StatusOr<auth::TokenRecord> get_token(std::string_view id) override;
  StatusOr<std::vector<auth::TokenRecord>> list_tokens(std::string_view user) override;
  StatusOr<std::vector<auth::TokenRecord>> list_tokens_after(
      std::string_view user, const std::optional<auth::TokenPosition>& after,
      std::size_t limit) override;
  Status delete_token(std::string_view id) override;
  StatusOr<std::size_t> delete_user_tokens(std::string_view user) override;

  // Every later call returns `status` until fail_with(Status{}) clears it.
  void fail_with(Status status);

 private:
  struct StoredUser {
    auth::User user;
    std::string password_hash;
  };

  mutable std::mutex mutex_;
  Status failure_;
  std::map<std::string, StoredUser, std::less<>> users_;
  std::map<std::string, auth::App, std::less<>> apps_;
  std::map<std::string, auth::TokenRecord, std::less<>> tokens_;
  std::int64_t last_generation_ = 0;  // as the SQL store's revision counter: never repeats
};

}  // namespace sluice::test
