// The gRPC transport's limits (issue 32: H1, H2, M10 and the timeouts), probed with HTTP/2
// written by hand on raw sockets — what an attacker sends, not what a well-behaved client would —
// next to grpc++ calls that must keep being answered. Timeouts are configured small (100-300 ms):
// the server's own timers are what is tested, so nothing here sleeps for time to pass; waits
// are bounded polls for what the server must do.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/server/grpc/grpc_server.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "testing/descriptor_shortage.h"
#include "testing/eventually.h"

namespace sluice::grpc_server {
namespace {

namespace rls = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;
using test::eventually;

constexpr std::string_view kPolicies = R"(
name: limits.per_user
apps: [web]
descriptors: {entries: [{key: user}]}
limits: [{algorithm: token_bucket, capacity: 1000000, refill: 1, period: 1d}]
)";

constexpr std::uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kSettings = 0x4, kPing = 0x6,
                       kGoaway = 0x7, kContinuation = 0x9;
constexpr std::uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kAck = 0x1;

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload) {
  std::string out;
  const auto length = static_cast<std::uint32_t>(payload.size());
  out.push_back(static_cast<char>(length >> 16));
  out.push_back(static_cast<char>(length >> 8));
  out.push_back(static_cast<char>(length));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>(stream >> 24 & 0x7f));
  out.push_back(static_cast<char>(stream >> 16));
  out.push_back(static_cast<char>(stream >> 8));
  out.push_back(static_cast<char>(stream));
  out.append(payload);
  return out;
}

// HPACK integer with a 7-bit prefix (RFC 7541 §5.1), for string lengths.
void hpack_length(std::size_t value, std::string& out) {
  if (value < 127) {
    out.push_back(static_cast<char>(value));
    return;
  }
  out.push_back(127);
  value -= 127;
  while (value >= 128) {
    out.push_back(static_cast<char>(value % 128 + 128));
    value /= 128;
  }
  out.push_back(static_cast<char>(value));
}

// A literal header field without indexing, with a literal name (RFC 7541 §6.2.2).
std::string literal(std::string_view name, std::string_view value) {
  std::string out(1, '\0');
  hpack_length(name.size(), out);
  out.append(name);
  hpack_length(value.size(), out);
  out.append(value);
  return out;
}

std::string request_block(std::string_view path) {
  return literal(":method", "POST") + literal(":scheme", "http") + literal(":path", path) +
         literal(":authority", "localhost") + literal("content-type", "application/grpc") +
         literal("te", "trailers");
}

constexpr std::string_view kRlsPath =
    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

struct Frame {
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::uint32_t stream = 0;
  std::string payload;
};

