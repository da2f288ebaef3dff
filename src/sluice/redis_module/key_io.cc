#include "sluice/redis_module/key_io.h"

#include <cstring>
#include <ctime>

namespace sluice::redis_module {

std::optional<std::string> read_string(RedisModuleCtx* ctx, RedisModuleString* key) {
  RedisModuleKey* handle = api.OpenKey(ctx, key, kRead);
  std::optional<std::string> value;
  if (handle != nullptr && api.KeyType(handle) == kKeyTypeString) {
    std::size_t length = 0;
    // Reading an embedded or integer string through DMA stores it as a plain one (same bytes);
    // the module API has no cheaper read of a string key.
    const char* bytes = api.StringDMA(handle, &length, kRead);
    if (bytes != nullptr) value.emplace(bytes, length);
  }
  if (handle != nullptr) api.CloseKey(handle);
  return value;
}

void write_string(RedisModuleCtx* ctx, RedisModuleString* key, std::string_view value,
                  std::optional<long long> ttl_ms) {
  RedisModuleKey* handle = api.OpenKey(ctx, key, kRead | kWrite);
  if (handle == nullptr) return;
  const int type = api.KeyType(handle);
  if (type != kKeyTypeString && type != kKeyTypeEmpty) api.DeleteKey(handle);  // as SET does
  // In place: a string of the same length keeps its allocation, and its TTL unless set below.
  api.StringTruncate(handle, value.size());
  std::size_t length = 0;
  char* bytes = api.StringDMA(handle, &length, kWrite);
  if (bytes != nullptr && length == value.size()) std::memcpy(bytes, value.data(), value.size());
  // The TTL counts from the moment of the write on Redis's clock, as SET … PX does (a relative
  // expire through the module API counts from the time Redis cached for the event loop, which
  // lags a long pipeline).
  long long expire_at = 0;
  if (ttl_ms) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    expire_at = static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000 + *ttl_ms;
    api.SetAbsExpire(handle, expire_at);
  }
  api.CloseKey(handle);
  if (ttl_ms) {
    api.Replicate(ctx, "SET", "sbcl", key, value.data(), value.size(), "PXAT", expire_at);
  } else {
    api.Replicate(ctx, "SET", "sbc", key, value.data(), value.size(), "KEEPTTL");
  }
  api.NotifyKeyspaceEvent(ctx, kNotifyString, "set", key);
  if (ttl_ms) api.NotifyKeyspaceEvent(ctx, kNotifyGeneric, "expire", key);
  api.SignalModifiedKey(ctx, key);
}

std::string_view CallReply::string_at(std::size_t i) const {
  if (i >= size()) return {};
  RedisModuleCallReply* element = api.CallReplyArrayElement(reply_, i);
  if (element == nullptr || api.CallReplyType(element) != kReplyString) return {};
  std::size_t length = 0;
  const char* bytes = api.CallReplyStringPtr(element, &length);
  return bytes == nullptr ? std::string_view{} : std::string_view(bytes, length);
}

void StringArguments::add(std::string_view bytes) {
  strings_.push_back(api.CreateString(ctx_, bytes.data(), bytes.size()));
}

void StringArguments::clear() {
  for (RedisModuleString* string : strings_) api.FreeString(ctx_, string);
  strings_.clear();
}

}  // namespace sluice::redis_module
