# Sourced by the scripts and shell tests that start servers on loopback ports (loopback.sh,
# tests/readme, tests/lib).
#
#   free_port
#
# Prints a loopback port nothing answers on now. A $(free_port) runs in a subshell and cannot
# remember the ports it gave in a variable, so a script that chooses several ports before its
# servers listen sets FREE_PORT_LEDGER to a file (loopback.sh does, in its scratch directory):
# every port given is recorded there and never given again.
#
# The port is below the kernel's ephemeral range (ip_local_port_range, 32768 and up by default),
# where the outgoing connections of tests running alongside take theirs. A port chosen there can
# be taken by one of them before the server listens: a CI run failed so ("bind: Address already
# in use", docs/decisions.md).
free_port() {
  local low port
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  ((low > 21024)) || low=32768
  while :; do
    port=$((20000 + RANDOM % (low - 20000)))
    if [[ -n "${FREE_PORT_LEDGER:-}" ]] && grep -qx "$port" "$FREE_PORT_LEDGER" 2>/dev/null; then
      continue
    fi
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      [[ -z "${FREE_PORT_LEDGER:-}" ]] || echo "$port" >>"$FREE_PORT_LEDGER"
      echo "$port"
      return
    fi
  done
}
