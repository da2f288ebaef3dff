#include "sluice/cli/backend_at_start.h"

#include <utility>

#include "sluice/core/status_macros.h"

namespace sluice::cli {

StatusOr<std::unique_ptr<service::Backend>> open_backend_at_start(const Run& run,
                                                                  std::string_view url,
                                                                  service::BackendOptions options,
                                                                  std::string_view meanwhile) {
  options.check_redis = true;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<service::Backend> backend,
                          service::open_backend(url, std::move(options)));
  if (const std::string warning = backend->unanswered_warning(meanwhile); !warning.empty()) {
    run.warn(warning);
  }
  return backend;
}

}  // namespace sluice::cli
