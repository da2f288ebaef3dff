// Integration tests: every test talks to a real redis-server started on a free loopback port.
#include "sluice/store/redis/multiplexer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/redis_server.h"
#include "testing/subprocess.h"
#include "testing/test_certificates.h"

namespace sluice::redis {

// Readable replies in assertion failures (found by GoogleTest through ADL).
void PrintTo(const Reply& reply, std::ostream* out) { *out << reply.debug_string(); }

namespace {

using namespace std::string_literals;
using test::RedisServer;
using test::RedisServerOptions;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kWaitLimit = std::chrono::seconds(20);

// Counts callbacks down to zero; wait() gives up after a limit so a lost callback fails the test
// instead of hanging it.
class Countdown {
 public:
  explicit Countdown(int count) : remaining_(count) {}
  void done() {
    std::lock_guard lock(mu_);
    if (--remaining_ == 0) cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds limit = kWaitLimit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return remaining_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int remaining_;
};

// The reply, or (after recording a failure with the status) an error Reply, so a failed call
// reports its status instead of throwing from StatusOr::operator*.
Reply value(StatusOr<Reply> result) {
  if (result.ok()) return std::move(*result);
  ADD_FAILURE() << result.status().to_string();
  return Reply::error("(call failed) " + result.status().to_string());
}

std::unique_ptr<RedisServer> start_server(RedisServerOptions options = {}) {
  StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<Multiplexer> make_client(std::uint16_t port, MultiplexerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = port;
  StatusOr<std::unique_ptr<Multiplexer>> client = Multiplexer::create(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(*client) : nullptr;
}

// Polls until PING succeeds: the only waiting these tests do, for a server to come (back) up.
bool wait_until_answering(Multiplexer& client, std::chrono::milliseconds limit = kWaitLimit) {
  const auto deadline = SteadyClock::now() + limit;
  while (SteadyClock::now() < deadline) {
    StatusOr<Reply> reply = client.command({"PING"});
    if (reply.ok() && *reply == Reply::status("PONG")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::chrono::milliseconds elapsed_since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
}

// One server shared by the tests that don't stop, block or reconfigure it.
class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = start_server().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << "redis-server did not start"; }

  std::unique_ptr<Multiplexer> client(MultiplexerOptions options = {}) {
    return make_client(server_->port(), std::move(options));
  }

  static RedisServer* server_;
};

RedisServer* ClientTest::server_ = nullptr;

TEST_F(ClientTest, RoundTripsBinarySafeArguments) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  std::string kibibyte(1024, '\0');
  for (std::size_t i = 0; i < kibibyte.size(); ++i) kibibyte[i] = static_cast<char>(i * 7 + 3);
  const std::vector<std::string> values = {"nul\0inside"s,
                                           "crlf\r\nand\nnewline\r\n",
                                           "\xff\xfe\x80\xc3(not utf-8)",
                                           kibibyte,
                                           "",
                                           "*1\r\n$4\r\nPING\r\n"};
  for (std::size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string key = "binary:\0{}\r\n\xff:"s + std::to_string(i);
    StatusOr<Reply> set = redis->command({"SET", key, values[i]});
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ(*set, Reply::status("OK"));
    StatusOr<Reply> get = redis->command({"GET", key});
    ASSERT_TRUE(get.ok()) << get.status().to_string();
    EXPECT_EQ(*get, Reply::bulk(values[i]));
    StatusOr<Reply> echo = redis->command({"ECHO", values[i]});
    ASSERT_TRUE(echo.ok());
    EXPECT_EQ(*echo, Reply::bulk(values[i]));
  }
}

TEST_F(ClientTest, ConvertsEveryReplyType) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  ASSERT_TRUE(redis->command({"DEL", "types:list", "types:counter"}).ok());
  EXPECT_EQ(value(redis->command({"GET", "types:missing"})), Reply::nil());
  EXPECT_EQ(value(redis->command({"INCRBY", "types:counter", "-5"})), Reply::integer(-5));
  EXPECT_EQ(value(redis->command({"RPUSH", "types:list", "a", "b"})), Reply::integer(2));
  EXPECT_EQ(value(redis->command({"LRANGE", "types:list", "0", "-1"})),
            Reply::array({Reply::bulk("a"), Reply::bulk("b")}));
  // Nested arrays, nil and error elements stay values inside the array.
  StatusOr<Reply> nested = redis->command(
      {"EVAL", "return {1, {'x', false}, redis.error_reply('E1 nested'), redis.status_reply('S')}",
       "0"});
  ASSERT_TRUE(nested.ok()) << nested.status().to_string();
  EXPECT_EQ(*nested,
            Reply::array({Reply::integer(1), Reply::array({Reply::bulk("x"), Reply::nil()}),
                          Reply::error("E1 nested"), Reply::status("S")}));
}

TEST_F(ClientTest, TurnsTopLevelErrorRepliesIntoStatuses) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  StatusOr<Reply> unknown = redis->command({"NOSUCHCOMMAND", "x"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("redis: ERR unknown command"));

  ASSERT_TRUE(redis->command({"SET", "errors:string", "v"}).ok());
  StatusOr<Reply> wrong_type = redis->command({"LPUSH", "errors:string", "x"});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("WRONGTYPE"));

