// One subject's rate-limit state under a policy, for the people who run it: a peek (a cost-0
// look that changes nothing; anyone who may read the policy) and a reset (forget the subject,
// as if never seen; the policy's owners, since it hands the subject a fresh budget).
#include "sluice/auth/authorize.h"
#include "sluice/policy/document.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/service/decision.h"

namespace sluice::http {

using nlohmann::json;

void AdminApi::peek_subject(Exchange& exchange, const Principal& caller) {
  const std::optional<policy::Policy> stored =
      stored_policy(exchange, caller, auth::Operation::kRead);
  if (!stored) return;
  const store::SubjectRef ref{
      .policy = stored->name, .limits = stored->limits, .subject = exchange.param("key")};
  if (Status s = store::validate_subject_ref(ref); !s.ok()) return respond_error(exchange, s);
  StatusOr<std::vector<algorithm::Verdict>> verdicts = store_.inspect(ref);
  if (!verdicts.ok()) return respond_error(exchange, verdicts.status());
  json limits = json::array();
  for (std::size_t i = 0; i < verdicts->size(); ++i) {
    const algorithm::Verdict& v = (*verdicts)[i];
    limits.push_back({{"index", i},
                      {"algorithm", policy::limit_to_json(stored->limits[i])["algorithm"]},
                      {"limit", v.limit},
                      {"remaining", v.remaining},
                      {"reset_after_ms", service::millis_rounded_up(v.reset_after)}});
  }
  exchange.respond(json_response(
      200, {{"policy", stored->name}, {"key", ref.subject}, {"limits", std::move(limits)}}));
}

void AdminApi::reset_subject(Exchange& exchange, const Principal& caller) {
  const std::optional<policy::Policy> stored =
      stored_policy(exchange, caller, auth::Operation::kUpdate);
  if (!stored) return;
  const store::SubjectRef ref{
      .policy = stored->name, .limits = stored->limits, .subject = exchange.param("key")};
  if (Status s = store::validate_subject_ref(ref); !s.ok()) return respond_error(exchange, s);
  if (Status s = store_.reset(ref); !s.ok()) return respond_error(exchange, s);
  exchange.respond({.status = 204, .content_type = ""});
}

}  // namespace sluice::http
