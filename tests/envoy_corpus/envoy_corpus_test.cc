// The Envoy corpus (tests/envoy_corpus/README.md): envoyproxy/ratelimit's README examples and its
// example config, rewritten, imported with `policy import --format envoy`'s converter and served
// by an in-process gRPC server on a loopback port; every ShouldRateLimit call of a file is sent
// through a grpc++ client at its own pinned time (memory store: a manual clock; Redis: the same
// clock pinned into the scripts) and its answer compared, field by field, with the answer
// envoyproxy/ratelimit gives (written into the file by envoy_reference.py from its source).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "sluice/core/clock.h"
#include "sluice/policy/envoy_import.h"
#include "sluice/server/grpc/grpc_server.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice {
namespace {

namespace rls = envoy::service::ratelimit::v3;
using Response = rls::RateLimitResponse;

struct CorpusFile {
  std::string name;
  YAML::Node root;
};

std::vector<CorpusFile> corpus_files() {
  const char* source = std::getenv("SLUICE_SOURCE_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(source != nullptr ? source : ".") / "tests" / "envoy_corpus";
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  }
  // Sorted as paths: a YAML::Node assigned to another writes into the node it refers to.
  std::sort(paths.begin(), paths.end());
  std::vector<CorpusFile> files;
  for (const auto& path : paths) {
    files.push_back({path.filename().string(), YAML::LoadFile(path.string())});
  }
  return files;
}

rls::RateLimitRequest request_of(const YAML::Node& call) {
  rls::RateLimitRequest request;
  request.set_domain(call["domain"].as<std::string>());
  if (call["hits_addend"]) request.set_hits_addend(call["hits_addend"].as<std::uint32_t>());
  for (const YAML::Node& descriptor : call["descriptors"]) {
    auto& added = *request.add_descriptors();
    for (const YAML::Node& entry : descriptor) {
      auto& e = *added.add_entries();
      e.set_key(entry[0].as<std::string>());
      e.set_value(entry[1].as<std::string>());
    }
  }
  return request;
}

std::string code_name(int code) { return Response::Code_Name(static_cast<Response::Code>(code)); }

// Every field of `got` that differs from `expect` ("statuses[1].limit_remaining: 3, want 0").
std::vector<std::string> differences(const YAML::Node& expect, const Response& got) {
  std::vector<std::string> out;
  const auto differ = [&out](const std::string& field, const std::string& have,
                             const std::string& want) {
    if (have != want) out.push_back(field + ": " + have + ", want " + want);
  };
  differ("overall_code", code_name(got.overall_code()), expect["overall"].as<std::string>());
  const YAML::Node statuses = expect["statuses"];
  if (static_cast<std::size_t>(got.statuses_size()) != statuses.size()) {
    out.push_back("statuses: " + std::to_string(got.statuses_size()) + ", want " +
                  std::to_string(statuses.size()));
    return out;
  }
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const YAML::Node want = statuses[i];
    const auto& have = got.statuses(static_cast<int>(i));
    const std::string at = "statuses[" + std::to_string(i) + "].";
    differ(at + "code", code_name(have.code()), want["code"].as<std::string>());
    differ(at + "limit_remaining", std::to_string(have.limit_remaining()),
           want["remaining"].as<std::string>());
    const bool limited = static_cast<bool>(want["requests_per_unit"]);
    differ(at + "current_limit", have.has_current_limit() ? "set" : "absent",
           limited ? "set" : "absent");
    const auto& duration = have.duration_until_reset();
    const std::string reset =
        std::to_string(duration.seconds()) + "s" +
        (duration.nanos() != 0 ? std::to_string(duration.nanos()) + "ns" : "");
    differ(at + "duration_until_reset", have.has_duration_until_reset() ? reset : "absent",
           want["reset"] ? want["reset"].as<std::string>() + "s" : "absent");
    if (!limited || !have.has_current_limit()) continue;
    const auto& limit = have.current_limit();
    differ(at + "current_limit.requests_per_unit", std::to_string(limit.requests_per_unit()),
           want["requests_per_unit"].as<std::string>());
    differ(at + "current_limit.unit", Response::RateLimit::Unit_Name(limit.unit()),
           want["unit"].as<std::string>());
    differ(at + "current_limit.name", "\"" + limit.name() + "\"",
           "\"" + want["name"].as<std::string>() + "\"");
  }
  if (const YAML::Node headers = expect["headers"]) {
    std::string have;
    std::string wanted;
    for (const auto& header : got.response_headers_to_add()) {
      have += header.key() + ": " + header.value() + "; ";
    }
    for (const YAML::Node& header : headers) {
      wanted += header[0].as<std::string>() + ": " + header[1].as<std::string>() + "; ";
    }
    differ("response_headers_to_add", "[" + have + "]", "[" + wanted + "]");
  }
  return out;
}