  // The connection stays usable after error replies.
  EXPECT_EQ(value(redis->command({"PING"})), Reply::status("PONG"));
}

TEST_F(ClientTest, RefusesCommandsThatCannotBePipelined) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"SUBSCRIBE", "c"}, {"psubscribe", "c*"}, {"Monitor"}}) {
    SCOPED_TRACE(args.empty() ? "(empty)" : args[0]);
    StatusOr<Reply> reply = redis->command(args);
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(value(redis->command({"PING"})), Reply::status("PONG"));
}

TEST_F(ClientTest, ManyThreadsEachGetTheirOwnReplies) {
  // Two I/O threads: callbacks of different connections run concurrently.
  auto redis = client({.connections = 3, .io_threads = 2});
  ASSERT_NE(redis, nullptr);
  constexpr int kThreads = 16;
  constexpr int kRequests = 300;
  std::atomic<int> mismatches{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string counter = "threads:counter:" + std::to_string(t);
      (void)redis->command({"DEL", counter});
      for (int i = 0; i < kRequests; ++i) {
        const std::string payload = "thread " + std::to_string(t) + " request " + std::to_string(i);
        StatusOr<Reply> echo = redis->command({"ECHO", payload});
        StatusOr<Reply> incr = redis->command({"INCR", counter});
        if (!echo.ok() || !incr.ok()) {
          ++failures;
        } else if (*echo != Reply::bulk(payload) || *incr != Reply::integer(i + 1)) {
          ++mismatches;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(ClientTest, AsyncRequestsCompleteWithTheirOwnReplies) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  constexpr int kRequests = 5000;
  Countdown countdown(kRequests);
  std::atomic<int> wrong{0};
  for (int i = 0; i < kRequests; ++i) {
    std::string payload = "async-" + std::to_string(i);
    redis->async_command({"ECHO", payload}, [&, payload](const StatusOr<Reply>& reply) {
      if (!reply.ok() || *reply != Reply::bulk(payload)) ++wrong;
      countdown.done();
    });
  }
  ASSERT_TRUE(countdown.wait());
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ClientTest, CoalescesConcurrentRequestsIntoFewerWrites) {
  auto redis = client({.connections = 1});
  ASSERT_NE(redis, nullptr);
  ASSERT_TRUE(wait_until_answering(*redis));
  const ClientStats before = redis->stats();
  constexpr int kRequests = 5000;
  Countdown countdown(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    redis->async_command({"INCR", "coalesce"}, [&](const StatusOr<Reply>&) { countdown.done(); });
  }
  ASSERT_TRUE(countdown.wait());
  const ClientStats after = redis->stats();
  const std::uint64_t requests = after.requests - before.requests;
  const std::uint64_t writes = after.writes - before.writes;
  EXPECT_EQ(requests, static_cast<std::uint64_t>(kRequests));
  EXPECT_EQ(after.replies - before.replies, static_cast<std::uint64_t>(kRequests));
  // Requests queued while a write is in flight go out together in the next write.
  EXPECT_LE(writes * 4, requests) << writes << " writes for " << requests << " requests";
  EXPECT_GE(writes, 1u);
}

TEST_F(ClientTest, SelectsTheConfiguredDatabase) {
  auto db0 = client();
  auto db3 = client({.db = 3});
  ASSERT_NE(db0, nullptr);
  ASSERT_NE(db3, nullptr);
  ASSERT_TRUE(db0->command({"DEL", "select:key"}).ok());
  ASSERT_TRUE(db3->command({"SET", "select:key", "in db 3"}).ok());
  EXPECT_EQ(value(db3->command({"GET", "select:key"})), Reply::bulk("in db 3"));
  EXPECT_EQ(value(db0->command({"GET", "select:key"})), Reply::nil());
  StatusOr<Reply> info = db3->command({"CLIENT", "INFO"});
  ASSERT_TRUE(info.ok());
  EXPECT_THAT(info->as_string(), HasSubstr(" db=3 "));
}

TEST_F(ClientTest, RejectsADatabaseIndexTheServerDoesNotHave) {
  auto redis = client({.db = 999});
  ASSERT_NE(redis, nullptr);
  StatusOr<Reply> reply = redis->command({"PING"});
  ASSERT_FALSE(reply.ok());
  EXPECT_THAT(reply.status().message(), HasSubstr("SELECT"));
  EXPECT_THAT(reply.status().message(), HasSubstr("DB index is out of range"));
}

TEST_F(ClientTest, ComputesTheSameSha1AsRedis) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  for (const std::string& source : std::vector<std::string>{
           "return 1", "return redis.call('TIME')", "--" + std::string(5000, '-') + "\nreturn 2"}) {
    const Script script(source);
    StatusOr<Reply> loaded = redis->command({"SCRIPT", "LOAD", source});
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(*loaded, Reply::bulk(script.sha1()));
  }
}

TEST_F(ClientTest, EvalShaReloadsTheScriptTransparentlyAfterScriptFlush) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  const Script script("return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}");
  ASSERT_TRUE(redis->command({"DEL", "eval:counter"}).ok());
  ASSERT_TRUE(redis->command({"SCRIPT", "FLUSH"}).ok());

  StatusOr<Reply> first = redis->eval_script(script, {"eval:counter"}, {"arg\0"s});
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(*first,
            Reply::array({Reply::bulk("eval:counter"), Reply::bulk("arg\0"s), Reply::integer(1)}));
  EXPECT_EQ(redis->stats().script_reloads, 1u);

  StatusOr<Reply> cached = redis->eval_script(script, {"eval:counter"}, {"b"});
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->elements().at(2), Reply::integer(2));
  EXPECT_EQ(redis->stats().script_reloads, 1u);  // EVALSHA found it

  ASSERT_TRUE(redis->command({"SCRIPT", "FLUSH"}).ok());
  // Many concurrent calls hit NOSCRIPT at once; each is retried once and all succeed.
  constexpr int kCalls = 50;
  Countdown countdown(kCalls);
  std::atomic<int> failed{0};
  for (int i = 0; i < kCalls; ++i) {
    redis->async_eval_script(script, {"eval:counter"}, {"c"}, [&](const StatusOr<Reply>& reply) {
      if (!reply.ok() || !reply->is_array()) ++failed;
      countdown.done();
    });
  }
  ASSERT_TRUE(countdown.wait());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(value(redis->command({"GET", "eval:counter"})),
            Reply::bulk(std::to_string(2 + kCalls)));
  EXPECT_GE(redis->stats().script_reloads, 2u);
}

