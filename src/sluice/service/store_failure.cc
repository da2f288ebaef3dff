#include "sluice/service/store_failure.h"

namespace sluice::service {

bool is_store_outage(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded ||
         status.code() == StatusCode::kResourceExhausted;
}

bool is_store_failure(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
    case StatusCode::kInternal:
    case StatusCode::kUnauthenticated:  // the store's credentials, not the caller's
    case StatusCode::kPermissionDenied:
      return true;
    default:
      return false;
  }
}

bool is_store_refusal(const Status& status) {
  return status.code() == StatusCode::kUnauthenticated ||
         status.code() == StatusCode::kPermissionDenied;
}

Status circuit_open() {
  return Status(StatusCode::kUnavailable,
                "circuit open: the store failed repeatedly; not asked until a probe answers",
                StatusDetail::kCircuitOpen);
}

bool is_circuit_open(const Status& status) { return status.detail() == StatusDetail::kCircuitOpen; }

}  // namespace sluice::service
