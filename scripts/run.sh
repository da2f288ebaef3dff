#!/usr/bin/env bash
# The main job. Until `sluice serve` lands: build, then decide eight requests for subject
# "alice" under the demo policy on the in-memory store and print each decision.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build build/release --target sluice >/dev/null
exec build/release/src/sluice/cli/sluice acquire --policy-file examples/demo-policy.yaml \
  --key alice --count 8 "$@"