// One raw HTTP/2 connection.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }

  // False once the server has closed (EPIPE, ECONNRESET).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // The client preface and SETTINGS (`settings`: their payload); then the server's SETTINGS are
  // acknowledged.
  bool handshake(std::string_view settings = "") {
    if (!send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(kSettings, 0, 0, settings))) {
      return false;
    }
    for (;;) {
      std::optional<Frame> f = read_frame(std::chrono::seconds(5));
      if (!f) return false;
      if (f->type == kSettings && (f->flags & kAck) == 0) {
        return send(frame(kSettings, kAck, 0, ""));
      }
    }
  }

  // Opens a call whose request never ends (no END_STREAM), and waits until the server has read
  // it (the server answers a PING sent after it).
  bool open_stream(std::uint32_t stream) {
    if (!send(frame(kHeaders, kEndHeaders, stream, request_block(kRlsPath)) +
              frame(kPing, 0, 0, std::string(8, 'p')))) {
      return false;
    }
    while (std::optional<Frame> f = read_frame(std::chrono::seconds(5))) {
      if (f->type == kPing && (f->flags & kAck) != 0) return true;
    }
    return false;
  }

  // The next frame, or nullopt on EOF, error or `timeout`.
  std::optional<Frame> read_frame(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (buffer_.size() < 9 || buffer_.size() < 9 + payload_length()) {
      if (!fill(deadline)) return std::nullopt;
    }
    Frame f;
    f.type = static_cast<std::uint8_t>(buffer_[3]);
    f.flags = static_cast<std::uint8_t>(buffer_[4]);
    f.stream = (static_cast<std::uint8_t>(buffer_[5]) & 0x7fu) << 24 |
               static_cast<std::uint8_t>(buffer_[6]) << 16 |
               static_cast<std::uint8_t>(buffer_[7]) << 8 | static_cast<std::uint8_t>(buffer_[8]);
    f.payload = buffer_.substr(9, payload_length());
    buffer_.erase(0, 9 + f.payload.size());
    return f;
  }

  // Reads (and drops) frames until the server closes: true when it did within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      buffer_.clear();
      if (eof_) return true;
      if (!fill(deadline)) return eof_;
    }
  }

 private:
  std::size_t payload_length() const {
    return static_cast<std::uint8_t>(buffer_[0]) << 16 |
           static_cast<std::uint8_t>(buffer_[1]) << 8 | static_cast<std::uint8_t>(buffer_[2]);
  }
  // Reads what is there; false on EOF, error or the deadline.
  bool fill(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

// ASan's quarantine keeps freed memory resident (and its shadow grows with use): under it a
// resident-memory bound says nothing, so those checks are left to the plain builds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

// Resident memory of this process (the in-process server's), in bytes.
std::size_t rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class GrpcLimitsTest : public ::testing::Test {
 protected:
  void start(GrpcServerOptions options) {
    StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::start(options, limiter_);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
  }

  void TearDown() override {
    if (server_) server_->shutdown(0);
  }

  // One ShouldRateLimit through grpc++ on a new channel: its status.
  grpc::Status call(std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection of its own
    auto stub = rls::RateLimitService::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials(), args));
    rls::RateLimitRequest request;
    request.set_domain("web");
    auto& entry = *request.add_descriptors()->add_entries();
    entry.set_key("user");
    entry.set_value("alice");
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    rls::RateLimitResponse response;
    return stub->ShouldRateLimit(&context, request, &response);
  }

  ManualClock clock_{1'700'000'000'000'000};
  store::MemoryStore memory_{clock_};
  service::StaticPolicyLookup lookup_{policy::policies_from_text(kPolicies).policies};
  service::Limiter limiter_{memory_, &memory_, {.policies = &lookup_}};
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(GrpcLimitsTest, AConnectionThatNeverSendsThePrefaceIsClosedAtTheHandshakeTimeout) {
  start({.handshake_timeout = 200 * kMicrosPerMilli});
  RawConnection silent(server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.closed_within(std::chrono::seconds(3)));
  EXPECT_GE(server_->stats().timed_out, 1u);
  EXPECT_TRUE(call().ok());
}

TEST_F(GrpcLimitsTest, AConnectionWithNoCallOpenIsSentGoawayAndClosedAtTheIdleTimeout) {
  start({.idle_timeout = 200 * kMicrosPerMilli});
  RawConnection idle(server_->port());
  ASSERT_TRUE(idle.handshake());
  bool goaway = false;
  while (std::optional<Frame> f = idle.read_frame(std::chrono::seconds(3))) {
    goaway = goaway || f->type == kGoaway;
  }
  EXPECT_TRUE(goaway);
  EXPECT_TRUE(idle.closed_within(std::chrono::seconds(1)));
  EXPECT_TRUE(
      eventually([&] { return server_->stats().connections == 0; }, std::chrono::seconds(2)));
}

// H1: connections above the cap are refused while the ones holding calls keep being served, and
// idle holders give their place to a new client.
TEST_F(GrpcLimitsTest, AboveTheConnectionCapNewConnectionsReplaceIdleOnesOrAreRefused) {
  start({.max_connections = 4, .max_connections_per_peer = 4});
  std::vector<std::unique_ptr<RawConnection>> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(busy.back()->handshake());
    ASSERT_TRUE(busy.back()->open_stream(1));  // a call in flight: not idle
  }
  ASSERT_TRUE(
      eventually([&] { return server_->stats().connections == 4; }, std::chrono::seconds(2)));
  RawConnection refused(server_->port());
  EXPECT_TRUE(refused.closed_within(std::chrono::seconds(3)));
  EXPECT_GE(server_->stats().refused, 1u);
  EXPECT_LE(server_->stats().connections, 4u);
  // The holders' calls are still theirs: each finishes its request and gets an answer.
  busy.clear();
  ASSERT_TRUE(
      eventually([&] { return server_->stats().connections == 0; }, std::chrono::seconds(2)));
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(idle.back()->handshake());
  }
  ASSERT_TRUE(
      eventually([&] { return server_->stats().connections == 4; }, std::chrono::seconds(2)));
  const grpc::Status answered = call();
  EXPECT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_GE(server_->stats().evicted, 1u);
  EXPECT_LE(server_->stats().connections, 4u);
}

