#include "sluice/server/grpc/rls_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "sluice/core/key.h"

namespace sluice::grpc_server {
namespace {

namespace rls = envoy::service::ratelimit::v3;

// Time kept back from the caller's deadline for the answer's own trip — a tenth of what is left,
// at least 2 ms (Envoy's default 20 ms timeout leaves the store 18 ms): a store that has not
// answered by then is decided by the policy's failure mode, and the answer still arrives in time.
constexpr Micros kMinAnswerMargin = 2 * kMicrosPerMilli;

void set_status(const RlsStatus& from, rls::RateLimitResponse::DescriptorStatus& to) {
  to.set_code(static_cast<rls::RateLimitResponse::Code>(from.code));
  if (!from.current_limit) return;
  rls::RateLimitResponse::RateLimit& limit = *to.mutable_current_limit();
  limit.set_name(from.current_limit->name);
  limit.set_requests_per_unit(from.current_limit->requests_per_unit);
  limit.set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(from.current_limit->unit));
  to.set_limit_remaining(from.limit_remaining);
  to.mutable_duration_until_reset()->set_seconds(from.duration_until_reset / kMicrosPerSecond);
  to.mutable_duration_until_reset()->set_nanos(
      static_cast<std::int32_t>(from.duration_until_reset % kMicrosPerSecond * 1000));
}

// The answer once every descriptor has its status.
void fill_response(const std::vector<RlsStatus>& statuses, RlsHeaders headers,
                   rls::RateLimitResponse& response) {
  bool over = false;
  for (const RlsStatus& status : statuses) {
    set_status(status, *response.add_statuses());
    over = over || status.code == RlsCode::kOverLimit;
  }
  response.set_overall_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
  for (RlsHeader& header : response_headers(statuses, headers)) {
    auto& added = *response.add_response_headers_to_add();
    added.set_key(std::move(header.key));
    added.set_value(std::move(header.value));
  }
}

// One call's answer being assembled: the last of its decisions to finish writes it.
struct Pending {
  Pending(RlsService::Reply reply_in, RlsHeaders headers_in, std::size_t descriptors)
      : reply(std::move(reply_in)), headers(headers_in), statuses(descriptors) {}

  void fail(const Status& status) {
    std::lock_guard lock(mutex);
    if (!error) error = status;
  }

