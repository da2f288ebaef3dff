#include "sluice/store/redis/script_set.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::store {
namespace {

constexpr Micros kNow = 1'700'000'000'000'000;

double double_at(const std::string& bytes, std::size_t index) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, bytes.data() + 8 * index, 8);  // little-endian hosts, as Redis's struct
  return std::bit_cast<double>(bits);
}

// The Lua sources name their constants; the scripts sent carry the catalogue's numbers.
TEST(ScriptSetTest, AssembledScriptsNameNoConstantAndCarryTheNumbers) {
  const std::regex name(R"(\b(KIND|OP|QUOTA)_[A-Z_]+)");
  for (const bool pinned : {false, true}) {
    const ScriptSet scripts(pinned);
    for (const ScriptOperation operation :
         {ScriptOperation::kAcquire, ScriptOperation::kInspect, ScriptOperation::kLease}) {
      EXPECT_FALSE(std::regex_search(scripts.get(operation).source(), name));
    }
    const std::string& evaluate = scripts.get(ScriptOperation::kAcquire).source();
    EXPECT_NE(evaluate.find("if kind == 4 then"), std::string::npos);  // the fixed window
    EXPECT_NE(evaluate.find("local penalized = operation == 2"), std::string::npos);
  }
  const std::string quota = with_shared_blocks(scripts::lua_quota());
  EXPECT_FALSE(std::regex_search(quota, name));
  EXPECT_NE(quota.find("elseif kind == 8 then"), std::string::npos);  // the calendar window
  EXPECT_NE(quota.find("local taking = operation == 4"), std::string::npos);
}

TEST(ScriptSetTest, RequestsCarryTheOperationAndEachLimitsKind) {
  const std::vector<algorithm::Limit> limits = {
      algorithm::Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 5},
      algorithm::SlidingLog{.limit = 7, .window = kMicrosPerSecond}};
  const std::string acquire = decision_request(ScriptOperation::kAcquire, limits, 1, kNow);
  EXPECT_EQ(double_at(acquire, 1), 0);  // OP_ACQUIRE
  EXPECT_EQ(double_at(acquire, 3), 2);  // limits
  EXPECT_EQ(double_at(acquire, 4), static_cast<double>(algorithm::ScriptKind::kSmoothBucket));
  EXPECT_EQ(double_at(acquire, 9), static_cast<double>(algorithm::ScriptKind::kSlidingLog));
  EXPECT_EQ(double_at(decision_request(ScriptOperation::kInspect, limits, 0, kNow), 1), 1);
  const algorithm::Penalty penalty{.after = 3, .within = 1, .block = 1, .escalate = 1, .max = 1};
  EXPECT_EQ(
      double_at(decision_request(ScriptOperation::kAcquire, limits, 1, kNow, {}, &penalty), 1),
      2);  // OP_PENALIZED_ACQUIRE
  const std::string give =
      quota_request(QuotaScriptOperation::kGive, limits, 3, /*max_debt=*/9, kNow);
  EXPECT_EQ(double_at(give, 0), 9);
  EXPECT_EQ(double_at(give, 1), 5);  // QUOTA_GIVE
}

}  // namespace
}  // namespace sluice::store
