// Reading and writing the keys of one command through Redis's module API, with the effects a
// script's commands have: the same value, the same TTL, replicated to replicas and the AOF as
// the write itself (SET … PXAT, never the command), keyspace events and WATCH invalidation.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

// A string key of one command: its value read once, and written back with the effects a
// script's SET has. With `keep_open` the key stays open from the read to the write (one lookup,
// no copy); without, it is closed after the read and opened again to write, which a decision
// naming one key twice needs (two open handles on one key would see each other's writes freed).
class StringKey {
 public:
  StringKey(RedisModuleCtx* ctx, RedisModuleString* key, bool keep_open)
      : ctx_(ctx), key_(key), keep_open_(keep_open) {}
  StringKey(StringKey&& other) noexcept;
  StringKey(const StringKey&) = delete;
  StringKey& operator=(const StringKey&) = delete;
  StringKey& operator=(StringKey&&) = delete;
  ~StringKey();

  // The value; nullopt when the key is absent or holds another type (the scripts'
  // redis.pcall('GET') reads both as nothing). Valid until write(). Call once.
  std::optional<std::string_view> read();

  // SET key value PX ttl_ms, or with `ttl_ms` nullopt SET key value KEEPTTL: a key of another
  // type is replaced. Replicated as SET … PXAT (the instant Redis computed) or SET … KEEPTTL.
  void write(std::string_view value, std::optional<long long> ttl_ms);

 private:
  RedisModuleCtx* ctx_;
  RedisModuleString* key_;
  bool keep_open_;
  RedisModuleKey* handle_ = nullptr;
  std::string copy_;  // the value read, when the key was closed after reading
};

// A reply of RedisModule_Call, freed when it goes out of scope.
class CallReply {
 public:
  explicit CallReply(RedisModuleCallReply* reply) : reply_(reply) {}
  CallReply(const CallReply&) = delete;
  CallReply& operator=(const CallReply&) = delete;
  ~CallReply() {
    if (reply_ != nullptr) api.FreeCallReply(reply_);
  }

  // False for a failed call (nullptr) and an error reply (WRONGTYPE: the scripts' pcall error).
  bool ok() const { return reply_ != nullptr && api.CallReplyType(reply_) != kReplyError; }
  bool is_array() const { return reply_ != nullptr && api.CallReplyType(reply_) == kReplyArray; }
  std::size_t size() const { return is_array() ? api.CallReplyLength(reply_) : 0; }
  // Element `i` of an array reply as bytes (a bulk string; empty for anything else).
  std::string_view string_at(std::size_t i) const;
  // A bulk string reply's bytes (empty for anything else).
  std::string_view text() const;
  long long integer() const {
    return reply_ != nullptr && api.CallReplyType(reply_) == kReplyInteger
               ? api.CallReplyInteger(reply_)
               : 0;
  }

 private:
  RedisModuleCallReply* reply_;
};

// Module strings for RedisModule_Call's "v" arguments, freed when it goes out of scope.
class StringArguments {
 public:
  explicit StringArguments(RedisModuleCtx* ctx) : ctx_(ctx) {}
  StringArguments(const StringArguments&) = delete;
  StringArguments& operator=(const StringArguments&) = delete;
  ~StringArguments() { clear(); }

  void add(std::string_view bytes);
  void clear();
  std::size_t size() const { return strings_.size(); }
  RedisModuleString** data() { return strings_.data(); }

 private:
  RedisModuleCtx* ctx_;
  std::vector<RedisModuleString*> strings_;
};

}  // namespace sluice::redis_module