// H1: out of descriptors, accept fails (EMFILE); once descriptors are free the port answers
// again within seconds (grpc++ 1.51 never accepted again: CVE-2023-4785's behaviour).
TEST_F(GrpcLimitsTest, AfterDescriptorsRunOutAndComeBackTheServerAcceptsAgainWithinSeconds) {
  start({});
  test::DescriptorShortage shortage(/*room=*/8);  // for the clients only
  ASSERT_TRUE(shortage.ok());
  std::vector<std::unique_ptr<RawConnection>> waiting;
  for (int i = 0; i < 8; ++i) waiting.push_back(std::make_unique<RawConnection>(server_->port()));
  const bool accept_failed =
      eventually([&] { return server_->stats().accept_errors > 0; }, std::chrono::seconds(5));
  waiting.clear();
  shortage.end();
  ASSERT_TRUE(accept_failed) << "accept never ran out of descriptors";
  const auto freed = Clock::now();
  const grpc::Status answered = call(std::chrono::seconds(5));
  EXPECT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_LT(Clock::now() - freed, std::chrono::seconds(5));
}

// H2: a header block that never ends (HEADERS without END_HEADERS, then CONTINUATION frames
// without end) closes the connection once it passes max_header_list_bytes; the server's memory
// stays within a few MiB of where it was, and other clients are served. Two shapes: one header
// value that never ends (what grpc++ 1.51 buffered without bound, CVE-2023-33953's class), and
// header fields that each decode.
void flood_header_block(GrpcServer& server, std::string_view first, std::string_view each,
                        std::size_t& sent) {
  RawConnection flood(server.port());
  ASSERT_TRUE(flood.handshake());
  ASSERT_TRUE(flood.send(frame(kHeaders, 0, 1, first)));
  constexpr std::size_t kMaxSent = 64u << 20;  // the flood the test is ready to send
  sent = 0;
  while (sent < kMaxSent && flood.send(frame(kContinuation, 0, 1, each))) sent += each.size();
  EXPECT_LT(sent, kMaxSent) << "the server kept reading an endless header block";
  EXPECT_TRUE(flood.closed_within(std::chrono::seconds(3)));
}

TEST_F(GrpcLimitsTest, AnEndlessHeaderBlockClosesTheConnectionWithMemoryBounded) {
  start({.max_header_list_bytes = 16 * 1024});
  ASSERT_TRUE(call().ok());
  const std::size_t rss_before = rss_bytes();
  // A literal field whose value announces 1 GiB, then its bytes, 16 KiB per CONTINUATION.
  std::string endless_value = request_block(kRlsPath) + std::string(1, '\0');
  hpack_length(7, endless_value);
  endless_value += "x-flood";
  hpack_length(std::size_t{1} << 30, endless_value);
  std::size_t sent = 0;
  flood_header_block(*server_, endless_value, std::string(16 * 1024, 'a'), sent);
  // Literal fields of 1 KiB values, 15 per frame: each CONTINUATION decodes to more headers.
  std::string fields;
  for (int i = 0; i < 15; ++i) fields += literal("x-flood", std::string(1000, 'a'));
  flood_header_block(*server_, request_block(kRlsPath), fields, sent);
  // The announced 1 GiB value is refused by nghttp2's HPACK decoder at once (a field is at most
  // 64 KiB there); the decoded fields by the header list bound.
  EXPECT_GE(server_->stats().header_overflows, 1u);
  if (kRssMeaningful) {
    EXPECT_LT(rss_bytes(), rss_before + (8u << 20));
  }
  EXPECT_TRUE(call().ok());
}

