// An error re-told as bad input: its message prefixed with where the input came from (a flag, a
// setting, an option), its code InvalidArgument whatever the parser's was. For callers whose
// contract gives every failure to read one input that one code (a CLI's exit 2, a setting's
// error); OK passes through unchanged.
//
//   SLUICE_ASSIGN_OR_RETURN(Micros ttl, invalid_input("--ttl: ", parse_duration(text)));
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "sluice/status.h"

namespace sluice {

inline Status invalid_input(std::string_view context, const Status& status) {
  if (status.ok()) return status;
  return invalid_argument(std::string(context) + status.message());
}

template <typename T>
StatusOr<T> invalid_input(std::string_view context, StatusOr<T> result) {
  if (result.ok()) return result;
  return invalid_input(context, result.status());
}

}  // namespace sluice
