#include "sluice/redis_module/command_call.h"

#include <charconv>
#include <ctime>

namespace sluice::redis_module {
namespace {

ClockSource g_clock = ClockSource::kRedis;

// Redis's clock: the time Redis cached for this command where the API offers it (7.2+), else the
// clock TIME reads (gettimeofday's, CLOCK_REALTIME), in µs.
Micros redis_now() {
  if (api.CachedMicroseconds != nullptr) return api.CachedMicroseconds();
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return Micros{now.tv_sec} * 1'000'000 + now.tv_nsec / 1'000;
}

}  // namespace

void set_clock_source(ClockSource source) { g_clock = source; }

std::string_view bytes_of(RedisModuleString* string) {
  std::size_t length = 0;
  const char* bytes = api.StringPtrLen(string, &length);
  return {bytes, length};
}

std::optional<std::int64_t> integer_of(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

int reply_error(RedisModuleCtx* ctx, const std::string& message) {
  const std::string text = "ERR sluice: " + message;
  return api.ReplyWithError(ctx, text.c_str());
}

std::optional<CommandCall> begin_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2) {
    api.WrongArity(ctx);
    return std::nullopt;
  }
  const std::optional<std::int64_t> numkeys = integer_of(bytes_of(argv[1]));
  const bool numkeys_ok = numkeys && *numkeys >= 0 && *numkeys <= argc - 2;
  if (api.IsKeysPositionRequest(ctx) != 0) {
    // The keys are arguments 2 .. numkeys + 1, as EVAL's.
    if (numkeys_ok) {
      for (int i = 0; i < *numkeys; ++i) api.KeyAtPos(ctx, 2 + i);
    }
    return std::nullopt;
  }
  if (!numkeys_ok) {
    reply_error(ctx, "numkeys is not an integer in [0, arguments left]");
    return std::nullopt;
  }
  CommandCall call{.keys = argv + 2,
                   .key_count = static_cast<int>(*numkeys),
                   .args = argv + 2 + *numkeys,
                   .arg_count = argc - 2 - static_cast<int>(*numkeys)};
  if (g_clock == ClockSource::kRedis) {
    call.now = redis_now();
    return call;
  }
  const std::optional<std::int64_t> pinned =
      call.arg_count > 0 ? integer_of(bytes_of(call.args[call.arg_count - 1])) : std::nullopt;
  if (!pinned || *pinned < 0 || *pinned >= (std::int64_t{1} << 53)) {
    reply_error(ctx, "pinned clock: the last argument is not a time in µs below 2^53");
    return std::nullopt;
  }
  call.now = *pinned;
  --call.arg_count;
  return call;
}

}  // namespace sluice::redis_module
