#include "sluice/store/redis/script_set.h"

#include <string>
#include <type_traits>

#include "sluice/store/redis/scripts.h"

namespace sluice::store {
namespace {

constexpr unsigned bit(int kind) { return 1u << kind; }

}  // namespace

int script_kind(const algorithm::Limit& limit) {
  return std::visit(
      [](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, algorithm::TokenBucket>) {
          return p.refill_mode == algorithm::RefillMode::kInterval ? 2 : 1;
        } else if constexpr (std::is_same_v<P, algorithm::Gcra>) {
          return 3;
        } else if constexpr (std::is_same_v<P, algorithm::LeakyBucket>) {
          return 4;
        } else if constexpr (std::is_same_v<P, algorithm::FixedWindow>) {
          return 5;
        } else if constexpr (std::is_same_v<P, algorithm::SlidingWindow>) {
          return 6;
        } else if constexpr (std::is_same_v<P, algorithm::SlidingLog>) {
          return 7;
        } else {
          return 8;
        }
      },
      limit);
}

const redis::Script& ScriptSet::get(ScriptOperation operation,
                                    std::span<const algorithm::Limit> limits) {
  unsigned kinds = 0;
  if (operation != ScriptOperation::kLease) {
    for (const algorithm::Limit& limit : limits) kinds |= bit(script_kind(limit));
  }
  const unsigned id = static_cast<unsigned>(operation) << 16 | kinds;
  std::lock_guard lock(mutex_);
  auto it = scripts_.find(id);
  if (it == scripts_.end()) it = scripts_.emplace(id, assemble(operation, kinds)).first;
  return it->second;  // std::map never moves its elements
}

redis::Script ScriptSet::assemble(ScriptOperation operation, unsigned kinds) const {
  std::string source(pinned_time_ ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
  source += scripts::lua_common();
  if (kinds & (bit(1) | bit(3) | bit(4))) source += scripts::lua_tat();
  if (kinds & (bit(1) | bit(3))) source += scripts::lua_token_bucket();
  if (kinds & bit(2)) source += scripts::lua_interval_bucket();
  if (kinds & bit(4)) source += scripts::lua_leaky_bucket();
  if (kinds & bit(5)) source += scripts::lua_fixed_window();
  if (kinds & bit(6)) source += scripts::lua_sliding_window();
  if (kinds & bit(7)) source += scripts::lua_sliding_log();
  if (kinds & bit(8)) source += scripts::lua_concurrency();
  switch (operation) {
    case ScriptOperation::kAcquire:
      source += scripts::lua_acquire();
      break;
    case ScriptOperation::kInspect:
      source += scripts::lua_inspect();
      break;
    case ScriptOperation::kLease:
      source += scripts::lua_lease();
      break;
  }
  return redis::Script(std::move(source));
}

}  // namespace sluice::store
