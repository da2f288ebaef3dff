// The Lua sources of the Redis store, embedded at build time from scripts/*.lua
// (cmake/embed_scripts.cmake). script_set.h assembles them into the scripts actually sent.
#pragma once

#include <string_view>

namespace sluice::store::scripts {

// Time: Redis's TIME (production) or the last ARGV (conformance tests only).
std::string_view lua_clock_redis();
std::string_view lua_clock_pinned();
// Constants and the encodings every script shares.
std::string_view lua_common();
// One block per algorithm kind, spliced into evaluate.lua's loop.
std::string_view lua_tat();  // the TAT read shared by token_bucket and leaky_bucket
std::string_view lua_token_bucket();
std::string_view lua_interval_bucket();
std::string_view lua_leaky_bucket();
std::string_view lua_fixed_window();
std::string_view lua_calendar_window();
std::string_view lua_sliding_window();
std::string_view lua_sliding_log();
std::string_view lua_concurrency();
// Blocks that evaluate.lua's kinds and quota.lua both decide from, spliced at a "-- @<name>"
// line of either (script_set.h with_shared_blocks; tat.lua is one too, at "-- @tat" in
// quota.lua): how one kind's stored state stands now (read, expired, rolled forward), and the
// sliding window's retry point.
std::string_view lua_interval_state();
std::string_view lua_fixed_window_state();
std::string_view lua_sliding_window_state();
std::string_view lua_sliding_retry();
// Operation bodies: acquire and inspect; release and renew.
std::string_view lua_evaluate();
std::string_view lua_lease();
// Quota operations: charge and refund (a script of its own, off the acquire path).
std::string_view lua_quota();
// The node heartbeat (node_heartbeat.h): register, count and leave the live sluice nodes.
std::string_view lua_heartbeat();
// The admin inspector's penalty box: show or lift (the acquire applies it in evaluate.lua).
std::string_view lua_penalty();

}  // namespace sluice::store::scripts
