// Failure mode `split` (docs/defences.md "Budget-preserving outage mode"): while the shared store
// is unreachable, each node grants 1/live of every limit, `live` being the number of sluice
// nodes the heartbeat (store/redis/node_heartbeat.h) last saw alive. With scale_limit's rounding
// (floor, at least 1), N nodes together grant at most the limit (N·floor(limit/N) <= limit when
// limit >= N): the global budget holds, within one node's rounding, for traffic spread evenly.
#pragma once

#include <cstddef>
#include <functional>

namespace sluice::service {

// 1/live when `live_nodes` is set and answers live >= 1; else `fallback` (the local fraction): a
// node that never reached the store knows no count.
double split_fraction(const std::function<std::size_t()>& live_nodes, double fallback);

}  // namespace sluice::service
