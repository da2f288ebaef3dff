// `sluice simulate` run in process on files the test writes: the table, --json, --recommend,
// --write-recording and the errors a user sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sluice/cli/cli_test_support.h"
#include "sluice/cli/command_support.h"

namespace sluice::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

class SimulateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-simulate-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    // alice: 5 requests in one second; bob: 3; carol (app batch): 1. 2 per second: alice loses
    // 3 and bob 1 under strict; 4 per second: alice loses 1 under loose.
    std::string lines;
    for (int i = 0; i < 5; ++i) lines += line(i, "alice");
    lines += line(10, "bob") + line(11, "bob") + line(12, "bob");
    lines += R"({"time": "2023-11-14T22:13:20.000020Z", "key": "carol", "app": "batch"})"
             "\n";
    traffic_ = write("traffic.jsonl", lines);
    strict_ = write("strict.yaml", policy(2));
    loose_ = write("loose.yaml", policy(4));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string line(int micros, const std::string& key) {
    return R"({"time": )" + std::to_string(1'700'000'000'000'000 + micros) + R"(, "key": ")" + key +
           "\", \"app\": \"web\"}\n";
  }
  static std::string policy(int limit) {
    return "name: api\napps: [web]\nlimits:\n  - algorithm: fixed_window\n    limit: " +
           std::to_string(limit) + "\n    window: 1s\n";
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  CliResult run(std::vector<std::string> args) { return harness_.run(std::move(args)); }

  CliHarness harness_;
  std::filesystem::path dir_;
  std::string traffic_;
  std::string strict_;
  std::string loose_;
};

TEST_F(SimulateCommandTest, PrintsATablePerVariantWithTopDeniedAndOutcomeChanges) {
  const CliResult r =
      run({"simulate", "--traffic", traffic_, "--policy-file", strict_, "--policy-file", loose_});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("traffic: 9 events from 2023-11-14T22:13:20.000000Z to "
                               "2023-11-14T22:13:20.000020Z (1 file)"));
  EXPECT_THAT(r.out, ContainsRegex("policy +variant +requests +allowed +denied +denied% +subjects "
                                   "+subjects_denied +subjects_denied%"));
  // 8 decided: carol's app is not listed.
  EXPECT_THAT(r.out, ContainsRegex("api +" + strict_ + " +8 +4 +4 +50% +2 +2 +100%"));
  EXPECT_THAT(r.out, ContainsRegex("api +" + loose_ + " +8 +7 +1 +12.5% +2 +1 +50%"));
  EXPECT_THAT(r.out, HasSubstr("1 events from apps the policy does not list were not decided"));
  EXPECT_THAT(r.out, ContainsRegex("alice +3 +5\nbob +1 +3\n"));
  EXPECT_THAT(r.out, HasSubstr("api: " + strict_ + " denies 1 subjects that " + loose_ +
                               " never denies (e.g. bob); " + loose_ + " denies 0 that"));
}

TEST_F(SimulateCommandTest, JsonCarriesTheDocumentedFields) {
  const CliResult r = run({"simulate", "--traffic", traffic_, "--policy-file", strict_, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json document = nlohmann::json::parse(r.out);
  const nlohmann::json& api = document["policies"][0];
  EXPECT_EQ(api["policy"], "api");
  EXPECT_EQ(api["variant"], strict_);
  EXPECT_EQ(api["requests"], 8);
  EXPECT_EQ(api["allowed"], 4);
  EXPECT_EQ(api["denied"], 4);
  EXPECT_EQ(api["subjects"], 2);
  EXPECT_EQ(api["subjects_denied"], 2);
  EXPECT_EQ(api["top_denied"],
            nlohmann::json::parse(R"([{"key": "alice", "denied": 3, "requests": 5},
                                                          {"key": "bob", "denied": 1, "requests": 3}])"));
  EXPECT_EQ(api["over_time"][0]["denied"], 4);
  EXPECT_EQ(document["traffic"]["events"], 9);
}

TEST_F(SimulateCommandTest, RecommendPrintsTheTightestValueAndItsCurve) {
  const CliResult r = run({"simulate", "--traffic", traffic_, "--policy-file", strict_,
                           "--recommend", "subjects=0%", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json rec = nlohmann::json::parse(r.out)["policies"][0]["recommendations"][0];
  EXPECT_EQ(rec["parameter"], "limit");
  EXPECT_EQ(rec["current"], 2);
  EXPECT_EQ(rec["recommended"], 5);  // alice's 5 in one second

  const CliResult table = run(
      {"simulate", "--traffic", traffic_, "--policy-file", strict_, "--recommend", "requests=20%"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("limits[0] fixed_window.limit: current 2, tightest meeting "
                                   "requests denied <= 20%: 4"));
  EXPECT_THAT(table.out, HasSubstr("limit  requests_denied  of  share"));
}

TEST_F(SimulateCommandTest, WritesARecordingThatReplaysTheSame) {
  const std::string recording = (dir_ / "traffic.sltr").string();
  const CliResult written =
      run({"simulate", "--traffic", traffic_, "--write-recording", recording});
  ASSERT_EQ(written.code, kExitOk) << written.err;
  EXPECT_THAT(written.err, HasSubstr("wrote 9 events"));
  const CliResult from_json =
      run({"simulate", "--traffic", traffic_, "--policy-file", strict_, "--json"});
  const CliResult from_binary =
      run({"simulate", "--traffic", recording, "--policy-file", strict_, "--json"});
  ASSERT_EQ(from_binary.code, kExitOk) << from_binary.err;
  nlohmann::json a = nlohmann::json::parse(from_json.out);
  nlohmann::json b = nlohmann::json::parse(from_binary.out);
  EXPECT_EQ(a["policies"], b["policies"]);
}

TEST_F(SimulateCommandTest, BadInputExitsTwoNamingTheLineAndField) {
  const std::string bad = write("bad.jsonl", line(0, "a") + "{\"key\": \"b\"}\n" + line(1, "c"));
  const CliResult r = run({"simulate", "--traffic", bad, "--policy-file", strict_});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr(bad + ": line 2: .time: missing"));
  const CliResult skipping =
      run({"simulate", "--traffic", bad, "--policy-file", strict_, "--skip-bad-lines"});
  ASSERT_EQ(skipping.code, kExitOk) << skipping.err;
  EXPECT_THAT(skipping.out, HasSubstr("2 events"));
  EXPECT_THAT(skipping.out, HasSubstr("1 bad lines skipped"));

  const std::string jobs = write("jobs.yaml",
                                 "name: jobs\napps: ['*']\nlimits:\n  - algorithm: concurrency\n"
                                 "    limit: 2\n    lease_ttl: 30s\n");
  const CliResult concurrency = run({"simulate", "--traffic", traffic_, "--policy-file", jobs});
  EXPECT_NE(concurrency.code, kExitOk);
  EXPECT_THAT(concurrency.err, HasSubstr("concurrency limits cannot be replayed"));
}

}  // namespace
}  // namespace sluice::cli
