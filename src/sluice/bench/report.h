// Reports of `sluice bench` runs: a JSON document for machines (bench/compare reads it) and a
// fixed-width table for people. Latencies are reported in microseconds.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sluice/bench/load_generator.h"

namespace sluice::bench {

// {"min", "mean", "p50", "p90", "p99", "p99_9", "max"} in microseconds (fractional).
nlohmann::json latency_to_json(const Histogram& nanoseconds);

// One load point: threads, seconds, decisions, decisions_per_second, allowed, denied, errors,
// degraded, latency_us; in open loop also intended_per_second, unsent and service_time_us; for a
// store that batches (the embedded Redis store) decisions_per_call.
nlohmann::json result_to_json(const LoadResult& result, LoadMode mode);

// "850ns", "78.1us", "1.23ms", "2.50s": three significant digits.
std::string format_latency(std::uint64_t nanoseconds);

// The human table: one row per point (threads, or callers "in flight" for kAsync; decisions/s,
// allowed, denied, errors, p50, p90, p99, p99.9, max; open loop adds the intended rate and unsent
// requests; a batching store, decisions per call).
std::string format_table(const std::vector<LoadResult>& results, LoadMode mode);

}  // namespace sluice::bench