// H2: empty CONTINUATION frames decode to nothing, and are bounded anyway (nghttp2 counts them).
TEST_F(GrpcLimitsTest, EmptyContinuationFramesWithoutEndAreBoundedToo) {
  start({});
  RawConnection flood(server_->port());
  ASSERT_TRUE(flood.handshake());
  ASSERT_TRUE(flood.send(frame(kHeaders, 0, 1, request_block(kRlsPath))));
  std::size_t frames = 0;
  while (frames < 100'000 && flood.send(frame(kContinuation, 0, 1, ""))) ++frames;
  EXPECT_TRUE(flood.closed_within(std::chrono::seconds(3)));
  EXPECT_TRUE(call().ok());
}

// M10: streams whose request never ends are reset at the stream timeout, so they hold nothing for
// long; at most max_concurrent_streams are open at once (SETTINGS), and a client that opens more
// than it was told loses the connection (nghttp2: PROTOCOL_ERROR), freeing every stream.
TEST_F(GrpcLimitsTest, HalfOpenStreamsAreResetAtTheStreamTimeoutAndBoundedPerConnection) {
  start({.max_concurrent_streams = 4, .stream_timeout = 300 * kMicrosPerMilli});
  RawConnection client(server_->port());
  ASSERT_TRUE(client.handshake());
  for (std::uint32_t stream = 1; stream <= 7; stream += 2) ASSERT_TRUE(client.open_stream(stream));
  std::set<std::uint32_t> reset;
  const auto started = Clock::now();
  while (reset.size() < 4) {
    std::optional<Frame> f = client.read_frame(std::chrono::seconds(3));
    if (!f) break;
    if (f->type == kRstStream) reset.insert(f->stream);
  }
  EXPECT_EQ(reset, (std::set<std::uint32_t>{1, 3, 5, 7})) << "streams still open on the server";
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(3));
  EXPECT_GE(server_->stats().streams_reset, 4u);
  // The connection itself is still good: a whole call on it is answered.
  rls::RateLimitRequest request;
  request.set_domain("web");
  auto& entry = *request.add_descriptors()->add_entries();
  entry.set_key("user");
  entry.set_value("bob");
  const std::string payload = request.SerializeAsString();
  std::string message(1, '\0');
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (int shift : {24, 16, 8, 0}) message.push_back(static_cast<char>(size >> shift));
  message += payload;
  ASSERT_TRUE(client.send(frame(kHeaders, kEndHeaders, 9, request_block(kRlsPath)) +
                          frame(kData, kEndStream, 9, message)));
  bool trailers = false;
  while (std::optional<Frame> f = client.read_frame(std::chrono::seconds(3))) {
    if (f->stream == 9 && f->type == kHeaders && (f->flags & kEndStream) != 0) {
      trailers = true;
      break;
    }
  }
  EXPECT_TRUE(trailers);
  // Past the advertised bound: the connection goes, and its streams with it.
  std::string opens;
  for (std::uint32_t stream = 11; stream <= 29; stream += 2) {
    opens += frame(kHeaders, kEndHeaders, stream, request_block(kRlsPath));
  }
  client.send(opens);
  EXPECT_TRUE(client.closed_within(std::chrono::seconds(3)));
  EXPECT_TRUE(
      eventually([&] { return server_->stats().connections == 0; }, std::chrono::seconds(2)));
}

