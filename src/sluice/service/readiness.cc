#include "sluice/service/readiness.h"

#include <memory>
#include <utility>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/rendezvous.h"
#include "sluice/core/status_macros.h"
#include "sluice/decision.h"

namespace sluice::service {
namespace {

// The probe: one limit under a policy name of its own ("sluice.readyz"), peeked at cost 0.
const std::vector<algorithm::Limit>& probe_limits() {
  static const std::vector<algorithm::Limit> kProbe = {
      algorithm::Gcra{.rate = 1, .period = kMicrosPerSecond, .burst = 0}};
  return kProbe;
}

}  // namespace

Readiness::Readiness(store::DecisionPort& store, std::function<Status()> policies_ready)
    : store_(store), policies_ready_(std::move(policies_ready)) {}

void Readiness::check_store(std::function<void(const Status&, Micros)> done) const {
  const Micros start = SteadyClock::instance().now();
  store_.acquire({.policy = "sluice.readyz", .limits = probe_limits(), .subject = "readyz"}, 0,
                 [start, done = std::move(done)](StatusOr<Decision> peek) {
                   done(peek.status(), SteadyClock::instance().now() - start);
                 });
}

Status Readiness::check_policies() const { return policies_ready_ ? policies_ready_() : Status(); }

Status Readiness::check() const {
  auto answer = std::make_shared<Rendezvous<Status>>();
  check_store([answer](const Status& store, Micros) { answer->deliver(store); });
  SLUICE_RETURN_IF_ERROR(answer->wait());
  return check_policies();
}

}  // namespace sluice::service
