#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "sluice/cli/cli_test_support.h"
#include "sluice/cli/command_support.h"
#include "sluice/core/duration.h"
#include "sluice/policy/document.h"

namespace sluice::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kOrders = R"(
name: orders.create
description: checkout writes
apps: [checkout]
limits:
  - {algorithm: token_bucket, capacity: 100, refill: 50, period: 1s}
  - {algorithm: fixed_window, limit: 1000, window: 1h}
)";

std::string orders_with(std::string_view replace, std::string_view with) {
  std::string text(kOrders);
  text.replace(text.find(replace), replace.size(), with);
  return text;
}

class PolicyCommandTest : public ::testing::Test, protected CliHarness {
 protected:
  void create_orders() {
    const CliResult r = run({"policy", "create", "-"}, std::string(kOrders));
    ASSERT_EQ(r.code, kExitOk) << r.err;
  }
  void add_user(const std::string& name, std::map<std::string, auth::Role> roles,
                bool admin = false) {
    for (const auto& [app, role] : roles) {
      (void)accounts->create_app({.name = app});  // AlreadyExists is fine
    }
    ASSERT_TRUE(
        accounts->create_user({.name = name, .admin = admin, .roles = std::move(roles)}, "x").ok());
  }
};

TEST_F(PolicyCommandTest, CreateThenGetPrintsTheDocumentWithAuditFields) {
  const CliResult created = run({"policy", "create", "-"}, std::string(kOrders));
  EXPECT_EQ(created.code, kExitOk) << created.err;
  EXPECT_EQ(created.out, "created policy orders.create (version 1)\n");

  const CliResult yaml = run({"policy", "get", "orders.create"});
  EXPECT_EQ(yaml.code, kExitOk);
  EXPECT_EQ(yaml.out.rfind("name: orders.create\n", 0), 0u) << yaml.out;
  EXPECT_THAT(yaml.out, HasSubstr("created_by: cli:tester"));
  policy::ParsedPolicy parsed = policy::policy_from_text(yaml.out);
  ASSERT_TRUE(parsed.policy) << policy::join_errors(parsed.errors);
  EXPECT_EQ(parsed.policy->version, 1);

  const CliResult json = run({"policy", "get", "orders.create", "--format", "json"});
  EXPECT_EQ(json.code, kExitOk);
  EXPECT_THAT(json.out, HasSubstr("\"name\": \"orders.create\""));
}

TEST_F(PolicyCommandTest, CreateReadsAFileAndUsesTheDefaultDatabase) {
  const std::string path = ::testing::TempDir() + "/orders.yaml";
  std::ofstream(path) << kOrders;
  const CliResult r = run({"policy", "create", path});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(opened_url, "sqlite:///home/tester/.local/share/sluice/policies.db");
  const CliResult other = run({"policy", "list", "--policies", "sqlite:///tmp/x.db"});
  EXPECT_EQ(opened_url, "sqlite:///tmp/x.db");
}

TEST_F(PolicyCommandTest, CreateOfAnInvalidDocumentNamesEveryFieldAndExits2) {
  const CliResult r = run({"policy", "create", "-"}, R"(
name: bad name
apps: []
limits: [{algorithm: fixed_window, limit: 0, window: 0s}]
)");
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("invalid policy document -:"));
  EXPECT_THAT(r.err, HasSubstr("  name: may contain only"));
  EXPECT_THAT(r.err, HasSubstr("  apps: must be a non-empty list"));
  EXPECT_THAT(r.err, HasSubstr("  limits[0].limit: "));
  EXPECT_THAT(r.err, HasSubstr("  limits[0].window: "));
  EXPECT_TRUE(policies->list()->empty());
}

TEST_F(PolicyCommandTest, CreatingTwiceIsAConflict) {
  create_orders();
  const CliResult r = run({"policy", "create", "-"}, std::string(kOrders));
  EXPECT_EQ(r.code, kExitConflict);
  EXPECT_THAT(r.err, HasSubstr("already exists"));
}

