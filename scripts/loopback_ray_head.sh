# Sourced by the reference scripts (results/*/commands.sh): start a loopback-only Ray head with 2
# CPUs on port $PORT, and end its processes when the script exits, by process id (never by name).
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
export RAY_AUTH_MODE=disabled               # allowed only because nothing outside this machine can reach it
before=$(ps -eo pid= | sort)
.venv/bin/ray start --head --node-ip-address=127.0.0.1 --port=$PORT --num-cpus=2 \
  --include-dashboard=false --disable-usage-stats >/dev/null
# the head's processes: new since the line above, and Ray's
ray_pids=$(comm -13 <(echo "$before") <(ps -eo pid= | sort) | while read -r p; do
  grep -qa -e 'site-packages/ray' -e 'ray::' /proc/$p/cmdline 2>/dev/null && echo "$p"; done)
# and those the head starts later for its clients (Ray's client server), which name its address
ray_pids() { echo $ray_pids; grep -las -e "127.0.0.1:$PORT" /proc/[0-9]*/cmdline | cut -d/ -f3; }
trap 'p=$(ray_pids); kill $p 2>/dev/null; sleep 3; kill -9 $p 2>/dev/null' EXIT
