#include "sluice/redis_module/lease_command.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "sluice/algorithm/concurrency.h"
#include "sluice/redis_module/command_call.h"
#include "sluice/redis_module/key_io.h"
#include "sluice/redis_module/stored_values.h"

namespace sluice::redis_module {
namespace {

struct LiveLease {
  Micros expires_at = 0;
  std::string_view id;
  std::int64_t cost = 0;
};

// 'list': per key, the live leases' count and units, then the first `max` of them by expiry (ties
// by id): id, µs to expiry, units. Writes nothing.
int list_leases(RedisModuleCtx* ctx, const CommandCall& call, std::int64_t max) {
  api.ReplyWithArray(ctx, call.key_count);
  for (int i = 0; i < call.key_count; ++i) {
    const CallReply stored(api.Call(ctx, "HGETALL", "s", call.keys[i]));
    std::vector<LiveLease> live;
    std::int64_t units = 0;
    for (std::size_t j = 0; j + 1 < stored.size(); j += 2) {
      const std::optional<StoredLease> lease = decode_lease(stored.string_at(j + 1));
      if (!lease || lease->expires_at <= call.now) continue;
      live.push_back({lease->expires_at, stored.string_at(j), lease->cost});
      units += lease->cost;
    }
    std::sort(live.begin(), live.end(), [](const LiveLease& a, const LiveLease& b) {
      return std::tie(a.expires_at, a.id) < std::tie(b.expires_at, b.id);
    });
    const auto shown = static_cast<std::size_t>(
        std::clamp<std::int64_t>(max, 0, static_cast<std::int64_t>(live.size())));
    api.ReplyWithArray(ctx, static_cast<long>(2 + 3 * shown));
    api.ReplyWithLongLong(ctx, static_cast<long long>(live.size()));
    api.ReplyWithLongLong(ctx, units);
    for (std::size_t j = 0; j < shown; ++j) {
      api.ReplyWithStringBuffer(ctx, live[j].id.data(), live[j].id.size());
      api.ReplyWithLongLong(ctx, live[j].expires_at - call.now);
      api.ReplyWithLongLong(ctx, live[j].cost);
    }
  }
  return kOk;
}

}  // namespace

int lease_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const std::optional<CommandCall> call = begin_command(ctx, argv, argc);
  if (!call) return kOk;  // replied
  if (call->arg_count < 2) return reply_error(ctx, "expected an operation and a lease id");
  const std::string_view operation = bytes_of(call->args[0]);
  if (operation == "list") {
    const std::optional<std::int64_t> max = integer_of(bytes_of(call->args[1]));
    if (!max) return reply_error(ctx, "list: the most leases to list is not an integer");
    return list_leases(ctx, *call, *max);
  }
  const std::string_view lease = bytes_of(call->args[1]);
  // Every operation but 'release' renews, as lease.lua reads it; each key's lease_ttl is checked
  // before anything is written.
  const bool release = operation == "release";
  std::vector<Micros> lease_ttls;
  if (!release) {
    for (int i = 0; i < call->key_count; ++i) {
      const std::optional<std::int64_t> ttl =
          2 + i < call->arg_count ? integer_of(bytes_of(call->args[2 + i])) : std::nullopt;
      if (!ttl || *ttl < 0 || *ttl >= (std::int64_t{1} << 53)) {
        return reply_error(ctx, "renew: key " + std::to_string(i + 1) + " has no lease_ttl in µs");
      }
      lease_ttls.push_back(*ttl);
    }
  }
  long long done = 0;
  for (int i = 0; i < call->key_count; ++i) {
    RedisModuleString* key = call->keys[i];
    const CallReply stored(api.Call(ctx, "HGET", "sb", key, lease.data(), lease.size()));
    // A key of another type (an error) or no such lease: nothing to do here.
    const std::optional<StoredLease> value =
        stored.ok() ? decode_lease(stored.text()) : std::nullopt;
    if (!value) continue;
    algorithm::ConcurrencyState state{
        .leases = {
            {.id = std::string(lease), .expires_at = value->expires_at, .cost = value->cost}}};
    if (release) {
      if (algorithm::release(state, lease, call->now)) done = 1;
      CallReply(api.Call(ctx, "HDEL", "!sb", key, lease.data(), lease.size()));
      continue;
    }
    const algorithm::Concurrency params{.limit = 1, .lease_ttl = lease_ttls[i]};
    if (!algorithm::renew(params, state, lease, call->now)) continue;  // expired
    const Micros renewed = state.leases[0].expires_at;
    const std::string packed = encode_lease({.expires_at = renewed, .cost = value->cost});
    CallReply(api.Call(ctx, "HSET", "!sbb", key, lease.data(), lease.size(), packed.data(),
                       packed.size()));
    // The key lives as long as its longest lease: extend its TTL if this one now outlives it.
    const long long ms = ttl_millis(renewed - call->now);
    if (CallReply(api.Call(ctx, "PTTL", "s", key)).integer() < ms) {
      const std::string text = decimal(ms);
      CallReply(api.Call(ctx, "PEXPIRE", "!sc", key, text.c_str()));
    }
    done = 1;
  }
  return api.ReplyWithLongLong(ctx, done);
}

}  // namespace sluice::redis_module
