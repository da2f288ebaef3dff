// What the module's tests and benchmark share: a redis-server of their own with sluice.so
// loaded (optionally with the test-only pinned clock), a plain blocking hiredis connection that
// pipelines, and the state of a key as comparable values (type, value or members, PTTL).
#pragma once

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "sluice/status.h"
#include "testing/redis_server.h"

namespace sluice::redis_module::test {

// A reply flattened into values (arrays recursively).
struct Reply {
  int type = 0;  // REDIS_REPLY_*
  std::string text;
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_error() const { return type == REDIS_REPLY_ERROR; }
  friend bool operator==(const Reply&, const Reply&) = default;
};

// For test failures: type, text or integer, elements.
void PrintTo(const Reply& reply, std::ostream* out);

class Connection {
 public:
  static StatusOr<std::unique_ptr<Connection>> open(std::uint16_t port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends every command, then reads every reply: one round trip, and Redis runs them back to
  // back. A broken connection answers an error reply with text "connection: ...".
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands);
  Reply command(const std::vector<std::string>& args);

 private:
  explicit Connection(redisContext* context) : context_(context) {}
  redisContext* context_;
};

// redis-server with the module loaded; `pinned_clock`: with the test-only `pinned-clock`
// argument. `extra_args` go to redis-server as they are.
StatusOr<std::unique_ptr<sluice::test::RedisServer>> start_redis_with_module(
    bool pinned_clock, std::vector<std::string> extra_args = {});

// A race's tally: each reply an acquire's verdict (kVerdictBytes), `admitted[k]` counts reply k
// when allowed; an error or a reply of another size counts in `failures`.
void count_admitted(const std::vector<Reply>& replies, std::span<std::atomic<int>> admitted,
                    std::atomic<int>& failures);

// The path of the built sluice.so (set by CMake).
std::string module_path();

// A key's state: TYPE, then its value (GET), its members and scores (ZRANGE 0 -1 WITHSCORES) or
// its fields (HGETALL, sorted), then PTTL; read in one pipeline per call.
struct KeyState {
  std::string type;
  std::vector<std::string> value;
  long long pttl = 0;
};
std::vector<KeyState> read_key_states(Connection& connection, const std::vector<std::string>& keys);

}  // namespace sluice::redis_module::test
