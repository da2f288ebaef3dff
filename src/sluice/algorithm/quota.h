// Quota operations over all limits of a policy (docs/quotas.md): `charge` counts a cost after the
// work is done, without asking first, and may take a limit's balance below zero (a debt that
// later requests wait for, bounded by the policy's max_debt); `refund` gives units back, never
// above a limit's size. Pure functions over the same states as evaluate.h, all or nothing.
#pragma once

#include <cstdint>
#include <span>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/algorithm/validate.h"
#include "sluice/status.h"

namespace sluice::algorithm {

// The largest max_debt a policy may set, in cost units (as kMaxCost).
inline constexpr std::int64_t kMaxDebt = 1'000'000'000;

// Errors of a policy's `max_debt` (field "max_debt"): negative, above kMaxDebt, or so deep that a
// limit's state in debt would pass what validate_limit allows its parameters (2^53 products, the
// 100-year horizon, the sliding log's entry cap): each limit must stay valid when max_debt units
// larger. Limits that are themselves invalid are not checked again.
std::vector<FieldError> validate_max_debt(std::int64_t max_debt, std::span<const Limit> limits,
                                          const ValidationOptions& options = {});

// FailedPrecondition naming the first concurrency limit ("limits[2]"): leases are taken and
// released, not charged or refunded.
Status check_quota_limits(std::span<const Limit> limits);

// Charges `cost` to every limit when each one's balance after the charge is at least -max_debt;
// otherwise changes nothing. cost 0 reports the balances and changes nothing. The verdict:
// allowed = charged; limit, remaining (>= 0), reset_after and balance (signed) of the state after
// the charge (of the unchanged state when refused); retry_after when refused: when the same charge
// fits (absent: never, cost > limit + max_debt); delay always absent. Deciding limit: when
// charged, the lowest balance; when refused, the longest retry_after, as evaluate.
// Preconditions: evaluate's, check_quota_limits(limits) ok, 0 <= max_debt <= kMaxDebt.
PolicyVerdict charge(std::span<const Limit> limits, std::span<LimitState> states, std::int64_t cost,
                     std::int64_t max_debt, Micros now);

// Gives `cost` units back to every limit, each capped at its size (a full bucket, an empty
// window). Always allowed; the verdict is the state after, as charge's; deciding limit: the lowest
// balance. Preconditions as charge's.
PolicyVerdict refund(std::span<const Limit> limits, std::span<LimitState> states, std::int64_t cost,
                     Micros now);

// A settle's refund (store.h QuotaOperation::kSettle): gives back `cost` units of a reservation
// charged at `charged_at` (the store's clock when the reserve was charged). Buckets are refunded as
// by refund (the TAT moves back, capped at full); a window limit only into the window that counted
// the reservation (window.h refund_charged_at): a reservation charged late in one window and
// settled in the next must not hand its estimate to the new window on top of what that window
// already allows. Always allowed; the verdict as refund's. Preconditions as charge's.
PolicyVerdict settle_refund(std::span<const Limit> limits, std::span<LimitState> states,
                            std::int64_t cost, Micros charged_at, Micros now);

}  // namespace sluice::algorithm
