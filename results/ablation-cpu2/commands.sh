#!/usr/bin/env bash
# The committed reference report for Table 3 as evidence: every Table 3 row x 3 seeds (the profile's
# `seeds:`) plus Table 2's EN-DE base and big (one seed), profile `ablation_v1` (the first proxy: it
# was called `ablation` when this ran, the name the committed store's rows carry), on one 2-core CPU
# (no GPU). Run from the repository root after README's set-up:
#   bash results/ablation-cpu2/commands.sh
# Two chains of `zoo run` share one loopback-only Ray head with 2 CPUs; each trial takes 1 CPU
# (1 thread). A `zoo run` holds its --storage for itself, so each chain has its own and `zoo merge`
# joins them for the report. The budget is steps, so a slower or busier machine takes longer, not
# fewer steps.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
export RAY_AUTH_MODE=disabled               # allowed only because nothing outside this machine can reach it
STORE=runs-ablation
OUT=results/ablation-cpu2
PORT=6391

before=$(ps -eo pid= | sort)
.venv/bin/ray start --head --node-ip-address=127.0.0.1 --port=$PORT --num-cpus=2 \
  --include-dashboard=false --disable-usage-stats >/dev/null
# the head's processes, by process id (never by name): new since the line above, and Ray's
ray_pids=$(comm -13 <(echo "$before") <(ps -eo pid= | sort) | while read -r p; do
  grep -qa -e 'site-packages/ray' -e 'ray::' /proc/$p/cmdline 2>/dev/null && echo "$p"; done)
# and those the head starts later for its clients (Ray's client server), which name its address
ray_pids() { echo $ray_pids; grep -las -e "127.0.0.1:$PORT" /proc/[0-9]*/cmdline | cut -d/ -f3; }
trap 'p=$(ray_pids); kill $p 2>/dev/null; sleep 3; kill -9 $p 2>/dev/null' EXIT

chain() { local store=$1; shift; for s in "$@"; do
  .venv/bin/zoo run "specs/$s.yaml" --profile ablation_v1 --address 127.0.0.1:$PORT --storage $store; done; }
t2() { .venv/bin/zoo run "specs/$2.yaml" --profile ablation_v1 --seeds 1 --address 127.0.0.1:$PORT --storage $1; }
# the longest trials first, so the last ones to finish are short; Table 2 with one seed each
# (averaging is judged against the same run's final weights)
{ t2 $STORE table2_en_de_big; chain $STORE big table3_C; } > $STORE.chain1.log 2>&1 &
{ t2 $STORE-b table2_en_de_base; chain $STORE-b table3_A table3_B table3_D table3_E base; } > $STORE-b.chain2.log 2>&1 &
wait
.venv/bin/zoo merge $STORE/zoo.db $STORE-b/zoo.db
.venv/bin/zoo status --runs $STORE/zoo.db
.venv/bin/zoo report --runs $STORE/zoo.db --out $OUT --profile ablation_v1
