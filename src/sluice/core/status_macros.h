// Propagation macros for Status and StatusOr<T>: the one way a function hands an error it cannot
// handle to its caller, instead of an ok() check and an early return written by hand. Internal to
// the project (not in include/sluice/, so embedders get no macros from our public headers).
//
//   SLUICE_RETURN_IF_ERROR(validate(policy));           // returns the Status when it is not OK
//   SLUICE_ASSIGN_OR_RETURN(Row row, read_row(tx, id));  // declares row, or returns the error
//   SLUICE_ASSIGN_OR_RETURN(url.port, parse_port(text)); // assigns to an existing lvalue
//
// Both evaluate `expr` exactly once and work in any function whose return type is constructible
// from a Status (Status, StatusOr<U>). Each is a statement: use it inside a block, not as the body
// of an unbraced if/else. Each declares a temporary named after the line, so each may appear at
// most once per line; `lhs` may not contain an unparenthesised comma (`expr` may:
// it is the variadic rest, so a lambda argument needs no extra parentheses).
#pragma once

#include <utility>

#include "sluice/status.h"

#define SLUICE_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define SLUICE_STATUS_MACROS_CONCAT(a, b) SLUICE_STATUS_MACROS_CONCAT_INNER(a, b)

// The temporaries are named after the line so that a macro inside a lambda that is itself inside
// a macro's expression (a database transaction's body, say) shadows nothing.
#define SLUICE_RETURN_IF_ERROR(...) \
  SLUICE_RETURN_IF_ERROR_IMPL(SLUICE_STATUS_MACROS_CONCAT(sluice_status_, __LINE__), __VA_ARGS__)

#define SLUICE_RETURN_IF_ERROR_IMPL(temporary, ...)                    \
  do {                                                                 \
    if (::sluice::Status temporary = (__VA_ARGS__); !temporary.ok()) { \
      return temporary;                                                \
    }                                                                  \
  } while (false)

#define SLUICE_ASSIGN_OR_RETURN(lhs, ...)                                                     \
  SLUICE_ASSIGN_OR_RETURN_IMPL(SLUICE_STATUS_MACROS_CONCAT(sluice_status_or_, __LINE__), lhs, \
                               __VA_ARGS__)

#define SLUICE_ASSIGN_OR_RETURN_IMPL(temporary, lhs, ...) \
  auto temporary = (__VA_ARGS__);                         \
  if (!temporary.ok()) return temporary.status();         \
  lhs = std::move(temporary).value()
