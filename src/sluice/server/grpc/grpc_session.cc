#include "sluice/server/grpc/grpc_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace sluice::grpc_server {

bool BufferBudget::take(std::size_t bytes) {
  std::size_t now = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > max_ || now > max_ - bytes) return false;
  } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  return true;
}

// One call. Lives in GrpcSession::streams_ from its first HEADERS to nghttp2's stream close.
struct GrpcSession::Stream {
  std::int32_t id = 0;
  Micros deadline = 0;  // for the request to be whole
  std::size_t header_bytes = 0;
  std::string path;
  std::string content_type;
  std::string timeout;  // grpc-timeout as sent
  const Method* method = nullptr;
  std::optional<MessageReader> reader;
  std::vector<std::string> messages;  // whole request messages not yet handled
  std::size_t held = 0;               // bytes accounted for this stream
  bool request_complete = false;
  bool dispatched = false;
  // Response side.
  bool headers_sent = false;
  bool finished = false;  // trailers queued (or trailers-only sent)
  bool reset_sent = false;
  bool reset_after_answer = false;  // RST_STREAM NO_ERROR once the answer is out
  std::optional<Status> trailer;    // to send once `out` is drained
  std::string out;                  // framed response messages not yet handed to nghttp2
  std::size_t out_offset = 0;
  std::optional<std::string> watch_key;
  std::string watch_last;  // the last message a Watch stream sent
};

namespace {

nghttp2_nv header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

std::string_view view(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace

// nghttp2's C callbacks, forwarding to the session's members.
struct SessionCallbacks {
  static GrpcSession& self(void* user_data) { return *static_cast<GrpcSession*>(user_data); }

  static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
    return self(user_data).on_begin_frame(hd->type, hd->length);
  }
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    return self(user_data).on_begin_headers(frame->hd.stream_id);
  }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t /*flags*/, void* user_data) {
    return self(user_data).on_header(frame->hd.stream_id, view(name, name_length),
                                     view(value, value_length));
  }
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    GrpcSession& session = self(user_data);
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) session.handshake_done_ = true;
        return 0;
      case NGHTTP2_HEADERS:
        session.header_block_ = 0;
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
          return session.on_headers_done(frame->hd.stream_id, end_stream);
        }
        return end_stream ? session.on_end_stream(frame->hd.stream_id) : 0;
      case NGHTTP2_DATA:
        return end_stream ? session.on_end_stream(frame->hd.stream_id) : 0;
      default:
        return 0;
    }
  }
  static int on_data_chunk(nghttp2_session*, std::uint8_t /*flags*/, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t length, void* user_data) {
    return self(user_data).on_data(stream_id, view(data, length));
  }
  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    return self(user_data).on_frame_sent(frame->hd.stream_id,
                                         (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
  }
  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t /*error*/,
                             void* user_data) {
    return self(user_data).on_stream_close(stream_id);
  }
  static ssize_t read_data(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buffer,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                           void* user_data) {
    auto* stream =
        static_cast<GrpcSession::Stream*>(nghttp2_session_get_stream_user_data(session, stream_id));
    if (stream == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return self(user_data).read_data(*stream, buffer, length, flags);
  }
};

StatusOr<std::shared_ptr<GrpcSession>> GrpcSession::create(const MethodTable& methods,
                                                           SessionLimits limits,
                                                           BufferBudget& budget,
                                                           SessionCounters& counters, Hooks hooks,
                                                           Micros now) {
  std::shared_ptr<GrpcSession> session(
      new GrpcSession(methods, limits, budget, counters, std::move(hooks), now));
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return internal_error("nghttp2: no memory");
  nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks,
                                                        &SessionCallbacks::on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &SessionCallbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &SessionCallbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &SessionCallbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &SessionCallbacks::on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &SessionCallbacks::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &SessionCallbacks::on_frame_send);
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    return internal_error("nghttp2: no memory");
  }
  // Closed streams are kept only for priority bookkeeping, which gRPC does not use.
  nghttp2_option_set_no_closed_streams(option, 1);
  const int created =
      nghttp2_session_server_new2(&session->session_, callbacks, session.get(), option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) return internal_error("nghttp2: cannot create a session");
  const std::array<nghttp2_settings_entry, 3> settings = {{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, static_cast<std::uint32_t>(std::min<std::size_t>(
                                                    limits.max_concurrent_streams, 0x7fffffff))},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<std::uint32_t>(std::min<std::size_t>(limits.max_header_list_bytes, 0xffffffff))},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  }};
  if (nghttp2_submit_settings(session->session_, NGHTTP2_FLAG_NONE, settings.data(),
                              settings.size()) != 0) {
    return internal_error("nghttp2: cannot queue SETTINGS");
  }
  return session;
}

