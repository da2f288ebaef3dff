// The HTTP target in --mode async: each caller of the async closed loop is a request in flight
// on a keep-alive connection of its own (N callers = N connections, as N clients would open), and
// one event-loop thread drives them all, as wrk or a Node.js client runs its connections. So the
// load costs no thread and no wake-up per caller, and `sluice serve` over HTTP can be set beside
// the embedded async client (`--target redis --mode async`) at the same number of callers.
#pragma once

#include <memory>

#include "sluice/bench/http_target.h"
#include "sluice/bench/load_generator.h"
#include "sluice/client/http_url.h"
#include "sluice/status.h"

namespace sluice::bench {

// `url` is options.url parsed. Connections are opened by Target::prepare_async (before the
// clock starts); the caller primes the server first, as make_http_target does.
StatusOr<std::unique_ptr<Target>> make_async_http_target(const HttpTargetOptions& options,
                                                         const HttpUrl& url);

}  // namespace sluice::bench