TEST_F(ClientTest, ScriptErrorsAreInternalWithTheRedisMessage) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  StatusOr<Reply> reply = redis->eval_script(Script("return redis.call('NOSUCHCOMMAND')"), {}, {});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal);
  EXPECT_THAT(reply.status().message(), HasSubstr("user_script"));
}

TEST_F(ClientTest, ExecuteAcceptsARequestCarryingItsKey) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  StatusOr<Reply> reply = redis->execute({.args = {"SET", "routed:key", "v"}, .key_index = 1});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(*reply, Reply::status("OK"));
}

TEST_F(ClientTest, ResolvesHostNames) {
  StatusOr<std::unique_ptr<Multiplexer>> by_name =
      Multiplexer::create({.host = "localhost", .port = server_->port()});
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(value(by_name.value()->command({"PING"})), Reply::status("PONG"));
}

TEST_F(ClientTest, BlockingCallFromACallbackIsRefusedInsteadOfDeadlocking) {
  auto redis = client();
  ASSERT_NE(redis, nullptr);
  Countdown countdown(1);
  Status nested;
  redis->async_command({"PING"}, [&](const StatusOr<Reply>&) {
    nested = redis->command({"PING"}).status();
    countdown.done();
  });
  ASSERT_TRUE(countdown.wait());
  EXPECT_EQ(nested.code(), StatusCode::kFailedPrecondition);
}

