#include "sluice/store/redis/script_engine.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::redis {
namespace {

const std::vector<std::string> kKeys = {"k1", "k2"};
const std::vector<std::string> kArgs = {"request", "1700000000000000"};

std::string call(ScriptEngine engine, const Script& script, const FunctionLibrary& library,
                 bool drop_caller_time = false) {
  std::string out;
  append_script_call(out, engine, script, library, kKeys, kArgs, drop_caller_time);
  return out;
}

TEST(ScriptEngineTest, EachEngineWritesItsOwnCommandWithTheSameKeysAndArguments) {
  const Script script("return 1", "SLUICE.EVALUATE");
  const FunctionLibrary library = function_library(std::vector<Script>{script});
  const std::string tail =
      "$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$7\r\nrequest\r\n$16\r\n1700000000000000\r\n";
  EXPECT_EQ(call(ScriptEngine::kScripts, script, library),
            "*7\r\n$7\r\nEVALSHA\r\n$40\r\n" + script.sha1() + "\r\n" + tail);
  EXPECT_EQ(call(ScriptEngine::kFunctions, script, library),
            "*7\r\n$5\r\nFCALL\r\n$23\r\n" + script.function_name() + "\r\n" + tail);
  EXPECT_EQ(call(ScriptEngine::kModule, script, library),
            "*6\r\n$15\r\nSLUICE.EVALUATE\r\n" + tail);
  // The module reads Redis's clock itself: a call made with the caller's time leaves it out.
  EXPECT_EQ(call(ScriptEngine::kModule, script, library, true),
            "*5\r\n$15\r\nSLUICE.EVALUATE\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$7\r\nrequest\r\n");
}

TEST(ScriptEngineTest, AScriptTheEngineLacksGoesAsEvalsha) {
  const Script in_library("return 1", "SLUICE.EVALUATE");
  const Script other("return 2");  // no module command, not in the library
  const FunctionLibrary library = function_library(std::vector<Script>{in_library});
  const std::string evalsha = call(ScriptEngine::kScripts, other, library);
  EXPECT_EQ(call(ScriptEngine::kFunctions, other, library), evalsha);
  EXPECT_EQ(call(ScriptEngine::kModule, other, library), evalsha);
}

TEST(ScriptEngineTest, TheLibraryIsNamedAfterItsContentAndWrapsEachScriptOnce) {
  const Script a("return KEYS[1]");
  const Script b("return ARGV[1]");
  const FunctionLibrary library = function_library(std::vector<Script>{a, b, a});
  EXPECT_EQ(library.functions, (std::vector<std::string>{a.function_name(), b.function_name()}));
  EXPECT_TRUE(library.defines(b.function_name()));
  EXPECT_FALSE(library.defines("sluice_0000000000000000"));
  EXPECT_EQ(library.text.rfind("#!lua name=sluice_", 0), 0U);
  EXPECT_NE(library.text.find("redis.register_function('" + a.function_name() +
                              "', function(KEYS, ARGV)\nreturn KEYS[1]\nend)"),
            std::string::npos);
  // Another version of a script is another library: nodes of two versions keep both.
  const FunctionLibrary changed = function_library(std::vector<Script>{a, Script("return 3")});
  EXPECT_NE(changed.text.substr(0, changed.text.find('\n')),
            library.text.substr(0, library.text.find('\n')));
  EXPECT_EQ(a.function_name(), "sluice_" + a.sha1().substr(0, 16));
}

TEST(ScriptEngineTest, AMissingEngineIsKnownByTheErrorsPrefixOnly) {
  EXPECT_EQ(engine_missing(ScriptEngine::kModule,
                           "ERR unknown command 'SLUICE.EVALUATE', with args beginning with: "),
            ScriptEngine::kScripts);
  EXPECT_EQ(engine_missing(ScriptEngine::kFunctions, "ERR Function not found"),
            ScriptEngine::kScripts);
  EXPECT_EQ(engine_missing(ScriptEngine::kFunctions, "ERR unknown command 'FCALL'"), std::nullopt);
  EXPECT_EQ(engine_missing(ScriptEngine::kModule, "ERR Function not found"), std::nullopt);
  EXPECT_EQ(engine_missing(ScriptEngine::kScripts, "ERR unknown command"), std::nullopt);
  EXPECT_EQ(engine_missing(ScriptEngine::kModule, "WRONGTYPE Operation against a key"),
            std::nullopt);
}

TEST(ScriptEngineTest, ParsesTheUrlsWordsAndNamesTheAcceptedOnes) {
  EXPECT_EQ(*parse_engine_choice("auto"), EngineChoice::kAuto);
  EXPECT_EQ(*parse_engine_choice("module"), EngineChoice::kModule);
  EXPECT_EQ(*parse_engine_choice("functions"), EngineChoice::kFunctions);
  EXPECT_EQ(*parse_engine_choice("scripts"), EngineChoice::kScripts);
  EXPECT_EQ(parse_engine_choice("Module").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*parse_script_clock("redis"), ScriptClock::kRedis);
  EXPECT_EQ(*parse_script_clock("client"), ScriptClock::kCaller);
  EXPECT_NE(parse_script_clock("ntp").status().message().find("redis, client"), std::string::npos);
  EXPECT_EQ(engine_name(ScriptEngine::kFunctions), "functions");
}

}  // namespace
}  // namespace sluice::redis