GrpcSession::GrpcSession(const MethodTable& methods, SessionLimits limits, BufferBudget& budget,
                         SessionCounters& counters, Hooks hooks, Micros now)
    : methods_(methods),
      limits_(limits),
      budget_(budget),
      counters_(counters),
      hooks_(std::move(hooks)),
      now_(now),
      idle_since_(now) {}

GrpcSession::~GrpcSession() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  budget_.give(held_);  // what streams still open held
}

Status GrpcSession::receive(std::string_view bytes, Micros now) {
  now_ = now;
  if (fatal_) return unavailable("connection closing");
  const ssize_t used = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (used < 0) {
    fatal_ = true;
    if (header_overflow_) {
      counters_.header_overflows.fetch_add(1, std::memory_order_relaxed);
      nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
      return invalid_argument("header block exceeds max_header_list_bytes (" +
                              std::to_string(limits_.max_header_list_bytes) + ")");
    }
    nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
    return invalid_argument(std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used)));
  }
  return Status();
}

void GrpcSession::fill_output(std::string& out, std::size_t max_bytes) {
  while (out.size() < max_bytes) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) {
      if (n < 0) fatal_ = true;
      return;
    }
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

bool GrpcSession::alive() const {
  if (fatal_) return nghttp2_session_want_write(session_) != 0;
  return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
}

