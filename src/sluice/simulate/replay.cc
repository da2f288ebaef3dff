#include "sluice/simulate/replay.h"

#include <algorithm>
#include <utility>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/core/status_macros.h"

namespace sluice::simulate {
namespace {

using algorithm::Limit;
using algorithm::LimitState;

// As the memory store's record (store/memory/memory_record.cc is_stale): a state past its
// expiry is what a Redis key's TTL would have dropped.
bool stale(const Limit& limit, const LimitState& state, Micros now) {
  return !algorithm::state_fits(limit, state) || algorithm::expires_at(limit, state) <= now;
}

Micros latest_expiry(std::span<const Limit> limits, std::span<const LimitState> states) {
  Micros latest = 0;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    latest = std::max(latest, algorithm::expires_at(limits[i], states[i]));
  }
  return latest;
}

bool more_denied(const DeniedSubject& a, const DeniedSubject& b) {
  return a.denied != b.denied ? a.denied > b.denied : a.key < b.key;
}

}  // namespace

Status check_replayable(const policy::Policy& policy) {
  for (std::size_t i = 0; i < policy.limits.size(); ++i) {
    if (algorithm::algorithm_of(policy.limits[i]).leases) {
      return Status(StatusCode::kFailedPrecondition,
                    "policy " + policy.name + ": limits[" + std::to_string(i) +
                        "]: concurrency limits cannot be replayed: a lease is freed by its "
                        "release, which the traffic does not record (docs/backtesting.md)");
    }
  }
  return Status();
}

StatusOr<VariantReplay> VariantReplay::create(Variant variant, const ReplayOptions& options) {
  if (variant.policy.limits.empty()) {
    return invalid_argument("policy " + variant.policy.name + ": limits: none to replay");
  }
  if (options.bucket <= 0) return invalid_argument("bucket: must be at least 1 µs");
  SLUICE_RETURN_IF_ERROR(check_replayable(variant.policy));
  return VariantReplay(std::move(variant), options);
}

VariantReplay::VariantReplay(Variant variant, const ReplayOptions& options)
    : variant_(std::move(variant)), options_(options), width_(variant_.policy.limits.size()) {}

void VariantReplay::grow_to(std::uint32_t subject) {
  // Amortized doubling, as a vector would, but for two arrays kept in step.
  std::size_t size = std::max<std::size_t>(tallies_.size() * 2, 1024);
  while (size <= subject) size *= 2;
  tallies_.resize(size);
  states_.resize(size * width_);
}

Decision VariantReplay::decide(std::uint32_t subject, std::int64_t cost, Micros now) {
  if (subject >= tallies_.size()) grow_to(subject);
  const std::span<const Limit> limits = variant_.policy.limits;
  const std::span<LimitState> states(states_.data() + std::size_t{subject} * width_, width_);
  Tally& tally = tallies_[subject];

  algorithm::PolicyVerdict verdict;
  bool charged = false;
  const bool fresh = !tally.held || tally.expires_at <= now;
  if (variant_.policy.penalty) {
    // As the memory store with a penalty box: the limits decide on a copy, the box may still
    // turn an allowed verdict into a denial, and only a request still allowed is charged.
    thread_local std::vector<LimitState> scratch;
    scratch.assign(states.begin(), states.end());
    for (std::size_t i = 0; i < width_; ++i) {
      if (fresh || stale(limits[i], scratch[i], now)) {
        scratch[i] = algorithm::initial_state(limits[i], now);
      }
    }
    verdict = algorithm::evaluate(limits, scratch, cost, now, {});
    const algorithm::Penalty& penalty = *variant_.policy.penalty;
    auto found = penalties_.find(subject);
    algorithm::PenaltyState box;
    if (found != penalties_.end() && algorithm::penalty_expires_at(penalty, found->second) > now) {
      box = found->second;
    }
    if (algorithm::penalize(penalty, box, verdict.verdict, cost, now)) {
      if (algorithm::penalty_expires_at(penalty, box) <= now) {
        if (found != penalties_.end()) penalties_.erase(found);
      } else {
        penalties_[subject] = std::move(box);
      }
    }
    charged = verdict.verdict.allowed && cost > 0;
    if (charged) std::move(scratch.begin(), scratch.end(), states.begin());
    if (fresh) tally.held = charged;
  } else if (fresh) {
    // Absent, expired or never charged: the memory store starts from initial states made now
    // and keeps them only if this request is charged.
    for (std::size_t i = 0; i < width_; ++i) states[i] = algorithm::initial_state(limits[i], now);
    verdict = algorithm::evaluate(limits, states, cost, now, {});
    charged = verdict.verdict.allowed && cost > 0;
    tally.held = charged;
  } else {
    bool any_stale = false;
    for (std::size_t i = 0; i < width_ && !any_stale; ++i) {
      any_stale = stale(limits[i], states[i], now);
    }
    if (!any_stale) {
      verdict = algorithm::evaluate(limits, states, cost, now, {});
      charged = verdict.verdict.allowed && cost > 0;
    } else {
      // A stale limit is made afresh at `now` on a copy, stored only by a charge: an initial
      // state depends on when it is made, so a peek or a denial must not store one.
      thread_local std::vector<LimitState> scratch;
      scratch.assign(states.begin(), states.end());
      for (std::size_t i = 0; i < width_; ++i) {
        if (stale(limits[i], scratch[i], now))
          scratch[i] = algorithm::initial_state(limits[i], now);
      }
      verdict = algorithm::evaluate(limits, scratch, cost, now, {});
      charged = verdict.verdict.allowed && cost > 0;
      if (charged) std::move(scratch.begin(), scratch.end(), states.begin());
    }
  }
  if (charged) tally.expires_at = latest_expiry(limits, states);

  ++requests_;
  if (tally.requests++ == 0) ++subjects_;
  if (last_bucket_ == nullptr || now - last_bucket_->start >= options_.bucket ||
      now < last_bucket_->start) {
    const Micros start = now - (((now % options_.bucket) + options_.bucket) % options_.bucket);
    last_bucket_ = &buckets_.try_emplace(start, TimeBucket{.start = start}).first->second;
  }
  ++last_bucket_->requests;
  if (!verdict.verdict.allowed) {
    ++denied_;
    ++last_bucket_->denied;
    if (tally.denied++ == 0) ++subjects_denied_;
  }
  return Decision{.verdict = verdict.verdict, .limit_index = verdict.limit_index};
}

