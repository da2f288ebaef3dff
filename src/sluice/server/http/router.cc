#include "sluice/server/http/router.h"

#include "sluice/core/percent_encoding.h"

namespace sluice::http {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.starts_with('/')) path.remove_prefix(1);
  while (true) {
    const std::size_t slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

bool is_param(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

bool BodyBudget::try_take(std::size_t bytes) {
  std::size_t now = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || now > limit_ - bytes) {
      refusals_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  return true;
}

BodyCharge& BodyCharge::operator=(BodyCharge&& other) noexcept {
  if (this != &other) {
    reset();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool BodyCharge::grow_to(std::size_t bytes) {
  if (!budget_ || bytes <= bytes_) return true;
  if (!budget_->try_take(bytes - bytes_)) return false;
  bytes_ = bytes;
  return true;
}

void BodyCharge::reset() {
  if (budget_ && bytes_ > 0) budget_->give_back(bytes_);
  bytes_ = 0;
}

std::string_view Exchange::param(std::string_view name) const {
  for (const auto& [key, value] : params_) {
    if (key == name) return value;
  }
  return {};
}

void Router::add(std::string_view method, std::string_view pattern, Handler handler) {
  Route route{.method = std::string(method),
              .pattern = std::string(pattern),
              .handler = std::move(handler)};
  for (std::string_view segment : split_path(pattern)) route.segments.emplace_back(segment);
  routes_.push_back(std::move(route));
}

Router::Match Router::match(std::string_view method, std::string_view path) const {
  const std::vector<std::string_view> segments = split_path(path);
  Match result{.status = 404};
  for (const Route& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    PathParams params;
    bool matched = true;
    for (std::size_t i = 0; i < segments.size() && matched; ++i) {
      const std::string& want = route.segments[i];
      if (is_param(want)) {
        if (segments[i].empty())
          matched = false;
        else
          params.emplace_back(want.substr(1, want.size() - 2), percent_decode_lenient(segments[i]));
      } else {
        matched = want == segments[i];
      }
    }
    if (!matched) continue;
    if (route.method == method) {
      return {.handler = &route.handler, .route = route.pattern, .params = std::move(params)};
    }
    result.status = 405;
    result.route = route.pattern;
    if (result.allow.find(route.method) == std::string::npos) {
      if (!result.allow.empty()) result.allow += ", ";
      result.allow += route.method;
    }
  }
  return result;
}

std::vector<std::pair<std::string, std::string>> Router::routes() const {
  std::vector<std::pair<std::string, std::string>> list;
  for (const Route& route : routes_) list.emplace_back(route.method, route.pattern);
  return list;
}

}  // namespace sluice::http
