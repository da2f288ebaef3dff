#include "sluice/redis_module/evaluate_command.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/redis_module/command_call.h"
#include "sluice/redis_module/key_io.h"
#include "sluice/redis_module/limit_slot.h"
#include "sluice/redis_module/request.h"
#include "sluice/redis_module/stored_values.h"

namespace sluice::redis_module {
namespace {

// evaluate.lua's verdict: seven packed doubles, -1 for an absent retry_after or delay.
void append_verdict(std::string& out, const algorithm::Verdict& verdict, std::size_t index) {
  const double fields[7] = {verdict.allowed ? 1.0 : 0.0,
                            static_cast<double>(verdict.limit),
                            static_cast<double>(verdict.remaining),
                            static_cast<double>(verdict.retry_after.value_or(-1)),
                            static_cast<double>(verdict.reset_after),
                            static_cast<double>(verdict.delay.value_or(-1)),
                            static_cast<double>(index)};
  append_doubles(out, fields);
}

// Whether the `count` keys name `count` different keys (a decision holds its limits' keys open
// from read to write only then). Compared pairwise: above 16 keys (no policy has so many limits)
// the answer is no, so a crafted request cannot make the check quadratic.
bool distinct_keys(RedisModuleString* const* keys, std::size_t count) {
  if (count > 16) return false;
  for (std::size_t i = 1; i < count; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (bytes_of(keys[i]) == bytes_of(keys[j])) return false;
    }
  }
  return true;
}

// The per-decision storage, reused from decision to decision of one call (no allocation per
// decision of a batch once the first has sized it).
struct Scratch {
  std::vector<LimitSlot> slots;
  std::vector<algorithm::Verdict> verdicts;
};

// One decision: `keys` are its limits' keys, then the penalty box's.
void decide(RedisModuleCtx* ctx, const Request& request, RedisModuleString* const* keys, Micros now,
            Scratch& scratch, std::string& reply) {
  const bool distinct = distinct_keys(keys, keys_per_decision(request));
  std::vector<LimitSlot>& slots = scratch.slots;
  slots.clear();
  for (std::size_t i = 0; i < request.limits.size(); ++i) {
    slots.emplace_back(ctx, request.limits[i], keys[i], now, request.cost, distinct);
  }
  std::vector<algorithm::Verdict>& verdicts = scratch.verdicts;
  verdicts.clear();
  for (const LimitSlot& slot : slots) verdicts.push_back(slot.decide(request.cost));
  if (request.operation == Operation::kInspect) {
    for (std::size_t i = 0; i < verdicts.size(); ++i) append_verdict(reply, verdicts[i], i);
    return;
  }
  // A fixed window counting denials counts (and writes) a cost it denies itself, whatever the
  // policy's verdict, before the penalty box is applied (fixed_window.lua).
  if (request.cost > 0) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (!verdicts[i].allowed) slots[i].commit_denied(request.cost);
    }
  }
  algorithm::PolicyVerdict policy = algorithm::combine_verdicts(verdicts);
  if (request.penalty) {
    RedisModuleString* key = keys[request.limits.size()];
    StringKey box_key(ctx, key, /*keep_open=*/false);
    const std::optional<std::string_view> value = box_key.read();
    algorithm::PenaltyState box = value ? decode_penalty(*value).value_or(algorithm::PenaltyState{})
                                        : algorithm::PenaltyState{};
    if (algorithm::penalize(*request.penalty, box, policy.verdict, request.cost, now)) {
      box_key.write(encode_penalty(box),
                    ttl_millis(algorithm::penalty_expires_at(*request.penalty, box) - now));
    }
  }
  if (policy.verdict.allowed && request.cost > 0) {
    for (LimitSlot& slot : slots) slot.commit(request.cost, request.lease);
  }
  append_verdict(reply, policy.verdict, policy.limit_index);
  if (request.penalty) {
    append_double(reply, static_cast<double>(policy.verdict.blocked_until.value_or(-1)));
  }
}

}  // namespace

int evaluate_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const std::optional<CommandCall> call = begin_command(ctx, argv, argc);
  if (!call) return kOk;  // replied
  const std::int64_t numkeys = call->key_count;
  RedisModuleString** keys = call->keys;
  const Micros now = call->now;
  // Everything is read and checked before the first key is touched.
  std::vector<Request> requests;
  requests.reserve(static_cast<std::size_t>(call->arg_count));
  std::int64_t keys_needed = 0;
  for (int a = 0; a < call->arg_count; ++a) {
    StatusOr<Request> request = parse_request(bytes_of(call->args[a]));
    if (!request.ok()) {
      return reply_error(ctx,
                         "request " + std::to_string(a + 1) + ": " + request.status().message());
    }
    const auto per_decision = static_cast<std::int64_t>(keys_per_decision(*request));
    if (request->repeats > (numkeys - keys_needed) / per_decision) {
      return reply_error(
          ctx, "request " + std::to_string(a + 1) + ": more decisions than the keys given");
    }
    keys_needed += request->repeats * per_decision;
    requests.push_back(std::move(*request));
  }
  std::string reply;
  Scratch scratch;
  std::size_t key = 0;
  for (const Request& request : requests) {
    const std::size_t per_decision = keys_per_decision(request);
    reply.reserve(reply.size() + static_cast<std::size_t>(request.repeats) *
                                     (request.limits.size() + 1) * kVerdictBytes);
    for (std::int64_t r = 0; r < request.repeats; ++r) {
      decide(ctx, request, keys + key, now, scratch, reply);
      // Closes the decision's keys before the next decision, which may name them again.
      scratch.slots.clear();
      key += per_decision;
    }
  }
  return api.ReplyWithStringBuffer(ctx, reply.data(), reply.size());
}

}  // namespace sluice::redis_module
