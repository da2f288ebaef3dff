#!/usr/bin/env bash
# The shipped Prometheus rules and Grafana dashboard (packaging/prometheus, packaging/grafana,
# docs/monitoring.md) against what `sluice serve` exports:
#   1. `promtool check rules` and `promtool test rules` (every alert fires when it should and stays
#      quiet when it should not);
#   2. every query of the dashboard parses as PromQL (each is checked by promtool as a recording
#      rule, with Grafana's variables replaced);
#   3. `sluice serve` on the in-memory store and on a real redis-server (free loopback ports,
#      stopped by PID), a few decisions allowed and denied through curl, then GET /metrics of each:
#      every metric name the rules and the dashboard use (any `sluice_[a-z0-9_]+` in the rules
#      file, in the dashboard's queries) must be exported by one of them as a sample (a histogram's
#      name counts through its _bucket, _sum and _count samples);
#   4. each `label="value"` matcher on a sluice_ metric there matches an exported sample;
#   5. every alert of the rules has a case in the unit tests.
# Needs promtool (Debian's `prometheus`, scripts/setup.sh --tests), redis-server, curl, python3.
# Usage: prometheus_test.sh SLUICE_BINARY SOURCE_DIR
set -euo pipefail
sluice=$1
source_dir=$2
rules=$source_dir/packaging/prometheus/sluice-rules.yml
rules_test=$source_dir/packaging/prometheus/sluice-rules.test.yml
dashboard=$source_dir/packaging/grafana/sluice-dashboard.json

work=$(mktemp -d /tmp/sluice-prometheus-XXXXXX)
redis_pid=""
serve_pids=()
cleanup() {
  for pid in "${serve_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${serve_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n $redis_pid ]]; then kill "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "prometheus_test: FAILED: $*" >&2; exit 1; }

for tool in promtool redis-server redis-cli curl python3; do
  command -v "$tool" >/dev/null ||
    fail "$tool is not installed (promtool: Debian's prometheus package, scripts/setup.sh --tests)"
done

echo "== promtool check rules, promtool test rules"
promtool check rules "$rules" || fail "promtool check rules $rules"
promtool test rules "$rules_test" || fail "promtool test rules $rules_test"

echo "== the dashboard's queries parse"
# Each panel query and each variable query of the dashboard into $work/queries, one a line; and
# the panel queries as recording rules, Grafana's variables replaced by what they stand for.
python3 - "$dashboard" "$work/queries" "$work/dashboard-rules.yml" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
exprs = [t["expr"] for p in panels(d["panels"]) for t in p.get("targets", [])]
variables = [v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
             for v in d.get("templating", {}).get("list", []) if v.get("type") == "query"]
if not exprs:
    sys.exit("no panel queries")
with open(sys.argv[2], "w") as out:
    for q in exprs + variables:
        out.write(q.replace("\n", " ") + "\n")
