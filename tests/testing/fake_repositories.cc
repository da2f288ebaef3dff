#include "testing/fake_repositories.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "sluice/policy/document.h"

namespace sluice::test {

using auth::App;
using auth::Role;
using auth::TokenRecord;
using auth::User;
using policy::ChangeAction;
using policy::Policy;
using policy::PolicyChange;

namespace {

Status already_exists(std::string message) {
  return {StatusCode::kAlreadyExists, std::move(message)};
}

}  // namespace

// ---- FakePolicyRepository ----

void FakePolicyRepository::fail_with(Status status) {
  std::lock_guard lock(mutex_);
  failure_ = std::move(status);
}

StatusOr<std::vector<Policy>> FakePolicyRepository::list(std::optional<std::string_view> app) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::vector<Policy> out;
  for (const auto& [name, policy] : policies_) {
    if (!app || policy.admits_app(*app)) out.push_back(policy);
  }
  return out;
}

StatusOr<Policy> FakePolicyRepository::get(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = policies_.find(name);
  if (it == policies_.end()) return not_found("no policy named " + std::string(name));
  return it->second;
}

Policy FakePolicyRepository::store_create(Policy policy, std::string_view actor) {
  policy.version = 1;
  policy.created_by = policy.updated_by = std::string(actor);
  policy.created_at = policy.updated_at = now();
  history_.push_back({.id = static_cast<std::int64_t>(history_.size()) + 1,
                      .policy = policy.name,
                      .action = ChangeAction::kCreate,
                      .actor = std::string(actor),
                      .at = policy.created_at,
                      .version = 1,
                      .new_document = policy::policy_to_json(policy)});
  ++revision_;
  policies_[policy.name] = policy;
  return policy;
}

Policy FakePolicyRepository::store_update(Policy policy, std::string_view actor) {
  Policy& stored = policies_.at(policy.name);
  policy.version = stored.version + 1;
  policy.created_by = stored.created_by;
  policy.created_at = stored.created_at;
  policy.updated_by = std::string(actor);
  policy.updated_at = now();
  history_.push_back({.id = static_cast<std::int64_t>(history_.size()) + 1,
                      .policy = policy.name,
                      .action = ChangeAction::kUpdate,
                      .actor = std::string(actor),
                      .at = policy.updated_at,
                      .version = policy.version,
                      .old_document = policy::policy_to_json(stored),
                      .new_document = policy::policy_to_json(policy)});
  ++revision_;
  stored = policy;
  return policy;
}

StatusOr<Policy> FakePolicyRepository::create(Policy policy, std::string_view actor) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (policies_.contains(policy.name)) {
    return already_exists("policy " + policy.name + " already exists");
  }
  return store_create(std::move(policy), actor);
}

StatusOr<Policy> FakePolicyRepository::update(Policy policy, std::int64_t expected_version,
                                              std::string_view actor) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = policies_.find(policy.name);
  if (it == policies_.end()) return not_found("no policy named " + policy.name);
  if (it->second.version != expected_version) {
    return policy::version_conflict(policy.name, it->second.version, expected_version);
  }
  return store_update(std::move(policy), actor);
}

Status FakePolicyRepository::remove(std::string_view name, std::int64_t expected_version,
                                    std::string_view actor) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = policies_.find(name);
  if (it == policies_.end()) return not_found("no policy named " + std::string(name));
  if (it->second.version != expected_version) {
    return policy::version_conflict(name, it->second.version, expected_version);
  }
  history_.push_back({.id = static_cast<std::int64_t>(history_.size()) + 1,
                      .policy = std::string(name),
                      .action = ChangeAction::kDelete,
                      .actor = std::string(actor),
                      .at = now(),
                      .version = 0,
                      .old_document = policy::policy_to_json(it->second)});
  ++revision_;
  policies_.erase(it);
  return {};
}

StatusOr<std::vector<PolicyChange>> FakePolicyRepository::history(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::vector<PolicyChange> out;
  for (const PolicyChange& change : history_) {
    if (change.policy == name) out.push_back(change);
  }
  return out;
}

Status FakePolicyRepository::import(const std::vector<Policy>& policies, std::string_view actor) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::set<std::string, std::less<>> seen;
  for (const Policy& policy : policies) {
    if (!seen.insert(policy.name).second) {
      return invalid_argument("policy " + policy.name + " appears twice in the import");
    }
  }
  for (const Policy& policy : policies) {
    if (policies_.contains(policy.name)) {
      store_update(policy, actor);
    } else {
      store_create(policy, actor);
    }
  }
  return {};
}

StatusOr<std::int64_t> FakePolicyRepository::revision() {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  return revision_;
}

// ---- FakeAccountRepository ----

void FakeAccountRepository::fail_with(Status status) {
  std::lock_guard lock(mutex_);
  failure_ = std::move(status);
}

Status FakeAccountRepository::create_user(const User& user, std::string_view password_hash) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (users_.contains(user.name)) return already_exists("user " + user.name + " already exists");
  for (const auto& [app, role] : user.roles) {
    if (!apps_.contains(app)) return not_found("no app named " + app);
  }
  users_[user.name] = {.user = user, .password_hash = std::string(password_hash)};
  users_[user.name].user.generation = ++last_generation_;
  return {};
}

StatusOr<User> FakeAccountRepository::get_user(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = users_.find(name);
  if (it == users_.end()) return not_found("no user named " + std::string(name));
  return it->second.user;
}

