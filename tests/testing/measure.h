// Small measuring helpers the benchmarks share.
#pragma once

#include <sys/resource.h>

#include <vector>

namespace sluice::test {

// CPU time (user + system) of this process (RUSAGE_SELF) or of its waited-for children
// (RUSAGE_CHILDREN), or of the calling thread (RUSAGE_THREAD), in µs.
double cpu_us(int who = RUSAGE_SELF);

// The q-quantile (q in [0, 1]) of samples sorted ascending: the sample at rank q × (n - 1),
// rounded down. 0 when there are none.
double sorted_percentile(const std::vector<double>& sorted, double q);

}  // namespace sluice::test
