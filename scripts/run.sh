#!/usr/bin/env bash
# The main job: build, then `sluice serve` with embedded defaults — HTTP/JSON on 127.0.0.1:8080,
# the in-memory store, the built-in demo policy (examples/demo-policy.yaml). Extra arguments go
# to `sluice serve` (e.g. --redis redis://127.0.0.1:6379, --listen 0.0.0.0:8080). Each phase
# prints a line; the build shows its own progress ([done/total]).
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { printf 'run.sh: %s\n' "$*" >&2; }

phase "1/4 Debian packages (scripts/setup.sh: installs what is missing; minutes the first time)"
scripts/setup.sh
phase "2/4 configuring build/release"
cmake --preset release >/dev/null
phase "3/4 building sluice (the first build takes 10-20 minutes on 2 cores)"
cmake --build build/release --target sluice >&2
phase "4/4 sluice serve $*"
exec build/release/src/sluice/cli/sluice serve "$@"
