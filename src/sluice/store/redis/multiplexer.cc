#include "sluice/store/redis/multiplexer.h"

// Boost 1.74 + GCC 12: <utility> must precede the Asio headers.
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "sluice/core/status_macros.h"
#include "sluice/store/redis/cluster_router.h"
#include "sluice/store/redis/connection.h"
#include "sluice/store/redis/hash_slot.h"
#include "sluice/store/redis/node_pool.h"
#include "sluice/store/redis/resp_writer.h"
#include "sluice/store/redis/sentinel_router.h"
#include "sluice/store/redis/tls_context.h"

namespace sluice::redis {

MultiplexerOptions client_options_from_url(const RedisUrl& url, MultiplexerOptions base) {
  base.host = url.host;
  base.port = url.port;
  base.username = url.username;
  base.password = url.password;
  base.db = url.db;
  base.tls = url.tls;
  base.engine.choice = url.engine;
  base.engine.clock = url.clock;
  base.cluster_seeds.clear();
  base.sentinels.clear();
  base.sentinel_master.clear();
  if (url.topology == RedisTopology::kCluster) base.cluster_seeds = url.nodes;
  if (url.topology == RedisTopology::kSentinel) {
    base.sentinels = url.nodes;
    base.sentinel_master = url.master_name;
  }
  return base;
}

namespace {

using namespace internal;

bool is_noscript(const Reply& reply) {
  return reply.is_error() && reply.as_string().rfind("NOSCRIPT", 0) == 0;
}

bool breaks_pairing(std::string_view name) {
  static constexpr std::array<std::string_view, 4> kRefused = {"SUBSCRIBE", "PSUBSCRIBE",
                                                               "SSUBSCRIBE", "MONITOR"};
  for (std::string_view refused : kRefused) {
    if (name.size() != refused.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      char c = name[i];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      same = c == refused[i];
    }
    if (same) return true;
  }
  return false;
}

Status validate(const MultiplexerOptions& options) {
  const auto error = [](const std::string& text) {
    return invalid_argument("redis options: " + text);
  };
  if (options.host.empty()) return error("host must not be empty");
  if (options.port == 0) return error("port must be 1-65535");
  if (options.db < 0) return error("db must be >= 0");
  if (options.connections < 1 || options.connections > 1024) {
    return error("connections must be 1-1024");
  }
  if (options.io_threads < 1 || options.io_threads > 256) return error("io_threads must be 1-256");
  if (options.connect_timeout <= 0) return error("connect_timeout must be > 0");
  if (options.command_timeout <= 0) return error("command_timeout must be > 0");
  if (options.reconnect_backoff_min <= 0) return error("reconnect_backoff_min must be > 0");
  if (options.reconnect_backoff_max < options.reconnect_backoff_min) {
    return error("reconnect_backoff_max must be >= reconnect_backoff_min");
  }
  if (!options.username.empty() && options.password.empty()) {
    return error("username needs a password");
  }
  if (!options.sentinels.empty()) {
    if (!options.cluster_seeds.empty())
      return error("sentinels and cluster_seeds exclude each other");
    if (options.sentinel_master.empty()) return error("sentinel_master must name the master");
    for (const NodeAddress& sentinel : options.sentinels) {
      if (sentinel.host.empty() || sentinel.port == 0)
        return error("sentinels need a host and a port");
    }
  }
  if (!options.cluster_seeds.empty()) {
    if (options.db != 0) return error("db must be 0 for a Redis Cluster");
    for (const NodeAddress& seed : options.cluster_seeds) {
      if (seed.host.empty() || seed.port == 0) return error("cluster seeds need a host and a port");
    }
    if (options.cluster_refresh_min_interval <= 0) {
      return error("cluster_refresh_min_interval must be > 0");
    }
    if (options.max_redirections < 1) return error("max_redirections must be >= 1");
  }
  return Status();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct EvalCall;

class Multiplexer::Impl {
 public:
  Impl(MultiplexerOptions options, std::unique_ptr<asio::ssl::context> tls)
      : options_(std::move(options)),
        tls_(std::move(tls)),
        io_(options_.io_threads),
        work_(asio::make_work_guard(io_)) {
    const auto fail = [this](Completion done, Status status) {
      fail_later(std::move(done), std::move(status));
    };
    if (!options_.cluster_seeds.empty()) {
      cluster_ = std::make_unique<ClusterRouter>(io_, options_, counters_, fail, tls_.get());
    } else if (!options_.sentinels.empty()) {
      sentinel_ = std::make_unique<SentinelRouter>(io_, options_, counters_, fail, tls_.get());
    } else {
      standalone_ = std::make_unique<NodePool>(io_, options_, counters_, tls_.get());
    }
    try {
      for (int i = 0; i < options_.io_threads; ++i) {
        threads_.emplace_back([this] {
          for (;;) {
            try {
              io_.run();
              return;
            } catch (...) {
              // Handlers don't throw by design; if one does, keep the loop alive.
            }
          }
        });
      }
    } catch (...) {
      shutdown();  // joins the threads that did start, so their destructors don't terminate
      throw;
    }
  }

  ~Impl() { shutdown(); }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Fails outstanding requests with Cancelled (their callbacks run), then lets the loop drain.
  void shutdown() {
    if (standalone_) standalone_->close();
    if (cluster_) cluster_->close();
    if (sentinel_) sentinel_->close();
    work_.reset();
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  bool on_io_thread() { return io_.get_executor().running_in_this_thread(); }

  // Writes `call` for its engine and routes it; on an engine's miss or NOSCRIPT, again.
  void send_script(const std::shared_ptr<EvalCall>& call, Dispatch dispatch);

  // Fails a request that never reached a connection: a waiting caller at once, a callback on an
  // I/O thread (callbacks never run inside the call that submits them).
  void fail_later(Completion done, Status status) {
    if (done.waiter != nullptr) {
      done.waiter->set(std::move(status));
      return;
    }
    asio::post(io_, [done = std::move(done.callback), status = std::move(status)]() mutable {
      run_callback(done, std::move(status));
    });
  }

  void submit(std::span<const std::string> args, std::optional<std::size_t> key_index,
              ErrorReplies errors, Completion done) {
    if (args.empty()) {
      fail_later(std::move(done), invalid_argument("redis: empty command"));
      return;
    }
    if (breaks_pairing(args[0])) {
      fail_later(std::move(done),
                 invalid_argument("redis: " + args[0] +
                                  " is not supported: its replies don't pair with requests"));
      return;
    }
    std::string& formatted = scratch_buffer();
    append_command(formatted, args);
    route(formatted, slot_of(args, key_index), errors, std::move(done));
  }

  // Sends one formatted command and blocks the calling thread until its outcome.
  StatusOr<Reply> submit_and_wait(std::string_view formatted, std::optional<int> slot,
                                  ErrorReplies errors) {
    ReplyWaiter waiter;
    route(formatted, slot, errors, Completion{.callback = nullptr, .waiter = &waiter});
    return waiter.wait(options_.blocking_spin);
  }

  StatusOr<Reply> execute_and_wait(std::span<const std::string> args,
                                   std::optional<std::size_t> key_index) {
    ReplyWaiter waiter;
    submit(args, key_index, ErrorReplies::kAsStatus,
           Completion{.callback = nullptr, .waiter = &waiter});
    return waiter.wait(options_.blocking_spin);
  }

  // The engine script calls take on the node serving `slot` (script_engine.h).
  ScriptEngine engine_for(std::optional<int> slot) const {
    if (cluster_) return cluster_->engine_for_slot(slot);
    if (sentinel_) return sentinel_->engine();
    return standalone_->engine();
  }

  std::vector<std::pair<std::string, ScriptEngine>> engines() const {
    if (cluster_) return cluster_->engines();
    if (sentinel_) {
      const std::string master = sentinel_->master_address();
      if (master.empty()) return {};
      return {{master, sentinel_->engine()}};
    }
    return {{standalone_->name(), standalone_->engine()}};
  }

  // A call with the caller's time reaches the module without it (script_engine.h).
  bool drop_caller_time() const {
    return options_.engine.clock == ScriptClock::kCaller &&
           !options_.engine.module_reads_caller_time;
  }

  // Whether a script call's error reply calls for another attempt, and how it goes: as EVALSHA
  // when the node lacks the engine tried, with the source (EVAL, which also caches the script
  // again) when it lost the script. False: the error is the call's outcome. At most two retries.
  bool retry_after_error(ScriptEngine& engine, bool& with_source, const Reply& reply) {
    if (std::optional<ScriptEngine> next = engine_missing(engine, reply.as_string())) {
      bump(counters_.engine_fallbacks);
      engine = *next;
      return true;
    }
    // Only EVALSHA answers NOSCRIPT (on any engine, for a script the engine lacks).
    if (!with_source && is_noscript(reply)) {
      bump(counters_.script_reloads);
      engine = ScriptEngine::kScripts;
      with_source = true;
      return true;
    }
    return false;
  }

  void append_call(std::string& out, ScriptEngine engine, bool with_source, const Script& script,
                   std::span<const std::string> keys, std::span<const std::string> args) const {
    if (with_source) {
      append_eval_source(out, script, keys, args);
    } else {
      append_script_call(out, engine, script, options_.engine.library, keys, args,
                         drop_caller_time());
    }
  }

  // The blocking script call: formats straight from the caller's strings into the thread's
  // scratch buffer (no argument vector, no callback, no shared state), and re-sends from the
  // calling thread after an engine's miss or NOSCRIPT.
  StatusOr<Reply> eval_and_wait(const Script& script, std::span<const std::string> keys,
                                std::span<const std::string> args) {
    const std::optional<int> slot = slot_of(keys, keys.empty() ? std::nullopt : std::optional(0));
    ScriptEngine engine = engine_for(slot);
    bool with_source = false;
    for (;;) {
      std::string& out = scratch_buffer();
      append_call(out, engine, with_source, script, keys, args);
      StatusOr<Reply> result = submit_and_wait(out, slot, ErrorReplies::kAsReply);
      if (!result.ok() || !result->is_error()) return result;
      if (!retry_after_error(engine, with_source, *result)) {
        return error_reply_status(result->as_string());
      }
    }
  }

  // The hash slot of args[key_index] when the client routes by slot (Redis Cluster).
  std::optional<int> slot_of(std::span<const std::string> args,
                             std::optional<std::size_t> key_index) const {
    if (!cluster_ || !key_index || *key_index >= args.size()) return std::nullopt;
    return key_hash_slot(args[*key_index]);
  }

  // Standalone: round robin over the server's ready connections, then over connections still
  // connecting; none usable -> fail fast. Cluster: the slot's master (cluster_router.h).
  void route(std::string_view formatted, std::optional<int> slot, ErrorReplies errors,
             Completion done) {
    if (cluster_) {
      cluster_->submit(formatted, slot, errors, std::move(done));
      return;
    }
    if (sentinel_) {
      sentinel_->submit(formatted, errors, std::move(done));
      return;
    }
    if (standalone_->try_submit(formatted, done, errors)) return;
    bump(counters_.rejected);
    fail_later(std::move(done), standalone_->unavailable_status());
  }

  ClientStats stats() const {
    ClientStats out;
    out.requests = counters_.requests.load(std::memory_order_relaxed);
    out.writes = counters_.writes.load(std::memory_order_relaxed);
    out.replies = counters_.replies.load(std::memory_order_relaxed);
    out.rejected = counters_.rejected.load(std::memory_order_relaxed);
    out.timeouts = counters_.timeouts.load(std::memory_order_relaxed);
    out.connects = counters_.connects.load(std::memory_order_relaxed);
    out.connect_failures = counters_.connect_failures.load(std::memory_order_relaxed);
    out.script_reloads = counters_.script_reloads.load(std::memory_order_relaxed);
    out.engine_fallbacks = counters_.engine_fallbacks.load(std::memory_order_relaxed);
    out.redirections = counters_.redirections.load(std::memory_order_relaxed);
    out.retries = counters_.retries.load(std::memory_order_relaxed);
    out.map_refreshes = counters_.map_refreshes.load(std::memory_order_relaxed);
    if (cluster_) {
      out.ready_connections = cluster_->ready_connections();
      out.masters = cluster_->masters();
    } else if (sentinel_) {
      out.ready_connections = sentinel_->ready_connections();
      out.masters = sentinel_->master_address().empty() ? 0 : 1;
    } else {
      out.ready_connections = standalone_->ready_connections();
    }
    return out;
  }

  const MultiplexerOptions options_;
  const std::unique_ptr<asio::ssl::context> tls_;  // null without TLS
  Counters counters_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<NodePool> standalone_;      // redis://
  std::unique_ptr<ClusterRouter> cluster_;    // redis+cluster://
  std::unique_ptr<SentinelRouter> sentinel_;  // redis+sentinel://
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Multiplexer>> Multiplexer::create(MultiplexerOptions options) {
  SLUICE_RETURN_IF_ERROR(validate(options));
  std::unique_ptr<asio::ssl::context> tls;
  if (options.tls.enabled) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<asio::ssl::context> context,
                            make_tls_context(options.tls));
    tls = std::move(context);
  }
  try {
    auto impl = std::make_unique<Impl>(std::move(options), std::move(tls));
    if (impl->sentinel_) {
      // The first commands should find the master known: wait for the sentinels' first answer
      // (at most connect_timeout; without one, commands fail with Unavailable until it comes).
      impl->sentinel_->wait_for_master(std::chrono::microseconds(impl->options_.connect_timeout));
    }
    return std::unique_ptr<Multiplexer>(new Multiplexer(std::move(impl)));
  } catch (const std::exception& e) {
    // Thread creation or the entropy source failed: report, don't throw across the module.
    return internal_error(std::string("redis client could not start: ") + e.what());
  }
}

StatusOr<std::unique_ptr<Multiplexer>> Multiplexer::open(std::string_view url,
                                                         MultiplexerOptions base) {
  SLUICE_ASSIGN_OR_RETURN(RedisUrl parsed, parse_redis_url(url));
  return create(client_options_from_url(parsed, std::move(base)));
}

Multiplexer::Multiplexer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Multiplexer::~Multiplexer() = default;

const MultiplexerOptions& Multiplexer::options() const { return impl_->options_; }

ClientStats Multiplexer::stats() const { return impl_->stats(); }

void Multiplexer::async_execute(Request request, Callback done) {
  impl_->submit(request.args, request.key_index, ErrorReplies::kAsStatus,
                Completion{.callback = std::move(done)});
}

void Multiplexer::async_command(std::vector<std::string> args, Callback done) {
  impl_->submit(args, std::nullopt, ErrorReplies::kAsStatus,
                Completion{.callback = std::move(done)});
}

// One asynchronous script call, kept for its re-sends.
struct EvalCall {
  Script script;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  std::optional<int> slot;
  ScriptEngine engine = ScriptEngine::kScripts;
  bool with_source = false;  // EVAL with the script's source (after NOSCRIPT)
  Callback done;
};

void Multiplexer::Impl::send_script(const std::shared_ptr<EvalCall>& call, Dispatch dispatch) {
  std::string& formatted = scratch_buffer();
  append_call(formatted, call->engine, call->with_source, call->script, call->keys, call->args);
  auto on_reply = [this, call](StatusOr<Reply> result) {
    if (result.ok() && result->is_error()) {
      if (retry_after_error(call->engine, call->with_source, *result)) {
        send_script(call, Dispatch::kQueued);
        return;
      }
      run_callback(call->done, error_reply_status(result->as_string()));
      return;
    }
    run_callback(call->done, std::move(result));
  };
  route(formatted, call->slot, ErrorReplies::kAsReply,
        Completion{.callback = std::move(on_reply),
                   .submitter_writes = dispatch == Dispatch::kImmediate});
}

void Multiplexer::async_eval_script(const Script& script, std::vector<std::string> keys,
                                    std::vector<std::string> args, Callback done,
                                    Dispatch dispatch) {
  const std::optional<int> slot =
      impl_->slot_of(keys, keys.empty() ? std::nullopt : std::optional<std::size_t>(0));
  auto call = std::make_shared<EvalCall>(EvalCall{.script = script,
                                                  .keys = std::move(keys),
                                                  .args = std::move(args),
                                                  .slot = slot,
                                                  .engine = impl_->engine_for(slot),
                                                  .with_source = false,
                                                  .done = std::move(done)});
  impl_->send_script(call, dispatch);
}

std::vector<std::pair<std::string, ScriptEngine>> Multiplexer::engines() const {
  return impl_->engines();
}

namespace {

Status blocking_on_io_thread() {
  return Status(StatusCode::kFailedPrecondition,
                "redis: blocking call from a client callback would deadlock; use the async form");
}

}  // namespace

StatusOr<Reply> Multiplexer::command(std::vector<std::string> args) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->execute_and_wait(args, std::nullopt);
}

StatusOr<Reply> Multiplexer::execute(Request request) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->execute_and_wait(request.args, request.key_index);
}

StatusOr<Reply> Multiplexer::eval_script(const Script& script, std::vector<std::string> keys,
                                         std::vector<std::string> args) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->eval_and_wait(script, keys, args);
}

}  // namespace sluice::redis
