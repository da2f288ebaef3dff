// How a node runs Sluice's scripts: the engine (module command, Redis Function, or EVALSHA),
// which clock they read, and how a script call is written for each engine.
//
// Every engine takes the same keys and arguments and answers the same bytes: the module's
// commands and the function library mirror the Lua scripts (docs/redis.md, "Engines"). So the
// choice is per node and may change at any reconnect; the keys' encoding never does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/store/redis/script.h"

namespace sluice::redis {

// Fastest first.
enum class ScriptEngine : std::uint8_t {
  kScripts,    // EVALSHA (EVAL after NOSCRIPT): every Redis that allows scripts
  kFunctions,  // FCALL of the content-named function library: Redis >= 7 where FUNCTION is allowed
  kModule,     // the sluice.so module's commands (docs/redis-module.md)
};

// What the Redis URL's `engine=` asks for. kAuto: the fastest the node offers; any other refuses
// a node that lacks it (the connection fails with FailedPrecondition naming what is missing).
enum class EngineChoice : std::uint8_t { kAuto, kScripts, kFunctions, kModule };

// Whose clock the scripts read (`clock=` in the Redis URL).
enum class ScriptClock : std::uint8_t {
  kRedis,   // TIME inside the script: one clock for every Sluice node (DESIGN.md §2)
  kCaller,  // the caller's time, sent as the last argument: for Redis that refuses TIME in
            // scripts. Nodes' clock skew then shifts decisions (docs/redis.md, "clock=client").
};

std::string_view engine_name(ScriptEngine engine);  // "scripts", "functions", "module"
// "auto", "scripts", "functions" or "module"; InvalidArgument naming the accepted values.
StatusOr<EngineChoice> parse_engine_choice(std::string_view text);
// "redis" or "client"; InvalidArgument naming the accepted values.
StatusOr<ScriptClock> parse_script_clock(std::string_view text);

// What every connection's handshake asks a node, and which engine it then runs.
// A Lua library of Sluice's scripts for FUNCTION LOAD, and the functions it defines.
struct FunctionLibrary {
  std::string text;                    // "#!lua name=sluice_<content hash>" and the functions
  std::vector<std::string> functions;  // their names (Script::function_name)

  bool empty() const { return text.empty(); }
  bool defines(std::string_view function) const;
};

// The library for `scripts`: one FUNCTION per script, named script.function_name(), in a library
// named after the content ("sluice_<16 hex digits of its SHA-1>"), so nodes of different Sluice
// versions keep their own and never replace each other's during a rolling upgrade.
FunctionLibrary function_library(std::span<const Script> scripts);

struct EngineOptions {
  // Ask each node at connect (the Redis store's clients). Off: no probe, and every script call
  // is EVALSHA, as for clients that only run commands (sentinels, tools).
  bool probe = false;
  EngineChoice choice = EngineChoice::kAuto;
  ScriptClock clock = ScriptClock::kRedis;
  // The library FUNCTION LOAD installs (function_library()); empty: Functions are not used.
  // Scripts it does not define always go as EVALSHA.
  FunctionLibrary library;
  // TESTS ONLY: the module was loaded to read the time from the last argument, as the pinned
  // scripts do (docs/redis-module.md). Otherwise a call made with the caller's time reaches the
  // module without it: the module reads Redis's clock natively, which needs no TIME command.
  bool module_reads_caller_time = false;
};

// The module command every node that has the module answers; a node's probe asks for it.
inline constexpr std::string_view kModuleProbeCommand = "SLUICE.EVALUATE";

// How a script call is written for `engine` (RESP, appended to `out`): EVALSHA sha, FCALL name, or
// the module's command, then numkeys, keys, args. EVALSHA for kScripts, and for a script the
// engine lacks (no module command; a function `library` does not define).
// `drop_caller_time`: leave the last argument (the caller's time) out of a module call.
void append_script_call(std::string& out, ScriptEngine engine, const Script& script,
                        const FunctionLibrary& library, std::span<const std::string> keys,
                        std::span<const std::string> args, bool drop_caller_time);

// EVAL with the script's source (after NOSCRIPT), every argument kept.
void append_eval_source(std::string& out, const Script& script, std::span<const std::string> keys,
                        std::span<const std::string> args);

// The engine a call on `engine` falls back to when the node's reply says it lacks it (prefix
// match on the error's text, never its wording after the code): a module command Redis does not
// know -> kScripts; a function Redis does not have (FUNCTION FLUSH, a node restarted empty) ->
// kScripts. nullopt: not such an error.
std::optional<ScriptEngine> engine_missing(ScriptEngine engine, std::string_view error_text);

}  // namespace sluice::redis
