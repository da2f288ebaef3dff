// The admin web console (web/, Preact built by Vite) as served by `sluice serve`: the built files
// are embedded in the binary at build time (cmake/embed_web.cmake), so the console is always the
// one of the server's own version and needs no directory at run time. Served at "/" (index.html)
// and "/assets/<file>", with a Content-Security-Policy that allows only the server's own scripts
// and styles (no inline code) and forbids framing. docs/console.md describes the console.
#pragma once

#include <span>
#include <string_view>

#include "sluice/server/http/router.h"

namespace sluice::http {

struct WebAsset {
  std::string_view path;  // "/index.html", "/assets/console.js"
  std::string_view content_type;
  std::string_view body;
};

// Every embedded file (generated at build time).
std::span<const WebAsset> web_assets();

// The headers every console response carries: Content-Security-Policy (script-src 'self', no
// 'unsafe-inline'; frame-ancestors 'none'), X-Frame-Options, X-Content-Type-Options,
// Referrer-Policy.
std::vector<Header> console_security_headers();

// GET / and GET /assets/{file}: the embedded files; 404 problem+json for unknown assets.
void add_console_routes(Router& router);

}  // namespace sluice::http
