// The URL syntax Sluice's three kinds of URL share — redis:// (store/redis/redis_url.h), the SQL
// database URLs (db/database_url.h) and the library's http:// (client/http_url.h) — read
// in one place. Each kind keeps on top of it only its own grammar (which schemes, how many hosts,
// which query parameters) and its own words for errors: these functions split and classify, they
// do not decide what is an error, so they return no messages. Nothing here is percent-decoded
// (core/percent_encoding.h does that, per component, after splitting). All functions are pure.
// docs/decisions.md says why this is ours and not a packaged URL parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::url {

// What follows "scheme://": `[userinfo@]authority[/path][?query][#fragment]`, split at the first
// '#', then the first '?', then the first '/'; the userinfo ends at the authority's *last* '@', so
// an unencoded '@' in a password still parses. Absent parts are std::nullopt; a present part may
// be empty ("h/" has the path "").
struct Components {
  std::optional<std::string_view> userinfo;
  std::string_view authority;            // the host(s) and port(s), as written
  std::optional<std::string_view> path;  // without its leading '/'
  std::optional<std::string_view> query;
  std::optional<std::string_view> fragment;
};
Components split_components(std::string_view text);

// "user:password" split at the first ':' (a password may hold ':'; a user name may not).
struct Userinfo {
  std::string_view user;
  std::optional<std::string_view> password;  // absent when there is no ':'
};
Userinfo split_userinfo(std::string_view userinfo);

// One `host[:port]` or `[ipv6][:port]` as written, split where the host ends.
struct HostPort {
  std::string_view host;  // without the brackets
  bool bracketed = false;
  bool unclosed = false;  // a '[' without its ']' (host is then what follows the '[')
  // Bracketed: what follows the ']' when it does not start with ':' ("[::1]x" → "x").
  std::string_view unexpected;
  // After the host's ':'; unbracketed, everything after the *first* ':', so "a:b:c" (an IPv6
  // address written without brackets) has the port text "b:c" and callers can say so.
  std::optional<std::string_view> port;
};
HostPort split_host_port(std::string_view authority);

// A TCP port: digits only, 1-65535. std::nullopt otherwise (all_digits in core/ascii.h tells a
// number out of range from text that is no number).
std::optional<std::uint16_t> parse_port(std::string_view text);

// Letters, digits, '.', '-' and '_' only (DNS names, IPv4 addresses, the underscores some
// internal names carry); true for "" (callers test emptiness first and say so).
bool is_host_name(std::string_view host);

// Hex digits, ':' and '.' only (an IPv6 address, with an IPv4 tail such as "::ffff:1.2.3.4");
// a shape check, not a full IPv6 parse — the resolver is the judge of the rest.
bool has_ipv6_characters(std::string_view host);

// A query "a=1&b&c=" as its '&'-separated items, in order, including empty ones ("a&&b" has
// three) except a trailing one ("a&" has one, "" none); the value is absent when the item has no
// '='.
struct QueryItem {
  std::string_view name;
  std::optional<std::string_view> value;
};
std::vector<QueryItem> split_query(std::string_view query);

}  // namespace sluice::url
