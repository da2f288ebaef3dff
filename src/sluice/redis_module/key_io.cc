#include "sluice/redis_module/key_io.h"

#include <cstring>
#include <ctime>
#include <utility>

namespace sluice::redis_module {

StringKey::StringKey(StringKey&& other) noexcept
    : ctx_(other.ctx_),
      key_(other.key_),
      keep_open_(other.keep_open_),
      handle_(std::exchange(other.handle_, nullptr)),
      copy_(std::move(other.copy_)) {}

StringKey::~StringKey() {
  if (handle_ != nullptr) api.CloseKey(handle_);
}

std::optional<std::string_view> StringKey::read() {
  handle_ = api.OpenKey(ctx_, key_, kRead | kWrite);
  std::optional<std::string_view> value;
  if (handle_ != nullptr && api.KeyType(handle_) == kKeyTypeString) {
    std::size_t length = 0;
    // Reading an embedded or integer string through DMA stores it as a plain one (same bytes);
    // the module API has no cheaper read of a string key.
    const char* bytes = api.StringDMA(handle_, &length, kRead);
    if (bytes != nullptr) value.emplace(bytes, length);
  }
  if (!keep_open_ && handle_ != nullptr) {
    if (value) value = copy_.assign(*value);
    api.CloseKey(handle_);
    handle_ = nullptr;
  }
  return value;
}

void StringKey::write(std::string_view value, std::optional<long long> ttl_ms) {
  if (handle_ == nullptr) handle_ = api.OpenKey(ctx_, key_, kRead | kWrite);
  if (handle_ == nullptr) return;
  const int type = api.KeyType(handle_);
  // A new value: SET's object, set whole (another type's key is replaced, as SET replaces it).
  // An existing string: written in place, keeping its allocation when the length is the same
  // and its TTL unless set below (a plain string, which a DMA write leaves it).
  RedisModuleString* created = nullptr;
  if (type != kKeyTypeString) {
    created = api.CreateString(ctx_, value.data(), value.size());
    api.StringSet(handle_, created);
  } else {
    api.StringTruncate(handle_, value.size());
    std::size_t length = 0;
    char* bytes = api.StringDMA(handle_, &length, kWrite);
    if (bytes != nullptr && length == value.size()) std::memcpy(bytes, value.data(), value.size());
  }
  // The TTL counts from the moment of the write on Redis's clock, as SET … PX does (a relative
  // expire through the module API counts from the time Redis cached for the event loop, which
  // lags a long pipeline).
  long long expire_at = 0;
  if (ttl_ms) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    expire_at = static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000 + *ttl_ms;
    api.SetAbsExpire(handle_, expire_at);
  }
  api.CloseKey(handle_);
  handle_ = nullptr;
  if (created != nullptr) {
    if (ttl_ms) {
      api.Replicate(ctx_, "SET", "sscl", key_, created, "PXAT", expire_at);
    } else {
      api.Replicate(ctx_, "SET", "ssc", key_, created, "KEEPTTL");
    }
    api.FreeString(ctx_, created);
  } else if (ttl_ms) {
    api.Replicate(ctx_, "SET", "sbcl", key_, value.data(), value.size(), "PXAT", expire_at);
  } else {
    api.Replicate(ctx_, "SET", "sbc", key_, value.data(), value.size(), "KEEPTTL");
  }
  api.NotifyKeyspaceEvent(ctx_, kNotifyString, "set", key_);
  if (ttl_ms) api.NotifyKeyspaceEvent(ctx_, kNotifyGeneric, "expire", key_);
  api.SignalModifiedKey(ctx_, key_);
}

std::string_view CallReply::text() const {
  if (reply_ == nullptr || api.CallReplyType(reply_) != kReplyString) return {};
  std::size_t length = 0;
  const char* bytes = api.CallReplyStringPtr(reply_, &length);
  return bytes == nullptr ? std::string_view{} : std::string_view(bytes, length);
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
