# Sourced by the bench/*.sh scripts that load a `sluice serve`: builds the binary (release) into
# $sluice, makes the scratch directory $dir (removed on exit, with every server in `pids`, by
# scripts/lib/loopback.sh) and writes $dir/bench.yaml, a policy that always allows, so every
# decision takes the allowed path with all its headers.
#   source bench/lib/sluice_bench.sh NAME [descriptors]   ("descriptors": also reachable over gRPC
#                                                          by the descriptor [{key: <subject>}])
cmake --preset release >/dev/null
cmake --build build/release --target sluice >/dev/null
sluice=build/release/src/sluice/cli/sluice
dir=$(mktemp -d "/tmp/sluice-$1-XXXXXX")
source scripts/lib/loopback.sh
{
  echo 'name: bench.check'
  echo 'apps: ["*"]'
  if [ "${2:-}" = descriptors ]; then echo 'descriptors: {entries: [{key: key}]}'; fi
  echo 'limits:'
  echo '  - {algorithm: token_bucket, capacity: 1000000000, refill: 1000000000, period: 1s}'
} >"$dir/bench.yaml"
