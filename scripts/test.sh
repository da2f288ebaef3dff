#!/usr/bin/env bash
# Every test: build, unit + integration tests, unit tests again under ASan/UBSan, the
# concurrency tests under TSan, clang's thread-safety analysis, a formatting check, a brief run
# of every micro-benchmark, and 20 s of fuzzing per parser of untrusted bytes (docs/fuzzing.md).
# Installs what it needs first (scripts/setup.sh --tests: what run.sh installs, and the servers,
# browser and tools only the tests use). Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
jobs=$(nproc)

step() { printf '\n==> %s\n' "$*"; }

step "release build"
cmake --preset release >/dev/null
cmake --build build/release -j "$jobs"

step "unit and integration tests"
ctest --test-dir build/release -LE benchmark --output-on-failure -j "$jobs"

step "unit tests under ASan+UBSan"
cmake --preset asan >/dev/null
# Build only what the unit tests need: their executables (named like the tests) and `sluice`.
targets=(sluice)
while read -r name; do
  ninja -C build/asan -t query "$name" >/dev/null 2>&1 && targets+=("$name")
done < <(ctest --test-dir build/asan -L unit -N | awk '/Test +#/ {print $3}')
cmake --build build/asan -j "$jobs" --target "${targets[@]}"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan -L unit --output-on-failure -j "$jobs"

step "concurrency tests under TSan"
cmake --preset tsan >/dev/null
cmake --build build/tsan -j "$jobs" --target memory_store_test redis_client_test admin_api_test \
  redis_store_test bench_test service_test http_server_test redis_cluster_test \
  redis_sentinel_test core_test bench_http_target_test
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build/tsan -R '^(memory_store_test|redis_client_test|admin_api_test)$' \
  --output-on-failure
# The Redis store's threaded tests (decision batches, async decisions, faults under load); its
# forking race test stays out (a TSan runtime does not survive fork with threads). And the load
# generator's async callers, answered on another thread.
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/store/redis_store_test \
  --gtest_filter='*ShareScriptCalls*:*AsyncAcquire*:*InALoop*:RedisStoreFaultTest.*'
# The blocking callers' Waiter and the Rendezvous over it: a lone waiter spinning, the others
# sleeping, results racing both; and the timer queue (deadlines armed and cancelled from any thread).
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/core/core_test \
  --gtest_filter='WaiterTest.*:RendezvousTest.*:LowPriorityTest.*:TimerQueueTest.*'
# Redis Cluster and Sentinel routing: slot map refreshes, redirections and failovers racing the
# callers' commands (real clusters, a reshard and killed masters included).
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/store/redis_cluster_test
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/store/redis_sentinel_test
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/bench/bench_test --gtest_filter='*Async*'
# The asynchronous decision pipeline: deadlines racing store answers, waits; and the
# HTTP server answering from store threads, over the memory store and a (stalled) Redis.
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/service/service_test \
  --gtest_filter='LimiterPipelineTest.*:LimiterFailureModeTest.*'
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/server/http/http_server_test
# The access log's writer thread against the I/O threads, and the async HTTP load generator.
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/core/core_test --gtest_filter='LineWriterTest.*'
TSAN_OPTIONS=halt_on_error=1 build/tsan/src/sluice/bench/bench_http_target_test \
  --gtest_filter='*Async*'

step "thread-safety analysis (clang -Wthread-safety over every product source)"
scripts/thread_safety.sh build/release

step "formatting (clang-format)"
git ls-files -- '*.h' '*.cc' | xargs clang-format --dry-run --Werror

step "micro-benchmarks, briefly"
ctest --test-dir build/release -L benchmark --output-on-failure

step "fuzzing, briefly (20 s per target)"
scripts/fuzz.sh 20

step "all tests passed"
