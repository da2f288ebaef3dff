#include "sluice/server/http/router.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

Router make_router(std::vector<std::string>& calls) {
  Router router;
  for (const char* route : {"/v1/acquire", "/v1/acquire/batch", "/v1/leases/{lease}/release",
                            "/v1/leases/{lease}/renew"}) {
    router.add("POST", route, [&calls, route](auto) { calls.push_back(route); });
  }
  router.add("GET", "/v1/check", [&calls](auto) { calls.push_back("check"); });
  return router;
}

TEST(RouterTest, MatchesLiteralPathsByMethod) {
  std::vector<std::string> calls;
  const Router router = make_router(calls);
  Router::Match match = router.match("POST", "/v1/acquire/batch");
  ASSERT_NE(match.handler, nullptr);
  (*match.handler)(nullptr);
  EXPECT_EQ(calls, std::vector<std::string>{"/v1/acquire/batch"});
  EXPECT_EQ(match.route, "/v1/acquire/batch");
}

TEST(RouterTest, CapturesDecodedPathParameters) {
  std::vector<std::string> calls;
  const Router router = make_router(calls);
  const Router::Match match = router.match("POST", "/v1/leases/ab%2Fcd/renew");
  ASSERT_NE(match.handler, nullptr);
  EXPECT_EQ(match.route, "/v1/leases/{lease}/renew");
  ASSERT_EQ(match.params.size(), 1u);
  EXPECT_EQ(match.params[0].first, "lease");
  EXPECT_EQ(match.params[0].second, "ab/cd");
}

TEST(RouterTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  std::vector<std::string> calls;
  const Router router = make_router(calls);
  EXPECT_EQ(router.match("GET", "/v1/nope").status, 404);
  EXPECT_EQ(router.match("POST", "/v1/leases//release").status, 404);  // empty parameter
  EXPECT_EQ(router.match("POST", "/v1/acquire/").status, 404);
  const Router::Match wrong = router.match("GET", "/v1/acquire");
  EXPECT_EQ(wrong.handler, nullptr);
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.allow, "POST");
}

}  // namespace
}  // namespace sluice::http
