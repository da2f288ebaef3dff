// The part of Redis's module API sluice.so uses, declared here because Debian ships no
// redismodule.h. Written from the documented API (redis.io "Modules API reference"): each call is
// a function pointer that RedisModule_OnLoad fills in by name through the GetApi pointer Redis
// stores at the start of the load context (load_module_api). Only what the module calls is
// declared; docs/redis-module.md lists every call and the Redis version that introduced it.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Opaque handles owned by Redis.
struct RedisModuleCtx;
struct RedisModuleString;
struct RedisModuleKey;
struct RedisModuleCallReply;

using RedisModuleCmdFunc = int (*)(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // extern "C"

namespace sluice::redis_module {

inline constexpr int kOk = 0;   // REDISMODULE_OK
inline constexpr int kErr = 1;  // REDISMODULE_ERR
inline constexpr int kApiVersion1 = 1;

// OpenKey modes.
inline constexpr int kRead = 1 << 0;
inline constexpr int kWrite = 1 << 1;

// KeyType answers.
inline constexpr int kKeyTypeEmpty = 0;
inline constexpr int kKeyTypeString = 1;

// CallReplyType answers.
inline constexpr int kReplyString = 0;
inline constexpr int kReplyError = 1;
inline constexpr int kReplyInteger = 2;
inline constexpr int kReplyArray = 3;

// NotifyKeyspaceEvent classes (the events SET and PEXPIRE raise).
inline constexpr int kNotifyGeneric = 1 << 2;
inline constexpr int kNotifyString = 1 << 3;

// SetModuleOptions: the module signals modified keys itself (only those it writes), rather than
// Redis on closing every key opened for writing (a denial writes nothing, as a script's GET).
inline constexpr int kOptionNoImplicitSignalModified = 1 << 1;

// The API table, filled by load_module_api. Names and signatures as documented; the comments give
// the Redis version that introduced each.
struct ModuleApi {
  // 4.0
  void (*SetModuleAttribs)(RedisModuleCtx* ctx, const char* name, int ver, int apiver);
  int (*CreateCommand)(RedisModuleCtx* ctx, const char* name, RedisModuleCmdFunc cmdfunc,
                       const char* strflags, int firstkey, int lastkey, int keystep);
  int (*IsKeysPositionRequest)(RedisModuleCtx* ctx);
  void (*KeyAtPos)(RedisModuleCtx* ctx, int pos);
  const char* (*StringPtrLen)(const RedisModuleString* str, std::size_t* len);
  RedisModuleKey* (*OpenKey)(RedisModuleCtx* ctx, RedisModuleString* keyname, int mode);
  void (*CloseKey)(RedisModuleKey* key);
  int (*KeyType)(RedisModuleKey* key);
  int (*DeleteKey)(RedisModuleKey* key);
  char* (*StringDMA)(RedisModuleKey* key, std::size_t* len, int mode);
  int (*StringTruncate)(RedisModuleKey* key, std::size_t newlen);
  int (*StringSet)(RedisModuleKey* key, RedisModuleString* str);
  int (*ReplyWithError)(RedisModuleCtx* ctx, const char* err);
  int (*ReplyWithStringBuffer)(RedisModuleCtx* ctx, const char* buf, std::size_t len);
  int (*ReplyWithArray)(RedisModuleCtx* ctx, long len);
  int (*ReplyWithLongLong)(RedisModuleCtx* ctx, long long ll);
  int (*WrongArity)(RedisModuleCtx* ctx);
  int (*Replicate)(RedisModuleCtx* ctx, const char* cmdname, const char* fmt, ...);
  RedisModuleCallReply* (*Call)(RedisModuleCtx* ctx, const char* cmdname, const char* fmt, ...);
  int (*CallReplyType)(RedisModuleCallReply* reply);
  long long (*CallReplyInteger)(RedisModuleCallReply* reply);
  const char* (*CallReplyStringPtr)(RedisModuleCallReply* reply, std::size_t* len);
  std::size_t (*CallReplyLength)(RedisModuleCallReply* reply);
  RedisModuleCallReply* (*CallReplyArrayElement)(RedisModuleCallReply* reply, std::size_t idx);
  void (*FreeCallReply)(RedisModuleCallReply* reply);
  void (*Log)(RedisModuleCtx* ctx, const char* level, const char* fmt, ...);
  RedisModuleString* (*CreateString)(RedisModuleCtx* ctx, const char* ptr, std::size_t len);
  void (*FreeString)(RedisModuleCtx* ctx, RedisModuleString* str);
  // 6.0
  int (*NotifyKeyspaceEvent)(RedisModuleCtx* ctx, int type, const char* event,
                             RedisModuleString* key);
  int (*SignalModifiedKey)(RedisModuleCtx* ctx, RedisModuleString* keyname);
  void (*SetModuleOptions)(RedisModuleCtx* ctx, int options);
  // 6.2.2
  int (*SetAbsExpire)(RedisModuleKey* key, long long expire_at_ms);
  // 7.2, optional (nullptr before): Redis's clock as the command started, in µs.
  long long (*CachedMicroseconds)();
};

// The table, valid after a successful load_module_api.
extern ModuleApi api;

// Fills `api` from the context RedisModule_OnLoad received; false when a required call is
// missing (a Redis older than 6.2.2).
bool load_module_api(RedisModuleCtx* ctx);

}  // namespace sluice::redis_module
