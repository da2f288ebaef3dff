#!/usr/bin/env bash
# The library and the package as a user gets them (docs/library.md):
#   1. `cmake --install` into a scratch prefix; examples/embed built there by a separate CMake
#      project with find_package(Sluice), and again with pkg-config; run on memory: and on a real
#      Redis (started here on a free loopback port, stopped by PID), whose state two runs share;
#   2. the Debian package (cpack): its contents listed, unpacked into a scratch root, and the
#      `sluice` it holds asked for its version.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect NAME TEXT PATTERN: TEXT matches the extended regex PATTERN
  grep -Eq -- "$3" <<<"$2" || fail "$1: expected /$3/ in:"$'\n'"$2"
}

echo "== install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/sluice/client.h include/sluice/status.h include/sluice/version.h \
         lib/cmake/Sluice/SluiceConfig.cmake lib/pkgconfig/sluice.pc etc/sluice/sluice.yaml \
         lib/systemd/system/sluice.service bin/sluice; do
  [ -e "$work/prefix/$f" ] || fail "not installed: $f"
done
ls "$work"/prefix/lib/libsluice.so* >/dev/null || fail "not installed: libsluice.so"
# Internal headers stay internal.
[ ! -e "$work/prefix/include/sluice/service" ] || fail "internal headers were installed"
expect "unit" "$(cat "$work/prefix/lib/systemd/system/sluice.service")" \
  "ExecStart=$work/prefix/bin/sluice serve --config $work/prefix/etc/sluice/sluice.yaml"

echo "== examples/embed with find_package(Sluice)"
cmake -S "$source/examples/embed" -B "$work/embed" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/embed" >/dev/null
memory=$("$work/embed/embed" memory:)
echo "$memory"
expect "memory" "$memory" "^payment 1: allowed, 2 left"
expect "memory" "$memory" "payment 3: allowed, 0 left"
expect "memory" "$memory" "payment 4: denied, 0 left, retry in [0-9]+ ms$"

echo "== examples/embed with pkg-config"
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs sluice)
# shellcheck disable=SC2086
c++ -std=c++20 "$source/examples/embed/main.cc" $flags -o "$work/embed-pc"
LD_LIBRARY_PATH="$work/prefix/lib" "$work/embed-pc" memory: | grep -q "payment 4: denied" ||
  fail "the pkg-config build did not decide"

echo "== examples/embed on Redis"
source "$source/tests/lib/redis_daemon.sh"
start_redis_daemon "$work" || fail "could not start redis-server: $(tail -5 "$work/redis.log" 2>/dev/null)"
first=$("$work/embed/embed" "redis://127.0.0.1:$port")
second=$("$work/embed/embed" "redis://127.0.0.1:$port")
echo "$first"; echo "$second"
expect "redis" "$first" "payment 4: denied"
# The second process shares the first one's state in Redis: its first payment is already over.
expect "redis" "$second" "^payment 1: denied"
kill "$redis_pid"
while kill -0 "$redis_pid" 2>/dev/null; do sleep 0.1; done  # gone, not just told to go
redis_pid=
down=$("$work/embed/embed" "redis://127.0.0.1:$port")
expect "redis down" "$down" "payment 1: allowed.*store unreachable"

echo "== the Debian package"
(cd "$build" && cpack -B "$work/deb" >/dev/null)
deb=$(ls "$work"/deb/sluice_*.deb)
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/sluice ./usr/include/sluice/client.h ./usr/lib/cmake/Sluice/SluiceConfig.cmake \
         ./usr/lib/pkgconfig/sluice.pc ./etc/sluice/sluice.yaml \
         ./usr/lib/systemd/system/sluice.service; do
  expect "package" "$contents" " $f$"
done
expect "package" "$contents" " ./usr/lib/libsluice\.so"
info=$(dpkg-deb -I "$deb")
expect "package" "$info" "Depends: .*libhiredis"
expect "package" "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" "^/etc/sluice/sluice.yaml$"
dpkg-deb -x "$deb" "$work/root"
expect "unit" "$(cat "$work/root/usr/lib/systemd/system/sluice.service")" \
  "ExecStart=/usr/bin/sluice serve --config /etc/sluice/sluice.yaml"
version=$("$work/root/usr/bin/sluice" --version)
expect "version" "$version" "^sluice [0-9]+\.[0-9]+\.[0-9]+$"
echo "$version from the package"
echo "PASS"
