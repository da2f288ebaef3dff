#include "sluice/cli/backend_at_start.h"

#include <utility>

#include "sluice/cli/command_support.h"

namespace sluice::cli {

BackendAtStart open_backend_at_start(std::string_view command, std::string_view url,
                                     service::BackendOptions options, std::string_view meanwhile) {
  options.check_redis = true;
  StatusOr<std::unique_ptr<service::Backend>> opened =
      service::open_backend(url, std::move(options));
  if (!opened.ok()) {
    print_to_user(command, opened.status().message());
    return {.exit_code = exit_code_for(opened.status().code())};
  }
  if (const std::string warning = (*opened)->unanswered_warning(meanwhile); !warning.empty()) {
    print_to_user(command, warning);
  }
  return {.backend = std::move(*opened)};
}

}  // namespace sluice::cli
