#include "sluice/server/http/console.h"

#include <string>

namespace sluice::http {
namespace {

// 'self' only: the bundle is one script and one stylesheet from this origin, and everything the
// console shows is fetched from the same origin's API. No inline scripts or styles, no eval.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

const WebAsset* find_asset(std::string_view path) {
  for (const WebAsset& asset : web_assets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

void serve(Exchange& exchange, std::string_view path) {
  const WebAsset* asset = find_asset(path);
  if (asset == nullptr) {
    return exchange.respond(problem_response(404, "no such file in the console"));
  }
  Response response{.status = 200,
                    .content_type = std::string(asset->content_type),
                    .headers = console_security_headers(),
                    .body = std::string(asset->body)};
  // Fixed file names (the bundle is part of the binary): revalidate rather than cache blindly.
  response.headers.push_back({"Cache-Control", "no-cache"});
  exchange.respond(std::move(response));
}

}  // namespace

std::vector<Header> console_security_headers() {
  return {{"Content-Security-Policy", std::string(kContentSecurityPolicy)},
          {"X-Frame-Options", "DENY"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"},
          {"Cross-Origin-Opener-Policy", "same-origin"}};
}

void add_console_routes(Router& router) {
  router.add("GET", "/", [](const std::shared_ptr<Exchange>& e) { serve(*e, "/index.html"); });
  router.add("GET", "/assets/{file}", [](const std::shared_ptr<Exchange>& e) {
    serve(*e, "/assets/" + std::string(e->param("file")));
  });
}

}  // namespace sluice::http
