#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

ModuleApi api{};

namespace {

// Redis's documented loading protocol: the first word of the load context is the GetApi
// function, which answers REDISMODULE_OK and stores the named call into *target.
using GetApiFunction = int (*)(const char* name, void* target);

template <typename Function>
bool fetch(GetApiFunction get_api, const char* name, Function& target) {
  return get_api(name, static_cast<void*>(&target)) == kOk && target != nullptr;
}

}  // namespace

bool load_module_api(RedisModuleCtx* ctx) {
  const auto get_api = *reinterpret_cast<GetApiFunction*>(ctx);
  bool ok = true;
  ok &= fetch(get_api, "RedisModule_SetModuleAttribs", api.SetModuleAttribs);
  ok &= fetch(get_api, "RedisModule_CreateCommand", api.CreateCommand);
  ok &= fetch(get_api, "RedisModule_IsKeysPositionRequest", api.IsKeysPositionRequest);
  ok &= fetch(get_api, "RedisModule_KeyAtPos", api.KeyAtPos);
  ok &= fetch(get_api, "RedisModule_StringPtrLen", api.StringPtrLen);
  ok &= fetch(get_api, "RedisModule_OpenKey", api.OpenKey);
  ok &= fetch(get_api, "RedisModule_CloseKey", api.CloseKey);
  ok &= fetch(get_api, "RedisModule_KeyType", api.KeyType);
  ok &= fetch(get_api, "RedisModule_DeleteKey", api.DeleteKey);
  ok &= fetch(get_api, "RedisModule_StringDMA", api.StringDMA);
  ok &= fetch(get_api, "RedisModule_StringTruncate", api.StringTruncate);
  ok &= fetch(get_api, "RedisModule_StringSet", api.StringSet);
  ok &= fetch(get_api, "RedisModule_ReplyWithError", api.ReplyWithError);
  ok &= fetch(get_api, "RedisModule_ReplyWithStringBuffer", api.ReplyWithStringBuffer);
  ok &= fetch(get_api, "RedisModule_ReplyWithArray", api.ReplyWithArray);
  ok &= fetch(get_api, "RedisModule_ReplyWithLongLong", api.ReplyWithLongLong);
  ok &= fetch(get_api, "RedisModule_WrongArity", api.WrongArity);
  ok &= fetch(get_api, "RedisModule_Replicate", api.Replicate);
  ok &= fetch(get_api, "RedisModule_Call", api.Call);
  ok &= fetch(get_api, "RedisModule_CallReplyType", api.CallReplyType);
  ok &= fetch(get_api, "RedisModule_CallReplyInteger", api.CallReplyInteger);
  ok &= fetch(get_api, "RedisModule_CallReplyStringPtr", api.CallReplyStringPtr);
  ok &= fetch(get_api, "RedisModule_CallReplyLength", api.CallReplyLength);
  ok &= fetch(get_api, "RedisModule_CallReplyArrayElement", api.CallReplyArrayElement);
  ok &= fetch(get_api, "RedisModule_FreeCallReply", api.FreeCallReply);
  ok &= fetch(get_api, "RedisModule_Log", api.Log);
  ok &= fetch(get_api, "RedisModule_CreateString", api.CreateString);
  ok &= fetch(get_api, "RedisModule_FreeString", api.FreeString);
  ok &= fetch(get_api, "RedisModule_NotifyKeyspaceEvent", api.NotifyKeyspaceEvent);
  ok &= fetch(get_api, "RedisModule_SignalModifiedKey", api.SignalModifiedKey);
  ok &= fetch(get_api, "RedisModule_SetModuleOptions", api.SetModuleOptions);
  ok &= fetch(get_api, "RedisModule_SetAbsExpire", api.SetAbsExpire);
  // Optional: Redis 7.2 and later. Before, the module reads the same clock TIME reads.
  if (!fetch(get_api, "RedisModule_CachedMicroseconds", api.CachedMicroseconds)) {
    api.CachedMicroseconds = nullptr;
  }
  return ok;
}

}  // namespace sluice::redis_module
