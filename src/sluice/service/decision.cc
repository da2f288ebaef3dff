#include "sluice/service/decision.h"

namespace sluice::service {

std::int64_t millis_rounded_up(Micros duration) {
  return duration / kMicrosPerMilli + (duration % kMicrosPerMilli > 0 ? 1 : 0);
}

}  // namespace sluice::service
