// ScriptSet: the Lua scripts the Redis store sends, assembled on first use. A script carries only
// the algorithms its policy uses: Redis runs a script's whole chunk on every call, so every
// function defined is a closure built per decision, and leaving out unused algorithms keeps that
// setup cost proportional to the policy. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>

#include "sluice/algorithm/limit.h"
#include "sluice/store/redis/client.h"

namespace sluice::store {

enum class ScriptOperation : std::uint8_t { kAcquire, kInspect, kLease };

// common.lua's kind number of a limit (1..8), as sent in ARGV.
int script_kind(const algorithm::Limit& limit);

class ScriptSet {
 public:
  // `pinned_time`: assemble the test-only variant that takes time from the last ARGV.
  explicit ScriptSet(bool pinned_time) : pinned_time_(pinned_time) {}

  // The script for `operation` over `limits` (ignored for kLease).
  const redis::Script& get(ScriptOperation operation, std::span<const algorithm::Limit> limits);

 private:
  redis::Script assemble(ScriptOperation operation, unsigned kinds) const;

  bool pinned_time_;
  std::mutex mutex_;
  std::map<unsigned, redis::Script> scripts_;  // (operation << 16 | kinds bitmask) -> script
};

}  // namespace sluice::store
