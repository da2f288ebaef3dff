// ScriptSet: the Lua scripts the Redis store sends, and their calling convention.
//
// Two scripts, assembled once from the embedded sources (scripts/*.lua): `evaluate` (acquire and
// inspect) = clock + common + evaluate.lua with every algorithm's block spliced into its loop,
// and `lease` (release / renew, and the admin inspector's list) = clock + common + lease.lua.
// Redis runs a script's whole chunk on every call, so the scripts define no functions and carry
// every algorithm inline: a block that does not run costs nothing, and one script serves every
// policy. See docs/redis-scripts.md.
//
// `evaluate` decides one or more subjects in one call (the store's decision batches): each ARGV is
// a request, packed little-endian doubles (repeat count, operation, cost, limit count, then kind
// and four parameters per limit; common.lua lists the kinds) followed by the lease id when there
// is one, and stands for as many decisions in a row as its repeat count; KEYS are the decisions'
// limit keys one after the other. The reply is packed the same way: seven doubles per verdict,
// the decisions' verdicts concatenated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/core/clock.h"
#include "sluice/status.h"
#include "sluice/store/redis/multiplexer.h"

namespace sluice::store {

// Which script and call the store asks for (get, decision_request). Not a number any script
// reads: the operation fields the scripts read are the two enums below.
enum class ScriptOperation : std::uint8_t { kAcquire, kInspect, kLease };

// The operation field of an `evaluate` request: evaluate.lua's OP_ACQUIRE, OP_INSPECT and
// OP_PENALIZED_ACQUIRE (an acquire that applies the policy's penalty box).
enum class EvaluateOperation : std::uint8_t { kAcquire = 0, kInspect = 1, kPenalizedAcquire = 2 };
// The operation field of a `quota` request: quota.lua's QUOTA_CHARGE ... QUOTA_GIVE (take and
// give: token leasing's, service/token_batches.h).
enum class QuotaScriptOperation : std::uint8_t {
  kCharge = 0,
  kRefund = 1,
  kReserve = 2,
  kSettle = 3,
  kTake = 4,
  kGive = 5,
};

// One decision's ARGV entry for the `evaluate` script: acquire (cost, and `lease` when not empty)
// or inspect (each limit decided for `cost` and nothing written: a peek at cost 0, a dry run
// above; no lease). The test-only pinned clock, when used, goes after all requests.
// With `penalty` (acquire only): the acquire applies that penalty box (kPenalizedAcquire), whose
// state key must follow the limit keys, and answers kPenalizedVerdictBytes. `calendar_now`: the
// client's time, from which a calendar fixed window's bounds (this period's and the next) are
// computed; Redis's TIME picks among them (calendar_window.lua).
std::string decision_request(ScriptOperation operation, std::span<const algorithm::Limit> limits,
                             std::int64_t cost, Micros calendar_now, std::string_view lease = {},
                             const algorithm::Penalty* penalty = nullptr);

// `source` with every "-- @<name>" line replaced by the shared block of that name (scripts.h:
// tat, interval_state, fixed_window_state, sliding_window_state, sliding_retry): evaluate.lua's
// kinds and quota.lua decide from the same text, so they cannot read a state differently. And
// every constant the Lua sources name replaced by its number: KIND_* from the algorithm
// catalogue (algorithm::script_kinds), OP_* and QUOTA_* from the two enums above; a name of that
// shape that is none of them aborts (the embedded sources are broken).
std::string with_shared_blocks(std::string_view source);

// The `quota` script's request (quota.lua): decision_request's acquire of `cost` with `max_debt`
// in place of the repeat count and `operation` in the operation field.
std::string quota_request(QuotaScriptOperation operation, std::span<const algorithm::Limit> limits,
                          std::int64_t cost, std::int64_t max_debt, Micros calendar_now);

// Makes `request` (from decision_request) stand for `repeats` decisions in a row that send the
// same bytes, each with its own keys: the script then reads and unpacks it once.
void set_request_repeats(std::string& request, std::size_t repeats);

// Whose time the scripts read from their last argument: the tests' pinned clock when set, else
// the system clock when the client's URL says clock=client (script_engine.h); null: Redis's TIME.
// The store and the node heartbeat both ask this.
const Clock* caller_clock(const Clock* pinned_for_tests, const redis::Multiplexer& client);

// TESTS ONLY: appends the pinned clock's time, which the pinned scripts read from the last ARGV,
// when `pinned_clock` is set (RedisStoreOptions::pinned_clock_for_tests); else nothing.
void append_pinned_time(std::vector<std::string>& args, const Clock* pinned_clock);

// Bytes of one verdict in an `evaluate` reply.
inline constexpr std::size_t kVerdictBytes = std::size_t{7} * 8;
// Bytes of a penalized acquire's verdict: the seven doubles, then blocked_until (-1: none).
inline constexpr std::size_t kPenalizedVerdictBytes = kVerdictBytes + 8;

// How many verdicts `evaluate` answers for one decision: one for acquire, one per limit for
// inspect.
std::size_t verdict_count(ScriptOperation operation, std::size_t limits);

// The verdicts in one decision's part of an `evaluate` reply: one for acquire (limit_index = the
// deciding limit), one per limit for inspect. Internal for bytes of another shape.
StatusOr<std::vector<algorithm::PolicyVerdict>> unpack_verdicts(std::string_view bytes);
// A penalized acquire's verdict (kPenalizedVerdictBytes), blocked_until set when blocked.
StatusOr<algorithm::PolicyVerdict> unpack_penalized_verdict(std::string_view bytes);

class ScriptSet {
 public:
  // `pinned_time`: assemble the test-only variants that take time from the last ARGV.
  explicit ScriptSet(bool pinned_time);

  // The script for `operation`. Every policy shares it; `limits` are accepted so callers need not
  // know that.
  const redis::Script& get(ScriptOperation operation,
                           std::span<const algorithm::Limit> limits = {}) const;

 private:
  redis::Script evaluate_;
  redis::Script lease_;
};

// The other scripts (redis_store_quota.cc, redis_store_penalty.cc, node_heartbeat.cc).
// `pinned_time`: the variant that reads the caller's time from its last argument.
const redis::Script& quota_script(bool pinned_time);
const redis::Script& penalty_script(bool pinned_time);
const redis::Script& heartbeat_script(bool pinned_time);

// Every script the store and the node heartbeat run, as one Redis Function library
// (script_engine.h): what RedisStore::open has each node load.
redis::FunctionLibrary store_function_library(bool caller_time);

}  // namespace sluice::store
