// Replies from Redis, byte by byte as a socket delivers them: hiredis's reader (as the client
// drives it), the deep copy into Reply, its debug rendering, the error-reply mapping, and what the
// Redis Cluster client reads from replies: slot maps (CLUSTER SHARDS / SLOTS) and redirections
// (MOVED / ASK). A reply that is not RESP is refused by the reader; nothing crashes or leaks.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "sluice/store/redis/cluster_topology.h"
#include "sluice/store/redis/resp.h"

namespace {

// hiredis 0.14 (Debian 12) allocates an array reply's element table as soon as it reads the
// header, before any element arrives: "*842282841\r\n" is a 6.7 GB calloc. Sluice trusts its
// Redis server on this (replies are as long as the commands ask for; docs/fuzzing.md), so inputs
// declaring more elements than any Sluice command receives are not run.
constexpr std::uint64_t kMostElements = 1'000'000;

bool declares_a_huge_array(std::string_view bytes) {
  for (std::size_t star = bytes.find('*'); star != std::string_view::npos;
       star = bytes.find('*', star + 1)) {
    std::uint64_t count = 0;
    for (std::size_t i = star + 1; i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9'; ++i) {
      count = count * 10 + static_cast<std::uint64_t>(bytes[i] - '0');
      if (count > kMostElements) return true;
    }
  }
  return false;
}

void visit(const sluice::redis::Reply& reply) {
  (void)reply.debug_string();
  if (reply.is_error()) {
    (void)sluice::redis::error_reply_status(reply.as_string());
    (void)sluice::redis::parse_redirection(reply.as_string());
    (void)sluice::redis::is_retryable_cluster_error(reply.as_string());
  }
  for (const sluice::redis::Reply& element : reply.elements()) visit(element);
}

void read_as_slot_map(const sluice::redis::Reply& reply) {
  const sluice::redis::NodeAddress asked{"seed", 7000};
  for (const bool tls : {false, true})
    (void)sluice::redis::slot_ranges_from_shards(reply, asked, tls);
  (void)sluice::redis::slot_ranges_from_slots(reply, asked);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(redisReaderCreate(),
                                                                  &redisReaderFree);
  if (declares_a_huge_array(sluice::fuzz::as_text(data, size))) return 0;
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
      read_as_slot_map(reply);
    }
  }
  return 0;
}
