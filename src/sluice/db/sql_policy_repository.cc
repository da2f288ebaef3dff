#include "sluice/db/sql_policy_repository.h"

#include <soci/soci.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/text_checks.h"
#include "sluice/policy/document.h"
#include "sluice/policy/history.h"

namespace sluice::db {

// This module implements the policy model's repository: its vocabulary, by name.
using policy::ChangeAction;
using policy::DocumentOptions;
using policy::join_errors;
using policy::kMaxDescriptionBytes;
using policy::kMaxLimitsPerPolicy;
using policy::ParsedPolicy;
using policy::Policy;
using policy::policy_to_json;
using policy::PolicyChange;
using policy::PolicyRepository;
using policy::version_conflict;
namespace {

using nlohmann::json;

constexpr std::string_view kAuditFields[] = {"version", "created_by", "updated_by", "created_at",
                                             "updated_at"};

// Stored policies were validated when saved; reading them back must not depend on the caps a
// particular server is configured with (sliding_log / concurrency limits).
// The same holds for the bounds on descriptions and limits per policy, which came later.
DocumentOptions stored_document_options(bool allow_audit_fields) {
  return {.limits = {.sliding_log_max_limit = std::numeric_limits<std::int64_t>::max(),
                     .concurrency_max_limit = std::numeric_limits<std::int64_t>::max()},
          .max_description_bytes = std::numeric_limits<std::size_t>::max(),
          .max_limits = std::numeric_limits<std::size_t>::max(),
          .allow_audit_fields = allow_audit_fields};
}

// The policy without its audit fields: what a change changes.
json content_json(const Policy& policy) {
  json document = policy_to_json(policy);
  for (std::string_view field : kAuditFields) document.erase(std::string(field));
  return document;
}

// JSON text as stored; InvalidArgument for strings that are not UTF-8.
StatusOr<std::string> to_text(const json& document, const std::string& name) {
  try {
    return document.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    return invalid_argument("policy " + name + ": text fields must be valid UTF-8");
  }
}

std::optional<ChangeAction> parse_change_action(std::string_view name) {
  if (name == "create") return ChangeAction::kCreate;
  if (name == "update") return ChangeAction::kUpdate;
  if (name == "delete") return ChangeAction::kDelete;
  return std::nullopt;
}

Status policy_not_found(const std::string& name) {
  return not_found("policy " + name + " not found");
}

// Everything a policy must satisfy to be stored: the document rules (name, apps, limits) and
// text the database can hold.
Status validate_for_storage(const Policy& policy) {
  const json content = content_json(policy);
  DocumentOptions options = stored_document_options(false);
  // What is written now keeps the bounds of this build (reads do not: see above).
  options.max_description_bytes = kMaxDescriptionBytes;
  options.max_limits = kMaxLimitsPerPolicy;
  ParsedPolicy parsed = policy_from_json(content, options);
  if (!parsed.errors.empty()) {
    const std::string label =
        is_valid_policy_name(policy.name) ? "policy " + policy.name : "policy";
    return invalid_argument(label + ": " + join_errors(parsed.errors));
  }
  StatusOr<std::string> text = to_text(content, policy.name);
  return text.ok() ? Status() : text.status();
}

Status validate_actor(std::string_view actor) {
  return check_text("actor", actor, kMaxIdentifierBytes);
}

struct PolicyRow {
  std::string name;
  std::string document;
  long long version = 0;
  std::string created_by;
  std::string updated_by;
  long long created_at = 0;
  long long updated_at = 0;
};

constexpr std::string_view kPolicyColumns =
    "name, document, version, created_by, updated_by, created_at, updated_at";

// Every row, or the row named `name`.
std::vector<PolicyRow> select_policies(soci::session& sql, const std::string* name) {
  std::vector<PolicyRow> rows;
  PolicyRow row;
  const std::string query = "SELECT " + std::string(kPolicyColumns) + " FROM policies";
  soci::statement st =
      name != nullptr
          ? (sql.prepare << query + " WHERE name = :name", soci::use(*name), soci::into(row.name),
             soci::into(row.document), soci::into(row.version), soci::into(row.created_by),
             soci::into(row.updated_by), soci::into(row.created_at), soci::into(row.updated_at))
          : (sql.prepare << query, soci::into(row.name), soci::into(row.document),
             soci::into(row.version), soci::into(row.created_by), soci::into(row.updated_by),
             soci::into(row.created_at), soci::into(row.updated_at));
  st.execute();
  while (st.fetch()) rows.push_back(row);
  return rows;
}

std::optional<PolicyRow> select_policy(soci::session& sql, const std::string& name) {
  std::vector<PolicyRow> rows = select_policies(sql, &name);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

StatusOr<Policy> decode(const PolicyRow& row) {
  const json document = json::parse(row.document, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return Status(StatusCode::kDataLoss, "stored policy " + row.name + " is not valid JSON");
  }
  ParsedPolicy parsed = policy_from_json(document, stored_document_options(true));
  if (!parsed.policy) {
    return Status(StatusCode::kDataLoss,
                  "stored policy " + row.name + " is invalid: " + join_errors(parsed.errors));
  }
  Policy policy = std::move(*parsed.policy);
  // The columns are authoritative for the audit fields.
  policy.name = row.name;
  policy.version = row.version;
  policy.created_by = row.created_by;
  policy.updated_by = row.updated_by;
  policy.created_at = row.created_at;
  policy.updated_at = row.updated_at;
  return policy;
}

void insert_policy(soci::session& sql, const Policy& policy, const std::string& document) {
  long long version = policy.version;
  long long created_at = policy.created_at;
  long long updated_at = policy.updated_at;
  sql << "INSERT INTO policies (" + std::string(kPolicyColumns) +
             ") VALUES (:name, :document, :version, :created_by, :updated_by, :created_at, "
             ":updated_at)",
      soci::use(policy.name), soci::use(document), soci::use(version), soci::use(policy.created_by),
      soci::use(policy.updated_by), soci::use(created_at), soci::use(updated_at);
}

// UPDATE guarded by the expected version; false when no row matched (a concurrent change that
// slipped past the lock, which the lock makes impossible — checked anyway).
bool update_policy(soci::session& sql, const Policy& policy, const std::string& document,
                   long long expected_version) {
  long long version = policy.version;
  long long updated_at = policy.updated_at;
  soci::statement st =
      (sql.prepare << "UPDATE policies SET document = :document, version = :version, "
                      "updated_by = :updated_by, updated_at = :updated_at "
                      "WHERE name = :name AND version = :expected",
       soci::use(document), soci::use(version), soci::use(policy.updated_by), soci::use(updated_at),
       soci::use(policy.name), soci::use(expected_version));
  st.execute(true);
  return st.get_affected_rows() == 1;
}

struct HistoryEntry {
  long long id;
  const std::string& policy;
  ChangeAction action;
  const std::string& actor;
  Micros at;
  long long version;
  const std::string* old_document;  // null: none
  const std::string* new_document;
};

void insert_history(soci::session& sql, const HistoryEntry& entry) {
  const std::string action(policy::change_action_name(entry.action));
  const std::string empty;
  soci::indicator old_present = entry.old_document != nullptr ? soci::i_ok : soci::i_null;
  soci::indicator new_present = entry.new_document != nullptr ? soci::i_ok : soci::i_null;
  long long id = entry.id;
  long long at = entry.at;
  long long version = entry.version;
  sql << "INSERT INTO policy_history (id, policy, action, actor, changed_at, version, "
         "old_document, new_document) VALUES (:id, :policy, :action, :actor, :changed_at, "
         ":version, :old_document, :new_document)",
      soci::use(id), soci::use(entry.policy), soci::use(action), soci::use(entry.actor),
      soci::use(at), soci::use(version),
      soci::use(entry.old_document != nullptr ? *entry.old_document : empty, old_present),
      soci::use(entry.new_document != nullptr ? *entry.new_document : empty, new_present);
}

class SqlPolicyRepository final : public PolicyRepository {
 public:
  SqlPolicyRepository(std::shared_ptr<Database> db, const Clock* clock)
      : db_(std::move(db)), clock_(clock != nullptr ? clock : &SystemClock::instance()) {}

  StatusOr<std::vector<Policy>> list(std::optional<std::string_view> app) override {
    std::vector<PolicyRow> rows;
    SLUICE_RETURN_IF_ERROR(db_->run("listing policies", [&](soci::session& sql) -> Status {
      rows = select_policies(sql, nullptr);
      return Status();
    }));
    std::vector<Policy> policies;
    policies.reserve(rows.size());
    for (const PolicyRow& row : rows) {
      SLUICE_ASSIGN_OR_RETURN(Policy policy, decode(row));
      if (app && !policy.admits_app(*app)) continue;
      policies.push_back(std::move(policy));
    }
    // Byte order, the same on every backend whatever its collation.
    std::sort(policies.begin(), policies.end(),
              [](const Policy& a, const Policy& b) { return a.name < b.name; });
    return policies;
  }

  StatusOr<Policy> get(std::string_view name_view) override {
    const std::string name(name_view);
    if (!is_valid_policy_name(name)) return policy_not_found(name);
    std::optional<PolicyRow> row;
    SLUICE_RETURN_IF_ERROR(db_->run("reading policy " + name, [&](soci::session& sql) -> Status {
      row = select_policy(sql, name);
      return Status();
    }));
    if (!row) return policy_not_found(name);
    return decode(*row);
  }

  StatusOr<Policy> create(Policy policy, std::string_view actor_view) override {
    SLUICE_RETURN_IF_ERROR(validate_for_storage(policy));
    SLUICE_RETURN_IF_ERROR(validate_actor(actor_view));
    const std::string actor(actor_view);
    Policy stored;
    SLUICE_RETURN_IF_ERROR(db_->write(
        "creating policy " + policy.name, Counter::kPolicies, [&](WriteTransaction& tx) -> Status {
          if (select_policy(tx.sql(), policy.name)) {
            return Status(StatusCode::kAlreadyExists, "policy " + policy.name + " already exists");
          }
          SLUICE_ASSIGN_OR_RETURN(std::string document, stage_new(policy, actor, 1, stored));
          insert_policy(tx.sql(), stored, document);
          insert_history(tx.sql(), {.id = tx.next_revision(),
                                    .policy = stored.name,
                                    .action = ChangeAction::kCreate,
                                    .actor = actor,
                                    .at = stored.updated_at,
                                    .version = stored.version,
                                    .old_document = nullptr,
                                    .new_document = &document});
          return Status();
        }));
    return stored;
  }

  StatusOr<Policy> update(Policy policy, std::int64_t expected_version,
                          std::string_view actor_view) override {
    SLUICE_RETURN_IF_ERROR(validate_for_storage(policy));
    SLUICE_RETURN_IF_ERROR(validate_actor(actor_view));
    const std::string actor(actor_view);
    Policy stored;
    SLUICE_RETURN_IF_ERROR(db_->write(
        "updating policy " + policy.name, Counter::kPolicies, [&](WriteTransaction& tx) -> Status {
          std::optional<PolicyRow> row = select_policy(tx.sql(), policy.name);
          if (!row) return policy_not_found(policy.name);
          if (row->version != expected_version) {
            return version_conflict(policy.name, row->version, expected_version);
          }
          return apply_update(tx, policy, *row, actor, stored);
        }));
    return stored;
  }

  Status remove(std::string_view name_view, std::int64_t expected_version,
                std::string_view actor_view) override {
    const std::string name(name_view);
    if (!is_valid_policy_name(name)) return policy_not_found(name);
    SLUICE_RETURN_IF_ERROR(validate_actor(actor_view));
    const std::string actor(actor_view);
    return db_->write(
        "deleting policy " + name, Counter::kPolicies, [&](WriteTransaction& tx) -> Status {
          std::optional<PolicyRow> row = select_policy(tx.sql(), name);
          if (!row) return policy_not_found(name);
          if (row->version != expected_version) {
            return version_conflict(name, row->version, expected_version);
          }
          long long expected = expected_version;
          soci::statement st =
              (tx.sql().prepare << "DELETE FROM policies WHERE name = :name AND version = :version",
               soci::use(name), soci::use(expected));
          st.execute(true);
          if (st.get_affected_rows() != 1)
            return version_conflict(name, row->version, expected_version);
          insert_history(tx.sql(), {.id = tx.next_revision(),
                                    .policy = name,
                                    .action = ChangeAction::kDelete,
                                    .actor = actor,
                                    .at = clock_->now(),
                                    .version = 0,
                                    .old_document = &row->document,
                                    .new_document = nullptr});
          return Status();
        });
  }

  StatusOr<std::vector<PolicyChange>> history(std::string_view name_view) override {
    const std::string name(name_view);
    std::vector<PolicyChange> changes;
    if (!is_valid_policy_name(name)) return changes;
    SLUICE_RETURN_IF_ERROR(
        db_->run("reading the history of policy " + name, [&](soci::session& sql) -> Status {
          long long id = 0;
          std::string action;
          std::string actor;
          long long at = 0;
          long long version = 0;
          std::string old_document;
          std::string new_document;
          soci::indicator old_present = soci::i_null;
          soci::indicator new_present = soci::i_null;
          soci::statement st =
              (sql.prepare << "SELECT id, action, actor, changed_at, version, "
                              "old_document, new_document FROM policy_history "
                              "WHERE policy = :policy ORDER BY id",
               soci::use(name), soci::into(id), soci::into(action), soci::into(actor),
               soci::into(at), soci::into(version), soci::into(old_document, old_present),
               soci::into(new_document, new_present));
          st.execute();
          while (st.fetch()) {
            SLUICE_ASSIGN_OR_RETURN(
                PolicyChange change,
                decode_change(name, id, action, actor, at, version,
                              old_present == soci::i_ok ? &old_document : nullptr,
                              new_present == soci::i_ok ? &new_document : nullptr));
            changes.push_back(std::move(change));
          }
          return Status();
        }));
    return changes;
  }

  Status import(const std::vector<Policy>& policies, std::string_view actor_view) override {
    SLUICE_RETURN_IF_ERROR(validate_actor(actor_view));
    std::vector<std::string> problems;
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < policies.size(); ++i) {
      const Policy& policy = policies[i];
      const std::string label = "policies[" + std::to_string(i) + "]";
      if (Status status = validate_for_storage(policy); !status.ok()) {
        problems.push_back(label + ": " + status.message());
      } else if (!names.insert(policy.name).second) {
        problems.push_back(label + ": policy " + policy.name + " appears more than once");
      }
    }
    if (!problems.empty()) {
      std::string message = "import refused, nothing changed: ";
      for (std::size_t i = 0; i < problems.size(); ++i) {
        message += (i == 0 ? "" : "; ") + problems[i];
      }
      return invalid_argument(message);
    }
    const std::string actor(actor_view);
    return db_->write(
        "importing " + std::to_string(policies.size()) + " policies", Counter::kPolicies,
        [&](WriteTransaction& tx) -> Status {
          for (const Policy& policy : policies) {
            std::optional<PolicyRow> row = select_policy(tx.sql(), policy.name);
            Policy stored;
            if (!row) {
              SLUICE_ASSIGN_OR_RETURN(std::string document, stage_new(policy, actor, 1, stored));
              insert_policy(tx.sql(), stored, document);
              insert_history(tx.sql(), {.id = tx.next_revision(),
                                        .policy = stored.name,
                                        .action = ChangeAction::kCreate,
                                        .actor = actor,
                                        .at = stored.updated_at,
                                        .version = stored.version,
                                        .old_document = nullptr,
                                        .new_document = &document});
              continue;
            }
            SLUICE_ASSIGN_OR_RETURN(Policy current, decode(*row));
            // Unchanged: no new version, no history entry, so re-importing is idempotent.
            if (content_json(current) == content_json(policy)) continue;
            // A version in the imported document (as exported) must still be current: the
            // import would otherwise overwrite a change made since the export.
            if (policy.version != 0 && policy.version != row->version) {
              return Status(
                  StatusCode::kAborted,
                  "import refused, nothing changed: " +
                      version_conflict(policy.name, row->version, policy.version).message());
            }
            SLUICE_RETURN_IF_ERROR(apply_update(tx, policy, *row, actor, stored));
          }
          return Status();
        });
  }

  StatusOr<std::int64_t> revision() override { return db_->counter_value(Counter::kPolicies); }

 private:
  // Fills `stored` as a new policy at `version` and returns its document text.
  StatusOr<std::string> stage_new(const Policy& policy, const std::string& actor,
                                  std::int64_t version, Policy& stored) const {
    stored = policy;
    stored.version = version;
    stored.created_by = actor;
    stored.updated_by = actor;
    stored.created_at = clock_->now();
    stored.updated_at = stored.created_at;
    return to_text(policy_to_json(stored), stored.name);
  }

  // Replaces `row` (already checked to be current) with `policy` at the next version.
  Status apply_update(WriteTransaction& tx, const Policy& policy, const PolicyRow& row,
                      const std::string& actor, Policy& stored) const {
    stored = policy;
    stored.version = row.version + 1;
    stored.created_by = row.created_by;
    stored.created_at = row.created_at;
    stored.updated_by = actor;
    stored.updated_at = clock_->now();
    SLUICE_ASSIGN_OR_RETURN(std::string document, to_text(policy_to_json(stored), stored.name));
    if (!update_policy(tx.sql(), stored, document, row.version)) {
      return version_conflict(stored.name, row.version + 1, row.version);
    }
    insert_history(tx.sql(), {.id = tx.next_revision(),
                              .policy = stored.name,
                              .action = ChangeAction::kUpdate,
                              .actor = actor,
                              .at = stored.updated_at,
                              .version = stored.version,
                              .old_document = &row.document,
                              .new_document = &document});
    return Status();
  }

  static StatusOr<PolicyChange> decode_change(const std::string& name, long long id,
                                              const std::string& action, const std::string& actor,
                                              long long at, long long version,
                                              const std::string* old_document,
                                              const std::string* new_document) {
    PolicyChange change{.id = id, .policy = name, .actor = actor, .at = at, .version = version};
    const std::optional<ChangeAction> parsed = parse_change_action(action);
    if (!parsed) {
      return Status(StatusCode::kDataLoss, "history entry " + std::to_string(id) + " of policy " +
                                               name + " has an unknown action \"" + action + "\"");
    }
    change.action = *parsed;
    for (auto [text, target] : {std::pair{old_document, &change.old_document},
                                std::pair{new_document, &change.new_document}}) {
      if (text == nullptr) continue;
      json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (document.is_discarded()) {
        return Status(StatusCode::kDataLoss, "history entry " + std::to_string(id) + " of policy " +
                                                 name + " is not valid JSON");
      }
      *target = std::move(document);
    }
    return change;
  }

  std::shared_ptr<Database> db_;
  const Clock* clock_;
};

}  // namespace

std::unique_ptr<PolicyRepository> make_sql_policy_repository(std::shared_ptr<Database> db,
                                                             const Clock* clock) {
  return std::make_unique<SqlPolicyRepository>(std::move(db), clock);
}

}  // namespace sluice::db
