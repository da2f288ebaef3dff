#!/usr/bin/env bash
# Installs every build and test dependency from Debian packages. Idempotent: when every package is
# already present it returns at once without touching apt.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkgconf clang-14 clang-format clang-tidy libclang-rt-14-dev
  libboost-dev libssl-dev libhiredis-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  redis-server redis-tools sqlite3 libsqlite3-dev libargon2-dev
  libsoci-dev libpq-dev libmariadb-dev postgresql mariadb-server
  nginx wrk file
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3-grpcio python3-protobuf python3-grpc-tools
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