StatusOr<std::string> FakeAccountRepository::password_hash(std::string_view user) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = users_.find(user);
  if (it == users_.end()) return not_found("no user named " + std::string(user));
  return it->second.password_hash;
}

StatusOr<std::size_t> FakeAccountRepository::change_password_hash(std::string_view user,
                                                                  std::string_view password_hash,
                                                                  auth::TokenRevocation tokens) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = users_.find(user);
  if (it == users_.end()) return not_found("no user named " + std::string(user));
  it->second.password_hash = std::string(password_hash);
  it->second.user.generation = ++last_generation_;
  if (tokens == auth::TokenRevocation::kKeep) return std::size_t{0};
  return std::erase_if(tokens_, [user](const auto& entry) { return entry.second.user == user; });
}

StatusOr<std::vector<User>> FakeAccountRepository::list_users() {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::vector<User> out;
  for (const auto& [name, stored] : users_) out.push_back(stored.user);
  return out;
}

Status FakeAccountRepository::delete_user(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = users_.find(name);
  if (it == users_.end()) return not_found("no user named " + std::string(name));
  const auto admins = std::count_if(users_.begin(), users_.end(),
                                    [](const auto& entry) { return entry.second.user.admin; });
  if (it->second.user.admin && admins == 1) {
    return auth::last_admin_refusal(name);
  }
  std::erase_if(tokens_, [name](const auto& entry) { return entry.second.user == name; });
  users_.erase(it);
  return {};
}

StatusOr<std::size_t> FakeAccountRepository::count_admins() {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::size_t count = 0;
  for (const auto& [name, stored] : users_) count += stored.user.admin ? 1 : 0;
  return count;
}

Status FakeAccountRepository::set_role(std::string_view user, std::string_view app,
                                       std::optional<Role> role) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = users_.find(user);
  if (it == users_.end()) return not_found("no user named " + std::string(user));
  if (!apps_.contains(app)) return not_found("no app named " + std::string(app));
  if (role) {
    it->second.user.roles[std::string(app)] = *role;
  } else {
    it->second.user.roles.erase(std::string(app));
  }
  it->second.user.generation = ++last_generation_;
  return {};
}

Status FakeAccountRepository::create_app(const App& app) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (apps_.contains(app.name)) return already_exists("app " + app.name + " already exists");
  apps_[app.name] = app;
  return {};
}

StatusOr<std::vector<App>> FakeAccountRepository::list_apps() {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::vector<App> out;
  for (const auto& [name, app] : apps_) out.push_back(app);
  return out;
}

Status FakeAccountRepository::delete_app(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = apps_.find(name);
  if (it == apps_.end()) return not_found("no app named " + std::string(name));
  for (auto& [user_name, stored] : users_) stored.user.roles.erase(std::string(name));
  apps_.erase(it);
  return {};
}

Status FakeAccountRepository::insert_token(const TokenRecord& token,
                                           const auth::TokenInsertChecks& checks) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (!users_.contains(token.user)) return not_found("no user named " + token.user);
  if (checks.issuer) {
    const auto issuer = users_.find(checks.issuer->user);
    if (issuer == users_.end() || issuer->second.user.generation != checks.issuer->generation) {
      return Status(StatusCode::kAborted, "the account of " + checks.issuer->user + " changed");
    }
  }
  if (checks.max_tokens_per_user > 0 &&
      static_cast<std::size_t>(std::count_if(tokens_.begin(), tokens_.end(), [&](const auto& e) {
        return e.second.user == token.user;
      })) >= checks.max_tokens_per_user) {
    return auth::too_many_tokens(token.user, checks.max_tokens_per_user);
  }
  if (tokens_.contains(token.id)) return already_exists("token " + token.id + " already exists");
  tokens_[token.id] = token;
  return {};
}

StatusOr<TokenRecord> FakeAccountRepository::get_token(std::string_view id) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  const auto it = tokens_.find(id);
  if (it == tokens_.end()) return not_found("no token with id " + std::string(id));
  return it->second;
}

StatusOr<std::vector<TokenRecord>> FakeAccountRepository::list_tokens(std::string_view user) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  std::vector<TokenRecord> out;
  for (const auto& [id, token] : tokens_) {
    if (token.user == user) out.push_back(token);
  }
  return out;
}

StatusOr<std::vector<TokenRecord>> FakeAccountRepository::list_tokens_after(
    std::string_view user, const std::optional<auth::TokenPosition>& after, std::size_t limit) {
  StatusOr<std::vector<TokenRecord>> all = list_tokens(user);
  if (!all.ok()) return all;
  std::sort(all->begin(), all->end(), [](const TokenRecord& a, const TokenRecord& b) {
    return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
  });
  std::vector<TokenRecord> page;
  for (const TokenRecord& token : *all) {
    if (page.size() == limit) break;
    if (after && std::tie(token.created_at, token.id) <= std::tie(after->created_at, after->id)) {
      continue;
    }
    page.push_back(token);
  }
  return page;
}

Status FakeAccountRepository::delete_token(std::string_view id) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (tokens_.erase(std::string(id)) == 0) {
    return not_found("no token with id " + std::string(id));
  }
  return {};
}

StatusOr<std::size_t> FakeAccountRepository::delete_user_tokens(std::string_view user) {
  std::lock_guard lock(mutex_);
  if (!failure_.ok()) return failure_;
  if (!users_.contains(user)) return not_found("no user named " + std::string(user));
  return std::erase_if(tokens_, [user](const auto& entry) { return entry.second.user == user; });
}

}  // namespace sluice::test
