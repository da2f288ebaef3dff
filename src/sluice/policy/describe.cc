#include "sluice/policy/describe.h"

#include "sluice/algorithm/catalogue.h"

namespace sluice::policy {

std::string describe_limit(const algorithm::Limit& limit) {
  return std::string(algorithm::algorithm_name(limit)) + ": " + algorithm::limit_words(limit);
}

std::string describe_limits(const std::vector<algorithm::Limit>& limits) {
  std::string text;
  for (const algorithm::Limit& limit : limits) {
    if (!text.empty()) text += "; ";
    text += describe_limit(limit);
  }
  return text;
}

}  // namespace sluice::policy
