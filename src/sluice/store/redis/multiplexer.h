// sluice::redis::Multiplexer: a pipelining Redis client shared by all threads of a process, which
// multiplexes every caller's commands over a few connections (named so, not "Client", to stay
// apart from the public sluice::Client).
//
// Built on Boost.Asio sockets with hiredis as the RESP codec. A few connections (default 2) carry
// every request (automatic pipelining): on an idle connection a blocking call writes its command
// from the calling thread at once; while a connection is writing or awaits replies, requests are
// appended to one buffer and sent in its next write, after the current write or the next reply.
// Replies are matched to requests in FIFO order; blocking callers sleep on a futex until theirs.
// Connections authenticate (password or ACL user), SELECT a database, time out commands, and
// reconnect in the background with exponential backoff. While no connection is usable, requests
// fail at once with Unavailable instead of queueing.
//
// Asio stays out of this header (pimpl), so including it is cheap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/waiter.h"
#include "sluice/status.h"
#include "sluice/store/redis/redis_url.h"
#include "sluice/store/redis/resp.h"
#include "sluice/store/redis/script.h"
#include "sluice/store/redis/script_engine.h"
#include "sluice/time.h"

namespace sluice::redis {

// Completion of one request. Runs on one of the client's I/O threads, exactly once, and must not
// block (it stalls every request on that connection) or call the client's blocking methods.
// Exceptions thrown from it are swallowed.
using Callback = std::function<void(StatusOr<Reply>)>;

// One command and what a router needs to send it to the right node.
struct Request {
  std::vector<std::string> args;  // command name first; arbitrary bytes
  // Index in `args` of a key the command touches. In a Redis Cluster the command goes to the
  // master serving that key's hash slot (every key of one command must share the slot). nullopt:
  // keyless, any master will do. A standalone client ignores it.
  std::optional<std::size_t> key_index;
};

// How an async request leaves when its connection is idle (nothing written awaits a reply).
// While replies are outstanding, requests always wait for the next one and leave together.
enum class Dispatch : std::uint8_t {
  // An I/O thread writes it, so a burst of async calls from one thread leaves in a few writes.
  kQueued,
  // The submitting thread writes it at once, as the blocking calls do: no hand-off to an I/O
  // thread. For a submitter that sends one request and then waits for it (the Redis store's
  // decision batches).
  kImmediate,
};

struct MultiplexerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = kDefaultRedisPort;
  std::string username;  // ACL user; empty: `AUTH <password>` for the default user
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECTed on every connection when not 0
  TlsOptions tls;
  int connections = 2;  // shared by all callers
  int io_threads = 1;   // threads running the client's event loop (and the callbacks)
  // A blocking call's caller, when no other blocking caller of the process is waiting, watches
  // for its reply this long before it sleeps (waiter.h): one wake-up less per call for a lone
  // caller (1-caller p50 127 -> 50 µs, p99 200-350 -> 93-113 µs on the 2-core test machine;
  // docs/benchmarks.md), for up to this much CPU per call. 0: always sleep. Microseconds.
  Micros blocking_spin = kDefaultBlockingSpin;
  // Resolve + TCP connect + AUTH/SELECT, per attempt. Microseconds.
  Micros connect_timeout = 1 * kMicrosPerSecond;
  // Per request, from the moment it is queued on a ready connection (or the connection becomes
  // ready) until its reply. When it passes, the request fails with DeadlineExceeded and the
  // connection is reset (replies are FIFO: a late reply would be matched to the wrong request).
  // Microseconds.
  Micros command_timeout = 1 * kMicrosPerSecond;
  // Delay before the n-th consecutive reconnect attempt: 0 for the first, then min·2^(n-2), capped
  // at max, with jitter in [½·delay, delay]. Microseconds.
  Micros reconnect_backoff_min = 10 * kMicrosPerMilli;
  Micros reconnect_backoff_max = 2 * kMicrosPerSecond;

  // How script calls run on each node (script_engine.h): probed at every connect when
  // engine.probe is set (RedisStore::open sets it, with the store's function library).
  EngineOptions engine;

  // Redis Cluster (cluster_router.h). Non-empty: the client routes every command to the master
  // serving its key's slot, learning the masters from these seeds; `host`, `port` and `db` are
  // then unused (`connections` is per master).
  std::vector<NodeAddress> cluster_seeds;
  // Redis Sentinel (sentinel_router.h). Non-empty: the client asks these sentinels where the
  // master named `sentinel_master` is and follows its failovers; `host` and `port` are unused.
  std::vector<NodeAddress> sentinels;
  std::string sentinel_master;
  // At most one read of the slot map (or one question to the sentinels) per interval, however
  // many failures say it is stale.
  Micros cluster_refresh_min_interval = 100 * kMicrosPerMilli;
  // MOVED/ASK followed per command before it fails with Unavailable.
  int max_redirections = 5;
};

