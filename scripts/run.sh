#!/usr/bin/env bash
# The main job: build, then `sluice serve` with embedded defaults — HTTP/JSON on 127.0.0.1:8080,
# the in-memory store, the built-in demo policy (examples/demo-policy.yaml), no access log on the
# terminal (--access-log stderr or FILE to have one). Extra arguments go to `sluice serve` (e.g.
# --redis redis://127.0.0.1:6379, --listen 127.0.0.1:9090). Each phase prints a line; apt and the
# build show their own progress ([done/total]). Installs only what building and serving need
# (scripts/setup.sh); scripts/test.sh installs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { printf 'run.sh: %s\n' "$*" >&2; }

phase "1/4 Debian packages to build and serve (scripts/setup.sh: what is missing; minutes the first time)"
scripts/setup.sh
phase "2/4 configuring build/release"
cmake --preset release >/dev/null
phase "3/4 building sluice (the first build takes 10-20 minutes on 2 cores)"
cmake --build build/release --target sluice >&2
phase "4/4 sluice serve $*"
exec build/release/src/sluice/cli/sluice serve "$@"
