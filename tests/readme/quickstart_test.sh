#!/usr/bin/env bash
# The README's quick start, run as a newcomer types it, read from README.md itself so the README
# cannot drift from the product: the first ```sh block under "## Quick start", line by line, in
# order. Every command must exit 0, and its output must show what the README says it does.
# Where a person would wait, the test waits: after a line that starts a server in the background,
# until that server answers; before the `read`, until the log shows the one-time password, which
# the `read` then gets as its input. Changed only where a test run must differ from a person's:
#   - the ports 8080, 8081 and 6380 become free loopback ports (run.sh's 8080 through
#     SLUICE_LISTEN, which `sluice serve` reads);
#   - the policy database is a fresh one (XDG_DATA_HOME in a scratch directory), as on a fresh
#     machine;
#   - benchmarks run 1 s instead of 5 s.
# Beyond each command's output it checks what a person would notice: the terminal (every
# command's output, the background servers' included) shows no access-log line, JSON answers end
# with a newline, the Redis it starts listens on loopback only, and the repository gains no file.
# Every process it starts is stopped by PID, whatever happens.
# Usage: quickstart_test.sh SOURCE_DIR
set -euo pipefail
source=$(cd "$1" && pwd)
cd "$source"
work=$(mktemp -d)
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$source/scripts/lib/free_port.sh"
FREE_PORT_LEDGER="$work/ports"
first_port=$(free_port)
second_port=$(free_port)
redis_port=$(free_port)

