# Sourced by the shell tests that start servers on loopback ports (tests/readme, tests/lib).
#
#   free_port [TAKEN_PORT...]
#
# Prints a loopback port nothing answers on now, other than the TAKEN_PORTs (the ports this test
# chose already but has not started a server on yet; a $(free_port) runs in a subshell, so it
# cannot remember them itself).
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
    [[ " $* " == *" $port "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}
