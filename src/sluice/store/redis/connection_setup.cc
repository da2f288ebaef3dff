// How a Connection (connection.h) becomes usable and comes back: resolve, connect, TLS, the
// AUTH / SELECT handshake, and the reconnect loop with its backoff. Its pipeline (writes,
// replies, deadlines, failure) is in connection.cc.
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <random>
#include <string>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/connection.h"
#include "sluice/store/redis/resp_writer.h"

namespace sluice::redis::internal {

void Connection::connect() {
  {
    MutexLock lock(mu_);
    if (state_ == ConnState::kClosed) return;
    set_state_locked(ConnState::kConnecting);
    ++gen_;
  }
  const std::uint64_t gen = gen_;
  auto self = shared_from_this();
  connect_timer_.expires_after(micros(options_.connect_timeout));
  connect_timer_.async_wait([self, gen](const boost::system::error_code& ec) {
    if (ec || gen != self->gen_ || self->state_ == ConnState::kReady) return;
    self->fail(unavailable("connecting to redis " + self->endpoint_name_ + " timed out after " +
                           millis_text(self->options_.connect_timeout)));
  });
  resolver_.async_resolve(
      options_.host, std::to_string(options_.port), tcp::resolver::numeric_service,
      [self, gen](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
        if (gen != self->gen_) return;
        if (ec) {
          self->fail(
              unavailable("resolving redis host \"" + self->options_.host + "\": " + ec.message()));
          return;
        }
        asio::async_connect(
            self->socket_, results,
            [self, gen](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
              if (gen != self->gen_) return;
              if (connect_ec) {
                self->fail(unavailable("connecting to redis " + self->endpoint_name_ + ": " +
                                       connect_ec.message()));
                return;
              }
              self->on_connected();
            });
      });
}

void Connection::on_connected() {
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  // Lets the kernel notice a peer that vanished while the connection sits idle.
  socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  if (tls_context_ != nullptr) {
    start_tls();
    return;
  }
  on_transport_ready();
}

void Connection::start_tls() {
  tls_ = std::make_shared<TlsStream>(socket_, *tls_context_);
  SSL* ssl = tls_->native_handle();
  const std::string& name =
      options_.tls.server_name.empty() ? options_.host : options_.tls.server_name;
  boost::system::error_code not_ip;
  asio::ip::make_address(name, not_ip);
  if (not_ip) {
    // A host name: sent as SNI and matched against the certificate's DNS names.
    SSL_set_tlsext_host_name(ssl, name.c_str());
    SSL_set1_host(ssl, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  }
  tls_->set_verify_mode(asio::ssl::verify_peer);
  const std::uint64_t gen = gen_;
  tls_->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this(), tls = tls_,
                                                         gen](const boost::system::error_code& ec) {
    if (gen != self->gen_) return;
    if (!ec) {
      self->on_transport_ready();
      return;
    }
    if (ec.category() == asio::error::get_ssl_category()) {
      // A certificate that does not verify, a server that does not speak TLS: configuration,
      // not an outage, so `serve` stops at start instead of running degraded.
      std::string reason = ec.message();
      const long verify = SSL_get_verify_result(tls->native_handle());
      if (verify != X509_V_OK) reason = X509_verify_cert_error_string(verify);
      self->fail(Status(StatusCode::kFailedPrecondition,
                        "TLS handshake with redis " + self->endpoint_name_ + " failed: " + reason));
      return;
    }
    self->fail(self->lost(ec));
  });
}

void Connection::on_transport_ready() {
  start_read();

  handshake_.clear();
  handshake_steps_.clear();
  handshake_remaining_ = 0;
  // `step` names the command in errors; it never includes the password.
  const auto add = [&](std::vector<std::string> args, std::string step) {
    StatusOr<std::string> formatted = format_command(args);
    if (formatted.ok()) {
      handshake_ += *formatted;
      handshake_steps_.push_back({.name = std::move(step), .probe = nullptr});
      ++handshake_remaining_;
    }
  };
  if (!options_.password.empty()) {
    if (options_.username.empty()) {
      add({"AUTH", options_.password}, "AUTH");
    } else {
      add({"AUTH", options_.username, options_.password}, "AUTH " + options_.username);
    }
  }
  if (options_.db != 0) {
    const std::string db = std::to_string(options_.db);
    add({"SELECT", db}, "SELECT " + db);
  }
  add_engine_probe();
  if (handshake_remaining_ == 0) {
    become_ready();
    return;
  }
  {
    MutexLock lock(mu_);
    set_state_locked(ConnState::kHandshaking);
  }
  const std::uint64_t gen = gen_;
  write_all(asio::buffer(handshake_),
            [self = shared_from_this(), gen](const boost::system::error_code& ec, std::size_t) {
              if (gen != self->gen_ || !ec) return;
              self->fail(self->lost(ec));
            });
}

