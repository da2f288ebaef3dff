// Bytes from the network, as `sluice serve` receives them: one in-process decision server (the
// HTTP framing of server.cc, the router, the JSON bodies of the decision API over the memory
// store), and each input sent on a fresh loopback connection, then half-closed. The server must
// answer or close every connection, whatever arrives: a crash, a sanitizer report, or a
// connection left open past the read deadline fails the run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>

#include "fuzz/fuzz_input.h"
#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/metrics.h"
#include "sluice/server/http/router.h"
#include "sluice/server/http/server.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"

namespace {

using namespace sluice;

constexpr const char* kPolicies = R"([
  {"name": "demo.api", "apps": ["*"], "limits": [
     {"algorithm": "token_bucket", "capacity": 5, "refill": 2, "period": "1s"}]},
  {"name": "jobs", "apps": ["*"], "limits": [
     {"algorithm": "concurrency", "limit": 2, "lease_ttl": "1m"}]}
])";

// Small limits, so that inputs reach the 413/431/400 paths within libFuzzer's input sizes.
constexpr std::size_t kMaxHeaderBytes = 1024;
constexpr std::size_t kMaxBodyBytes = 4096;

class Server {
 public:
  Server()
      : store_(SystemClock::instance()),
        lookup_(policy::policies_from_text(kPolicies).policies),
        limiter_(store_, &store_, {.policies = &lookup_}),
        api_(limiter_, store_, metrics_) {
    auto router = std::make_shared<http::Router>();
    api_.add_routes(*router);
    server_ = http::HttpServer::start({.port = 0,
                                       .io_threads = 1,
                                       .max_header_bytes = kMaxHeaderBytes,
                                       .max_body_bytes = kMaxBodyBytes,
                                       .read_timeout = kMicrosPerSecond,
                                       .access_log = false},
                                      router)
                  .value();
  }
  std::uint16_t port() const { return server_->port(); }

 private:
  store::MemoryStore store_;
  service::StaticPolicyLookup lookup_;
  service::Limiter limiter_;
  http::Metrics metrics_;
  http::DecisionApi api_;
  std::unique_ptr<http::HttpServer> server_;
};

// Sends `bytes`, half-closes, and reads until the server closes. False when it stays open for
// two seconds, twice the server's read deadline.
bool exchange(std::uint16_t port, std::string_view bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  fuzz::require(fd >= 0, "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fuzz::require(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
                "connect to the server");
  const timeval timeout{.tv_sec = 2, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  // The server may answer and close before reading everything (a 431): a failed send is fine.
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  char buffer[4096];
  bool closed = false;
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) continue;
    closed = n == 0 || errno == ECONNRESET;
    break;
  }
  ::close(fd);
  return closed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Server* server = new Server();  // lives for the whole run; never torn down mid-input
  fuzz::require(exchange(server->port(), fuzz::as_text(data, size)),
                "the server answers or closes every connection within its read deadline");
  return 0;
}
