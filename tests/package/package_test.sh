#!/usr/bin/env bash
# The library and the packages as a user gets them (docs/library.md, docs/deploy.md):
#   1. `cmake --install` into a scratch prefix: the headers docs/library.md lists, and only those;
#      examples/embed built there by a separate CMake project with find_package(Sluice), and
#      again with pkg-config alone (no -std flag of ours, no LD_LIBRARY_PATH); run on memory: and
#      on a real Redis (started here on a free loopback port, stopped by PID), whose state two
#      runs share;
#   2. the Debian packages (cpack): sluice, libsluice0, libsluice-dev and their -dbgsym; what
#      each holds, their sizes against a bound (stripped: see below), the debug symbols matching
#      the binaries by build id; all unpacked into a fresh root (dpkg-deb -x: no chroot, so it
#      runs in CI in seconds), where `sluice serve` starts from the packaged files and config on
#      a free loopback port, decides (curl), and is stopped by PID; examples/embed is built
#      against that root with pkg-config and run; the post-install message is read;
#   3. lintian on the packages: no errors.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
redis_pid=
serve_pid=
module_redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  [ -n "$module_redis_pid" ] && kill "$module_redis_pid" 2>/dev/null || true
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Installing and packaging write nothing into the source tree (run from there, an install script
# once left sluice.service in it).
untracked() { git -C "$source" status --porcelain --untracked-files=all 2>/dev/null | sort; }
untracked >"$work/untracked.before"
expect() {  # expect NAME TEXT PATTERN: TEXT matches the extended regex PATTERN
  grep -Eq -- "$3" <<<"$2" || fail "$1: expected /$3/ in:"$'\n'"$2"
}

# The bound on each package (.deb, compressed): sluice and libsluice0 hold stripped binaries of
# 4-5 MB (2 and 1 MB compressed, November 2026); unstripped they were 164 and 75 MB (a 76 MB
# .deb). 10 MB leaves room to grow and still fails at once if stripping is lost.
max_deb_bytes=$((10 * 1024 * 1024))

libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
[ -n "$libdir" ] || fail "no CMAKE_INSTALL_LIBDIR in $build/CMakeCache.txt"
multiarch=$(gcc -print-multiarch)
[ "$libdir" = "lib/$multiarch" ] || fail "the library directory is $libdir, not lib/$multiarch"

echo "== install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/sluice/client.h include/sluice/status.h include/sluice/version.h \
         "$libdir/cmake/Sluice/SluiceConfig.cmake" "$libdir/pkgconfig/sluice.pc" \
         etc/sluice/sluice.yaml lib/systemd/system/sluice.service bin/sluice \
         share/doc/sluice/copyright share/sluice/prometheus/sluice-rules.yml \
         share/sluice/prometheus/sluice-rules.test.yml share/sluice/grafana/sluice-dashboard.json; do
  [ -e "$work/prefix/$f" ] || fail "not installed: $f"
done
ls "$work/prefix/$libdir"/libsluice.so.* >/dev/null || fail "not installed: $libdir/libsluice.so.*"
# The headers installed are exactly those docs/library.md names (the line after "these are the
# installed headers").
documented=$(grep -m1 -A1 'these are the installed headers' "$source/docs/library.md" | tail -n 1 |
             grep -o '`[a-z_]*\.h`' | tr -d '`' | sort)
installed=$(cd "$work/prefix/include/sluice" && find . -type f | sed 's|^\./||' | sort)
[ -n "$documented" ] || fail "docs/library.md has no line naming the installed headers"
[ "$documented" = "$installed" ] ||
  fail "docs/library.md names the headers"$'\n'"$documented"$'\n'"but these are installed:"$'\n'"$installed"
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

echo "== examples/embed with pkg-config alone, as docs/library.md says"
flags=$(PKG_CONFIG_PATH="$work/prefix/$libdir/pkgconfig" pkg-config --cflags --libs sluice)
expect "sluice.pc" "$flags" "-std=c\+\+20"
# shellcheck disable=SC2086
c++ "$source/examples/embed/main.cc" $flags -o "$work/embed-pc"
decided=$(env -u LD_LIBRARY_PATH "$work/embed-pc" memory:) ||
  fail "the pkg-config build did not run: $decided"
expect "pkg-config build" "$decided" "payment 4: denied"

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

echo "== the Debian packages"
(cd "$build" && cpack -B "$work/deb" >/dev/null)
deb() { ls "$work"/deb/"$1"_*.deb; }
ddeb() { ls "$work"/deb/"$1"-dbgsym_*.ddeb; }
for p in sluice libsluice0 libsluice-dev; do deb "$p" >/dev/null || fail "no package $p"; done
for p in sluice libsluice0; do ddeb "$p" >/dev/null || fail "no package $p-dbgsym"; done
sluice_files=$(dpkg-deb -c "$(deb sluice)")
for f in ./usr/bin/sluice ./etc/sluice/sluice.yaml ./usr/lib/systemd/system/sluice.service \
         ./usr/share/doc/sluice/copyright ./usr/share/doc/sluice/changelog.gz \
         ./usr/share/doc/sluice/deploy.md ./usr/share/sluice/prometheus/sluice-rules.yml \
         ./usr/share/sluice/grafana/sluice-dashboard.json ./usr/lib/sluice/sluice.so; do
  expect "sluice" "$sluice_files" " $f$"
done
library_files=$(dpkg-deb -c "$(deb libsluice0)")
expect "libsluice0" "$library_files" " \./usr/$libdir/libsluice\.so\.0 -> "
expect "libsluice0" "$library_files" " \./usr/share/doc/libsluice0/copyright$"
dev_files=$(dpkg-deb -c "$(deb libsluice-dev)")
for f in ./usr/include/sluice/client.h "./usr/$libdir/cmake/Sluice/SluiceConfig.cmake" \
         "./usr/$libdir/pkgconfig/sluice.pc" ./usr/share/doc/libsluice-dev/copyright; do
  expect "libsluice-dev" "$dev_files" " $f$"
done
expect "libsluice-dev" "$dev_files" " \./usr/$libdir/libsluice\.so -> "
# Split as Debian does: headers and development files only in -dev, the library only in
# libsluice0, nothing of the library's in sluice.
grep -q "include/\|cmake/\|pkgconfig/" <<<"$sluice_files$library_files" &&
  fail "development files outside libsluice-dev"
grep -q "libsluice\.so" <<<"$sluice_files" && fail "the library in the sluice package"
expect "libsluice-dev depends" "$(dpkg-deb -f "$(deb libsluice-dev)" Depends)" \
  "^libsluice0 \(= [0-9.]+\)$"
expect "sluice depends" "$(dpkg-deb -f "$(deb sluice)" Depends)" "libhiredis"
expect "conffiles" "$(dpkg-deb --ctrl-tarfile "$(deb sluice)" | tar -xO ./conffiles)" \
  "^/etc/sluice/sluice.yaml$"
expect "shlibs" "$(dpkg-deb --ctrl-tarfile "$(deb libsluice0)" | tar -xO ./shlibs)" \
  "^libsluice 0 libsluice0 "

echo "== sizes (bound: $max_deb_bytes bytes per .deb)"
for f in "$work"/deb/*.deb "$work"/deb/*.ddeb; do
  printf '%10d  installed %7d KiB  %s\n' "$(stat -c %s "$f")" \
    "$(dpkg-deb -f "$f" Installed-Size)" "$(basename "$f")"
done
for f in "$work"/deb/*.deb; do
  [ "$(stat -c %s "$f")" -le "$max_deb_bytes" ] ||
    fail "$(basename "$f") is $(stat -c %s "$f") bytes, above the bound of $max_deb_bytes"
done

echo "== unpacked into a fresh root"
root="$work/root"
for f in "$work"/deb/*.deb; do dpkg-deb -x "$f" "$root"; done
dbg="$work/dbgsym"
for f in "$work"/deb/*.ddeb; do dpkg-deb -x "$f" "$dbg"; done
for binary in usr/bin/sluice "usr/$libdir/libsluice.so.0"; do
  # Stripped in the package, its symbols in -dbgsym under its build id (where gdb looks).
  sections=$(readelf -S --wide "$root/$binary")
  grep -q '\.debug_info' <<<"$sections" && fail "$binary is not stripped"
  id=$(readelf -n "$root/$binary" | sed -n 's/.*Build ID: \([0-9a-f]*\)/\1/p')
  [ -n "$id" ] || fail "$binary has no build id"
  symbols="$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  [ -f "$symbols" ] || fail "no debug symbols for $binary in the -dbgsym packages ($symbols)"
  # (readelf notes that a debug file's program interpreter section is empty: not our concern.)
  # Read whole before grep: `readelf | grep -q` fails under pipefail when grep stops first.
  sections=$(readelf -S --wide "$symbols" 2>/dev/null)
  grep -q '\.debug_info' <<<"$sections" || fail "$symbols holds no .debug_info"
done
expect "unit" "$(cat "$root/usr/lib/systemd/system/sluice.service")" \
  "ExecStart=/usr/bin/sluice serve --config /etc/sluice/sluice.yaml"
# docs/deploy.md shows the unit as packaged: the first ```ini block after "The unit as packaged".
documented_unit=$(awk '/The unit as packaged/ {found = 1} found && /^```ini$/ {inside = 1; next}
                       inside && /^```$/ {exit} inside {print}' "$source/docs/deploy.md")
[ "$documented_unit" = "$(cat "$root/usr/lib/systemd/system/sluice.service")" ] ||
  fail "docs/deploy.md's unit differs from the packaged one:"$'\n'"$(diff <(echo "$documented_unit") \
    "$root/usr/lib/systemd/system/sluice.service")"
version=$("$root/usr/bin/sluice" --version)
expect "version" "$version" "^sluice [0-9]+\.[0-9]+\.[0-9]+$"
echo "$version from the package"

# The packaged server with the packaged config; only the port and the policy database (whose
# packaged place, /var/lib/sluice, belongs to the service) are this test's.
source "$source/scripts/lib/free_port.sh"
FREE_PORT_LEDGER="$work/ports"
serve_port=$(free_port)
mkdir -p "$work/state"
"$root/usr/bin/sluice" serve --config "$root/etc/sluice/sluice.yaml" \
  --listen "127.0.0.1:$serve_port" --policies "sqlite://$work/state/policies.db" \
  >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 300); do
  curl -fsS "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || fail "the packaged sluice serve exited: $(cat "$work/serve.log")"
  sleep 0.1
done
decision=$(curl -fsS --json '{"app":"web","policy":"demo.api","key":"package-test"}' \
  "http://127.0.0.1:$serve_port/v1/acquire") ||
  fail "the packaged sluice serve did not decide: $(cat "$work/serve.log")"
echo "$decision"
expect "decision" "$decision" '"allowed":true'
kill "$serve_pid"
wait "$serve_pid" || fail "the packaged sluice serve did not stop cleanly: $(tail -5 "$work/serve.log")"
serve_pid=
# The packaged config keeps the access log off.
grep -q '"bytes_out":' "$work/serve.log" && fail "the packaged config writes an access log to stderr"

echo "== the packaged Redis module, loaded by redis-server"
module="$root/usr/lib/sluice/sluice.so"
module_port=$(free_port)
redis-server --port "$module_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$work/module-redis.pid" --logfile "$work/module-redis.log" --dir "$work" \
  --loadmodule "$module" >/dev/null || fail "redis-server did not start with $module"
for _ in $(seq 300); do
  [ -s "$work/module-redis.pid" ] && redis-cli -p "$module_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
module_redis_pid=$(cat "$work/module-redis.pid" 2>/dev/null) ||
  fail "redis-server did not load the packaged module: $(tail -5 "$work/module-redis.log")"
# A call with a key count and no key: the module's own error, so its command runs.
answer=$(redis-cli -p "$module_port" SLUICE.EVALUATE 1 2>&1)
modules=$(redis-cli -p "$module_port" MODULE LIST 2>&1)
kill "$module_redis_pid"
module_redis_pid=
expect "module list" "$modules" "sluice"
expect "module command" "$answer" "^ERR sluice: "
grep -q '\.debug_info' <<<"$(readelf -S --wide "$module")" && fail "the module is not stripped"

echo "== examples/embed against the unpacked packages, with pkg-config"
flags=$(PKG_CONFIG_PATH="$root/usr/$libdir/pkgconfig" pkg-config --cflags --libs sluice)
# shellcheck disable=SC2086
c++ "$source/examples/embed/main.cc" $flags -o "$work/embed-deb"
decided=$(env -u LD_LIBRARY_PATH "$work/embed-deb" memory:) ||
  fail "examples/embed built against the packages did not run: $decided"
expect "built against the packages" "$decided" "payment 4: denied"
expect "libsluice.so.0 from the unpacked root" "$(ldd "$work/embed-deb")" \
  "libsluice\.so\.0 => $root/usr/$libdir/"

echo "== the post-install message"
mkdir -p "$work/control"
dpkg-deb -e "$(deb sluice)" "$work/control"
message=$(sh "$work/control/postinst" configure "")
echo "$message"
expect "postinst" "$message" "systemctl enable --now sluice"
expect "postinst" "$message" "journalctl -u sluice.*one-time password"
[ -z "$(sh "$work/control/postinst" configure 0.1.0)" ] || fail "the message repeats on upgrades"

echo "== lintian"
command -v lintian >/dev/null || fail "lintian is not installed (scripts/setup.sh --tests installs it)"
# Errors fail; warnings and notes are shown (docs/deploy.md lists the ones that stay, and why).
rc=0
report=$(lintian --no-cfg --fail-on error --display-level '>=warning' "$work"/deb/*.deb 2>&1) ||
  rc=$?
grep -v "running with root privileges" <<<"$report" || true
[ "$rc" -eq 0 ] || fail "lintian exited $rc (errors above)"
grep -q '^E: ' <<<"$report" && fail "lintian reports errors"
untracked >"$work/untracked.after"
diff "$work/untracked.before" "$work/untracked.after" >&2 ||
  fail "installing or packaging left files in the source tree (above)"
echo "PASS"