// A client that asks and never reads: its answers wait behind its flow-control window, bounded by
// max_outbound_bytes (the stream is reset past it), and other clients are served meanwhile.
TEST_F(GrpcLimitsTest, AnswersToAClientThatDoesNotReadAreBounded) {
  start({.max_outbound_bytes = 4096});
  RawConnection client(server_->port());
  ASSERT_TRUE(client.handshake());
  const std::size_t rss_before = rss_bytes();
  std::string block =
      request_block("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
  ASSERT_TRUE(client.send(frame(kHeaders, kEndHeaders, 1, block)));
  // file_containing_symbol (field 4): each answer is several KiB of descriptors, each request
  // 55 bytes; 1 000 of them stay inside the 64 KiB window the client has to send in.
  const std::string symbol = "envoy.service.ratelimit.v3.RateLimitService";
  std::string request = "\x22";
  request.push_back(static_cast<char>(symbol.size()));
  request += symbol;
  std::string messages;
  for (int i = 0; i < 1000; ++i) {
    messages += std::string("\0\0\0\0", 4) + static_cast<char>(request.size()) + request;
  }
  ASSERT_TRUE(client.send(frame(kData, 0, 1, messages.substr(0, 16000))));
  ASSERT_TRUE(client.send(frame(kData, 0, 1, messages.substr(16000, 16000))));
  ASSERT_TRUE(client.send(frame(kData, 0, 1, messages.substr(32000))));
  EXPECT_TRUE(call().ok());  // others are answered meanwhile
  EXPECT_TRUE(
      eventually([&] { return server_->stats().streams_reset >= 1; }, std::chrono::seconds(3)));
  if (kRssMeaningful) {
    EXPECT_LT(rss_bytes(), rss_before + (4u << 20));
  }
  bool reset = false;
  while (std::optional<Frame> f = client.read_frame(std::chrono::seconds(3))) {
    if (f->type == kRstStream && f->stream == 1) {
      reset = true;
      break;
    }
  }
  EXPECT_TRUE(reset);
}

TEST_F(GrpcLimitsTest, AConnectionPastItsMaximumAgeIsSentGoawayAndCloses) {
  start({.max_connection_age = 200 * kMicrosPerMilli});
  RawConnection old(server_->port());
  ASSERT_TRUE(old.handshake());
  bool goaway = false;
  while (std::optional<Frame> f = old.read_frame(std::chrono::seconds(3))) {
    goaway = goaway || f->type == kGoaway;
  }
  EXPECT_TRUE(goaway);
  EXPECT_TRUE(old.closed_within(std::chrono::seconds(1)));
}

TEST_F(GrpcLimitsTest, AMessageOverTheLimitIsResourceExhaustedAndOthersAreAnswered) {
  start({.max_message_bytes = 1024});
  auto stub = rls::RateLimitService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  rls::RateLimitRequest big;
  big.set_domain("web");
  auto& entry = *big.add_descriptors()->add_entries();
  entry.set_key("user");
  entry.set_value(std::string(2000, 'x'));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  rls::RateLimitResponse response;
  const grpc::Status refused = stub->ShouldRateLimit(&context, big, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("max_message_bytes"), std::string::npos)
      << refused.error_message();
  EXPECT_TRUE(call().ok());
}

// A client that never opens its HTTP/2 flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0)
// while it asks: its answers queue in the server's streams, bounded by max_outbound_bytes (the
// server stops reading it), and the connection is closed once they have not moved for
// idle_timeout.
TEST_F(GrpcLimitsTest, AClientThatNeverOpensItsWindowIsBoundedAndClosed) {
  start({.idle_timeout = 300 * kMicrosPerMilli, .max_outbound_bytes = 1024});
  RawConnection client(server_->port());
  ASSERT_TRUE(client.handshake(std::string("\0\x04\0\0\0\0", 6)));
  rls::RateLimitRequest request;
  request.set_domain("web");
  auto& entry = *request.add_descriptors()->add_entries();
  entry.set_key("user");
  entry.set_value("window");
  const std::string payload = request.SerializeAsString();
  std::string message(1, '\0');
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (int shift : {24, 16, 8, 0}) message.push_back(static_cast<char>(size >> shift));
  message += payload;
  std::string calls;
  for (std::uint32_t stream = 1; stream <= 199; stream += 2) {
    calls += frame(kHeaders, kEndHeaders, stream, request_block(kRlsPath)) +
             frame(kData, kEndStream, stream, message);
  }
  client.send(calls);
  EXPECT_TRUE(call().ok());  // others are answered meanwhile
  EXPECT_TRUE(client.closed_within(std::chrono::seconds(3)));
  EXPECT_GE(server_->stats().timed_out, 1u);
}

}  // namespace
}  // namespace sluice::grpc_server
