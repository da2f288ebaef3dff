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

// The value of a string key, copied out; nullopt when the key is absent or holds another type
// (the scripts' redis.pcall('GET') reads both as nothing). The key is closed again at once, so
// two arguments naming one key never hold two handles on it.
std::optional<std::string> read_string(RedisModuleCtx* ctx, RedisModuleString* key);

// SET key value PX ttl_ms, or with `ttl_ms` nullopt SET key value KEEPTTL: a key of another type
// is replaced. Replicated as SET … PXAT (the instant Redis computed) or SET … KEEPTTL.
void write_string(RedisModuleCtx* ctx, RedisModuleString* key, std::string_view value,
                  std::optional<long long> ttl_ms);

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
