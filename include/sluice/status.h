// Status and StatusOr<T>: errors as values. Codes match gRPC's numbering 1:1 so the gRPC and
// HTTP front ends can map them in exactly one place each. Being rate limited is not an error.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "sluice/export.h"

namespace sluice {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

SLUICE_API std::string_view status_code_name(StatusCode code);

// What a status means beyond its code, where callers must tell apart errors that share one: its
// identity, by value (never by the message's text, which is for people).
enum class StatusDetail : std::uint8_t {
  kNone,
  // Unavailable: the server's bound on decisions in flight refused the request (retry shortly).
  kOverloaded,
  // Unavailable: the circuit breaker kept the request from a failing store (no call was made).
  kCircuitOpen,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, StatusDetail detail)
      : code_(code), detail_(detail), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  StatusDetail detail() const { return detail_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: limits[0].window: must be greater than 0"
  SLUICE_API std::string to_string() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  StatusDetail detail_ = StatusDetail::kNone;
  std::string message_;
};

inline Status invalid_argument(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message)};
}
inline Status not_found(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
inline Status unavailable(std::string message) {
  return {StatusCode::kUnavailable, std::move(message)};
}
inline Status internal_error(std::string message) {
  return {StatusCode::kInternal, std::move(message)};
}
inline Status deadline_exceeded(std::string message) {
  return {StatusCode::kDeadlineExceeded, std::move(message)};
}

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(state_).ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status{} : std::get<Status>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace sluice
