#!/usr/bin/env bash
# Installs every build and test dependency: Debian packages (chromium for the web console's
# browser tests), then the web console's npm packages (npm ci in web/, from its lockfile).
# Idempotent: when every package is already present it returns at once without touching apt or
# the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkgconf clang-14 clang-format clang-tidy libclang-rt-14-dev
  libboost-dev libssl-dev libhiredis-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libhowardhinnant-date-dev tzdata libjemalloc-dev
  redis-server redis-tools sqlite3 libsqlite3-dev libargon2-dev
  libsoci-dev libpq-dev libmariadb-dev postgresql mariadb-server
  nginx wrk nghttp2-client libnghttp2-dev file chromium chromium-driver
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3-grpcio python3-protobuf python3-grpc-tools
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
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
