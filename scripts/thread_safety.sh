#!/usr/bin/env bash
# Clang's thread-safety analysis over every product source (docs/architecture.md, "Threads"):
# each file of src/sluice/ in build/release/compile_commands.json is parsed by clang++-14 with
# -Wthread-safety as an error, without code generation (the release build is g++'s; this adds
# only the analysis). Members say which Mutex guards them (core/mutex.h), so an access
# without the lock fails here. Usage: scripts/thread_safety.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
[ -f "$build/compile_commands.json" ] || { echo "thread-safety: no $build/compile_commands.json" >&2; exit 1; }
python3 - "$build/compile_commands.json" "$PWD" <<'PY' | xargs -0 -n 1 -P "$(nproc)" bash -c 'eval "$0"'
import json, shlex, sys
from pathlib import Path
commands, root = json.load(open(sys.argv[1])), Path(sys.argv[2])
for entry in commands:
    source = Path(entry["file"])
    if not source.is_relative_to(root / "src/sluice") or source.suffix != ".cc":
        continue
    if source.name.endswith(("_test.cc", "_benchmark.cc")):
        continue
    argv = shlex.split(entry["command"])
    # Only what locates and configures the headers: g++'s warning and code flags stay behind.
    keep, i = [], 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-I", "-isystem", "-D", "-include"):
            keep += [arg, argv[i + 1]]
            i += 2
            continue
        if arg.startswith(("-I", "-D", "-isystem", "-std=")):
            keep.append(arg)
        i += 1
    command = ["clang++-14", "-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
               "-Wno-unknown-warning-option", *keep, str(source)]
    sys.stdout.write(f"cd {shlex.quote(entry['directory'])} && {shlex.join(command)}\0")
PY
echo "thread-safety: every product source passes clang's -Wthread-safety"
