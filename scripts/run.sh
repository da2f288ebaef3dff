#!/usr/bin/env bash
# The main job: build, then `sluice serve` with embedded defaults — HTTP/JSON on 127.0.0.1:8080,
# the in-memory store, the built-in demo policy (examples/demo-policy.yaml). Extra arguments go
# to `sluice serve` (e.g. --redis redis://127.0.0.1:6379, --listen 0.0.0.0:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build build/release --target sluice >/dev/null
exec build/release/src/sluice/cli/sluice serve "$@"
