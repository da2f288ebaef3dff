#include "sluice/store/redis/script_engine.h"

#include "sluice/store/redis/resp_writer.h"

namespace sluice::redis {

std::string_view engine_name(ScriptEngine engine) {
  switch (engine) {
    case ScriptEngine::kScripts:
      return "scripts";
    case ScriptEngine::kFunctions:
      return "functions";
    case ScriptEngine::kModule:
      return "module";
  }
  return "scripts";
}

StatusOr<EngineChoice> parse_engine_choice(std::string_view text) {
  if (text == "auto") return EngineChoice::kAuto;
  if (text == "scripts") return EngineChoice::kScripts;
  if (text == "functions") return EngineChoice::kFunctions;
  if (text == "module") return EngineChoice::kModule;
  return invalid_argument("redis URL: engine \"" + std::string(text) +
                          "\" is not one of auto, module, functions, scripts");
}

StatusOr<ScriptClock> parse_script_clock(std::string_view text) {
  if (text == "redis") return ScriptClock::kRedis;
  if (text == "client") return ScriptClock::kCaller;
  return invalid_argument("redis URL: clock \"" + std::string(text) +
                          "\" is not one of redis, client");
}

bool FunctionLibrary::defines(std::string_view function) const {
  for (const std::string& defined : functions) {
    if (defined == function) return true;
  }
  return false;
}

FunctionLibrary function_library(std::span<const Script> scripts) {
  // Each script's chunk becomes a function's body: KEYS and ARGV are its parameters instead of
  // globals, and everything else (locals, the final return) reads the same.
  FunctionLibrary library;
  std::string body;
  for (const Script& script : scripts) {
    if (library.defines(script.function_name())) continue;
    library.functions.push_back(script.function_name());
    body += "redis.register_function('" + script.function_name() + "', function(KEYS, ARGV)\n";
    body += script.source();
    body += "\nend)\n";
  }
  library.text = "#!lua name=sluice_" + sha1_hex(body).substr(0, 16) + "\n" + body;
  return library;
}

void append_script_call(std::string& out, ScriptEngine engine, const Script& script,
                        const FunctionLibrary& library, std::span<const std::string> keys,
                        std::span<const std::string> args, bool drop_caller_time) {
  if ((engine == ScriptEngine::kModule && script.module_command().empty()) ||
      (engine == ScriptEngine::kFunctions && !library.defines(script.function_name()))) {
    engine = ScriptEngine::kScripts;
  }
  if (engine == ScriptEngine::kModule && drop_caller_time && !args.empty()) {
    args = args.first(args.size() - 1);
  }
  const bool named = engine != ScriptEngine::kModule;  // EVALSHA sha / FCALL name
  append_array_header(out, (named ? 3 : 2) + keys.size() + args.size());
  switch (engine) {
    case ScriptEngine::kScripts:
      append_bulk(out, "EVALSHA");
      append_bulk(out, script.sha1());
      break;
    case ScriptEngine::kFunctions:
      append_bulk(out, "FCALL");
      append_bulk(out, script.function_name());
      break;
    case ScriptEngine::kModule:
      append_bulk(out, script.module_command());
      break;
  }
  append_bulk_decimal(out, keys.size());
  for (const std::string& key : keys) append_bulk(out, key);
  for (const std::string& arg : args) append_bulk(out, arg);
}

void append_eval_source(std::string& out, const Script& script, std::span<const std::string> keys,
                        std::span<const std::string> args) {
  append_array_header(out, 3 + keys.size() + args.size());
  append_bulk(out, "EVAL");
  append_bulk(out, script.source());
  append_bulk_decimal(out, keys.size());
  for (const std::string& key : keys) append_bulk(out, key);
  for (const std::string& arg : args) append_bulk(out, arg);
}

std::optional<ScriptEngine> engine_missing(ScriptEngine engine, std::string_view error_text) {
  const auto starts_with = [&](std::string_view prefix) {
    return error_text.substr(0, prefix.size()) == prefix;
  };
  if (engine == ScriptEngine::kModule && starts_with("ERR unknown command")) {
    return ScriptEngine::kScripts;
  }
  if (engine == ScriptEngine::kFunctions && starts_with("ERR Function not found")) {
    return ScriptEngine::kScripts;
  }
  return std::nullopt;
}

}  // namespace sluice::redis
