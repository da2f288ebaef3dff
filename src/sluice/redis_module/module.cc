// sluice.so's entry point: Redis calls RedisModule_OnLoad when the module is loaded
// (`loadmodule /usr/lib/sluice/sluice.so` in redis.conf, or MODULE LOAD). The only exported
// symbol. docs/redis-module.md.
#include <string_view>

#include "sluice/redis_module/command_call.h"
#include "sluice/redis_module/evaluate_command.h"
#include "sluice/redis_module/lease_command.h"
#include "sluice/redis_module/penalty_command.h"
#include "sluice/redis_module/redis_module_api.h"

using sluice::redis_module::api;

extern "C" __attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx* ctx,
                                                                         RedisModuleString** argv,
                                                                         int argc) {
  namespace rm = sluice::redis_module;
  if (!rm::load_module_api(ctx)) return rm::kErr;  // Redis older than 6.2.2: nothing to log with
  api.SetModuleAttribs(ctx, "sluice", 1, rm::kApiVersion1);
  rm::ClockSource clock = rm::ClockSource::kRedis;
  for (int i = 0; i < argc; ++i) {
    std::size_t length = 0;
    const char* bytes = api.StringPtrLen(argv[i], &length);
    const std::string_view argument(bytes, length);
    if (argument == "pinned-clock") {
      // TESTS ONLY: conformance traces replay with the time in each call's last argument.
      clock = rm::ClockSource::kLastArgument;
      api.Log(ctx, "warning", "sluice: pinned-clock: time comes from the caller (tests only)");
    } else {
      api.Log(ctx, "warning", "sluice: unknown module argument '%.*s'", static_cast<int>(length),
              bytes);
      return rm::kErr;
    }
  }
  rm::set_clock_source(clock);
  api.SetModuleOptions(ctx, rm::kOptionNoImplicitSignalModified);
  // Keys: arguments 2 .. numkeys + 1, reported through the getkeys API (a key count the static
  // first/last/step triple cannot describe), so Cluster routes and ACL key patterns apply.
  const struct {
    const char* name;
    RedisModuleCmdFunc function;
  } commands[] = {{"sluice.evaluate", rm::evaluate_command},
                  {"sluice.lease", rm::lease_command},
                  {"sluice.penalty", rm::penalty_command}};
  for (const auto& command : commands) {
    if (api.CreateCommand(ctx, command.name, command.function, "write deny-oom getkeys-api", 0, 0,
                          0) != rm::kOk) {
      return rm::kErr;
    }
  }
  return rm::kOk;
}
