# Sourced by the reference scripts (results/*/commands.sh): start a loopback-only Ray head with 2
# CPUs on port $PORT, and end its processes when the script exits, by process id (never by name):
# only processes started after this line that are the head's or name its exact address. A PORT that is
# not a number, or a head that does not start (the port taken by someone else's), is one line, status 2,
# and ends nothing.
case "${PORT:-}" in
  ''|*[!0-9]*) echo "loopback_ray_head.sh: PORT must be a port number (got '${PORT:-}')" >&2
               return 2 2>/dev/null || exit 2 ;;
esac
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
export RAY_AUTH_MODE=disabled               # allowed only because nothing outside this machine can reach it
before=$(ps -eo pid= | sort)
if ! .venv/bin/ray start --head --node-ip-address=127.0.0.1 --port="$PORT" --num-cpus=2 \
  --include-dashboard=false --disable-usage-stats >/dev/null; then
  echo "loopback_ray_head.sh: the Ray head did not start on 127.0.0.1:$PORT (is the port taken?); nothing ended" >&2
  return 2 2>/dev/null || exit 2
fi
# new since the line above: the head's processes (Ray's), and later those it starts for its clients (Ray's client
# server), which name its address: 127.0.0.1:PORT exactly (not 127.0.0.1:PORTx, another head's)
new_pids() { comm -13 <(echo "$before") <(ps -eo pid= | sort); }
ray_pids=$(new_pids | while read -r p; do
  grep -qa -e 'site-packages/ray' -e 'ray::' /proc/$p/cmdline 2>/dev/null && echo "$p"; done)
ray_pids() { echo $ray_pids; new_pids | while read -r p; do
  tr '\0' '\n' 2>/dev/null < /proc/$p/cmdline | grep -qE "127\.0\.0\.1:$PORT([^0-9]|\$)" && echo "$p"; done; }
trap 'p=$(ray_pids); [ -n "$p" ] && { kill $p 2>/dev/null; sleep 3; kill -9 $p 2>/dev/null; }' EXIT
