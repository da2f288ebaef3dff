#include "sluice/server/grpc/rls_service.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "sluice/core/status_macros.h"
#include "sluice/wire/rls_mapping.h"

namespace sluice::grpc_server {
namespace {

namespace rls = envoy::service::ratelimit::v3;
using wire::RlsCode;
using wire::RlsHeaders;
using wire::RlsStatus;

// Time kept back from the caller's deadline for the answer's own trip — a tenth of what is left,
// at least 2 ms (Envoy's default 20 ms timeout leaves the store 18 ms): a store that has not
// answered by then is decided by the policy's failure mode, and the answer still arrives in time.
constexpr Micros kMinAnswerMargin = 2 * kMicrosPerMilli;

void set_status(const RlsStatus& from, rls::RateLimitResponse::DescriptorStatus& to) {
  to.set_code(static_cast<rls::RateLimitResponse::Code>(from.code));
  // Without a current limit too: envoyproxy/ratelimit tells unlimited (4294967295) this way.
  to.set_limit_remaining(from.limit_remaining);
  if (!from.current_limit) return;
  rls::RateLimitResponse::RateLimit& limit = *to.mutable_current_limit();
  limit.set_name(from.current_limit->name);
  limit.set_requests_per_unit(from.current_limit->requests_per_unit);
  limit.set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(from.current_limit->unit));
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
  for (wire::Header& header : wire::response_headers(statuses, headers)) {
    auto& added = *response.add_response_headers_to_add();
    added.set_key(std::move(header.name));
    added.set_value(std::move(header.value));
  }
}

// One call's answer being assembled. One callback (decide's, or decide_all's for every
// descriptor at once) fills it and then finishes it, so nothing in it is shared between threads.
struct Pending {
  Pending(RlsService::Reply reply_in, RlsHeaders headers_in, std::size_t descriptors)
      : reply(std::move(reply_in)), headers(headers_in), statuses(descriptors) {}

  void fail(const Status& status) {
    if (!error) error = status;  // the first descriptor's error, in request order
  }

  void finish() {
    if (error) return reply(*error);
    rls::RateLimitResponse response;
    fill_response(statuses, headers, response);
    reply(response.SerializeAsString());
  }