TEST_F(PolicyCommandTest, MissingFileIsAnInputError) {
  const CliResult r = run({"policy", "create", "/nonexistent/policy.yaml"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("cannot read /nonexistent/policy.yaml"));
}

TEST_F(PolicyCommandTest, GetOfAnUnknownPolicyExits3) {
  const CliResult r = run({"policy", "get", "nope"});
  EXPECT_EQ(r.code, kExitNotFound);
  EXPECT_THAT(r.err, HasSubstr("sluice policy get: "));
}

TEST_F(PolicyCommandTest, ListShowsATableYamlOrJson) {
  create_orders();
  const CliResult table = run({"policy", "list"});
  EXPECT_EQ(table.code, kExitOk);
  EXPECT_EQ(
      table.out,
      "NAME           VERSION  MODE     ENABLED  APPS      LIMITS\n"
      "orders.create  1        enforce  yes      checkout  token_bucket: 100 at once, refilled "
      "50 per 1s (smooth); fixed_window: 1000 per 1h\n");
  EXPECT_THAT(run({"policy", "list", "--format", "json"}).out, HasSubstr("\"orders.create\""));
  EXPECT_THAT(run({"policy", "list", "--app", "mobile"}).err,
              HasSubstr("no policies for app mobile"));
  const CliResult bad = run({"policy", "list", "--format", "xml"});
  EXPECT_EQ(bad.code, kExitInvalid);
  EXPECT_THAT(bad.err, HasSubstr("--format: must be one of table, yaml, json (got \"xml\")"));
}

// Every algorithm, and the parameters that change what one admits (refill_mode, initial, burst,
// max_delay).
constexpr std::string_view kEveryAlgorithm = R"(
name: every.algorithm
apps: [checkout, mobile]
mode: shadow
enabled: false
limits:
  - {algorithm: token_bucket, capacity: 5, refill: 2, period: 1s}
  - {algorithm: token_bucket, capacity: 10, refill: 10, period: 1m, refill_mode: interval,
     initial: 0}
  - {algorithm: gcra, rate: 10, period: 1s, burst: 5}
  - {algorithm: leaky_bucket, rate: 10, period: 1s, max_delay: 500ms}
  - {algorithm: leaky_bucket, rate: 1, period: 1m}
  - {algorithm: fixed_window, limit: 100, window: 1h}
  - {algorithm: sliding_window, limit: 100, window: 1h}
  - {algorithm: sliding_log, limit: 20, window: 90s}
  - {algorithm: concurrency, limit: 3, lease_ttl: 30s}
)";

TEST_F(PolicyCommandTest, ListSaysEveryLimitInWords) {
  create_orders();
  ASSERT_EQ(run({"policy", "create", "-"}, std::string(kEveryAlgorithm)).code, kExitOk);
  const CliResult table = run({"policy", "list"});
  EXPECT_EQ(table.code, kExitOk) << table.err;
  EXPECT_EQ(table.out,
            "NAME             VERSION  MODE     ENABLED  APPS             LIMITS\n"
            "every.algorithm  1        shadow   no       checkout,mobile  "
            "token_bucket: 5 at once, refilled 2 per 1s (smooth); "
            "token_bucket: 10 at once, refilled 10 every 1m all at once (interval), new subjects "
            "start with 0; "
            "gcra: 10 per 1s, up to 6 at once (burst 5); "
            "leaky_bucket: 10 per 1s paced evenly, waiting up to 500ms; "
            "leaky_bucket: 1 per 1m paced evenly, no waiting; "
            "fixed_window: 100 per 1h; "
            "sliding_window: 100 in any 1h (estimated); "
            "sliding_log: 20 in any 90s (exact); "
            "concurrency: 3 at once, lease 30s\n"
            "orders.create    1        enforce  yes      checkout         "
            "token_bucket: 100 at once, refilled 50 per 1s (smooth); fixed_window: 1000 per 1h\n");
}

// kOrders created at kEpoch + 0.123456 s and updated (limit 2000) 2.5 s later.
constexpr std::string_view kOrdersVersion2Yaml = R"(name: orders.create
description: checkout writes
apps:
  - checkout
