// The gRPC transport's parsing of untrusted bytes: grpc-timeout, the 5-byte message framing, and
// a whole HTTP/2 connection (nghttp2 plus GrpcSession's own header counting, stream bookkeeping
// and buffer accounting) fed the input after the client preface, in two reads, with answers
// posted back as a store thread would and the stream deadlines run. Properties: nothing crashes
// or leaks (ASan), the framing never holds more than one message's bound, queued answers are
// accounted exactly, and the session gives back every buffered byte when it goes.
#include <vector>

#include "fuzz/fuzz_input.h"
#include "sluice/server/grpc/grpc_framing.h"
#include "sluice/server/grpc/grpc_session.h"

namespace {

using namespace sluice;
using namespace sluice::grpc_server;

constexpr std::size_t kMaxMessage = 16 * 1024;

void fuzz_framing(std::string_view input) {
  if (StatusOr<Micros> timeout = parse_grpc_timeout(input); timeout.ok()) {
    fuzz::require(*timeout >= 0, "grpc-timeout is never negative");
  }
  MessageReader reader(kMaxMessage);
  std::vector<std::string> messages;
  const std::size_t cut = input.empty() ? 0 : static_cast<unsigned char>(input[0]) % input.size();
  if (reader.append(input.substr(0, cut), messages).ok()) {
    (void)reader.append(input.substr(cut), messages);
  }
  fuzz::require(reader.buffered() <= kMessagePrefixBytes + kMaxMessage,
                "the reader holds at most one message");
  std::size_t total = 0;
  for (const std::string& message : messages) total += message.size() + kMessagePrefixBytes;
  fuzz::require(total <= input.size(), "messages come from the input");
  (void)percent_encode(input);
}

void fuzz_session(std::string_view input) {
  static const MethodTable methods = [] {
    MethodTable table;
    table["/a.B/Unary"].unary = [](std::string_view request, const CallContext&,
                                   std::function<void(StatusOr<std::string>)> reply) {
      if (request.size() % 2 == 0) return reply(std::string(request));
      reply(invalid_argument("odd"));
    };
    table["/a.B/Each"].each_message = [](std::string_view request) -> StatusOr<std::string> {
      return std::string(request);
    };
    table["/a.B/Watch"].watch = [](std::string_view request) -> StatusOr<std::string> {
      return std::string(request.substr(0, 8));
    };
    return table;
  }();
  BufferBudget budget(64 * 1024);
  SessionCounters counters;
  std::vector<std::function<void()>> posted;
  {
    GrpcSession::Hooks hooks;
    hooks.post = [&posted](std::function<void()> fn) { posted.push_back(std::move(fn)); };
    hooks.watch_message = [](const std::string& key) { return key; };
    StatusOr<std::shared_ptr<GrpcSession>> created =
        GrpcSession::create(methods,
                            {.max_concurrent_streams = 8,
                             .max_header_list_bytes = 4096,
                             .max_message_bytes = kMaxMessage,
                             .max_connection_buffer_bytes = 32 * 1024,
                             .stream_timeout = 1000},
                            budget, counters, std::move(hooks), 0);
    fuzz::require(created.ok(), "a session is created");
    std::shared_ptr<GrpcSession> session = *created;
    std::string out;
    const std::string bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + std::string(input);
    const std::size_t cut = bytes.size() / 2;
    Micros now = 0;
    for (std::string_view part :
         {std::string_view(bytes).substr(0, cut), std::string_view(bytes).substr(cut)}) {
      if (!session->receive(part, now += 600).ok()) break;
      for (auto& fn : posted) fn();
      posted.clear();
      session->notify_watchers();
      session->expire(now);
      out.clear();
      session->fill_output(out, 1 << 20);
      // Answers queued are bounded by what was asked: a count that wrapped below zero is huge.
      fuzz::require(session->queued_bytes() <= (std::size_t{1} << 24),
                    "queued answer bytes are accounted exactly");
    }
    session->end_watches(unavailable("done"));
    session->go_away();
    out.clear();
    session->fill_output(out, 1 << 20);
  }
  posted.clear();  // replies to a session that is gone land nowhere
  fuzz::require(budget.used() == 0, "every buffered byte is given back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = sluice::fuzz::as_text(data, size);
  fuzz_framing(input);
  fuzz_session(input);
  return 0;
}
