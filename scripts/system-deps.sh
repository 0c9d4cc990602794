#!/bin/sh
# Debian packages the test suite drives for real: headless Chromium (the HTML report's browser test)
# and iproute2 (`ip`, `ss`: the two-namespace cluster test). Installs only what is missing; needs root
# or sudo. README's set-up line runs it, so a fresh clone passes the whole suite. It takes no arguments.
if [ $# -gt 0 ]; then
  case "$1" in -h|--help) echo "usage: scripts/system-deps.sh (no arguments): installs chromium and iproute2 where missing"; exit 0 ;; esac
  echo "system-deps: unknown argument '$1' (it takes none; --help)" >&2; exit 2
fi
need=""
command -v chromium >/dev/null 2>&1 || need="$need chromium"
{ command -v ip && command -v ss; } >/dev/null 2>&1 || need="$need iproute2"
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: no apt-get here; install$need yourself, or the browser and cluster tests fail" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "system-deps: installing Debian's$need for the tests" >&2
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $need >/dev/null