  // The acq_rel count makes every status written before it visible to the one that answers.
  void done_one() {
    if (left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (error) return reply(*error);
    rls::RateLimitResponse response;
    fill_response(statuses, headers, response);
    reply(response.SerializeAsString());
  }

  const RlsService::Reply reply;
  const RlsHeaders headers;
  std::vector<RlsStatus> statuses;  // one per descriptor; each written by one decision
  std::atomic<int> left{0};
  std::mutex mutex;  // guards error
  std::optional<Status> error;
};

// The callback of one descriptor's decision: writes its status (or the call's error), then
// counts it done. Runs on a store or timer thread, where it only fills the response.
service::Limiter::DecisionCallback fill_status(std::shared_ptr<Pending> pending, std::size_t index,
                                               std::shared_ptr<const policy::Policy> policy) {
  return [pending = std::move(pending), index,
          policy = std::move(policy)](StatusOr<service::Decision> answer) {
    if (answer.ok()) {
      pending->statuses[index] = status_from_decision(*answer, *policy);
    } else {
      pending->fail(answer.status());
    }
    pending->done_one();
  };
}

// A descriptor whose policy charges (descriptors.charge): its cost is reported after the work.
struct Charge {
  std::size_t index = 0;
  std::shared_ptr<const policy::Policy> policy;
  std::string subject;
  std::int64_t cost = 1;
};

// A descriptor decided under its own RateLimitOverride (the policy allows it).
struct Override {
  std::size_t index = 0;
  std::shared_ptr<const policy::Policy> policy;  // the matched policy with the override's limit
  std::string subject;
  std::int64_t cost = 1;
};

}  // namespace

Micros RlsService::store_timeout_for(std::optional<Micros> timeout, Micros store_timeout) {
  if (!timeout) return store_timeout;
  const Micros left = *timeout;
  // Past or nearly past: the smallest bound still asks the store, and the failure mode answers.
  const Micros margin = std::max(left / 10, kMinAnswerMargin);
  return std::min(std::max(left - margin, Micros{1'000}), store_timeout);
}

void RlsService::should_rate_limit(std::string_view request_bytes, std::optional<Micros> timeout,
                                   std::string_view client, Reply reply) const {
  rls::RateLimitRequest request;
  if (!request.ParseFromArray(request_bytes.data(), static_cast<int>(request_bytes.size()))) {
    return reply(internal_error("RateLimitRequest: the message does not parse"));
  }
  // As envoyproxy/ratelimit: a request without a domain or descriptors is the caller's mistake.
  if (request.domain().empty()) return reply(invalid_argument("domain: must not be empty"));
  if (request.descriptors().empty()) {
    return reply(invalid_argument("descriptors: must not be empty"));
  }
  // As HTTP's batch cap: one call cannot ask for more decisions than a batch may.
  if (static_cast<std::size_t>(request.descriptors_size()) > options_.max_descriptors) {
    return reply(invalid_argument("descriptors: at most " +
                                  std::to_string(options_.max_descriptors) + " per call, not " +
                                  std::to_string(request.descriptors_size())));
  }
  const Micros store_timeout = store_timeout_for(timeout, options_.store_timeout);
  const std::shared_ptr<const policy::DescriptorIndex> index = policies_.descriptors();
  // Unmatched and unlimited descriptors are OK at once; the others go to the limiter together,
  // except those with an allowed limit override, each decided under its own fixed window.
  std::vector<service::AcquireRequest> acquires;
  std::vector<std::pair<std::size_t, std::shared_ptr<const policy::Policy>>> decided;
  std::vector<Override> overrides;
  std::vector<Charge> charges;
  std::vector<policy::RequestEntry> entries;
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const auto& descriptor = request.descriptors(i);
    // Named only in an error: no string is built for a descriptor that is fine.
    const auto field = [i] { return "descriptors[" + std::to_string(i) + "]"; };
    entries.clear();
    for (const auto& entry : descriptor.entries()) {
      entries.push_back({.key = entry.key(), .value = entry.value()});
    }
    std::optional<policy::DescriptorMatch> match = index->match(request.domain(), entries);
    if (!match || match->policy->limits.empty()) continue;
    if (match->subject.size() > kMaxSubjectBytes) {
      return reply(invalid_argument(field() + ": the values make a subject over " +
                                    std::to_string(kMaxSubjectBytes) + " bytes"));
    }
    StatusOr<std::int64_t> cost =
        descriptor_cost(request.hits_addend(), descriptor.has_hits_addend()
                                                   ? std::optional(descriptor.hits_addend().value())
                                                   : std::nullopt);
    if (!cost.ok()) {
      return reply(invalid_argument(field() + "." + std::string(cost.status().message())));
    }
    if (match->policy->descriptors->charge) {
      charges.push_back({.index = static_cast<std::size_t>(i),
                         .policy = std::move(match->policy),
                         .subject = std::move(match->subject),
                         .cost = *cost});
      continue;
    }
    if (descriptor.has_limit() && match->policy->descriptors->allow_override) {
      const auto& requested = descriptor.limit();
      StatusOr<algorithm::Limit> limit =
          override_limit(requested.requests_per_unit(), requested.unit());
      if (!limit.ok()) {
        return reply(invalid_argument(field() + "." + std::string(limit.status().message())));
      }
      auto policy = std::make_shared<policy::Policy>(*match->policy);
      policy->limits = {*limit};
      overrides.push_back({.index = static_cast<std::size_t>(i),
                           .policy = std::move(policy),
                           .subject = override_subject(
                               match->subject, requested.requests_per_unit(), requested.unit()),
                           .cost = *cost});
      continue;
    }
    acquires.push_back({.app = request.domain(),
                        .policy = match->policy->name,
                        .subject = std::move(match->subject),
                        .cost = *cost,
                        .store_timeout = store_timeout,
                        .client = std::string(client)});
    decided.emplace_back(static_cast<std::size_t>(i), std::move(match->policy));
  }
  auto pending = std::make_shared<Pending>(std::move(reply), options_.headers,
                                           static_cast<std::size_t>(request.descriptors_size()));
  // One share for this thread, so the answer cannot go out before every call is submitted.
  pending->left.store(1 + (acquires.empty() ? 0 : 1) + static_cast<int>(overrides.size()) +
                      static_cast<int>(charges.size()));
  if (acquires.size() == 1) {
    // The usual call (Envoy sends one descriptor per rate-limit action): no batch to gather.
    limiter_.acquire(std::move(acquires.front()),
                     fill_status(pending, decided.front().first, decided.front().second));
  } else if (!acquires.empty()) {
    // The callbacks run on a store or timer thread, where they only fill the response.
    limiter_.acquire_all(
        std::move(acquires),
        [pending, decided = std::move(decided)](std::vector<StatusOr<service::Decision>> answers) {
          for (std::size_t j = 0; j < answers.size(); ++j) {
            if (!answers[j].ok()) {
              pending->fail(answers[j].status());
              break;
            }
            pending->statuses[decided[j].first] =
                status_from_decision(*answers[j], *decided[j].second);
          }
          pending->done_one();
        });
  }
  for (Override& one : overrides) {
    const policy::Policy& policy = *one.policy;
    limiter_.try_acquire_async(policy, request.domain(), one.subject, one.cost,
                               fill_status(pending, one.index, one.policy), store_timeout);
  }
  for (Charge& one : charges) {
    // A charge the store cannot take is an error (UNAVAILABLE), never a failure-mode answer:
    // a failure mode cannot know a debt (docs/quotas.md); Envoy ignores the answer to a call
    // made when the stream is done. Each holds a place among the limiter's pending decisions.
    limiter_.apply_quota({.app = request.domain(),
                          .policy = one.policy->name,
                          .subject = std::move(one.subject),
                          .operation = store::QuotaOperation::kCharge,
                          .cost = one.cost,
                          .store_timeout = store_timeout,
                          .client = std::string(client)},
                         fill_status(pending, one.index, one.policy));
  }
  pending->done_one();
}

}  // namespace sluice::grpc_server
