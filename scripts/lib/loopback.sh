# Sourced by the scripts that start servers on loopback ports (bench/*.sh, tests/soak): each
# started server's PID goes into `pids`; on exit they are stopped and waited for, and the
# scratch directory `$dir` (set before sourcing) is removed.
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

# free_port: a port nothing listens on now, below the ephemeral range, never the same twice.
source "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"
FREE_PORT_LEDGER="$dir/.ports"
# Waits up to 10 s for 127.0.0.1:$1 to accept a connection.
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
