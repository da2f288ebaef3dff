// HTTPS: the in-process server with certificates this test makes (openssl CLI, in a temporary
// directory), spoken to by an Asio/OpenSSL client that can offer old protocols, present or
// withhold a client certificate, and trust a chosen CA; and by the raw plain-TCP client.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)

#include "sluice/server/http/server.h"
#include "sluice/server/http/test_http_client.h"
#include "testing/subprocess.h"
#include "testing/test_certificates.h"

namespace sluice::http {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

// The test's PKI (testing/test_certificates.h) in a directory of its own; paths of files that do
// not exist are named in that directory too.
class Certificates {
 public:
  Certificates() {
    StatusOr<std::string> dir = test::make_temp_dir("sluice-tls-");
    if (!dir.ok()) return;
    dir_ = *dir;
    StatusOr<test::TestCertificates> made = test::make_test_certificates(dir_.string());
    if (made.ok()) files_ = *made;
    made_ = made.ok();
  }
  ~Certificates() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  bool made() const { return made_; }
  const test::TestCertificates* operator->() const { return &files_; }
  std::string missing(std::string_view name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
  test::TestCertificates files_;
  bool made_ = false;
};

struct ClientOptions {
  std::string trusted_ca;  // the CA the client verifies the server against
  std::string cert;        // empty: no client certificate
  std::string key;
  int max_version = 0;  // e.g. TLS1_1_VERSION; 0: the library's newest
  std::string request = "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
};

struct ClientResult {
  std::string handshake_error;  // empty: the handshake succeeded
  std::string response;         // everything read until the server closed
};

// One request over TLS on a new connection. Blocking, with 5 s socket timeouts.
ClientResult tls_exchange(std::uint16_t port, const ClientOptions& options) {
  asio::io_context io;
  asio::ssl::context context(asio::ssl::context::tls_client);
  SSL_CTX* native = context.native_handle();
  if (options.max_version != 0) {
    // Offer the old protocol for real (OpenSSL 3 refuses it below security level 0), so a
    // refusal can only come from the server.
    SSL_CTX_set_security_level(native, 0);
    SSL_CTX_set_cipher_list(native, "DEFAULT:@SECLEVEL=0");
    SSL_CTX_set_min_proto_version(native, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(native, options.max_version);
  }
  context.load_verify_file(options.trusted_ca);
  context.set_verify_mode(asio::ssl::verify_peer);
  if (!options.cert.empty()) {
    context.use_certificate_chain_file(options.cert);
    context.use_private_key_file(options.key, asio::ssl::context::pem);
  }
  asio::ssl::stream<tcp::socket> stream(io, context);
  stream.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  const timeval timeout{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(stream.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout,
               sizeof timeout);
  SSL_set_tlsext_host_name(stream.native_handle(), "localhost");
  ClientResult result;
  boost::system::error_code ec;
  stream.handshake(asio::ssl::stream_base::client, ec);
  if (ec) {
    result.handshake_error = ec.message();
    if (result.handshake_error.empty()) result.handshake_error = "failed";
    return result;
  }
  asio::write(stream, asio::buffer(options.request), ec);
  char chunk[4096];
  while (!ec) {
    const std::size_t n = stream.read_some(asio::buffer(chunk), ec);
    result.response.append(chunk, n);
  }
  // A TLS 1.3 server may only now refuse a client certificate (after the client's Finished).
  if (result.response.empty())
    result.handshake_error = "refused after the handshake: " + ec.message();
  return result;
}

// The server counts a failed handshake in its completion handler, which may run just after the
// client saw the failure: wait (bounded) until the count reaches `expected`, then report it.
std::uint64_t handshake_failures(const HttpServer& server, std::uint64_t expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.connection_stats().tls_handshake_failures < expected &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  return server.connection_stats().tls_handshake_failures;
}

std::shared_ptr<Router> hello_router() {
  auto router = std::make_shared<Router>();
  router->add("GET", "/hello", [](std::shared_ptr<Exchange> exchange) {
    exchange->respond({.status = 200, .content_type = "text/plain", .body = "hello"});
  });
  return router;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(certs_.made()) << "openssl could not make certificates"; }

  HttpServerOptions tls_options(std::string client_ca = {}) const {
    HttpServerOptions options;
    options.port = 0;
    options.io_threads = 2;
    options.access_log = false;
    options.tls = TlsOptions{.cert_file = certs_->server_cert,
                             .key_file = certs_->server_key,
                             .client_ca_file = std::move(client_ca)};
    return options;
  }

  std::unique_ptr<HttpServer> start(HttpServerOptions options) {
    StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::start(options, hello_router());
    EXPECT_TRUE(server.ok()) << server.status().to_string();
    return server.ok() ? std::move(*server) : nullptr;
  }

  ClientResult get(std::uint16_t port, ClientOptions options = {}) const {
    if (options.trusted_ca.empty()) options.trusted_ca = certs_->ca_cert;
    return tls_exchange(port, options);
  }

  Certificates certs_;
};

TEST_F(TlsTest, AnswersOverTlsWithHstsAndPlainHttpHasNone) {
  std::unique_ptr<HttpServer> server = start(tls_options());
  ASSERT_NE(server, nullptr);
  const ClientResult result = get(server->port());
  ASSERT_EQ(result.handshake_error, "");
  EXPECT_TRUE(result.response.starts_with("HTTP/1.1 200 OK\r\n")) << result.response;
  EXPECT_TRUE(result.response.ends_with("\r\n\r\nhello")) << result.response;
  EXPECT_NE(result.response.find("\r\nStrict-Transport-Security: max-age=31536000\r\n"),
            std::string::npos)
      << result.response;

  HttpServerOptions plain = tls_options();
  plain.tls.reset();
  std::unique_ptr<HttpServer> plain_server = start(plain);
  ASSERT_NE(plain_server, nullptr);
  StatusOr<test::RawResponse> response = test::http_request(plain_server->port(), "GET", "/hello");
  ASSERT_TRUE(response.ok()) << response.status().to_string();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello");
  EXPECT_EQ(response->header("Strict-Transport-Security"), std::nullopt);
}

TEST_F(TlsTest, HstsMaxAgeZeroSendsNoHeader) {
  HttpServerOptions options = tls_options();
  options.tls->hsts_max_age = 0;
  std::unique_ptr<HttpServer> server = start(options);
  ASSERT_NE(server, nullptr);
  const ClientResult result = get(server->port());
  ASSERT_EQ(result.handshake_error, "");
  EXPECT_TRUE(result.response.starts_with("HTTP/1.1 200 OK\r\n")) << result.response;
  EXPECT_EQ(result.response.find("Strict-Transport-Security"), std::string::npos);
}

TEST_F(TlsTest, RefusesTls11ButTheSameClientSucceedsWithTls12) {
  std::unique_ptr<HttpServer> server = start(tls_options());
  ASSERT_NE(server, nullptr);
  const ClientResult old = get(server->port(), {.max_version = TLS1_1_VERSION});
  // The server's alert, not a client that would not offer TLS 1.1.
  EXPECT_NE(old.handshake_error.find("protocol version"), std::string::npos) << old.handshake_error;
  EXPECT_EQ(old.response, "");
  const ClientResult current = get(server->port(), {.max_version = TLS1_2_VERSION});
  EXPECT_EQ(current.handshake_error, "");
  EXPECT_TRUE(current.response.starts_with("HTTP/1.1 200 OK\r\n")) << current.response;
  EXPECT_EQ(handshake_failures(*server, 1), 1u);
}

TEST_F(TlsTest, AClientTrustingAnotherCaRefusesTheServer) {
  std::unique_ptr<HttpServer> server = start(tls_options());
  ASSERT_NE(server, nullptr);
  const ClientResult result = get(server->port(), {.trusted_ca = certs_->other_ca_cert});
  EXPECT_NE(result.handshake_error.find("certificate verify failed"), std::string::npos)
      << result.handshake_error;
  EXPECT_EQ(result.response, "");
}

TEST_F(TlsTest, ClientCertificateModeAcceptsOnlyCertificatesOfItsCa) {
  std::unique_ptr<HttpServer> server = start(tls_options(certs_->ca_cert));
  ASSERT_NE(server, nullptr);
  const ClientResult without = get(server->port());
  EXPECT_NE(without.handshake_error, "") << without.response;
  EXPECT_EQ(without.response, "");
  const ClientResult stranger =
      get(server->port(), {.cert = certs_->stranger_cert, .key = certs_->stranger_key});
  EXPECT_NE(stranger.handshake_error, "") << stranger.response;
  EXPECT_EQ(stranger.response, "");
  const ClientResult with =
      get(server->port(), {.cert = certs_->client_cert, .key = certs_->client_key});
  EXPECT_EQ(with.handshake_error, "");
  EXPECT_TRUE(with.response.starts_with("HTTP/1.1 200 OK\r\n")) << with.response;
  EXPECT_EQ(handshake_failures(*server, 2), 2u);
}

TEST_F(TlsTest, PlainHttpOnTheTlsPortIsClosedAndTheServerKeepsServing) {
  std::unique_ptr<HttpServer> server = start(tls_options());
  ASSERT_NE(server, nullptr);
  StatusOr<test::RawConnection> plain = test::RawConnection::open(server->port());
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  ASSERT_TRUE(plain->send("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n").ok());
  EXPECT_TRUE(plain->closed_by_peer(2'000));
  const ClientResult after = get(server->port());
  EXPECT_EQ(after.handshake_error, "");
  EXPECT_TRUE(after.response.starts_with("HTTP/1.1 200 OK\r\n")) << after.response;
  EXPECT_EQ(handshake_failures(*server, 1), 1u);
}

TEST_F(TlsTest, AStalledHandshakeIsClosedAfterTheHandshakeTimeout) {
  HttpServerOptions options = tls_options();
  options.tls_handshake_timeout = 200 * kMicrosPerMilli;
  options.first_request_timeout = 60 * kMicrosPerSecond;  // the handshake's own bound applies
  std::unique_ptr<HttpServer> server = start(options);
  ASSERT_NE(server, nullptr);
  StatusOr<test::RawConnection> silent = test::RawConnection::open(server->port());
  ASSERT_TRUE(silent.ok()) << silent.status().to_string();
  EXPECT_TRUE(silent->closed_by_peer(3'000));
  EXPECT_EQ(handshake_failures(*server, 1), 1u);
}

TEST_F(TlsTest, ConnectionCapEvictsAConnectionStillInItsHandshake) {
  HttpServerOptions options = tls_options();
  options.io_threads = 1;  // eviction looks among the connections of one I/O thread
  options.max_connections = 2;
  std::unique_ptr<HttpServer> server = start(options);
  ASSERT_NE(server, nullptr);
  StatusOr<test::RawConnection> first = test::RawConnection::open(server->port());
  StatusOr<test::RawConnection> second = test::RawConnection::open(server->port());
  ASSERT_TRUE(first.ok() && second.ok());
  const ClientResult result = get(server->port());
  EXPECT_EQ(result.handshake_error, "");
  EXPECT_TRUE(result.response.starts_with("HTTP/1.1 200 OK\r\n")) << result.response;
  EXPECT_GE(server->connection_stats().evicted, 1u);
}

TEST_F(TlsTest, HeaderLimitAppliesOverTls) {
  HttpServerOptions options = tls_options();
  options.max_header_bytes = 1024;
  std::unique_ptr<HttpServer> server = start(options);
  ASSERT_NE(server, nullptr);
  const std::string request =
      "GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n";
  const ClientResult result = get(server->port(), {.request = request});
  EXPECT_EQ(result.handshake_error, "");
  EXPECT_TRUE(result.response.starts_with("HTTP/1.1 431 ")) << result.response;
}

TEST_F(TlsTest, StartRefusesUnreadableMismatchedOrMalformedFilesNamingTheSetting) {
  struct Case {
    std::string name;
    TlsOptions tls;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"missing cert",
       {.cert_file = certs_.missing("nope.pem"), .key_file = certs_->server_key},
       "tls_cert " + certs_.missing("nope.pem") + ": cannot be read: No such file or directory"},
      {"missing key",
       {.cert_file = certs_->server_cert, .key_file = certs_.missing("nope.key")},
       "tls_key " + certs_.missing("nope.key") + ": cannot be read"},
      {"garbage cert",
       {.cert_file = certs_->garbage, .key_file = certs_->server_key},
       "tls_cert " + certs_->garbage + ": not a PEM certificate chain"},
      {"garbage key",
       {.cert_file = certs_->server_cert, .key_file = certs_->garbage},
       "tls_key " + certs_->garbage + ": not an unencrypted PEM private key"},
      {"key of another certificate",
       {.cert_file = certs_->server_cert, .key_file = certs_->client_key},
       "tls_key " + certs_->client_key + ": does not match the certificate in " +
           certs_->server_cert},
      {"missing client CA",
       {.cert_file = certs_->server_cert,
        .key_file = certs_->server_key,
        .client_ca_file = certs_.missing("nope-ca.pem")},
       "tls_client_ca " + certs_.missing("nope-ca.pem") + ": cannot be read"},
      {"garbage client CA",
       {.cert_file = certs_->server_cert,
        .key_file = certs_->server_key,
        .client_ca_file = certs_->garbage},
       "tls_client_ca " + certs_->garbage + ": "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Status checked = check_tls_options(c.tls);
    EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(checked.message().starts_with(c.expected)) << checked.message();
    HttpServerOptions options = tls_options();
    options.tls = c.tls;
    StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::start(options, hello_router());
    EXPECT_EQ(server.status().message(), checked.message());
  }
  EXPECT_TRUE(check_tls_options(*tls_options(certs_->ca_cert).tls).ok());
}

}  // namespace
}  // namespace sluice::http