mode: enforce
on_store_failure: fail_open
enabled: true
limits:
  - algorithm: token_bucket
    capacity: 100
    period: 1s
    refill: 50
    refill_mode: smooth
  - algorithm: fixed_window
    limit: 2000
    window: 1h
version: 2
created_by: cli:tester
created_at: "2023-11-14T22:13:20.123456Z"
updated_by: cli:tester
updated_at: "2023-11-14T22:13:22.623456Z"
)";

TEST_F(PolicyCommandTest, GetPrintsTimesAsIsoUtcInYamlAndMicrosecondsInJson) {
  clock.set(kEpoch + 123'456);
  create_orders();
  clock.advance(2'500'000);
  ASSERT_EQ(
      run({"policy", "update", "-", "--version", "1"}, orders_with("limit: 1000", "limit: 2000"))
          .code,
      kExitOk);

  const CliResult yaml = run({"policy", "get", "orders.create"});
  EXPECT_EQ(yaml.code, kExitOk) << yaml.err;
  EXPECT_EQ(yaml.out, kOrdersVersion2Yaml);

  // JSON is what the HTTP API returns: instants in microseconds since the epoch.
  const CliResult json = run({"policy", "get", "orders.create", "--format", "json"});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(json.out, policy::policy_to_json(*policies->get("orders.create")).dump(2) + "\n");
  EXPECT_THAT(json.out, HasSubstr("\n  \"created_at\": 1700000000123456,\n"));
  EXPECT_THAT(json.out, HasSubstr("\n  \"updated_at\": 1700000002623456,\n"));
}

TEST_F(PolicyCommandTest, GetEditUpdateRoundTripsTheReadableTimes) {
  clock.set(kEpoch + 123'456);
  create_orders();
  const CliResult got = run({"policy", "get", "orders.create"});
  ASSERT_EQ(got.code, kExitOk) << got.err;
  ASSERT_THAT(got.out, HasSubstr("created_at: \"2023-11-14T22:13:20.123456Z\"\n"));
  std::string edited = got.out;
  edited.replace(edited.find("limit: 1000"), 11, "limit: 2000");

  clock.advance(2'500'000);
  const CliResult updated = run({"policy", "update", "-"}, edited);
  EXPECT_EQ(updated.code, kExitOk) << updated.err;
  EXPECT_EQ(updated.out, "updated policy orders.create to version 2\n");
  EXPECT_EQ(run({"policy", "get", "orders.create"}).out, kOrdersVersion2Yaml);
}

// An instant without a four-digit year has no ISO 8601 date: YAML keeps its microseconds, which
// read back as well.
TEST_F(PolicyCommandTest, GetKeepsTimesBeyondYear9999AsMicroseconds) {
  clock.set(kMaxTimestamp);
  create_orders();
  clock.advance(1);
  ASSERT_EQ(run({"policy", "update", "-", "--version", "1"}, std::string(kOrders)).code, kExitOk);
  const CliResult got = run({"policy", "get", "orders.create"});
  EXPECT_EQ(got.code, kExitOk) << got.err;
  EXPECT_THAT(got.out, HasSubstr("\ncreated_at: \"9999-12-31T23:59:59.999999Z\"\n"));
  EXPECT_THAT(got.out, HasSubstr("\nupdated_at: 253402300800000000\n"));
  const CliResult updated = run({"policy", "update", "-"}, got.out);
  EXPECT_EQ(updated.code, kExitOk) << updated.err;
}

TEST_F(PolicyCommandTest, ListAndExportAsYamlPrintReadableTimes) {
  clock.set(kEpoch + 123'456);
  create_orders();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"policy", "list", "--format", "yaml"}, {"policy", "export"}}) {
    SCOPED_TRACE(args[1]);
    const CliResult r = run(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_THAT(r.out, HasSubstr("\n  created_at: \"2023-11-14T22:13:20.123456Z\"\n"));
    EXPECT_THAT(r.out, HasSubstr("\n  updated_at: \"2023-11-14T22:13:20.123456Z\"\n"));
    EXPECT_THAT(r.out, Not(HasSubstr("1700000000123456")));
  }
  const CliResult json = run({"policy", "list", "--format", "json"});
  EXPECT_THAT(json.out, HasSubstr("\"created_at\": 1700000000123456"));
}

TEST_F(PolicyCommandTest, UpdateNeedsAVersionFromTheFlagOrTheDocument) {
  create_orders();
  const CliResult none = run({"policy", "update", "-"}, std::string(kOrders));
  EXPECT_EQ(none.code, kExitInvalid);
  EXPECT_THAT(none.err, HasSubstr("version: required"));

  const CliResult with_flag =
      run({"policy", "update", "-", "--version", "1"}, orders_with("limit: 1000", "limit: 2000"));
  EXPECT_EQ(with_flag.code, kExitOk) << with_flag.err;
  EXPECT_EQ(with_flag.out, "updated policy orders.create to version 2\n");

  const CliResult with_field =
      run({"policy", "update", "-"},
          orders_with("name: orders.create", "name: orders.create\nversion: 2"));
  EXPECT_EQ(with_field.code, kExitOk) << with_field.err;
  EXPECT_EQ(policies->get("orders.create")->version, 3);
}

TEST_F(PolicyCommandTest, UpdateFromAStaleVersionIsRefusedWithExit5) {
  create_orders();
  ASSERT_EQ(run({"policy", "update", "-", "--version", "1"}, std::string(kOrders)).code, kExitOk);
  const CliResult stale =
      run({"policy", "update", "-", "--version", "1"}, orders_with("limit: 1000", "limit: 5"));
  EXPECT_EQ(stale.code, kExitConflict);
  EXPECT_THAT(stale.err, HasSubstr("conflict"));
  EXPECT_EQ(policies->get("orders.create")->version, 2);
}

TEST_F(PolicyCommandTest, UpdateVersionFlagAndDocumentMustAgree) {
  create_orders();
  const CliResult r = run({"policy", "update", "-", "--version", "1"},
                          orders_with("name: orders.create", "name: orders.create\nversion: 7"));
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("--version 1 and the document's version 7 disagree"));
}

