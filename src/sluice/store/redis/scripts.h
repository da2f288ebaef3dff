// The Lua scripts of the Redis store, embedded at build time from scripts/*.lua
// (cmake/embed_scripts.cmake). `_redis` variants read Redis's clock; `_pinned` variants take the
// time from their last argument and exist only so tests can replay traces deterministically.
#pragma once

#include <string>

namespace sluice::store::scripts {

const std::string& acquire_redis();
const std::string& acquire_pinned();
const std::string& inspect_redis();
const std::string& inspect_pinned();
const std::string& lease_redis();
const std::string& lease_pinned();

}  // namespace sluice::store::scripts
