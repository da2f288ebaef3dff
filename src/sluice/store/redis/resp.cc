#include "sluice/store/redis/resp.h"

#include <hiredis/hiredis.h>

#include <climits>
#include <cstdio>
#include <utility>

namespace sluice::redis {

Reply Reply::integer(std::int64_t value) {
  Reply reply;
  reply.type_ = Type::kInteger;
  reply.integer_ = value;
  return reply;
}

Reply Reply::status(std::string text) {
  Reply reply;
  reply.type_ = Type::kStatus;
  reply.text_ = std::move(text);
  return reply;
}

Reply Reply::error(std::string message) {
  Reply reply;
  reply.type_ = Type::kError;
  reply.text_ = std::move(message);
  return reply;
}

Reply Reply::bulk(std::string bytes) {
  Reply reply;
  reply.type_ = Type::kString;
  reply.text_ = std::move(bytes);
  return reply;
}

Reply Reply::array(std::vector<Reply> elements) {
  Reply reply;
  reply.type_ = Type::kArray;
  reply.elements_ = std::move(elements);
  return reply;
}

bool operator==(const Reply& a, const Reply& b) {
  return a.type_ == b.type_ && a.integer_ == b.integer_ && a.text_ == b.text_ &&
         a.elements_ == b.elements_;
}

namespace {

void append_escaped(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
}

void render(const Reply& reply, std::string& out) {
  switch (reply.type()) {
    case Reply::Type::kNil:
      out += "nil";
      return;
    case Reply::Type::kInteger:
      out += std::to_string(reply.as_integer());
      return;
    case Reply::Type::kStatus:
      out.push_back('+');
      append_escaped(out, reply.as_string());
      return;
    case Reply::Type::kError:
      out.push_back('-');
      append_escaped(out, reply.as_string());
      return;
    case Reply::Type::kString:
      out.push_back('"');
      append_escaped(out, reply.as_string());
      out.push_back('"');
      return;
    case Reply::Type::kArray: {
      out.push_back('[');
      bool first = true;
      for (const Reply& element : reply.elements()) {
        if (!first) out += ", ";
        first = false;
        render(element, out);
      }
      out.push_back(']');
      return;
    }
  }
}

bool starts_with_word(std::string_view message, std::string_view word) {
  return message.size() >= word.size() && message.substr(0, word.size()) == word &&
         (message.size() == word.size() || message[word.size()] == ' ');
}

}  // namespace

std::string Reply::debug_string() const {
  std::string out;
  render(*this, out);
  return out;
}

Reply reply_from_hiredis(const ::redisReply& reply) {
  switch (reply.type) {
    case REDIS_REPLY_STRING:
      return Reply::bulk(std::string(reply.str, reply.len));
    case REDIS_REPLY_STATUS:
      return Reply::status(std::string(reply.str, reply.len));
    case REDIS_REPLY_ERROR:
      return Reply::error(std::string(reply.str, reply.len));
    case REDIS_REPLY_INTEGER:
      return Reply::integer(static_cast<std::int64_t>(reply.integer));
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      elements.reserve(reply.elements);
      for (std::size_t i = 0; i < reply.elements; ++i) {
        elements.push_back(reply_from_hiredis(*reply.element[i]));
      }
      return Reply::array(std::move(elements));
    }
    case REDIS_REPLY_NIL:
    default:
      return Reply::nil();
  }
}

StatusOr<std::string> format_command(std::span<const std::string> args) {
  if (args.empty()) return invalid_argument("redis: empty command");
  if (args.size() > static_cast<std::size_t>(INT_MAX)) {
    return invalid_argument("redis: too many command arguments");
  }
  // Small commands (the common case) keep their pointer arrays on the stack.
  constexpr std::size_t kInline = 16;
  const char* inline_argv[kInline];
  std::size_t inline_len[kInline];
  std::vector<const char*> heap_argv;
  std::vector<std::size_t> heap_len;
  const char** argv = inline_argv;
  std::size_t* argvlen = inline_len;
  if (args.size() > kInline) {
    heap_argv.resize(args.size());
    heap_len.resize(args.size());
    argv = heap_argv.data();
    argvlen = heap_len.data();
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data();
    argvlen[i] = args[i].size();
  }
  char* formatted = nullptr;
  const int length =
      redisFormatCommandArgv(&formatted, static_cast<int>(args.size()), argv, argvlen);
  if (length < 0 || formatted == nullptr) {
    return internal_error("redis: could not format command (out of memory)");
  }
  std::string out(formatted, static_cast<std::size_t>(length));
  redisFreeCommand(formatted);
  return out;
}

Status error_reply_status(std::string_view message) {
  std::string text = "redis: " + std::string(message);
  const auto is = [&](std::string_view word) { return starts_with_word(message, word); };
  if (is("NOAUTH") || is("WRONGPASS")) return {StatusCode::kUnauthenticated, std::move(text)};
  if (is("NOPERM")) return {StatusCode::kPermissionDenied, std::move(text)};
  if (is("WRONGTYPE")) return {StatusCode::kFailedPrecondition, std::move(text)};
  if (is("OOM")) return {StatusCode::kResourceExhausted, std::move(text)};
  if (is("NOSCRIPT")) return {StatusCode::kNotFound, std::move(text)};
  if (is("LOADING") || is("BUSY") || is("MASTERDOWN") || is("TRYAGAIN") || is("CLUSTERDOWN") ||
      is("READONLY") || is("MOVED") || is("ASK")) {
    return {StatusCode::kUnavailable, std::move(text)};
  }
  if (is("ERR")) {
    if (message.find("user_script:") != std::string_view::npos ||
        message.find("Error running script") != std::string_view::npos) {
      return {StatusCode::kInternal, std::move(text)};
    }
    return {StatusCode::kInvalidArgument, std::move(text)};
  }
  return {StatusCode::kInternal, std::move(text)};
}

}  // namespace sluice::redis
