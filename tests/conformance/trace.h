// Conformance traces: (time, op, cost) -> expected decision tables that every Store must replay
// with identical results, field for field (memory now, Redis with pinned time next). The format
// is documented in tests/conformance/README.md.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/store/store.h"
#include "sluice/time.h"

namespace sluice::conformance {

// Every *.json under tests/conformance/traces, sorted. Located through the SLUICE_SOURCE_DIR
// environment variable that CTest sets.
std::vector<std::filesystem::path> trace_files();

nlohmann::json load_trace(const std::filesystem::path& file);

// Replays `trace` on `store`, calling set_now(instant) before each step. Returns one line per
// mismatch or malformed step; empty means the store conforms.
std::vector<std::string> replay(const nlohmann::json& trace, store::Store& store,
                                const std::function<void(Micros)>& set_now);

}  // namespace sluice::conformance
