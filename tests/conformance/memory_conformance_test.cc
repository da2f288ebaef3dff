// Replays every conformance trace on the in-memory store.
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "sluice/core/clock.h"
#include "sluice/store/memory/memory_store.h"
#include "trace.h"

namespace sluice::conformance {
namespace {

class MemoryConformanceTest : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(MemoryConformanceTest, ReplaysTraceExactly) {
  ManualClock clock(0);
  store::MemoryStore store(clock);
  const std::vector<std::string> problems =
      replay(load_trace(GetParam()), store, [&](Micros now) { clock.set(now); });
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

TEST(ConformanceTracesTest, EveryAlgorithmHasTraces) {
  std::set<std::string> algorithms;
  for (const auto& file : trace_files()) {
    const nlohmann::json trace = load_trace(file);
    for (const auto& limit : trace["policy"]["limits"]) {
      algorithms.insert(limit["algorithm"].get<std::string>());
    }
  }
  for (const char* name : {"token_bucket", "gcra", "leaky_bucket", "fixed_window", "sliding_window",
                           "sliding_log", "concurrency"}) {
    EXPECT_TRUE(algorithms.contains(name)) << "no trace exercises " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, MemoryConformanceTest, testing::ValuesIn(trace_files()),
                         [](const testing::TestParamInfo<std::filesystem::path>& param) {
                           std::string name = param.param.stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace sluice::conformance
