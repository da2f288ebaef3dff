// The one mapping between Status codes and HTTP statuses, both ways: the HTTP front end answers
// with it and the HTTP clients (client/remote_limiter) read problems back with it.
#pragma once

#include "sluice/status.h"

namespace sluice {

// THE mapping from Status codes to HTTP statuses (DESIGN.md §7: exactly one place):
// InvalidArgument/OutOfRange/FailedPrecondition 400, Unauthenticated 401, PermissionDenied 403,
// NotFound 404, AlreadyExists/Aborted 409, ResourceExhausted 429, Cancelled 499,
// Unimplemented 501, Unavailable 503, DeadlineExceeded 504, everything else 500.
int http_status_for(StatusCode code);
// The reverse, for clients reading a problem: 400 InvalidArgument, 404 NotFound, ...
StatusCode status_code_for_http(int status);

}  // namespace sluice