  const RlsService::Reply reply;
  const RlsHeaders headers;
  std::vector<RlsStatus> statuses;  // one per descriptor
  std::optional<Status> error;
};

// `status` as descriptor `index`'s: an InvalidArgument names the descriptor
// ("descriptors[2].hits_addend: ..."); other statuses, OK included, are returned as they are.
Status in_descriptor(std::size_t index, const Status& status) {
  if (status.code() != StatusCode::kInvalidArgument) return status;
  return invalid_argument("descriptors[" + std::to_string(index) + "]." +
                          std::string(status.message()));
}

// Writes one descriptor's answer into `pending` (a resolution error names the descriptor).
void fill_status(Pending& pending, std::size_t index, service::Decided& decided) {
  if (!decided.decision.ok()) {
    pending.fail(in_descriptor(index, decided.decision.status()));
  } else if (decided.policy) {  // else nothing limits the descriptor: OK, no current limit
    pending.statuses[index] = wire::status_from_decision(*decided.decision, *decided.policy);
  }
}

// The decisions `request` asks for, one per descriptor (viewing into it), or why the call
// cannot be decided: InvalidArgument naming the field.
StatusOr<std::vector<service::DecisionRequest>> decision_requests(
    const rls::RateLimitRequest& request, const RlsOptions& options, std::optional<Micros> timeout,
    std::string_view client) {
  // As envoyproxy/ratelimit: a request without a domain or descriptors is the caller's mistake.
  if (request.domain().empty()) return invalid_argument("domain: must not be empty");
  if (request.descriptors().empty()) return invalid_argument("descriptors: must not be empty");
  // As HTTP's batch cap: one call cannot ask for more decisions than a batch may.
  if (static_cast<std::size_t>(request.descriptors_size()) > options.max_descriptors) {
    return invalid_argument("descriptors: at most " + std::to_string(options.max_descriptors) +
                            " per call, not " + std::to_string(request.descriptors_size()));
  }
  const Micros store_timeout = RlsService::store_timeout_for(timeout, options.store_timeout);
  // The limiter resolves each descriptor (matching, charges, overrides); this only maps the
  // protocol's fields. Unmatched and unlimited descriptors come back OK without a policy.
  std::vector<service::DecisionRequest> requests;
  requests.reserve(static_cast<std::size_t>(request.descriptors_size()));
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const auto& descriptor = request.descriptors(i);
    const StatusOr<std::int64_t> cost = wire::descriptor_cost(
        request.hits_addend(), descriptor.has_hits_addend()
                                   ? std::optional(descriptor.hits_addend().value())
                                   : std::nullopt);
    SLUICE_RETURN_IF_ERROR(in_descriptor(static_cast<std::size_t>(i), cost.status()));
    service::DescriptorTarget target;
    target.entries.reserve(static_cast<std::size_t>(descriptor.entries_size()));
    for (const auto& entry : descriptor.entries()) {
      target.entries.push_back({.key = entry.key(), .value = entry.value()});
    }
    if (descriptor.has_limit()) {
      const auto& requested = descriptor.limit();
      target.limit_override = service::DescriptorTarget::Override{
          .limit = wire::override_limit(requested.requests_per_unit(), requested.unit()),
          .subject_suffix =
              wire::override_subject("", requested.requests_per_unit(), requested.unit())};
    }
    requests.push_back({.app = request.domain(),
                        .descriptor = std::move(target),
                        .cost = *cost,
                        .store_timeout = store_timeout,
                        .client = std::string(client)});
  }
  return requests;
}

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
  // The decision requests view into `request` (its descriptor entries): it outlives
  // limiter_.decide, which resolves them before it returns.
  rls::RateLimitRequest request;
  if (!request.ParseFromArray(request_bytes.data(), static_cast<int>(request_bytes.size()))) {
    return reply(internal_error("RateLimitRequest: the message does not parse"));
  }
  // The one place a call that cannot be decided is answered with its error.
  StatusOr<std::vector<service::DecisionRequest>> requests =
      decision_requests(request, options_, timeout, client);
  if (requests.ok()) return decide(*std::move(requests), std::move(reply));
  reply(requests.status());
}

void RlsService::decide(std::vector<service::DecisionRequest> requests, Reply reply) const {
  auto pending = std::make_shared<Pending>(std::move(reply), options_.headers, requests.size());
  if (requests.size() == 1) {
    // The usual call (Envoy sends one descriptor per rate-limit action): no batch to gather. The
    // callback runs on a store or timer thread, where it only fills the response.
    limiter_.decide(std::move(requests.front()), [pending](service::Decided decided) {
      fill_status(*pending, 0, decided);
      pending->finish();
    });
    return;
  }
  // One invalid descriptor fails the call before any is decided; each descriptor takes its own
  // place among the pending decisions, charges included. A charge the store cannot take
  // is an error (UNAVAILABLE), never a failure-mode answer: a failure mode cannot know a debt
  // (docs/quotas.md); Envoy ignores the answer to a call made when the stream is done.
  limiter_.decide_all(
      std::move(requests),
      [pending](std::vector<service::Decided> answers) {
        for (std::size_t i = 0; i < answers.size(); ++i) {
          // A batch refused for one invalid descriptor: the others are Aborted, not decided.
          if (!answers[i].decision.ok() &&
              answers[i].decision.status().code() == StatusCode::kAborted) {
            continue;
          }
          fill_status(*pending, i, answers[i]);
        }
        pending->finish();
      },
      service::Limiter::BatchRule::kResolutionAllOrNone);
}

}  // namespace sluice::grpc_server