TEST_F(ClientTest, AThrowingCallbackDoesNotBreakTheConnection) {
  auto redis = client({.connections = 1});
  ASSERT_NE(redis, nullptr);
  Countdown countdown(1);
  redis->async_command({"PING"}, [&](const StatusOr<Reply>&) {
    countdown.done();
    throw std::runtime_error("callback bug");
  });
  ASSERT_TRUE(countdown.wait());
  EXPECT_EQ(value(redis->command({"ECHO", "still fine"})), Reply::bulk("still fine"));
}

TEST_F(ClientTest, DestroyingTheClientCompletesEveryOutstandingRequest) {
  constexpr int kRequests = 2000;
  std::atomic<int> completed{0};
  std::atomic<int> unexpected{0};
  {
    auto redis = client();
    ASSERT_NE(redis, nullptr);
    for (int i = 0; i < kRequests; ++i) {
      redis->async_command({"ECHO", "x"}, [&](const StatusOr<Reply>& reply) {
        if (!reply.ok() && reply.status().code() != StatusCode::kCancelled &&
            reply.status().code() != StatusCode::kUnavailable) {
          ++unexpected;
        }
        ++completed;
      });
    }
  }
  EXPECT_EQ(completed.load(), kRequests);
  EXPECT_EQ(unexpected.load(), 0);
}

TEST(ClientOptionsTest, InvalidOptionsAreRefusedNamingTheField) {
  struct Case {
    MultiplexerOptions options;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{.host = ""}, "host"},
      {{.port = 0}, "port"},
      {{.db = -1}, "db"},
      {{.connections = 0}, "connections"},
      {{.io_threads = 0}, "io_threads"},
      {{.connect_timeout = 0}, "connect_timeout"},
      {{.command_timeout = -1}, "command_timeout"},
      {{.reconnect_backoff_min = 0}, "reconnect_backoff_min"},
      {{.reconnect_backoff_min = 10, .reconnect_backoff_max = 5}, "reconnect_backoff_max"},
      {{.username = "alice"}, "username"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    StatusOr<std::unique_ptr<Multiplexer>> client = Multiplexer::create(c.options);
    ASSERT_FALSE(client.ok());
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(client.status().message(), HasSubstr(c.field));
  }
}

// ---- TLS: a redis-server with --tls-port, certificates made by the test ----

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> dir = test::make_temp_dir("sluice-tls-");
    ASSERT_TRUE(dir.ok()) << dir.status().to_string();
    dir_ = *dir;
    StatusOr<test::TestCertificates> certificates = test::make_test_certificates(dir_);
    ASSERT_TRUE(certificates.ok()) << certificates.status().to_string();
    certificates_ = *certificates;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A server answering TLS on its own port (and plain PING on the fixture's port).
  std::unique_ptr<RedisServer> start_tls_server(std::string auth_clients, std::uint16_t& tls_port) {
    StatusOr<std::uint16_t> port = RedisServer::pick_free_port();
    EXPECT_TRUE(port.ok());
    tls_port = port.ok() ? *port : 0;
    return start_server(
        {.extra_args = {"--tls-port", std::to_string(tls_port), "--tls-cert-file",
                        certificates_.server_cert, "--tls-key-file", certificates_.server_key,
                        "--tls-ca-cert-file", certificates_.ca_cert, "--tls-auth-clients",
                        std::move(auth_clients)}});
  }

  static MultiplexerOptions tls_options(std::uint16_t port, TlsOptions tls) {
    tls.enabled = true;
    return {.host = "127.0.0.1", .port = port, .tls = std::move(tls)};
  }

  std::string dir_;
  test::TestCertificates certificates_;
};