with open(sys.argv[3], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, q in enumerate(exprs):
        for var, value in (("$__rate_interval", "5m"), ("$job", ".*"), ("$instance", ".*"),
                           ("$policy", ".*")):
            q = q.replace(var, value)
        if "$" in q:
            sys.exit("a dashboard variable this test does not know: " + q)
        out.write(f"      - record: dashboard:query_{i}\n        expr: {json.dumps(q)}\n")
print(f"{len(exprs)} panel queries, {len(variables)} variable queries")
PY
  fail "$dashboard: no dashboard, or a query this test cannot read"
promtool check rules "$work/dashboard-rules.yml" >"$work/dashboard-check.log" 2>&1 ||
  fail "a dashboard query does not parse: $(tail -5 "$work/dashboard-check.log")"
echo "every panel query parses"

# The metric names used: rules anywhere in the file (expressions and the descriptions naming
# metrics), the dashboard in its queries.
grep -o 'sluice_[a-z0-9_]*' "$rules" | sort -u >"$work/used-rules"
grep -o 'sluice_[a-z0-9_]*' "$work/queries" | sort -u >"$work/used-dashboard"
[[ -s $work/used-rules && -s $work/used-dashboard ]] ||
  fail "no metric names found in the rules or the dashboard"

echo "== sluice serve: memory store and Redis"
cat >"$work/policies.yaml" <<'YAML'
- {name: prom.api, apps: ["*"], limits: [{algorithm: fixed_window, limit: 2, window: 1h}]}
YAML
source "$source_dir/tests/lib/redis_daemon.sh"  # also free_port
start_redis_daemon "$work" ||
  fail "redis-server did not start: $(tail -5 "$work/redis.log" 2>/dev/null)"
redis_port=$port

# serve NAME [FLAGS...]: starts `sluice serve` on a free port (another on a lost race), waits until
# /healthz answers; sets `serve_port`.
serve() {
  local name=$1 pid
  shift
  for _ in $(seq 5); do
    serve_port=$(free_port)
    SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$serve_port" \
      --policies sqlite::memory: --policy-file "$work/policies.yaml" --metrics public "$@" \
      2>"$work/serve-$name.log" &
    pid=$!
    serve_pids+=("$pid")
    for _ in $(seq 600); do
      if curl -sf "http://127.0.0.1:$serve_port/healthz" >/dev/null 2>&1; then return 0; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -q "in use" "$work/serve-$name.log" || break
  done
  fail "sluice serve ($name) did not start: $(tail -5 "$work/serve-$name.log")"
}

# decide_and_scrape NAME: two allowed decisions and one denied on the running server, then its
# /metrics into $work/NAME.metrics and the exported sample names into $work/NAME.names.
decide_and_scrape() {
  local name=$1 url=http://127.0.0.1:$serve_port body
  for expected in true true false; do
    body=$(curl -s --json '{"app":"web","policy":"prom.api","key":"alice"}' "$url/v1/acquire") ||
      fail "$name: POST /v1/acquire failed"
    [[ $body == *"\"allowed\":$expected"* ]] || fail "$name: expected allowed=$expected, got $body"
  done
  code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/check" -H 'X-Sluice-App: web' \
    -H 'X-Sluice-Policy: prom.api' -H 'X-Sluice-Key: alice')
  [[ $code == 429 ]] || fail "$name: GET /v1/check of a spent key answered $code, not 429"
  curl -sf "$url/metrics" >"$work/$name.metrics" || fail "$name: GET /metrics failed"
  grep -q '^sluice_decisions_total{policy="prom.api",outcome="denied"} 2$' "$work/$name.metrics" ||
    fail "$name: 2 denials expected: $(grep '^sluice_decisions_total' "$work/$name.metrics")"
  # Sample lines' names; a histogram's _bucket/_sum/_count also stand for its own name.
  grep -v '^#' "$work/$name.metrics" | grep -o '^sluice_[a-z0-9_]*' |
    sed -E 'p; s/_(bucket|sum|count)$//' | sort -u >"$work/$name.names"
  echo "$name: $(wc -l <"$work/$name.names") metric names exported"
}

serve memory
decide_and_scrape memory
# The Redis server also records decisions (back-testing), so the recorder's metrics exist too.
serve redis --redis "redis://127.0.0.1:$redis_port" --record-dir "$work/recording"
grep -q '"store":"redis"' "$work/serve-redis.log" ||
  fail "the server started with --redis does not log store redis"
decide_and_scrape redis

echo "== every metric name used is exported"
sort -u "$work/memory.names" "$work/redis.names" >"$work/exported"
missing=0
for source in rules dashboard; do
  while read -r metric; do
    if ! grep -qx "$metric" "$work/exported"; then
      echo "prometheus_test: $metric (used in the $source) is not exported by sluice serve" >&2
      missing=$((missing + 1))
    fi
  done <"$work/used-$source"
  echo "$source: $(wc -l <"$work/used-$source") metric names used"
done
[[ $missing == 0 ]] ||
  fail "$missing metric names used in the rules or the dashboard are not exported"

echo "== every label value matched with = is exported"
# A selector's `label="value"` matchers (not regexes, not Grafana variables) must each match a
# sample of that metric: outcome="deny" for "denied" would make a rule silent.
python3 - "$work/memory.metrics" "$work/redis.metrics" "$rules" "$work/queries" <<'PY' ||
import re, sys
samples = {}
for path in sys.argv[1:3]:
    for line in open(path):
        m = re.match(r'(sluice_[a-z0-9_]+)\{(.*)\} ', line)
        if m:
            pairs = set(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', m.group(2)))
            for name in {m.group(1), re.sub(r"_(bucket|sum|count)$", "", m.group(1))}:
                samples.setdefault(name, set()).update(pairs)
checked, bad = 0, 0
for source, path in (("rules", sys.argv[3]), ("dashboard", sys.argv[4])):
    for name, body in re.findall(r'(sluice_[a-z0-9_]+)\{([^}]*)\}', open(path).read()):
        for label, value in re.findall(r'([a-z_]+)\s*=\s*"([^"$]*)"', body):
            checked += 1
            if (label, value) not in samples.get(name, set()):
                print(f"prometheus_test: {name}{{{label}=\"{value}\"}} (in the {source}) matches "
                      "no exported sample", file=sys.stderr)
                bad += 1
print(f"{checked} label matchers checked")
sys.exit(1 if bad or not checked else 0)
PY
  fail "label values used in the rules or the dashboard are not exported"

echo "== every alert has a unit test"
alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules")
[[ -n $alerts ]] || fail "no alerts found in $rules"
for alert in $alerts; do
  grep -q "alertname: $alert\$" "$rules_test" || fail "$alert has no case in $rules_test"
done
echo "$(wc -w <<<"$alerts") alerts, each with a case"
echo "PASS"