// Host, port, credentials and db (or the cluster's seeds) from `url`; everything else from `base`.
MultiplexerOptions client_options_from_url(const RedisUrl& url, MultiplexerOptions base = {});

// Monotonic counters since the client was created (a snapshot; each field is read atomically).
struct ClientStats {
  std::uint64_t requests = 0;          // commands queued on a connection
  std::uint64_t writes = 0;            // socket writes of queued commands (pipelined batches)
  std::uint64_t replies = 0;           // replies matched to requests
  std::uint64_t rejected = 0;          // failed fast: no usable connection
  std::uint64_t timeouts = 0;          // requests failed with DeadlineExceeded
  std::uint64_t connects = 0;          // successful connects (including the handshake)
  std::uint64_t connect_failures = 0;  // failed attempts and lost connections
  std::uint64_t script_reloads = 0;    // EVALSHA answered NOSCRIPT and was re-sent as EVAL
  std::uint64_t engine_fallbacks = 0;  // a node lacked the module or function: re-sent as script
  std::uint64_t redirections = 0;      // Redis Cluster: MOVED and ASK followed
  std::uint64_t retries = 0;           // Redis Cluster: TRYAGAIN / CLUSTERDOWN re-sent later
  std::uint64_t map_refreshes = 0;     // Redis Cluster: slot map reads started
  int ready_connections = 0;           // now, not cumulative (over every node)
  int masters = 0;                     // Redis Cluster: masters in the slot map now
};

class Multiplexer {
 public:
  // Validates `options` (InvalidArgument naming the field) and starts connecting in the
  // background. Succeeds even when Redis is down: requests fail with Unavailable until a
  // connection is up, and recovery needs no action.
  static StatusOr<std::unique_ptr<Multiplexer>> create(MultiplexerOptions options);
  // The client for a Redis URL (redis_url.h): the URL's servers, credentials, database and TLS
  // over `base`. InvalidArgument naming what is wrong with the URL.
  static StatusOr<std::unique_ptr<Multiplexer>> open(std::string_view url,
                                                     MultiplexerOptions base = {});

  // Completes every outstanding request (Cancelled or its reply) and joins the I/O threads.
  // Must not run on an I/O thread (i.e. inside a callback).
  ~Multiplexer();

  Multiplexer(const Multiplexer&) = delete;
  Multiplexer& operator=(const Multiplexer&) = delete;

  // All request methods are thread-safe and never throw.
  //
  // Outcomes: the reply (nil, integer, status, bulk, array — nested error replies stay elements);
  // a top-level error reply as error_reply_status() maps it (InvalidArgument, Unauthenticated…);
  // Unavailable when no connection is usable or the connection was lost before the reply (while
  // AUTH/SELECT keep failing, the handshake's code instead: Unauthenticated, PermissionDenied,
  // InvalidArgument);
  // DeadlineExceeded when no reply came within command_timeout; InvalidArgument for an empty
  // command or one that breaks request/reply pairing (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE,
  // MONITOR); Cancelled when the client is destroyed first. Blocking commands (BLPOP…) hold up
  // every request pipelined behind them on the same connection: don't send them here.
  // Consecutive calls may travel on different connections, so connection state does not carry
  // over between calls: no MULTI/EXEC across calls (use a script), no SELECT/AUTH/CLIENT REPLY
  // (use MultiplexerOptions).
  void async_execute(Request request, Callback done);
  void async_command(std::vector<std::string> args, Callback done);

  // `script` with `keys` and `args`, on the engine of the node it reaches (options().engine):
  // the module's command, FCALL, or EVALSHA script.sha1(). A node that turns out to lack the
  // module or the function gets the call again as EVALSHA; if Redis answers NOSCRIPT (restart,
  // failover, SCRIPT FLUSH), the call is re-sent once as EVAL with the source, which also reloads
  // the cache. Routed by keys[0] when there are keys.
  void async_eval_script(const Script& script, std::vector<std::string> keys,
                         std::vector<std::string> args, Callback done,
                         Dispatch dispatch = Dispatch::kQueued);

  // Blocking forms for synchronous callers. Called from an I/O thread (a callback) they return
  // FailedPrecondition instead of deadlocking.
  StatusOr<Reply> command(std::vector<std::string> args);
  StatusOr<Reply> execute(Request request);
  StatusOr<Reply> eval_script(const Script& script, std::vector<std::string> keys,
                              std::vector<std::string> args);

  ClientStats stats() const;
  // Each node script calls reach now ("host:port"), and the engine it runs (script_engine.h).
  std::vector<std::pair<std::string, ScriptEngine>> engines() const;
  const MultiplexerOptions& options() const;

 private:
  class Impl;
  explicit Multiplexer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::redis