TEST_F(PolicyCommandTest, UpdateOfAnUnknownPolicyExits3) {
  const CliResult r = run({"policy", "update", "-", "--version", "1"}, std::string(kOrders));
  EXPECT_EQ(r.code, kExitNotFound);
}

TEST_F(PolicyCommandTest, DeleteUsesTheCurrentVersionOrRefusesAStaleOne) {
  create_orders();
  const CliResult stale = run({"policy", "delete", "orders.create", "--version", "9"});
  EXPECT_EQ(stale.code, kExitConflict);
  const CliResult deleted = run({"policy", "delete", "orders.create"});
  EXPECT_EQ(deleted.code, kExitOk) << deleted.err;
  EXPECT_EQ(deleted.out, "deleted policy orders.create (was version 1)\n");
  EXPECT_EQ(run({"policy", "delete", "orders.create"}).code, kExitNotFound);
}

TEST_F(PolicyCommandTest, HistoryListsEveryChangeAlsoAfterDeletion) {
  clock.set(kEpoch + 123'456);
  create_orders();
  clock.advance(kMicrosPerSecond);
  ASSERT_EQ(run({"policy", "update", "-", "--version", "1"}, std::string(kOrders)).code, kExitOk);
  clock.advance(kMicrosPerMinute + 1);
  ASSERT_EQ(run({"policy", "delete", "orders.create"}).code, kExitOk);
  const CliResult table = run({"policy", "history", "orders.create"});
  EXPECT_EQ(table.code, kExitOk) << table.err;
  EXPECT_EQ(table.out,
            "ID  AT                           ACTION  VERSION  ACTOR\n"
            "1   2023-11-14T22:13:20.123456Z  create  1        cli:tester\n"
            "2   2023-11-14T22:13:21.123456Z  update  2        cli:tester\n"
            "3   2023-11-14T22:14:21.123457Z  delete  -        cli:tester\n");
  const CliResult json = run({"policy", "history", "orders.create", "--format", "json"});
  EXPECT_THAT(json.out, HasSubstr("\"old\""));
  EXPECT_THAT(json.out, HasSubstr("\"at\": 1700000061123457,"));
  EXPECT_EQ(run({"policy", "history", "never.existed"}).code, kExitNotFound);
}

TEST_F(PolicyCommandTest, HistoryAsYamlPrintsEveryTimeReadably) {
  clock.set(kEpoch + 123'456);
  create_orders();
  const CliResult yaml = run({"policy", "history", "orders.create", "--format", "yaml"});
  EXPECT_EQ(yaml.code, kExitOk) << yaml.err;
  EXPECT_EQ(yaml.out, R"(- id: 1
  policy: orders.create
  action: create
  actor: cli:tester
  at: "2023-11-14T22:13:20.123456Z"
  version: 1
  new:
    name: orders.create
    description: checkout writes
    apps:
      - checkout
    mode: enforce
    on_store_failure: fail_open
    enabled: true
    limits:
      - algorithm: token_bucket
        capacity: 100
        period: 1s
        refill: 50
        refill_mode: smooth
      - algorithm: fixed_window
        limit: 1000
        window: 1h
    version: 1
    created_by: cli:tester
    created_at: "2023-11-14T22:13:20.123456Z"
    updated_by: cli:tester
    updated_at: "2023-11-14T22:13:20.123456Z"
)");
}

TEST_F(PolicyCommandTest, ExportThenImportRoundTrips) {
  create_orders();
  ASSERT_EQ(run({"policy", "create", "-"}, orders_with("orders.create", "orders.read")).code,
            kExitOk);
  for (const std::string format : {"yaml", "json"}) {
    SCOPED_TRACE(format);
    const CliResult exported = run({"policy", "export", "--format", format});
    ASSERT_EQ(exported.code, kExitOk) << exported.err;
    CliHarness fresh;
    const CliResult imported = fresh.run({"policy", "import", "-"}, exported.out);
    EXPECT_EQ(imported.code, kExitOk) << imported.err;
    EXPECT_EQ(imported.out, "imported 2 policies (2 new, 0 updated)\n");
    const auto original = policies->list();
    const auto copy = fresh.policies->list();
    ASSERT_EQ(copy->size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(copy->at(i).name, original->at(i).name);
      EXPECT_EQ(policy::policy_to_json(copy->at(i))["limits"],
                policy::policy_to_json(original->at(i))["limits"]);
      EXPECT_EQ(copy->at(i).description, original->at(i).description);
    }
  }
}

TEST_F(PolicyCommandTest, ExportWritesAFile) {
  create_orders();
  const std::string path = ::testing::TempDir() + "/export.yaml";
  const CliResult r = run({"policy", "export", "-o", path});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("exported 1 policies to " + path));
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(policy::policies_from_text(text.str()).policies.size(), 1u);
}

TEST_F(PolicyCommandTest, ImportIsAllOrNothingAndNamesEveryErrorWithItsDocumentIndex) {
  create_orders();
  const CliResult r = run({"policy", "import", "-"}, R"(
- name: fine
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
- name: broken
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 0, window: 1s}]
- name: also-broken
  apps: [checkout]
  limits: [{algorithm: gcra, rate: 1}]
)");
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("nothing was imported"));
  EXPECT_THAT(r.err, HasSubstr("  [1].limits[0].limit: "));
  EXPECT_THAT(r.err, HasSubstr("  [2].limits[0].period: is required"));
  EXPECT_EQ(policies->list()->size(), 1u);
}

