#include "trace.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "sluice/policy/document.h"

namespace sluice::conformance {
namespace {

using nlohmann::json;

json optional_number(const std::optional<Micros>& value) {
  return value ? json(*value) : json(nullptr);
}

// The decision as a trace writes it: durations in µs, absent values null; blocked_until as an
// offset from the trace's start.
json decision_fields(const Decision& decision, Micros start) {
  const algorithm::Verdict& v = decision.verdict;
  return {{"allowed", v.allowed},
          {"limit", v.limit},
          {"remaining", v.remaining},
          {"retry_after", optional_number(v.retry_after)},
          {"reset_after", v.reset_after},
          {"delay", optional_number(v.delay)},
          {"limit_index", decision.limit_index},
          {"balance", v.balance ? json(*v.balance) : json(nullptr)},
          {"blocked_until", v.blocked_until ? json(*v.blocked_until - start) : json(nullptr)}};
}

json verdict_fields(const algorithm::Verdict& v) {
  return {{"allowed", v.allowed},         {"limit", v.limit},
          {"remaining", v.remaining},     {"retry_after", optional_number(v.retry_after)},
          {"reset_after", v.reset_after}, {"delay", optional_number(v.delay)}};
}

// A lease listing as a trace writes it: each lease by the index of the step that took it.
json leases_fields(const std::vector<store::LimitLeases>& listing,
                   const std::map<std::size_t, std::string>& taken_by) {
  json limits = json::array();
  for (const store::LimitLeases& held : listing) {
    json leases = json::array();
    for (const store::HeldLease& lease : held.leases) {
      json step = lease.id;  // unknown to the trace: shown as is, matching nothing
      for (const auto& [index, id] : taken_by) {
        if (id == lease.id) step = index;
      }
      leases.push_back(
          {{"lease_of", step}, {"expires_after", lease.expires_after}, {"cost", lease.cost}});
    }
    limits.push_back({{"limit_index", held.limit_index},
                      {"count", held.count},
                      {"units", held.units},
                      {"leases", std::move(leases)}});
  }
  return limits;
}

}  // namespace

std::vector<std::filesystem::path> trace_files() {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(root != nullptr ? root : ".") / "tests/conformance/traces";
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

json load_trace(const std::filesystem::path& file) {
  std::ifstream in(file);
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<std::string> replay(const json& trace, store::Store& store,
                                const std::function<void(Micros)>& set_now) {
  std::vector<std::string> problems;
  if (trace.is_discarded() || !trace.is_object()) return {"trace is not a JSON object"};
  policy::ParsedPolicy parsed = policy::policy_from_json(trace.value("policy", json()));
  if (!parsed.policy) return {"invalid policy: " + policy::join_errors(parsed.errors)};
  const policy::Policy& policy = *parsed.policy;
  const Micros start = trace.value("start", Micros{1'700'000'000'000'000});
  std::map<std::size_t, std::string> leases;  // step index -> lease it took

  const json& steps = trace.value("steps", json::array());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const json& step = steps[i];
    const std::string where = "step " + std::to_string(i) + " " + step.dump();
    set_now(start + step.value("at", Micros{0}));
    const std::string key = step.value("key", std::string("k"));
    const store::SubjectRef ref{.policy = policy.name,
                                .limits = policy.limits,
                                .subject = key,
                                .penalty = policy.penalty ? &*policy.penalty : nullptr};
    const std::string op = step.value("op", std::string("acquire"));
    json actual;
    if (op == "acquire") {
      StatusOr<Decision> decision = store::acquire_now(store, ref, step.value("cost", 1));
      if (!decision.ok()) {
        problems.push_back(where + ": error " + decision.status().to_string());
        continue;
      }
      if (decision->lease) leases[i] = *decision->lease;
      actual = decision_fields(*decision, start);
    } else if (op == "charge" || op == "refund" || op == "reserve" || op == "settle") {
      // A reserve step records reservation "r<step>"; a settle names the reserve step whose
      // reservation it ends (`reservation_of`).
      const std::string reservation =
          op == "reserve" ? "r" + std::to_string(i)
                          : "r" + std::to_string(step.value("reservation_of", std::size_t{0}));
      const store::QuotaRequest request{
          .operation = op == "charge"    ? store::QuotaOperation::kCharge
                       : op == "refund"  ? store::QuotaOperation::kRefund
                       : op == "reserve" ? store::QuotaOperation::kReserve
                                         : store::QuotaOperation::kSettle,
          .cost = step.value("cost", std::int64_t{1}),
          .max_debt = policy.max_debt,
          .reservation = reservation,
          .reservation_ttl = step.value("ttl", Micros{60'000'000})};
      StatusOr<Decision> decision = store::apply_quota_now(store, ref, request);
      if (!decision.ok()) {
        // A step may expect the error: {"error": "FAILED_PRECONDITION"} (status_code_name).
        if (step.value("expect", json::object()).contains("error")) {
          actual = {{"error", std::string(status_code_name(decision.status().code()))}};
        } else {
          problems.push_back(where + ": error " + decision.status().to_string());
          continue;
        }
      } else {
        actual = decision_fields(*decision, start);
      }
    } else if (op == "release" || op == "renew") {
      const auto lease = leases.find(step.value("lease_of", std::size_t{0}));
      const std::string id = lease != leases.end() ? lease->second : "no-such-lease";
      StatusOr<bool> done = op == "release"
                                ? store::lease_now(store, ref, store::LeaseOperation::kRelease, id)
                                : store::lease_now(store, ref, store::LeaseOperation::kRenew, id);
      if (!done.ok()) {
        problems.push_back(where + ": error " + done.status().to_string());
        continue;
      }
      actual = {{op == "release" ? "released" : "renewed", *done}};
    } else if (op == "dry_run") {
      StatusOr<store::DryRun> run = store.dry_run(ref, step.value("cost", 1));
      if (!run.ok()) {
        problems.push_back(where + ": error " + run.status().to_string());
        continue;
      }
      actual = decision_fields(
          {.verdict = run->policy.verdict, .limit_index = run->policy.limit_index}, start);
      actual["limits"] = json::array();
      for (const algorithm::Verdict& v : run->limits) actual["limits"].push_back(verdict_fields(v));
    } else if (op == "leases") {
      StatusOr<std::vector<store::LimitLeases>> listing =
          store.leases(ref, step.value("max", std::size_t{100}));
      if (!listing.ok()) {
        problems.push_back(where + ": error " + listing.status().to_string());
        continue;
      }
      actual = {{"leases", leases_fields(*listing, leases)}};
    } else if (op == "penalty" || op == "lift") {
      if (op == "lift") {
        StatusOr<bool> lifted = store.lift_penalty(ref);
        if (!lifted.ok()) {
          problems.push_back(where + ": error " + lifted.status().to_string());
          continue;
        }
        actual = {{"lifted", *lifted}};
      } else {
        StatusOr<store::PenaltyStatus> shown = store.penalty(ref);
        if (!shown.ok()) {
          problems.push_back(where + ": error " + shown.status().to_string());
          continue;
        }
        actual = {{"blocked_for", optional_number(shown->blocked_for)},
                  {"blocked_until",
                   shown->blocked_until ? json(*shown->blocked_until - start) : json(nullptr)},
                  {"blocks", shown->blocks},
                  {"strikes", shown->strikes}};
      }
    } else if (op == "reset") {
      if (Status status = store.reset(ref); !status.ok()) {
        problems.push_back(where + ": error " + status.to_string());
      }
      continue;
    } else {
      problems.push_back(where + ": unknown op \"" + op + "\"");
      continue;
    }
    const json& expected = step.value("expect", json::object());
    if (expected.empty()) problems.push_back(where + ": step has no expectations");
    for (const auto& [field, value] : expected.items()) {
      if (!actual.contains(field)) {
        problems.push_back(where + ": unknown expected field \"" + field + "\"");
      } else if (actual[field] != value) {
        problems.push_back(where + ": " + field + " expected " + value.dump() + ", got " +
                           actual[field].dump());
      }
    }
  }
  return problems;
}

}  // namespace sluice::conformance