TEST_F(ClientTlsTest, TalksToRedisOverTlsWithTheServersCertificateVerified) {
  std::uint16_t port = 0;
  auto server = start_tls_server("no", port);
  ASSERT_NE(server, nullptr);
  // By IP address (the certificate's IP SAN) and by host name (its DNS SAN).
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    MultiplexerOptions options = tls_options(port, {.ca_file = certificates_.ca_cert});
    options.host = host;
    StatusOr<std::unique_ptr<Multiplexer>> client = Multiplexer::create(options);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    EXPECT_EQ(value((*client)->command({"SET", "k", std::string("v\0\r\n", 4)})),
              Reply::status("OK"));
    EXPECT_EQ(value((*client)->command({"GET", "k"})), Reply::bulk(std::string("v\0\r\n", 4)));
    // Many callers at once: replies stay paired through TLS.
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          const std::string text = std::to_string(t * 1000 + i);
          StatusOr<Reply> echoed = (*client)->command({"ECHO", text});
          if (!echoed.ok() || *echoed != Reply::bulk(text)) ++wrong;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(wrong.load(), 0);
    const Script script("return redis.call('INCR', KEYS[1])");
    StatusOr<Reply> counted = (*client)->eval_script(script, {"counter"}, {});
    ASSERT_TRUE(counted.ok()) << counted.status().to_string();
  }
}

