// Replies from Redis, byte by byte as a socket delivers them: hiredis's reader (as the client
// drives it), the deep copy into Reply, its debug rendering, and the error-reply mapping. A
// reply that is not RESP is refused by the reader; nothing crashes or leaks.
#include <hiredis/hiredis.h>

#include <memory>

#include "fuzz/fuzz_input.h"
#include "sluice/store/redis/resp.h"

namespace {

void visit(const sluice::redis::Reply& reply) {
  (void)reply.debug_string();
  if (reply.is_error()) (void)sluice::redis::error_reply_status(reply.as_string());
  for (const sluice::redis::Reply& element : reply.elements()) visit(element);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(redisReaderCreate(),
                                                                  &redisReaderFree);
  // Split where the first byte says, so replies also arrive in pieces.
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  for (const auto& [from, length] :
       {std::pair{std::size_t{0}, split}, std::pair{split, size - split}}) {
    if (redisReaderFeed(reader.get(), reinterpret_cast<const char*>(data) + from, length) !=
        REDIS_OK) {
      return 0;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK) return 0;  // not RESP
      if (raw == nullptr) break;  // incomplete: wait for more bytes
      const sluice::redis::Reply reply =
          sluice::redis::reply_from_hiredis(*static_cast<const redisReply*>(raw));
      freeReplyObject(raw);
      visit(reply);
    }
  }
  return 0;
}