VariantReport VariantReplay::report(const NameTable& subjects) const {
  VariantReport report{.label = variant_.label,
                       .policy = variant_.policy.name,
                       .requests = requests_,
                       .allowed = requests_ - denied_,
                       .denied = denied_,
                       .subjects = subjects_,
                       .subjects_denied = subjects_denied_,
                       .other_app = other_app_};
  std::vector<DeniedSubject>& top = report.top_denied;
  for (std::size_t id = 0; id < tallies_.size(); ++id) {
    if (tallies_[id].denied == 0) continue;
    DeniedSubject candidate{.key = std::string(subjects.name(static_cast<std::uint32_t>(id))),
                            .denied = tallies_[id].denied,
                            .requests = tallies_[id].requests};
    // A bounded heap of the most denied: memory in `top`, not in subjects denied.
    if (top.size() < options_.top) {
      top.push_back(std::move(candidate));
      std::push_heap(top.begin(), top.end(), more_denied);
    } else if (!top.empty() && more_denied(candidate, top.front())) {
      std::pop_heap(top.begin(), top.end(), more_denied);
      top.back() = std::move(candidate);
      std::push_heap(top.begin(), top.end(), more_denied);
    }
  }
  std::sort_heap(top.begin(), top.end(), more_denied);
  for (const auto& [start, bucket] : buckets_) report.over_time.push_back(bucket);
  return report;
}

StatusOr<Replay> Replay::create(std::vector<Variant> variants, TrafficNames& names,
                                const ReplayOptions& options) {
  Replay replay(names, options);
  for (Variant& variant : variants) {
    const std::uint32_t id = names.policies.intern(variant.policy.name);
    SLUICE_ASSIGN_OR_RETURN(VariantReplay one, VariantReplay::create(std::move(variant), options));
    replay.variants_.push_back(std::move(one));
    replay.policy_ids_.push_back(id);
    replay.admitted_.emplace_back();
  }
  return replay;
}

bool Replay::admits(std::size_t variant, std::uint32_t app) {
  if (app == kUnnamed) return true;
  std::vector<std::uint8_t>& known = admitted_[variant];
  if (app >= known.size()) known.resize(app + 1, 0);
  if (known[app] == 0) {
    known[app] = variants_[variant].variant().policy.admits_app(names_->apps.name(app)) ? 1 : 2;
  }
  return known[app] == 1;
}

void Replay::add(const Event& event) {
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    if (event.policy != kUnnamed && event.policy != policy_ids_[i]) continue;
    if (!admits(i, event.app)) {
      variants_[i].count_other_app();
      continue;
    }
    variants_[i].decide(event.subject, event.cost, event.time);
  }
}

std::vector<VariantReport> Replay::reports() const {
  std::vector<VariantReport> reports;
  for (const VariantReplay& variant : variants_)
    reports.push_back(variant.report(names_->subjects));
  return reports;
}

std::vector<OutcomeChanges> Replay::outcome_changes() const {
  std::vector<OutcomeChanges> all;
  for (std::size_t a = 0; a < variants_.size(); ++a) {
    for (std::size_t b = a + 1; b < variants_.size(); ++b) {
      if (policy_ids_[a] != policy_ids_[b]) continue;
      const VariantReplay& first = variants_[a];
      const VariantReplay& second = variants_[b];
      OutcomeChanges changes{.policy = first.variant().policy.name,
                             .first = first.variant().label,
                             .second = second.variant().label};
      std::vector<std::string> only_first;
      std::vector<std::string> only_second;
      for (std::uint32_t id = 0; id < names_->subjects.size(); ++id) {
        const bool denied_first = first.denied_of(id) > 0;
        const bool denied_second = second.denied_of(id) > 0;
        if (denied_first == denied_second) continue;
        std::vector<std::string>& list = denied_first ? only_first : only_second;
        ++(denied_first ? changes.denied_only_by_first : changes.denied_only_by_second);
        if (list.size() < options_.top) list.emplace_back(names_->subjects.name(id));
      }
      std::sort(only_first.begin(), only_first.end());
      std::sort(only_second.begin(), only_second.end());
      changes.examples_first = std::move(only_first);
      changes.examples_second = std::move(only_second);
      all.push_back(std::move(changes));
    }
  }
  return all;
}

}  // namespace sluice::simulate