enum class Backend { kMemory, kRedis };

class EnvoyCorpusTest : public ::testing::TestWithParam<Backend> {
 protected:
  // Replays one file on a fresh store and server; returns how many calls were answered
  // differently (all of them when the file does not import).
  int replay(const CorpusFile& file) {
    const YAML::Node calls = file.root["calls"];
    const policy::EnvoyImport imported =
        policy::import_envoy_config(file.root["config"].as<std::string>());
    for (const auto& warning : imported.warnings) {
      std::cout << file.name << ": import warning " << warning.field << ": " << warning.message
                << "\n";
    }
    if (!imported.errors.empty()) {
      for (const auto& error : imported.errors) {
        std::cout << file.name << ": import error " << error.field << ": " << error.message << "\n";
      }
      return static_cast<int>(calls.size());
    }
    ManualClock clock(0);
    store::MemoryStore memory(clock);
    std::unique_ptr<test::RedisServer> redis_server;
    std::unique_ptr<store::RedisStore> redis;
    if (GetParam() == Backend::kRedis) {
      StatusOr<std::unique_ptr<test::RedisServer>> started = test::RedisServer::start();
      if (!started.ok()) {
        ADD_FAILURE() << started.status().to_string();
        return static_cast<int>(calls.size());
      }
      redis_server = std::move(*started);
      StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
          {.host = "127.0.0.1", .port = redis_server->port(), .command_timeout = kMicrosPerSecond});
      if (!client.ok()) {
        ADD_FAILURE() << client.status().to_string();
        return static_cast<int>(calls.size());
      }
      redis = std::make_unique<store::RedisStore>(
          std::shared_ptr<redis::Multiplexer>(std::move(*client)),
          store::RedisStoreOptions{.pinned_clock_for_tests = &clock});
    }
    service::StaticPolicyLookup lookup(imported.policies);
    store::Store& store = redis ? static_cast<store::Store&>(*redis) : memory;
    // No over-limit cache: it times a denial on the steady clock, while this replay pins the
    // stores' clock and jumps it from call to call.
    service::Limiter limiter(store, &memory,
                             {.store_timeout = 5 * kMicrosPerSecond,
                              .policies = &lookup,
                              .over_limit_cache_entries = 0});
    // `headers: true`: envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED, Sluice's
    // --grpc-headers ratelimit; else neither adds headers.
    const bool headers = file.root["headers"] && file.root["headers"].as<bool>();
    StatusOr<std::unique_ptr<grpc_server::GrpcServer>> server = grpc_server::GrpcServer::start(
        {.rls = {.headers = headers ? wire::RlsHeaders::kRateLimit : wire::RlsHeaders::kNone}},
        limiter);
    if (!server.ok()) {
      ADD_FAILURE() << server.status().to_string();
      return static_cast<int>(calls.size());
    }
    auto stub = rls::RateLimitService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
    const Micros start = file.root["start"].as<std::int64_t>() * kMicrosPerSecond;
    int differing = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const YAML::Node call = calls[i];
      clock.set(start + static_cast<Micros>(std::llround(call["at"].as<double>() * 1e6)));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      Response response;
      const grpc::Status status = stub->ShouldRateLimit(&context, request_of(call), &response);
      std::vector<std::string> diff;
      if (!status.ok()) {
        diff.push_back("gRPC status " + std::to_string(status.error_code()) + " " +
                       status.error_message());
      } else {
        diff = differences(call["expect"], response);
      }
      if (diff.empty()) continue;
      ++differing;
      std::ostringstream text;
      for (const std::string& d : diff) text << "\n    " << d;
      std::cout << file.name << ": calls[" << i << "] differs:" << text.str() << "\n";
    }
    (*server)->shutdown();
    return differing;
  }
};

TEST_P(EnvoyCorpusTest, EveryCallAnswersAsEnvoyproxyRatelimit) {
  int calls = 0;
  int differing = 0;
  for (const CorpusFile& file : corpus_files()) {
    SCOPED_TRACE(file.name);
    calls += static_cast<int>(file.root["calls"].size());
    differing += replay(file);
  }
  std::cout << "envoy corpus: " << calls << " calls, " << differing << " answered differently\n";
  EXPECT_GT(calls, 100);
  EXPECT_EQ(differing, 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, EnvoyCorpusTest,
                         ::testing::Values(Backend::kMemory, Backend::kRedis),
                         [](const auto& param_info) {
                           return param_info.param == Backend::kMemory ? "Memory" : "Redis";
                         });

}  // namespace
}  // namespace sluice
