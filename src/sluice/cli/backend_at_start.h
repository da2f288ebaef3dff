// How `sluice acquire` and the quota commands open their backend (service/backend.h): the URL read
// and, for Redis, one question to it (RedisStore::check_configuration), so that a configuration
// error stops the command at start instead of passing for an outage. A warning is the command's
// output for its user, printed here; an error is returned for the command to report.
#pragma once

#include <memory>
#include <string_view>

#include "sluice/cli/command_support.h"
#include "sluice/service/backend.h"
#include "sluice/status.h"

namespace sluice::cli {

// For the command of `run`, whose URL option is options.url_name. A bad URL (InvalidArgument)
// and a configuration error — credentials refused, permissions missing, a cluster node — are
// returned. An outage is one warning line (Run::warn) that names the address and ends with
// `meanwhile`, what decides until Redis answers; the backend is returned all the same.
StatusOr<std::unique_ptr<service::Backend>> open_backend_at_start(const Run& run,
                                                                  std::string_view url,
                                                                  service::BackendOptions options,
                                                                  std::string_view meanwhile);

}  // namespace sluice::cli