void Connection::add_engine_probe() {
  probe_ = ProbeAnswers{};
  if (engine_ == nullptr || !options_.engine.probe) return;
  const auto add = [&](std::vector<std::string> args, std::function<void(const Reply&)> probe) {
    StatusOr<std::string> formatted = format_command(args);
    if (formatted.ok()) {
      handshake_ += *formatted;
      handshake_steps_.push_back({.name = args.front(), .probe = std::move(probe)});
      ++handshake_remaining_;
    }
  };
  // A module command the node does not know answers an array holding one nil.
  add({"COMMAND", "INFO", std::string(kModuleProbeCommand)}, [this](const Reply& reply) {
    probe_.module = reply.is_array() && !reply.elements().empty() && !reply.elements()[0].is_nil();
  });
  const EngineOptions& engine = options_.engine;
  if (!engine.library.empty() && engine.choice != EngineChoice::kScripts &&
      engine.choice != EngineChoice::kModule) {
    // The library's name is its content's: present means identical, so "already exists" is as
    // good as loaded, and a node never rewrites (or replicates) a library it has.
    add({"FUNCTION", "LOAD", engine.library.text}, [this](const Reply& reply) {
      // A replica refuses every write (READONLY) but has the library its master loaded, and no
      // script call goes to a replica anyway.
      const bool exists_or_replica =
          reply.is_error() && (reply.as_string().find("already exists") != std::string::npos ||
                               reply.as_string().rfind("READONLY", 0) == 0);
      probe_.functions = !reply.is_error() || exists_or_replica;
      if (!probe_.functions) probe_.functions_refusal = reply.as_string();
    });
  }
  if (engine.clock == ScriptClock::kRedis) {
    add({"EVAL", "return redis.call('TIME')", "0"}, [this](const Reply& reply) {
      // NOPERM: this user may not run scripts at all, which is a permission the calls themselves
      // report (each policy's on_store_failure decides); only a script refused TIME is this.
      probe_.time = !reply.is_error() || reply.as_string().rfind("NOPERM", 0) == 0;
      if (!probe_.time) probe_.time_refusal = reply.as_string();
    });
  }
}

Status Connection::decide_engine() {
  if (engine_ == nullptr || !options_.engine.probe) return {};
  const EngineOptions& options = options_.engine;
  const std::string node = "redis " + endpoint_name_;
  ScriptEngine engine = ScriptEngine::kScripts;
  switch (options.choice) {
    case EngineChoice::kModule:
      if (!probe_.module) {
        return {StatusCode::kFailedPrecondition,
                node + " has no " + std::string(kModuleProbeCommand) +
                    " command: engine=module needs the sluice module on every node "
                    "(`loadmodule /usr/lib/sluice/sluice.so` in redis.conf, or MODULE LOAD; "
                    "docs/redis-module.md), or engine=auto to use it where it is loaded"};
      }
      engine = ScriptEngine::kModule;
      break;
    case EngineChoice::kFunctions:
      if (!probe_.functions) {
        return {StatusCode::kFailedPrecondition,
                node + " refused FUNCTION LOAD (" + probe_.functions_refusal +
                    "): engine=functions needs Redis 7 or later and a user allowed FUNCTION; "
                    "engine=auto falls back to scripts"};
      }
      engine = ScriptEngine::kFunctions;
      break;
    case EngineChoice::kScripts:
      break;
    case EngineChoice::kAuto:
      if (probe_.module) {
        engine = ScriptEngine::kModule;
      } else if (probe_.functions) {
        engine = ScriptEngine::kFunctions;
      }
      break;
  }
  // The module reads Redis's clock natively; scripts and functions read it with TIME.
  if (!probe_.time && engine != ScriptEngine::kModule) {
    return {StatusCode::kFailedPrecondition,
            node + " refuses TIME inside scripts (" + probe_.time_refusal +
                "), and Sluice's scripts decide on Redis's clock. Remedies: allow TIME for this "
                "user (ACL +time), load the sluice module (it reads the clock without TIME), or "
                "add clock=client to the Redis URL to send the Sluice node's own time "
                "(docs/redis.md, \"Redis without TIME\")"};
  }
  engine_->store(engine, std::memory_order_relaxed);
  return {};
}

void Connection::become_ready() {
  connect_timer_.cancel();
  bump(counters_.connects);
  {
    MutexLock lock(write_mu_);
    socket_fd_ = socket_.native_handle();
    socket_gen_ = gen_;
  }
  bool start_write = false;
  {
    MutexLock lock(mu_);
    set_state_locked(ConnState::kReady);
    last_error_ = Status();
    // Requests queued while connecting start their command timeout now.
    const SteadyClock::time_point deadline = SteadyClock::now() + micros(options_.command_timeout);
    for (Pending& pending : pending_) pending.deadline = deadline;
    if (!outbox_.empty() && !write_in_flight_) {
      write_in_flight_ = true;
      start_write = true;
    }
  }
  if (start_write) do_write();
}

void Connection::schedule_reconnect() {
  Micros delay = 0;
  if (attempt_ > 0) {
    delay = options_.reconnect_backoff_min;
    for (int i = 1; i < attempt_ && delay < options_.reconnect_backoff_max; ++i) delay *= 2;
    delay = std::min(delay, options_.reconnect_backoff_max);
    // Jitter keeps many clients from reconnecting in lockstep after a restart.
    std::uniform_int_distribution<Micros> jitter(delay / 2, delay);
    delay = jitter(random_);
  }
  if (attempt_ < 64) ++attempt_;
  const std::uint64_t gen = gen_;
  auto self = shared_from_this();
  if (delay == 0) {
    asio::post(strand_, [self, gen] {
      if (gen == self->gen_) self->connect();
    });
    return;
  }
  connect_timer_.expires_after(micros(delay));
  connect_timer_.async_wait([self, gen](const boost::system::error_code& ec) {
    if (ec || gen != self->gen_) return;
    self->connect();
  });
}

}  // namespace sluice::redis::internal