TEST_F(PolicyCommandTest, ImportCreatesAndUpdatesAndDryRunChangesNothing) {
  create_orders();
  const std::string input = std::string("- ") + R"(name: orders.create
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
- name: search
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
)";
  const CliResult dry = run({"policy", "import", "-", "--dry-run"}, input);
  EXPECT_EQ(dry.code, kExitOk) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would update orders.create (now version 1)"));
  EXPECT_THAT(dry.out, HasSubstr("would create search"));
  EXPECT_EQ(policies->list()->size(), 1u);

  const CliResult real = run({"policy", "import", "-"}, input);
  EXPECT_EQ(real.code, kExitOk) << real.err;
  EXPECT_EQ(real.out, "imported 2 policies (1 new, 1 updated)\n");
  EXPECT_EQ(policies->get("orders.create")->version, 2);
}

constexpr std::string_view kEnvoyConfig = R"(
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /api/*
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 20, replaces: [{name: global}]}
)";

TEST_F(PolicyCommandTest, EnvoyImportRefusesToLoseAnythingWithoutAllowLossy) {
  const CliResult refused =
      run({"policy", "import", "--format", "envoy", "-"}, std::string(kEnvoyConfig));
  EXPECT_EQ(refused.code, kExitInvalid);
  EXPECT_THAT(refused.err, HasSubstr("warning: descriptors[2].detailed_metric"));
  EXPECT_THAT(refused.err, HasSubstr("--allow-lossy"));
  EXPECT_TRUE(policies->list()->empty());

  const CliResult lossy = run({"policy", "import", "--format", "envoy", "--allow-lossy", "-"},
                              std::string(kEnvoyConfig));
  EXPECT_EQ(lossy.code, kExitOk) << lossy.err;
  EXPECT_THAT(lossy.err, HasSubstr("warning: descriptors[2].detailed_metric"));
  EXPECT_EQ(lossy.out, "imported 3 policies (3 new, 0 updated)\n");
  EXPECT_EQ(policies->get("edge.path__api__")->descriptors->replaces,
            std::vector<std::string>{"global"});
  EXPECT_EQ(policies->get("edge.path__login")->mode, policy::Mode::kShadow);
  EXPECT_EQ(policies->get("edge.remote_address")->apps, std::vector<std::string>{"edge"});
  // Descriptor-matching policies: the gRPC front end finds them by the descriptor's path.
  const std::optional<policy::DescriptorSection> section =
      policies->get("edge.remote_address")->descriptors;
  ASSERT_TRUE(section);
  EXPECT_EQ(section->entries,
            (std::vector<policy::DescriptorEntry>{{"remote_address", std::nullopt}}));
  EXPECT_EQ(section->answers, policy::DescriptorAnswers::kEnvoy);
}

TEST_F(PolicyCommandTest, EnvoyImportCountsDeniedHitsUnlessTheStopFlagIsGiven) {
  constexpr std::string_view kConfig =
      "domain: edge\ndescriptors:\n  - {key: user, rate_limit: {unit: second, "
      "requests_per_unit: 5}}\n";
  ASSERT_EQ(run({"policy", "import", "--format", "envoy", "-"}, std::string(kConfig)).code,
            kExitOk);
  const auto counted = std::get<algorithm::FixedWindow>(policies->get("edge.user")->limits.at(0));
  EXPECT_EQ(counted.denied_cost, algorithm::DeniedCost::kCounted);
  const CliResult stopped = run(
      {"policy", "import", "--format", "envoy", "--stop-cache-key-increment-when-overlimit", "-"},
      std::string(kConfig));
  ASSERT_EQ(stopped.code, kExitOk) << stopped.err;
  const auto free = std::get<algorithm::FixedWindow>(policies->get("edge.user")->limits.at(0));
  EXPECT_EQ(free.denied_cost, algorithm::DeniedCost::kFree);
}

TEST_F(PolicyCommandTest, EnvoyImportWithErrorsImportsNothingAndListsThemAll) {
  const CliResult r = run({"policy", "import", "--format", "envoy", "--allow-lossy", "-"}, R"(
domain: edge
descriptors:
  - {key: a, value: b, rate_limit: {unit: fortnight, requests_per_unit: 1}}
  - {key: c, value: d, rate_limit: {unit: second, requests_per_unit: -1}}
)");
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("  descriptors[0].rate_limit.unit: "));
  EXPECT_THAT(r.err, HasSubstr("  descriptors[1].rate_limit.requests_per_unit: "));
  EXPECT_TRUE(policies->list()->empty());
}

TEST_F(PolicyCommandTest, AsAViewerListsOnlyReadablePoliciesAndCannotWrite) {
  create_orders();
  ASSERT_EQ(run({"policy", "create", "-"},
                "name: pay\napps: [payments]\n"
                "limits: [{algorithm: fixed_window, limit: 1, window: 1s}]\n")
                .code,
            kExitOk);
  add_user("vera", {{"checkout", auth::Role::kViewer}});
  const CliResult list = run({"policy", "list", "--as", "vera"});
  EXPECT_EQ(list.code, kExitOk);
  EXPECT_THAT(list.out, HasSubstr("orders.create"));
  EXPECT_THAT(list.out, Not(HasSubstr("pay ")));
  EXPECT_EQ(run({"policy", "get", "pay", "--as", "vera"}).code, kExitPermission);
  const CliResult write =
      run({"policy", "update", "-", "--version", "1", "--as", "vera"}, std::string(kOrders));
  EXPECT_EQ(write.code, kExitPermission);
  EXPECT_THAT(write.err, HasSubstr("policy orders.create: vera may not update this policy: needs "
                                   "the owner role on checkout (has viewer)"));
}

TEST_F(PolicyCommandTest, AsAnOwnerWritesOwnAppsAndIsRecordedAsTheActor) {
  add_user("olga", {{"checkout", auth::Role::kOwner}});
  const CliResult created = run({"policy", "create", "-", "--as", "olga"}, std::string(kOrders));
  EXPECT_EQ(created.code, kExitOk) << created.err;
  EXPECT_EQ(policies->get("orders.create")->created_by, "olga");
  const CliResult moved = run({"policy", "update", "-", "--version", "1", "--as", "olga"},
                              orders_with("apps: [checkout]", "apps: [payments]"));
  EXPECT_EQ(moved.code, kExitPermission);
  const CliResult any = run({"policy", "create", "-", "--as", "olga"},
                            "name: global\napps: [\"*\"]\n"
                            "limits: [{algorithm: fixed_window, limit: 1, window: 1s}]\n");
  EXPECT_EQ(any.code, kExitPermission);
  EXPECT_THAT(any.err, HasSubstr("only an admin may"));
}

TEST_F(PolicyCommandTest, ImportAsAUserChecksEveryPolicyBeforeChangingAny) {
  add_user("olga", {{"checkout", auth::Role::kOwner}});
  const CliResult r = run({"policy", "import", "-", "--as", "olga"}, R"(
- {name: mine, apps: [checkout], limits: [{algorithm: fixed_window, limit: 1, window: 1s}]}
- {name: theirs, apps: [payments], limits: [{algorithm: fixed_window, limit: 1, window: 1s}]}
- {name: global, apps: ["*"], limits: [{algorithm: fixed_window, limit: 1, window: 1s}]}
)");
  EXPECT_EQ(r.code, kExitPermission);
  EXPECT_THAT(r.err, HasSubstr("policy theirs: olga may not create"));
  EXPECT_THAT(r.err, HasSubstr("policy global: olga may not create"));
  EXPECT_TRUE(policies->list()->empty());
}

TEST_F(PolicyCommandTest, UnknownAsUserIsRefused) {
  const CliResult r = run({"policy", "list", "--as", "ghost"});
  EXPECT_EQ(r.code, kExitPermission);
  EXPECT_THAT(r.err, HasSubstr("--as: no user named ghost"));
}

TEST_F(PolicyCommandTest, UnreachableDatabaseExits6) {
  open_failure = unavailable("cannot open database");
  const CliResult r = run({"policy", "list"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_EQ(r.err, "sluice policy list: cannot open database\n");
}

TEST_F(PolicyCommandTest, UsageErrorsExit2AndHelpExits0) {
  EXPECT_EQ(run({"policy", "get"}).code, 2);
  EXPECT_EQ(run({"policy", "frobnicate"}).code, 2);
  EXPECT_EQ(run({"policy", "import", "--format", "csv", "-"}).code, 2);
  EXPECT_EQ(run({"policy", "update", "-", "--version", "0"}).code, 2);
  const CliResult help = run({"policy", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* command :
       {"list", "get", "create", "update", "delete", "history", "export", "import"}) {
    EXPECT_THAT(help.out, HasSubstr(command));
  }
  const CliResult import_help = run({"policy", "import", "--help"});
  EXPECT_EQ(import_help.code, 0);
  EXPECT_THAT(import_help.out, HasSubstr("--allow-lossy"));
}

}  // namespace
}  // namespace sluice::cli
