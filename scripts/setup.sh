#!/usr/bin/env bash
# Installs what is missing, in two sets (docs/decisions.md, "Two package sets"):
#   scripts/setup.sh          what building and serving need (scripts/run.sh): the compiler, the
#                             libraries, redis-server and curl for the README's quick start, then
#                             the web console's npm packages (npm ci in web/, from its lockfile);
#   scripts/setup.sh --tests  that, and what only the tests need (scripts/test.sh): PostgreSQL,
#                             MariaDB, nginx, Chromium, clang and its sanitizer runtimes, the gRPC
#                             Python tools, lintian, promtool (Debian's prometheus), ...
# apt's own progress is shown. Idempotent: when every package is already present it returns at
# once without touching apt or the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=no
case "${1-}" in
  "") ;;
  --tests) tests=yes ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

# Building (the release preset configures the tests' frameworks too, so that run.sh and test.sh
# share build/release: gtest, benchmark and rapidcheck are a few MB of headers and archives) and
# serving (redis-server and curl: the quick start's shared store and its client).
build_packages=(
  build-essential cmake ninja-build ccache pkgconf ca-certificates curl
  libboost-dev libssl-dev libhiredis-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libhowardhinnant-date-dev tzdata libjemalloc-dev libsqlite3-dev libargon2-dev
  libsoci-dev libpq-dev libmariadb-dev libnghttp2-dev zlib1g-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  redis-server redis-tools
)
# Only the tests: the servers they start, the browser of the console's tests, clang for the
# sanitizer, fuzzing and thread-safety builds, formatting, load tools, package checks, promtool
# (the Prometheus rules' tests; on a machine with systemd the package also enables a Prometheus
# daemon on :9090, which no test uses: `systemctl disable --now prometheus` if unwanted).
test_packages=(
  clang-14 clang-format clang-tidy libclang-rt-14-dev
  sqlite3 postgresql mariadb-server nginx wrk nghttp2-client file chromium chromium-driver
  python3-grpcio python3-protobuf python3-grpc-tools lintian prometheus
)

packages=("${build_packages[@]}")
[ "$tests" = yes ] && packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${#missing[@]} Debian packages and their dependencies: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    "${missing[@]}"
  echo "setup: Debian packages installed" >&2
fi

# The web console's packages (Node.js 20 and npm come with the machine). npm ci again only when
# the lockfile is newer than what node_modules holds.
# Without Node the server still builds and runs; its page at / then says the console was not
# built, and the console's tests are not registered (docs/console.md).
if ! command -v npm >/dev/null; then
  echo "setup: WARNING: npm not found; the web console needs Node.js 20+ and npm" >&2
elif [ ! -f web/node_modules/.package-lock.json ] ||
     [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "setup: npm ci in web/" >&2
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
