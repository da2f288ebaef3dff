// The console's routes over the embedded files: index.html at "/", its script and stylesheet
// under /assets, each with the security headers; unknown files are 404s.
#include "sluice/server/http/console.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

namespace sluice::http {
namespace {

class RecordingTransport final : public Transport {
 public:
  void respond(Response response) override { last = std::move(response); }
  void after(std::chrono::microseconds /*delay*/, std::function<void()> fn) override { fn(); }
  void offload(std::function<void()> fn) override { fn(); }
  std::optional<Response> last;
};

Response get(const Router& router, const std::string& path) {
  const Router::Match match = router.match("GET", path);
  if (match.handler == nullptr) return {.status = match.status};
  auto transport = std::make_shared<RecordingTransport>();
  (*match.handler)(std::make_shared<Exchange>(
      Request{.method = "GET", .target = path, .path = path}, match.params, transport));
  EXPECT_TRUE(transport->last.has_value()) << path;
  return transport->last.value_or(Response{.status = 0});
}

std::string header(const Response& response, std::string_view name) {
  for (const Header& h : response.headers) {
    if (iequals(h.name, name)) return h.value;
  }
  return "";
}

TEST(ConsoleTest, ServesIndexAndEveryEmbeddedFileWithTheSecurityHeaders) {
  Router router;
  add_console_routes(router);
  const Response index = get(router, "/");
  ASSERT_EQ(index.status, 200);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_NE(index.body.find("<div id=\"app\">"), std::string::npos) << index.body;
  const std::string csp = header(index, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(header(index, "X-Frame-Options"), "DENY");
  EXPECT_EQ(header(index, "X-Content-Type-Options"), "nosniff");
  for (const WebAsset& asset : web_assets()) {
    if (!asset.path.starts_with("/assets/")) continue;
    SCOPED_TRACE(asset.path);
    const Response file = get(router, std::string(asset.path));
    EXPECT_EQ(file.status, 200);
    EXPECT_EQ(file.body, asset.body);
    EXPECT_EQ(file.content_type, asset.content_type);
    EXPECT_FALSE(header(file, "Content-Security-Policy").empty());
  }
}

TEST(ConsoleTest, UnknownFilesAre404AndIndexHtmlIsOnlyAtTheRoot) {
  Router router;
  add_console_routes(router);
  EXPECT_EQ(get(router, "/assets/nothing.js").status, 404);
  EXPECT_EQ(get(router, "/assets/..%2Findex.html").status, 404);
  EXPECT_EQ(get(router, "/index.html").status, 404);
  EXPECT_EQ(get(router, "/policies").status, 404);
}

}  // namespace
}  // namespace sluice::http