GrpcSession::Stream* GrpcSession::find(std::int32_t stream_id) {
  const auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

int GrpcSession::on_begin_frame(std::uint8_t type, std::size_t length) {
  // The encoded block is counted too, so a block of CONTINUATION frames that decodes to little
  // (or to one field never finished) is still bounded while it accumulates.
  if (type == NGHTTP2_HEADERS) {
    header_block_ = length;
  } else if (type == NGHTTP2_CONTINUATION) {
    header_block_ += length;
  } else {
    return 0;
  }
  if (header_block_ > limits_.max_header_list_bytes) {
    header_overflow_ = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int GrpcSession::on_begin_headers(std::int32_t stream_id) {
  auto stream = std::make_unique<Stream>();
  stream->id = stream_id;
  stream->deadline = now_ + limits_.stream_timeout;
  nghttp2_session_set_stream_user_data(session_, stream_id, stream.get());
  streams_[stream_id] = std::move(stream);
  ++streams_started_;
  return 0;
}

int GrpcSession::on_header(std::int32_t stream_id, std::string_view name, std::string_view value) {
  Stream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  // RFC 9113 §6.5.2's measure: name, value and 32 bytes per field.
  stream->header_bytes += name.size() + value.size() + 32;
  if (stream->header_bytes > limits_.max_header_list_bytes) {
    header_overflow_ = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  if (name == ":path") {
    stream->path = value;
  } else if (name == "content-type") {
    stream->content_type = value;
  } else if (name == "grpc-timeout") {
    stream->timeout = value;
  }
  return 0;
}

int GrpcSession::on_headers_done(std::int32_t stream_id, bool end_stream) {
  Stream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  // gRPC's content types: application/grpc, +proto and the like (grpc-web is not served).
  const std::string_view type = stream->content_type;
  if (!type.starts_with("application/grpc") ||
      (type.size() > 16 && type[16] != '+' && type[16] != ';')) {
    finish(*stream, Status(StatusCode::kInternal, "content-type \"" + stream->content_type +
                                                      "\" is not application/grpc"));
  } else if (const auto it = methods_.find(stream->path); it == methods_.end()) {
    finish(*stream, Status(StatusCode::kUnimplemented, "unknown method " + stream->path));
  } else {
    stream->method = &it->second;
    stream->reader.emplace(limits_.max_message_bytes);
    if (!stream->timeout.empty()) {
      if (StatusOr<Micros> timeout = parse_grpc_timeout(stream->timeout); !timeout.ok()) {
        finish(*stream, timeout.status());
      }
    }
  }
  if (end_stream) return on_end_stream(stream_id);
  return 0;
}

bool GrpcSession::hold(Stream& stream, std::size_t now_held) {
  if (now_held > stream.held) {
    const std::size_t more = now_held - stream.held;
    if (held_ + more > limits_.max_connection_buffer_bytes || !budget_.take(more)) return false;
    held_ += more;
  } else {
    const std::size_t less = stream.held - now_held;
    held_ -= less;
    budget_.give(less);
  }
  stream.held = now_held;
  return true;
}

int GrpcSession::on_data(std::int32_t stream_id, std::string_view data) {
  Stream* stream = find(stream_id);
  if (stream == nullptr || stream->finished || stream->reset_sent || !stream->reader) return 0;
  const std::size_t before = stream->messages.size();
  if (Status status = stream->reader->append(data, stream->messages); !status.ok()) {
    finish(*stream, status);
    return 0;
  }
  std::size_t held = stream->reader->buffered();
  for (const std::string& message : stream->messages) held += message.size();
  if (!hold(*stream, held)) {
    finish(*stream, Status(StatusCode::kResourceExhausted,
                           "request bytes buffered exceed max_connection_buffer_bytes or "
                           "max_buffered_bytes; retry"));
    return 0;
  }
  if (stream->method->each_message) {
    // Bidirectional: each message is answered as it comes.
    std::vector<std::string> messages = std::move(stream->messages);
    stream->messages.clear();
    hold(*stream, stream->reader->buffered());
    for (const std::string& message : messages) {
      StatusOr<std::string> answer = stream->method->each_message(message);
      if (!answer.ok()) {
        finish(*stream, answer.status());
        return 0;
      }
      send_message(*stream, *answer);
    }
  } else if (stream->messages.size() > 1 && before <= 1) {
    finish(*stream, Status(StatusCode::kUnimplemented,
                           "more than one request message on a unary or server-streaming call"));
  }
  return 0;
}

int GrpcSession::on_end_stream(std::int32_t stream_id) {
  Stream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  stream->request_complete = true;
  if (!stream->finished && !stream->reset_sent && stream->method != nullptr) dispatch(*stream);
  return 0;
}

void GrpcSession::dispatch(Stream& stream) {
  if (stream.dispatched) return;
  stream.dispatched = true;
  const Method& method = *stream.method;
  if (method.each_message) return finish(stream, Status());
  if (!stream.reader->at_boundary()) {
    return finish(stream, internal_error("the request ends inside a message"));
  }
  if (stream.messages.size() != 1) {
    return finish(stream, Status(StatusCode::kUnimplemented,
                                 "a unary call takes exactly one request message, not " +
                                     std::to_string(stream.messages.size())));
  }
  const std::string request = std::move(stream.messages.front());
  stream.messages.clear();
  hold(stream, 0);
  if (method.watch) {
    StatusOr<std::string> key = method.watch(request);
    if (key.ok()) {
      stream.watch_key = *key;
      stream.watch_last = hooks_.watch_message(*key);
      return send_message(stream, stream.watch_last);
    }
    return finish(stream, key.status());
  }
  std::optional<Micros> timeout;
  if (!stream.timeout.empty()) timeout = *parse_grpc_timeout(stream.timeout);  // checked at HEADERS
  // The reply may come on a store or timer thread: it posts back, and finds the stream by id
  // (gone when the client reset it or the connection closed).
  method.unary(request, {.timeout = timeout, .peer = hooks_.peer},
               [weak = weak_from_this(), post = hooks_.post,
                id = stream.id](StatusOr<std::string> answer) mutable {
                 post([weak = std::move(weak), id, answer = std::move(answer)]() mutable {
                   if (auto self = weak.lock()) self->reply(id, std::move(answer));
                 });
               });
}

void GrpcSession::reply(std::int32_t stream_id, StatusOr<std::string> answer) {
  Stream* stream = find(stream_id);
  if (stream == nullptr || stream->finished || stream->reset_sent) return;
  // The status ends the stream (grpc-status), after the answer's message when there is one.
  if (answer.ok()) send_message(*stream, *answer);
  finish(*stream, answer.status());
}

void GrpcSession::send_message(Stream& stream, std::string_view message) {
  if (stream.finished || stream.reset_sent) return;
  const std::size_t waiting = stream.out.size() - stream.out_offset;
  if (waiting > 0 && waiting + message.size() > limits_.max_stream_outbound_bytes) {
    // Answers pile up behind a window the client does not open: stop making more.
    return reset(stream, NGHTTP2_ENHANCE_YOUR_CALM);
  }
  const std::size_t before = stream.out.size();
  append_message(message, stream.out);
  queued_ += stream.out.size() - before;
  if (stream.headers_sent) {
    nghttp2_session_resume_data(session_, stream.id);
    return;
  }
  stream.headers_sent = true;
  const std::array<nghttp2_nv, 2> headers = {header(":status", "200"),
                                             header("content-type", "application/grpc")};
  nghttp2_data_provider provider{};
  provider.source.ptr = &stream;
  provider.read_callback = &SessionCallbacks::read_data;
  nghttp2_submit_response(session_, stream.id, headers.data(), headers.size(), &provider);
}

void GrpcSession::finish(Stream& stream, const Status& status) {
  if (stream.finished || stream.reset_sent) return;
  stream.finished = true;
  // Whatever of the request is still held is not wanted any more.
  stream.messages.clear();
  stream.reader.reset();
  hold(stream, 0);
  if (stream.headers_sent) {
    stream.trailer = status;
    nghttp2_session_resume_data(session_, stream.id);
  } else {
    // Trailers-only: one HEADERS frame with END_STREAM.
    const std::string code = std::to_string(static_cast<int>(status.code()));
    const std::string message = percent_encode(status.message());
    std::vector<nghttp2_nv> headers = {header(":status", "200"),
                                       header("content-type", "application/grpc"),
                                       header("grpc-status", code)};
    if (!message.empty()) headers.push_back(header("grpc-message", message));
    nghttp2_submit_response(session_, stream.id, headers.data(), headers.size(), nullptr);
  }
  // The answer goes out before the request ended: the rest of it is not wanted. RST_STREAM
  // NO_ERROR follows once the answer is sent (on_frame_sent), as a reset queued now would
  // cancel the answer itself.
  if (!stream.request_complete && !status.ok()) stream.reset_after_answer = true;
}

int GrpcSession::on_frame_sent(std::int32_t stream_id, bool end_stream) {
  if (!end_stream) return 0;
  Stream* stream = find(stream_id);
  if (stream == nullptr || !stream->reset_after_answer || stream->request_complete ||
      stream->reset_sent) {
    return 0;
  }
  stream->reset_sent = true;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR);
  return 0;
}

long GrpcSession::read_data(Stream& stream, std::uint8_t* buffer, std::size_t length,
                            std::uint32_t* flags) {
  const std::size_t left = stream.out.size() - stream.out_offset;
  if (left > 0) {
    const std::size_t n = std::min(left, length);
    std::memcpy(buffer, stream.out.data() + stream.out_offset, n);
    stream.out_offset += n;
    queued_ -= n;
    if (stream.out_offset == stream.out.size()) {
      stream.out.clear();
      stream.out_offset = 0;
    }
    return static_cast<long>(n);
  }
  if (!stream.trailer) return NGHTTP2_ERR_DEFERRED;
  *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
  const std::string code = std::to_string(static_cast<int>(stream.trailer->code()));
  const std::string message = percent_encode(stream.trailer->message());
  std::vector<nghttp2_nv> trailers = {header("grpc-status", code)};
  if (!message.empty()) trailers.push_back(header("grpc-message", message));
  nghttp2_submit_trailer(session_, stream.id, trailers.data(), trailers.size());
  return 0;
}

void GrpcSession::reset(Stream& stream, std::uint32_t http2_error) {
  if (stream.reset_sent) return;
  stream.reset_sent = true;
  counters_.streams_reset.fetch_add(1, std::memory_order_relaxed);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream.id, http2_error);
}

int GrpcSession::on_stream_close(std::int32_t stream_id) {
  const auto it = streams_.find(stream_id);
  if (it == streams_.end()) return 0;
  hold(*it->second, 0);
  queued_ -= it->second->out.size() - it->second->out_offset;
  streams_.erase(it);
  if (streams_.empty()) idle_since_ = now_;
  return 0;
}

void GrpcSession::expire(Micros now) {
  now_ = now;
  for (auto& [id, stream] : streams_) {
    if (!stream->request_complete && !stream->reset_sent && now >= stream->deadline) {
      reset(*stream, NGHTTP2_CANCEL);
    }
  }
}

void GrpcSession::go_away() {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

void GrpcSession::terminate(std::uint32_t http2_error) {
  nghttp2_session_terminate_session(session_, http2_error);
}

void GrpcSession::notify_watchers() {
  for (auto& [id, stream] : streams_) {
    if (!stream->watch_key || stream->finished) continue;
    std::string message = hooks_.watch_message(*stream->watch_key);
    if (message == stream->watch_last) continue;
    stream->watch_last = message;
    send_message(*stream, message);
  }
}

void GrpcSession::end_watches(const Status& status) {
  for (auto& [id, stream] : streams_) {
    if (stream->watch_key) finish(*stream, status);
  }
}

}  // namespace sluice::grpc_server
