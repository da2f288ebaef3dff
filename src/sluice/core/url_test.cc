#include "sluice/core/url.h"

#include <gtest/gtest.h>

#include <optional>
#include <string_view>
#include <vector>

namespace sluice::url {
namespace {

using std::nullopt;

TEST(UrlTest, SplitComponentsCutsAtTheFirstHashQuestionMarkAndSlashAndTheLastAt) {
  const Components all = split_components("u:p@ss@h:1,k:2/db/x?a=1/b@c#top?/@");
  EXPECT_EQ(all.userinfo, "u:p@ss");
  EXPECT_EQ(all.authority, "h:1,k:2");
  EXPECT_EQ(all.path, "db/x");
  EXPECT_EQ(all.query, "a=1/b@c");
  EXPECT_EQ(all.fragment, "top?/@");

  const Components bare = split_components("h");
  EXPECT_EQ(bare.userinfo, nullopt);
  EXPECT_EQ(bare.authority, "h");
  EXPECT_EQ(bare.path, nullopt);
  EXPECT_EQ(bare.query, nullopt);
  EXPECT_EQ(bare.fragment, nullopt);

  // Present but empty is not absent: "h/" has a path, "h?" a query, "@h" a userinfo.
  EXPECT_EQ(split_components("h/").path, "");
  EXPECT_EQ(split_components("h?").query, "");
  EXPECT_EQ(split_components("h#").fragment, "");
  EXPECT_EQ(split_components("@h").userinfo, "");
  // An '@' after the first '/' belongs to the path.
  const Components at_in_path = split_components("h/a@b");
  EXPECT_EQ(at_in_path.userinfo, nullopt);
  EXPECT_EQ(at_in_path.path, "a@b");
}

TEST(UrlTest, SplitUserinfoCutsAtTheFirstColon) {
  const Userinfo both = split_userinfo("alice:pa:ss");
  EXPECT_EQ(both.user, "alice");
  EXPECT_EQ(both.password, "pa:ss");
  const Userinfo password_only = split_userinfo(":pw");
  EXPECT_EQ(password_only.user, "");
  EXPECT_EQ(password_only.password, "pw");
  const Userinfo user_only = split_userinfo("alice");
  EXPECT_EQ(user_only.user, "alice");
  EXPECT_EQ(user_only.password, nullopt);
}

TEST(UrlTest, SplitHostPortReadsEachShapeOfHost) {
  struct Case {
    std::string_view authority;
    std::string_view host;
    bool bracketed;
    bool unclosed;
    std::string_view unexpected;
    std::optional<std::string_view> port;
  };
  const std::vector<Case> cases = {
      {"h", "h", false, false, "", nullopt},      {"h:6379", "h", false, false, "", "6379"},
      {"h:", "h", false, false, "", ""},          {":1", "", false, false, "", "1"},
      {"a:b:c", "a", false, false, "", "b:c"},    {"", "", false, false, "", nullopt},
      {"[::1]", "::1", true, false, "", nullopt}, {"[::1]:7000", "::1", true, false, "", "7000"},
      {"[::1]:", "::1", true, false, "", ""},     {"[::1]x:1", "::1", true, false, "x:1", nullopt},
      {"[]", "", true, false, "", nullopt},       {"[::1", "::1", true, true, "", nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.authority);
    const HostPort split = split_host_port(c.authority);
    EXPECT_EQ(split.host, c.host);
    EXPECT_EQ(split.bracketed, c.bracketed);
    EXPECT_EQ(split.unclosed, c.unclosed);
    EXPECT_EQ(split.unexpected, c.unexpected);
    EXPECT_EQ(split.port, c.port);
  }
}

TEST(UrlTest, ParsePortAcceptsDigitsFromOneTo65535) {
  EXPECT_EQ(parse_port("1"), 1);
  EXPECT_EQ(parse_port("65535"), 65535);
  EXPECT_EQ(parse_port("06379"), 6379);
  for (std::string_view text : {"0", "65536", "", "-1", "+1", "1x", " 1", "99999999999999999999"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_port(text), nullopt);
  }
}

TEST(UrlTest, HostCharacterClasses) {
  EXPECT_TRUE(is_host_name("cache-1.internal_zone"));
  EXPECT_TRUE(is_host_name("10.0.0.7"));
  EXPECT_TRUE(is_host_name(""));
  EXPECT_FALSE(is_host_name("h o"));
  EXPECT_FALSE(is_host_name("h:1"));
  EXPECT_FALSE(is_host_name("caf\xC3\xA9"));
  EXPECT_TRUE(has_ipv6_characters("::ffff:1.2.3.4"));
  EXPECT_TRUE(has_ipv6_characters("FE80::1"));
  EXPECT_FALSE(has_ipv6_characters("fe80::1%eth0"));
  EXPECT_FALSE(has_ipv6_characters("::g"));
}

TEST(UrlTest, SplitQueryKeepsEveryItemButATrailingEmptyOne) {
  const std::vector<QueryItem> items = split_query("a=1&b&&c=&=d&a=2=3&");
  ASSERT_EQ(items.size(), 6u);
  const std::vector<std::string_view> names = {"a", "b", "", "c", "", "a"};
  const std::vector<std::optional<std::string_view>> values = {"1", nullopt, nullopt,
                                                               "",  "d",     "2=3"};
  for (std::size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(items[i].name, names[i]);
    EXPECT_EQ(items[i].value, values[i]);
  }
  EXPECT_TRUE(split_query("").empty());
  EXPECT_EQ(split_query("&").size(), 1u);
}

}  // namespace
}  // namespace sluice::url
