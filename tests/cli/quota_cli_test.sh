#!/usr/bin/env bash
# `sluice charge` / `sluice refund` (docs/quotas.md) as a user runs them: on a real redis-server
# (started here on a free loopback port, stopped by PID), a charge into debt, a charge refused at
# max_debt, a debt delaying `sluice acquire`, a refund capped at capacity; on the in-memory store;
# and the errors (a concurrency policy, a missing --cost) with their exit codes.
# Usage: quota_cli_test.sh SLUICE_BINARY
set -euo pipefail
sluice=$1
work=$(mktemp -d)
redis_pid=""
cleanup() {
  if [[ -n $redis_pid ]]; then kill "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/../lib/redis_daemon.sh"
start_redis_daemon "$work" || fail "redis-server did not start: $(tail -5 "$work/redis.log" 2>/dev/null)"
redis="redis://127.0.0.1:$port"

# 100 tokens, one more per hour: balances stay exact while the test runs.
cat >"$work/metered.yaml" <<'YAML'
name: llm.tokens
apps: ["*"]
max_debt: 50
limits:
  - {algorithm: token_bucket, capacity: 100, refill: 1, period: 1h}
YAML

field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

out=$("$sluice" charge --policy-file "$work/metered.yaml" --key tenant --cost 130 --redis "$redis" --json)
[[ $(field "$out" allowed) == True && $(field "$out" balance) == -30 ]] || fail "charge 130: $out"
out=$("$sluice" charge --policy-file "$work/metered.yaml" --key tenant --cost 21 --redis "$redis" --json)
[[ $(field "$out" allowed) == False && $(field "$out" balance) == -30 ]] || fail "charge 21: $out"
out=$("$sluice" acquire --policy-file "$work/metered.yaml" --key tenant --redis "$redis" --json)
[[ $(field "$out" allowed) == False ]] || fail "acquire in debt: $out"
out=$("$sluice" refund --policy-file "$work/metered.yaml" --key tenant --cost 500 --redis "$redis")
[[ $out == refunded*balance=100/100* ]] || fail "refund: $out"
out=$("$sluice" reserve --policy-file "$work/metered.yaml" --key tenant --cost 40 --ttl 10m --redis "$redis" --json)
[[ $(field "$out" balance) == 60 ]] || fail "reserve: $out"
id=$(field "$out" reservation)
out=$("$sluice" settle --policy-file "$work/metered.yaml" --key tenant --reservation "$id" --cost 10 --redis "$redis")
[[ $out == settled*balance=90/100* ]] || fail "settle: $out"
set +e
"$sluice" settle --policy-file "$work/metered.yaml" --key tenant --reservation "$id" --cost 10 --redis "$redis" >/dev/null 2>&1
code=$?
set -e
[[ $code == 3 ]] || fail "a second settle: exit $code"
ttl=$(redis-cli -p "$port" pttl 'sluice:{llm.tokens:tenant}:0')
[[ $ttl == -2 || $ttl -gt 0 ]] || fail "the key has no TTL: $ttl"

out=$("$sluice" charge --policy-file "$work/metered.yaml" --key other --cost 10)
[[ $out == charged*balance=90/100* ]] || fail "charge in memory: $out"

cat >"$work/leases.yaml" <<'YAML'
name: jobs
apps: ["*"]
limits: [{algorithm: concurrency, limit: 2, lease_ttl: 1m}]
YAML
set +e
err=$("$sluice" charge --policy-file "$work/leases.yaml" --key k --cost 1 2>&1 >/dev/null)
code=$?
set -e
[[ $code == 2 && $err == *concurrency* ]] || fail "concurrency: exit $code, $err"
set +e
"$sluice" refund --policy-file "$work/metered.yaml" --key k >/dev/null 2>&1
code=$?
set -e
[[ $code == 2 ]] || fail "missing --cost: exit $code"
echo "PASS"
