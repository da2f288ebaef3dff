// The wiring of `sluice serve`: from Settings to a running server. In order: the TLS files
// checked, the policy database prepared and cached (serve_policies.h), the backend opened
// (service/backend.h: stores, node heartbeat, limiter), the decision and admin APIs and the console
// on the HTTP server, then the gRPC server (RLS, health, reflection) with a prober thread that
// keeps grpc.health.v1 on what GET /readyz answers (service/readiness.h: one check for both). What
// it does is logged (core/logger.h); what goes wrong before it serves is returned.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "sluice/app/serve_policies.h"
#include "sluice/app/settings.h"
#include "sluice/status.h"

namespace sluice::app {

struct ServeInputs {
  // Where the policy database is, and how to open it.
  PolicyDatabase database;
  // The built-in demo policy document(s), added on a first start without --policy-file.
  std::string_view demo_policies;
  // A warning for the person starting the server (Redis does not answer yet), one line.
  std::function<void(std::string_view)> warn;
};

class RunningServer {
 public:
  // Starts everything `settings` (checked by check_settings) describe. Errors, each message
  // naming what is at fault: InvalidArgument for a setting, file or URL that cannot be used (TLS
  // files, policy files, the Redis URL, the heartbeat); a policy database or Redis configuration
  // error with its own code; Internal for a server that cannot start on its address.
  static StatusOr<std::unique_ptr<RunningServer>> start(const Settings& settings,
                                                        ServeInputs inputs);
  // Stops what is still running, without logging.
  ~RunningServer();
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;

  // Drains the servers (in-flight requests get shutdown_timeout), logging "shutting down" with
  // `signal` and then "stopped".
  void stop(std::string_view signal);

 private:
  struct Parts;
  explicit RunningServer(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace sluice::app
