// The URLs a user types: --redis, --policies (a database URL) and the library's http:// store.
// Any text is parsed or refused with a message; none crashes or reads out of bounds.
#include "fuzz/fuzz_input.h"
#include "sluice/client/http_url.h"
#include "sluice/db/database_url.h"
#include "sluice/store/redis/redis_url.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice;
  const std::string_view text = sluice::fuzz::as_text(data, size);
  if (auto redis = redis::parse_redis_url(text); !redis.ok()) {
    sluice::fuzz::require(!redis.status().message().empty(), "a refused redis URL says why");
  } else {
    sluice::fuzz::require(!redis->nodes.empty(), "a parsed redis URL names a server");
    (void)redis::redacted_url(*redis);
  }
  if (auto database = db::parse_database_url(text); !database.ok()) {
    sluice::fuzz::require(!database.status().message().empty(), "a refused database URL says why");
  }
  if (auto http = parse_http_url(text); http.ok()) {
    auto again = parse_http_url(format_http_url(*http));
    sluice::fuzz::require(again.ok() && again->host == http->host && again->port == http->port,
                          "format_http_url reads back");
  }
  return 0;
}
