#include "sluice/server/grpc/rls_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "sluice/core/key.h"

namespace sluice::grpc_server {
namespace {

namespace rls = envoy::service::ratelimit::v3;

// Time kept back from the caller's deadline for the answer's own trip — a tenth of what is left,
// at least 2 ms (Envoy's default 20 ms timeout leaves the store 18 ms): a store that has not
// answered by then is decided by the policy's failure mode, and the answer still arrives in time.
constexpr Micros kMinAnswerMargin = 2 * kMicrosPerMilli;

grpc::Status to_grpc(const Status& status) {
  return {static_cast<grpc::StatusCode>(status.code()), std::string(status.message())};
}

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

// One call's answer being assembled: the last of its decisions to finish writes it. The request
// and response stay alive until Finish.
struct Pending {
  Pending(grpc::ServerUnaryReactor* reactor_in, rls::RateLimitResponse* response_in,
          RlsHeaders headers_in, std::size_t descriptors)
      : reactor(reactor_in), response(response_in), headers(headers_in), statuses(descriptors) {}

  void fail(const Status& status) {
    std::lock_guard lock(mutex);
    if (!error) error = status;
  }

  // The acq_rel count makes every status written before it visible to the one that answers.
  void done_one() {
    if (left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (error) return reactor->Finish(to_grpc(*error));
    fill_response(statuses, headers, *response);
    reactor->Finish(grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* const reactor;
  rls::RateLimitResponse* const response;
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

class RlsService final : public rls::RateLimitService::CallbackService {
 public:
  RlsService(service::Limiter& limiter, const service::PolicyLookup& policies, RlsOptions options)
      : limiter_(limiter), policies_(policies), options_(options) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const rls::RateLimitRequest* request,
                                            rls::RateLimitResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    // As envoyproxy/ratelimit: a request without a domain or descriptors is the caller's mistake.
    if (request->domain().empty()) {
      reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT, "domain: must not be empty"});
      return reactor;
    }
    if (request->descriptors().empty()) {
      reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT, "descriptors: must not be empty"});
      return reactor;
    }
    const Micros store_timeout = store_timeout_for(context->deadline());
    const std::shared_ptr<const policy::DescriptorIndex> index = policies_.descriptors();
    // Unmatched and unlimited descriptors are OK at once; the others go to the limiter together,
    // except those with an allowed limit override, each decided under its own fixed window.
    auto pending = std::make_shared<Pending>(reactor, response, options_.headers,
                                             static_cast<std::size_t>(request->descriptors_size()));
    std::vector<service::AcquireRequest> acquires;
    std::vector<std::pair<std::size_t, std::shared_ptr<const policy::Policy>>> decided;
    std::vector<Override> overrides;
    std::vector<Charge> charges;
    std::vector<policy::RequestEntry> entries;
    for (int i = 0; i < request->descriptors_size(); ++i) {
      const auto& descriptor = request->descriptors(i);
      // Named only in an error: no string is built for a descriptor that is fine.
      const auto field = [i] { return "descriptors[" + std::to_string(i) + "]"; };
      entries.clear();
      for (const auto& entry : descriptor.entries()) {
        entries.push_back({.key = entry.key(), .value = entry.value()});
      }
      std::optional<policy::DescriptorMatch> match = index->match(request->domain(), entries);
      if (!match || match->policy->limits.empty()) continue;
      if (match->subject.size() > kMaxSubjectBytes) {
        reactor->Finish(
            {grpc::StatusCode::INVALID_ARGUMENT, field() + ": the values make a subject over " +
                                                     std::to_string(kMaxSubjectBytes) + " bytes"});
        return reactor;
      }
      StatusOr<std::int64_t> cost = descriptor_cost(
          request->hits_addend(), descriptor.has_hits_addend()
                                      ? std::optional(descriptor.hits_addend().value())
                                      : std::nullopt);
      if (!cost.ok()) {
        reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                         field() + "." + std::string(cost.status().message())});
        return reactor;
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
          reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                           field() + "." + std::string(limit.status().message())});
          return reactor;
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
      acquires.push_back({.app = request->domain(),
                          .policy = match->policy->name,
                          .subject = std::move(match->subject),
                          .cost = *cost,
                          .store_timeout = store_timeout});
      decided.emplace_back(static_cast<std::size_t>(i), std::move(match->policy));
    }
    // One share for this thread, so the answer cannot go out before every call is submitted.
    pending->left.store(1 + (acquires.empty() ? 0 : 1) + static_cast<int>(overrides.size()) +
                        static_cast<int>(charges.size()));
    if (acquires.size() == 1) {
      // The usual call (Envoy sends one descriptor per rate-limit action): no batch to gather.
      limiter_.acquire(std::move(acquires.front()),
                       fill_status(pending, decided.front().first, decided.front().second));
    } else if (!acquires.empty()) {
      // The callbacks run on a store or timer thread, where they only fill the response.
      limiter_.acquire_all(std::move(acquires),
                           [pending, decided = std::move(decided)](
                               std::vector<StatusOr<service::Decision>> answers) {
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
      limiter_.try_acquire_async(policy, request->domain(), one.subject, one.cost,
                                 fill_status(pending, one.index, one.policy), store_timeout);
    }
    for (Charge& one : charges) {
      // A charge the store cannot take is an error (UNAVAILABLE), never a failure-mode answer:
      // a failure mode cannot know a debt (docs/quotas.md); Envoy ignores the answer to a call
      // made when the stream is done.
      limiter_.apply_quota({.app = request->domain(),
                            .policy = one.policy->name,
                            .subject = std::move(one.subject),
                            .operation = store::QuotaOperation::kCharge,
                            .cost = one.cost,
                            .store_timeout = store_timeout},
                           fill_status(pending, one.index, one.policy));
    }
    pending->done_one();
    return reactor;
  }

 private:
  Micros store_timeout_for(std::chrono::system_clock::time_point deadline) const {
    if (deadline == std::chrono::system_clock::time_point::max()) return options_.store_timeout;
    const Micros left = std::chrono::duration_cast<std::chrono::microseconds>(
                            deadline - std::chrono::system_clock::now())
                            .count();
    // Past or nearly past: the smallest bound still asks the store, and the failure mode answers.
    const Micros margin = std::max(left / 10, kMinAnswerMargin);
    return std::min(std::max(left - margin, Micros{1'000}), options_.store_timeout);
  }

  service::Limiter& limiter_;
  const service::PolicyLookup& policies_;
  const RlsOptions options_;
};

}  // namespace

std::unique_ptr<grpc::Service> make_rls_service(service::Limiter& limiter,
                                                const service::PolicyLookup& policies,
                                                RlsOptions options) {
  return std::make_unique<RlsService>(limiter, policies, options);
}

}  // namespace sluice::grpc_server
