// Small measuring helpers the benchmarks share.
#pragma once

#include <sys/resource.h>

#include <string_view>
#include <vector>

namespace sluice::test {

// CPU time (user + system) of this process (RUSAGE_SELF) or of its waited-for children
// (RUSAGE_CHILDREN), or of the calling thread (RUSAGE_THREAD), in µs.
double cpu_us(int who = RUSAGE_SELF);

// The q-quantile (q in [0, 1]) of samples sorted ascending: the sample at rank q × (n - 1),
// rounded down. 0 when there are none.
double sorted_percentile(const std::vector<double>& sorted, double q);

// The instructions of thread 1 in `callgrind_control -e Ir`'s output ("   Th 1  6,214,169" per
// thread, after a "Totals:" header): Redis's main thread, which runs every command (the others,
// lazy free and file closing, do no work of a benchmark's calls). 0 when the line is missing.
double main_thread_instructions(std::string_view callgrind_control_output);

}  // namespace sluice::test
