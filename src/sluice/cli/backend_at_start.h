// How `sluice acquire` and the quota commands open their backend (service/backend.h): the URL read
// and, for Redis, one question to it (RedisStore::check_configuration), so that a configuration
// error stops the command at start instead of passing for an outage. What goes wrong is the
// command's output for its user, printed here.
#pragma once

#include <memory>
#include <string_view>

#include "sluice/service/backend.h"

namespace sluice::cli {

struct BackendAtStart {
  std::unique_ptr<service::Backend> backend;  // set when exit_code is 0
  int exit_code = 0;
};

// For `sluice <command>`, whose URL option is options.url_name. A bad URL (exit 2) and a
// configuration error — credentials refused, permissions missing, a cluster node (the exit code
// of its status) — are reported on stderr and returned. An outage is one warning line that names
// the address and ends with `meanwhile`, what decides until Redis answers; the backend is
// returned all the same.
BackendAtStart open_backend_at_start(std::string_view command, std::string_view url,
                                     service::BackendOptions options, std::string_view meanwhile);

}  // namespace sluice::cli