TEST_F(ClientTlsTest, AWrongCaOrNameIsAClearConfigurationError) {
  std::uint16_t port = 0;
  auto server = start_tls_server("no", port);
  ASSERT_NE(server, nullptr);
  struct Case {
    std::string what;
    TlsOptions tls;
    std::string reason;
  };
  const std::vector<Case> cases = {
      // OpenSSL names it by what it found: the server's chain ends in a CA it does not trust.
      {"another CA", {.ca_file = certificates_.other_ca_cert}, "certificate"},
      {"another name",
       {.ca_file = certificates_.ca_cert, .server_name = "cache.example"},
       "hostname mismatch"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    StatusOr<std::unique_ptr<Multiplexer>> client = Multiplexer::create(tls_options(port, c.tls));
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    StatusOr<Reply> reply = (*client)->command({"PING"});
    const auto deadline = SteadyClock::now() + kWaitLimit;
    // The first attempt may still be connecting: wait for its verdict, not for a timeout.
    while (!reply.ok() && reply.status().code() == StatusCode::kUnavailable &&
           SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      reply = (*client)->command({"PING"});
    }
    ASSERT_FALSE(reply.ok()) << "a certificate that must not verify was accepted";
    EXPECT_EQ(reply.status().code(), StatusCode::kFailedPrecondition) << reply.status().to_string();
    EXPECT_THAT(reply.status().message(), HasSubstr("TLS handshake with redis"));
    EXPECT_THAT(reply.status().message(), HasSubstr(c.reason));
    EXPECT_THAT(reply.status().message(), Not(HasSubstr("timed out")));
  }
}

TEST_F(ClientTlsTest, AServerThatRequiresClientCertificatesAdmitsOnlyAClientWithOne) {
  std::uint16_t port = 0;
  auto server = start_tls_server("yes", port);
  ASSERT_NE(server, nullptr);
  StatusOr<std::unique_ptr<Multiplexer>> with =
      Multiplexer::create(tls_options(port, {.ca_file = certificates_.ca_cert,
                                             .cert_file = certificates_.client_cert,
                                             .key_file = certificates_.client_key}));
  ASSERT_TRUE(with.ok()) << with.status().to_string();
  EXPECT_EQ(value((*with)->command({"PING"})), Reply::status("PONG"));

  StatusOr<std::unique_ptr<Multiplexer>> without =
      Multiplexer::create(tls_options(port, {.ca_file = certificates_.ca_cert}));
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE((*without)->command({"PING"}).ok()) << "a client without a certificate was served";
}

TEST_F(ClientTlsTest, UnreadableFilesAreRefusedAtCreateNamingTheOption) {
  const std::string missing = dir_ + "/missing.pem";
  struct Case {
    TlsOptions tls;
    std::string part;
  };
  const std::vector<Case> cases = {
      {{.ca_file = missing}, "ca_file \"" + missing + "\""},
      {{.ca_file = certificates_.ca_cert,
        .cert_file = missing,
        .key_file = certificates_.client_key},
       "cert_file"},
      {{.ca_file = certificates_.ca_cert,
        .cert_file = certificates_.client_cert,
        .key_file = certificates_.server_key},
       "key values mismatch"},
      {{.ca_file = certificates_.ca_cert, .cert_file = certificates_.client_cert},
       "both cert_file and key_file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.part);
    StatusOr<std::unique_ptr<Multiplexer>> client = Multiplexer::create(tls_options(6379, c.tls));
    ASSERT_FALSE(client.ok());
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(client.status().message(), HasSubstr(c.part));
  }
}

// ---- tests with their own server: authentication, outages, a blocked server ----

TEST(ClientAuthTest, AuthenticatesWithRequirepass) {
  auto server = start_server({.requirepass = "s3cret pass"});
  ASSERT_NE(server, nullptr);

  auto good = make_client(server->port(), {.password = "s3cret pass"});
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(value(good->command({"PING"})), Reply::status("PONG"));

  auto none = make_client(server->port());
  ASSERT_NE(none, nullptr);
  StatusOr<Reply> refused = none->command({"GET", "k"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(refused.status().message(), HasSubstr("NOAUTH"));

  auto wrong = make_client(server->port(), {.password = "guess"});
  ASSERT_NE(wrong, nullptr);
  StatusOr<Reply> bad = wrong->command({"PING"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(bad.status().message(), HasSubstr("handshake"));
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("guess")));
}

TEST(ClientAuthTest, AuthenticatesAsAnAclUser) {
  auto server = start_server(
      {.extra_args = {"--user", "alice", "on", ">wonderland", "~*", "&*", "+@all", "--user",
                      "reader", "on", ">r", "~*", "+@read", "+ping", "+select"}});
  ASSERT_NE(server, nullptr);

  auto alice =
      make_client(server->port(), {.username = "alice", .password = "wonderland", .db = 2});
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(value(alice->command({"ACL", "WHOAMI"})), Reply::bulk("alice"));
  EXPECT_EQ(value(alice->command({"SET", "acl:key", "v"})), Reply::status("OK"));

  auto reader = make_client(server->port(), {.username = "reader", .password = "r", .db = 2});
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(value(reader->command({"GET", "acl:key"})), Reply::bulk("v"));
  StatusOr<Reply> denied = reader->command({"SET", "acl:key", "w"});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);

  auto wrong = make_client(server->port(), {.username = "alice", .password = "nope"});
  ASSERT_NE(wrong, nullptr);
  StatusOr<Reply> bad = wrong->command({"PING"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(bad.status().message(), HasSubstr("WRONGPASS"));
}

TEST(ClientOutageTest, FailsFastWhileRedisIsAbsentAndRecoversWhenItStarts) {
  StatusOr<std::uint16_t> port = RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok());
  auto redis = make_client(*port, {.connect_timeout = 2 * kMicrosPerSecond,
                                   .reconnect_backoff_max = 50 * kMicrosPerMilli});
  ASSERT_NE(redis, nullptr);

  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    const auto start = SteadyClock::now();
    StatusOr<Reply> reply = redis->command({"PING"});
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(reply.status().message(), HasSubstr(std::to_string(*port)));
    // Generous upper bound: well under the 2 s connect timeout, no queueing.
    EXPECT_LT(elapsed_since(start), std::chrono::milliseconds(1000));
  }
  EXPECT_GE(redis->stats().connect_failures, 1u);

  auto server = start_server({.port = *port});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(wait_until_answering(*redis)) << "the same client never recovered";
  EXPECT_GE(redis->stats().connects, 1u);
}

TEST(ClientOutageTest, InFlightCallsFailWhenTheServerIsKilledAndLaterCallsRecover) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  const MultiplexerOptions options = {.connect_timeout = 500 * kMicrosPerMilli,
                                      .command_timeout = 500 * kMicrosPerMilli,
                                      .reconnect_backoff_max = 50 * kMicrosPerMilli};
  auto redis = make_client(server->port(), options);
  ASSERT_NE(redis, nullptr);
  ASSERT_TRUE(wait_until_answering(*redis));

  constexpr int kThreads = 8;
  std::atomic<bool> stop{false};
  std::atomic<int> successes{0};
  std::atomic<int> failures{0};
  std::mutex mu;
  std::map<StatusCode, int> failure_codes;
  std::chrono::milliseconds slowest{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = "kill:" + std::to_string(t);
      while (!stop.load()) {
        const auto start = SteadyClock::now();
        StatusOr<Reply> reply = redis->command({"INCR", key});
        const auto took = elapsed_since(start);
        std::lock_guard lock(mu);
        slowest = std::max(slowest, took);
        if (reply.ok()) {
          ++successes;
        } else {
          ++failures;
          ++failure_codes[reply.status().code()];
        }
      }
    });
  }
  const auto wait_for = [&](const std::function<bool()>& condition) {
    const auto deadline = SteadyClock::now() + kWaitLimit;
    while (!condition() && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
  };

  EXPECT_TRUE(wait_for([&] { return successes.load() >= 2000; }));
  ASSERT_TRUE(server->kill_hard().ok());
  EXPECT_TRUE(wait_for([&] { return failures.load() >= 200; }));

  ASSERT_TRUE(server->restart().ok());
  const int successes_before_recovery = successes.load();
  EXPECT_TRUE(wait_for([&] { return successes.load() >= successes_before_recovery + 2000; }))
      << "calls did not recover after the restart";
  stop = true;
  for (std::thread& thread : threads) thread.join();

  std::lock_guard lock(mu);
  for (const auto& [code, count] : failure_codes) {
    SCOPED_TRACE(std::string(status_code_name(code)) + " x" + std::to_string(count));
    EXPECT_THAT(code, AnyOf(StatusCode::kUnavailable, StatusCode::kDeadlineExceeded));
  }
  // Nothing waited longer than a connect attempt plus a command timeout (generous bound).
  EXPECT_LT(slowest, std::chrono::milliseconds(3000));
}

TEST(ClientTimeoutTest, ACommandWithoutAReplyWithinTheTimeoutFailsWithDeadlineExceeded) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto redis = make_client(server->port(), {.connections = 1,
                                            .command_timeout = 100 * kMicrosPerMilli,
                                            .reconnect_backoff_max = 50 * kMicrosPerMilli});
  ASSERT_NE(redis, nullptr);
  ASSERT_TRUE(wait_until_answering(*redis));

  const auto start = SteadyClock::now();
  Countdown countdown(11);
  StatusOr<Reply> sleep_result = Reply();
  std::vector<StatusCode> behind;
  std::mutex mu;
  redis->async_command({"DEBUG", "SLEEP", "1"}, [&](StatusOr<Reply> reply) {
    sleep_result = std::move(reply);
    countdown.done();
  });
  for (int i = 0; i < 10; ++i) {
    redis->async_command({"PING"}, [&](const StatusOr<Reply>& reply) {
      std::lock_guard lock(mu);
      behind.push_back(reply.status().code());
      countdown.done();
    });
  }
  ASSERT_TRUE(countdown.wait());
  // Generous upper bound: far less than the server's 1 s sleep.
  EXPECT_LT(elapsed_since(start), std::chrono::milliseconds(800));
  ASSERT_FALSE(sleep_result.ok());
  EXPECT_EQ(sleep_result.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(sleep_result.status().message(), HasSubstr("100ms"));
  for (StatusCode code : behind) {
    EXPECT_THAT(code, AnyOf(StatusCode::kUnavailable, StatusCode::kDeadlineExceeded));
  }
  EXPECT_GE(redis->stats().timeouts, 1u);

  // Once the server wakes up, the same client works again.
  EXPECT_TRUE(wait_until_answering(*redis));
}

}  // namespace
}  // namespace sluice::redis