cleanup() {
  local pid
  for pid in $(cat "$work"/*.pid 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The block, as README.md has it.
awk '/^## Quick start/ {section = 1; next}
     section && /^```sh$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' README.md >"$work/block.sh"
[ -s "$work/block.sh" ] || fail 'README.md has no ```sh block under "## Quick start"'
sed -i -E -e "s/\b8080\b/$first_port/g" -e "s/\b8081\b/$second_port/g" \
  -e "s/\b6380\b/$redis_port/g" -e 's/--duration 5s/--duration 1s/g' "$work/block.sh"
# What the repository holds besides its tracked files before the quick start (build/ is ignored).
untracked() { git -C "$source" status --porcelain --untracked-files=all 2>/dev/null | sort; }
untracked >"$work/untracked.before"

# The commands: lines joined where they end in '\', comment-only and empty lines dropped.
commands=()
pending=""
while IFS= read -r line; do
  if [[ -n $pending ]]; then
    pending+=$'\n'"$line"
  elif [[ $line =~ ^[[:space:]]*(#.*)?$ ]]; then
    continue
  else
    pending=$line
  fi
  [[ $line == *\\ ]] && continue
  commands+=("$pending")
  pending=""
done <"$work/block.sh"
[ ${#commands[@]} -ge 5 ] || fail "only ${#commands[@]} commands in the quick start"

# The script a person's typing amounts to, with the waits and the captured outputs.
script="$work/typed.sh"
{
  echo "set -u"
  echo "work='$work'"
  echo "export XDG_DATA_HOME='$work/data' SLUICE_LISTEN='127.0.0.1:$first_port'"
  cat <<'EOF'
check() {  # check N RC: a command that must have succeeded
  if [ "$2" -ne 0 ]; then
    echo "FAIL: command $1 exited $2; its output:" >&2
    cat "$work/out.$1" >&2
    exit 1
  fi
}
wait_for_server() {  # wait_for_server N PID PORT: until /healthz answers (or the process dies)
  local deadline=$((SECONDS + 900))
  until curl -fsS "http://127.0.0.1:$3/healthz" >/dev/null 2>&1; do
    if ! kill -0 "$2" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "FAIL: the server of command $1 never answered on port $3; its output:" >&2
      cat "$work/out.$1" >&2
      exit 1
    fi
    sleep 0.1
  done
}
wait_for_password() {  # the first start's one-time password, from the log it wrote
  local found
  found=$(sed -n 's/.*"password":"\([^"]*\)".*/\1/p' "$work"/out.* | head -n 1)
  [ -n "$found" ] || { echo "FAIL: no one-time password in the log" >&2; exit 1; }
  printf '%s\n' "$found" >"$work/password"
}
remember_redis_pid() {
  redis-cli -p "$1" info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p' >"$work/redis.pid"
}
record_listeners() {  # record_listeners PORT: the local addresses listening on PORT (hex, /proc)
  local hex
  hex=$(printf '%04X' "$1")
  local tables=(/proc/net/tcp)
  [ -r /proc/net/tcp6 ] && tables+=(/proc/net/tcp6)  # absent where IPv6 is off
  awk -v port="$hex" '$4 == "0A" { split($2, a, ":"); if (a[2] == port) print a[1] }' \
    "${tables[@]}" >"$work/redis.listeners"
}
EOF
  n=0
  for command in "${commands[@]}"; do
    n=$((n + 1))
    first_line=${command%%$'\n'*}
    # The index the checks below find outputs by: N, then the command on one line.
    printf '%d\t%s\n' "$n" "$(tr -s ' ' <<<"${command//$'\\\n'/ }")" >>"$work/index"
    if [[ $command =~ ^(.*[^\&])\&[[:space:]]*(#[^$'\n']*)?$ ]]; then
      # A server in the background: as typed (a simple command, so `kill %N` reaches it), its
      # output in a file; then wait for it as a person waits for its log.
      background=${BASH_REMATCH[1]}
      port=$first_port
      [[ $command =~ --listen[[:space:]]+[^[:space:]]*:([0-9]+) ]] && port=${BASH_REMATCH[1]}
      printf '%s >"$work/out.%d" 2>&1 &\n' "$background" "$n"
      printf 'echo $! >"$work/server.%d.pid"\nwait_for_server %d $! %d\n' "$n" "$n" "$port"
    elif [[ $first_line =~ ^read[[:space:]] ]]; then
      printf 'wait_for_password\n%s <"$work/password"\ncheck %d $?\n' "$command" "$n"
    else
      printf '{\n%s\n} >"$work/out.%d" 2>&1\ncheck %d $?\n' "$command" "$n" "$n"
      # A Redis it started: its PID, so the cleanup can stop it should a later step fail.
      [[ $first_line =~ ^redis-server.*--port[[:space:]]+([0-9]+) ]] &&
        printf 'remember_redis_pid %d\nrecord_listeners %d\n' "${BASH_REMATCH[1]}" \
          "${BASH_REMATCH[1]}"
    fi
  done
} >"$script"

echo "== the quick start: ${#commands[@]} commands, ports $first_port $second_port $redis_port"
bash "$script" </dev/null || fail "the quick start stopped at the command above"

# What each command showed, against what the README says it does.
output_of() {  # output_of TEXT: the output of the first command that contains TEXT
  local n
  n=$(awk -F '\t' -v text="$1" 'index($2, text) {print $1; exit}' "$work/index")
  [ -n "$n" ] || fail "the quick start no longer runs a command with \"$1\""
  cat "$work/out.$n"
}
expect() {  # expect TEXT PATTERN: that command's output matches the extended regex PATTERN
  local out
  out=$(output_of "$1")
  grep -Eq -- "$2" <<<"$out" || fail "\"$1\": expected /$2/ in:"$'\n'"$out"
}
expect "/v1/acquire" '"allowed":true'
expect "/v1/check" '^HTTP/1\.1 (200|429)'
expect "/v1/check" '^RateLimit-Policy:'
expect '{"user":"admin","password":"choose-your-own-password"}' \
  '"csrf_token".*"password_change_required":false.*"name":"admin"'
expect "/v1/policies" '"demo\.api"'
expect "policy list" 'demo\.api'
expect "--key bob --count 7 --json" '"allowed":false.*"degraded":false'
expect "--count 7 --redis" '^#6  denied'
grep -qi 'degraded\|warning' <<<"$(output_of "--count 7 --redis")" &&
  fail "decisions in the quick start's Redis were degraded: $(output_of "--count 7 --redis")"
expect "--threads 1,10,100" 'decisions/s'
expect "--mode async" 'decisions/s'
expect "--help" 'serve'
expect "run.sh" 'run\.sh: 4/4 sluice serve'
expect "serve --listen 127.0.0.1:$second_port" '"store":"redis"'

# Quiet: no access-log line reached the terminal (the servers' output is in out.N too).
if logged=$(grep -h '"bytes_out":' "$work"/out.*); then
  fail "access-log lines on the terminal:"$'\n'"$(head -3 <<<"$logged")"
fi
# A JSON answer ends its line, so the prompt does not follow it on the same line.
acquired=$(output_of "/v1/acquire")
[ -n "$acquired" ] && [ -z "$(output_of "/v1/acquire" | tail -c 1)" ] ||
  fail "the /v1/acquire answer does not end with a newline: $acquired"
# The Redis of the quick start listened on loopback only (IPv4 127.0.0.1; nothing on IPv6).
[ -s "$work/redis.listeners" ] || fail "no listening socket of the quick start's Redis was seen"
if grep -vx '0100007F' "$work/redis.listeners" >/dev/null; then
  fail "the quick start's Redis listens beyond 127.0.0.1: $(tr '\n' ' ' <"$work/redis.listeners")"
fi
# Nothing was left in the repository (the cookie jar once was).
untracked >"$work/untracked.after"
diff "$work/untracked.before" "$work/untracked.after" >&2 ||
  fail "the quick start left files in the repository (above)"

# The last line stopped both servers and the Redis.
for pid_file in "$work"/server.*.pid "$work/redis.pid"; do
  pid=$(cat "$pid_file")
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "process $pid ($(basename "$pid_file")) still runs after the last line"
done
echo "== the quick start works as written"
