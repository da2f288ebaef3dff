# Sourced by the shell tests that need a redis-server of their own (tests/cli, tests/package).
#
#   start_redis_daemon DIR
#
# Starts `redis-server --daemonize yes` on a free loopback port, with its pid file, log and data in
# DIR, and waits until it answers PING (up to 30 s: a loaded machine, builds sharing the cores, can
# take seconds to start it). Sets `port` and `redis_pid`; the caller stops it by that PID. Returns 1
# when 20 ports in a row failed.
#
# The port comes from free_port (free_port.sh: below the kernel's ephemeral range); when a process
# still takes it between the check and redis-server's listen ("Failed listening" in the log),
# another port is tried.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/free_port.sh"

start_redis_daemon() {
  local dir=$1
  for _ in $(seq 20); do
    port=$(free_port)
    rm -f "$dir/redis.pid" "$dir/redis.log"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" >/dev/null || continue
    for _ in $(seq 600); do
      if [[ -s $dir/redis.pid ]] && redis-cli -p "$port" ping >/dev/null 2>&1; then
        redis_pid=$(cat "$dir/redis.pid")
        return 0
      fi
      if grep -q "Failed listening" "$dir/redis.log" 2>/dev/null; then break; fi
      sleep 0.05
    done
    # Gave up on this port: a server that did start there must not outlive the test.
    if [[ -s $dir/redis.pid ]]; then kill "$(cat "$dir/redis.pid")" 2>/dev/null || true; fi
  done
  return 1
}
