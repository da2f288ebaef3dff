#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang-14, ASan+UBSan) and runs each for SECONDS
# (default 30) from its seed corpus in fuzz/corpus/<target>/. New inputs go to a scratch
# directory, never into the repository; a crash leaves its input in build/fuzz/crashes/ and fails
# the script. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (docs/fuzzing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(duration_fuzzer url_fuzzer policy_document_fuzzer resp_fuzzer http_request_fuzzer
           grpc_session_fuzzer)

cmake --preset fuzz >/dev/null
cmake --build build/fuzz -j "$(nproc)" --target "${targets[@]}"
crashes=build/fuzz/crashes
mkdir -p "$crashes"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  printf 'fuzz: %s for %ss\n' "$target" "$seconds"
  # -rss_limit_mb: a parser that buffers without bound fails here as it would fail a server.
  # The outer timeout: after an out-of-memory, ASan's memory profile of millions of small blocks
  # can take longer than the run itself.
  if ! timeout -s KILL $((seconds + 120)) build/fuzz/fuzz/"$target" "$scratch/$target" "fuzz/corpus/$target" \
      -max_total_time="$seconds" -rss_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="$crashes/$target-" >"$scratch/$target.log" 2>&1; then
    tail -n 60 "$scratch/$target.log" >&2
    echo "fuzz: $target failed; the input is in $crashes/" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$scratch/$target.log" | tail -n 2
done
echo "fuzz: every target ran ${seconds}s without a failure"
