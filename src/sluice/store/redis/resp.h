// RESP vocabulary: `Reply` (a RESP2 value owned by value), its conversion from hiredis's
// `redisReply`, binary-safe command formatting, and the one mapping from a Redis error reply to a
// Status code.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

struct redisReply;  // hiredis

namespace sluice::redis {

// One Redis reply. Strings are arbitrary bytes. A nil bulk string and a nil array are both nil.
// Error replies nested inside arrays (EXEC, script tables) stay `kError` elements; a top-level
// error reply is turned into a Status by the client (see error_reply_status).
class Reply {
 public:
  enum class Type : std::uint8_t { kNil, kInteger, kStatus, kError, kString, kArray };

  Reply() = default;  // nil

  static Reply nil() { return Reply(); }
  static Reply integer(std::int64_t value);
  static Reply status(std::string text);  // simple string, e.g. "OK"
  static Reply error(std::string message);
  static Reply bulk(std::string bytes);
  static Reply array(std::vector<Reply> elements);

  Type type() const { return type_; }
  bool is_nil() const { return type_ == Type::kNil; }
  bool is_integer() const { return type_ == Type::kInteger; }
  bool is_status() const { return type_ == Type::kStatus; }
  bool is_error() const { return type_ == Type::kError; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }

  // Preconditions: the matching is_*() is true (0 / empty otherwise).
  std::int64_t as_integer() const { return integer_; }
  const std::string& as_string() const { return text_; }  // status, error or bulk string
  const std::vector<Reply>& elements() const { return elements_; }
  std::vector<Reply>& elements() { return elements_; }

  // Readable rendering for test failures and logs: `"abc"`, `42`, `nil`, `+OK`, `-ERR x`,
  // `["a", 1, nil]`. Non-printable bytes are escaped as \xNN.
  std::string debug_string() const;

  friend bool operator==(const Reply& a, const Reply& b);

 private:
  Type type_ = Type::kNil;
  std::int64_t integer_ = 0;
  std::string text_;
  std::vector<Reply> elements_;
};

// Deep copy of a hiredis reply (which the caller still owns and frees).
Reply reply_from_hiredis(const ::redisReply& reply);

// The RESP encoding of one command (`*<n>\r\n$<len>\r\n<bytes>\r\n…`), produced by hiredis's
// redisFormatCommandArgv, so arguments are binary safe. InvalidArgument for an empty command.
StatusOr<std::string> format_command(std::span<const std::string> args);

// The Status a top-level Redis error reply stands for; the message is "redis: " + the reply.
//   NOAUTH, WRONGPASS                          -> Unauthenticated
//   NOPERM                                     -> PermissionDenied
//   WRONGTYPE                                  -> FailedPrecondition
//   OOM                                        -> ResourceExhausted
//   NOSCRIPT                                   -> NotFound
//   LOADING, BUSY, MASTERDOWN, TRYAGAIN,
//   CLUSTERDOWN, READONLY, MOVED, ASK          -> Unavailable (the server cannot serve it now)
//   ERR from a script ("user_script:", "Error running script") -> Internal (a bug in our Lua)
//   any other ERR                              -> InvalidArgument (the command was wrong)
//   anything else                              -> Internal
Status error_reply_status(std::string_view message);

}  // namespace sluice::redis
