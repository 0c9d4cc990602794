#!/usr/bin/env bash
# The committed reference report: every Table 3 row plus Table 2's EN-DE base and big and Table 4's
# WSJ row, profile
# `quick`, on one 2-core CPU (no GPU). Run from the repository root after README's set-up:
#   bash results/quick-cpu2/commands.sh            # the runs, then the report
#   bash results/quick-cpu2/commands.sh report     # the report only (a fresh clone: from the committed store)
# Two chains of `zoo run` share one loopback-only Ray head with 2 CPUs, so single-variant specs
# (base, E, big, Table 2) pair up instead of leaving a core idle; each trial takes 1 CPU (1 thread).
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-reference
OUT=results/quick-cpu2
PORT=6390

# a `zoo run` holds its --storage for itself: each chain has its own, joined by `zoo merge`
chain() { local store=$1; shift; for s in "$@"; do
  .venv/bin/zoo run "specs/$s.yaml" --profile quick --address 127.0.0.1:$PORT --storage $store; done; }
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: runs report (default: both)
if want runs; then
  source scripts/loopback_ray_head.sh  # the head on $PORT, ended with this script
  chain $STORE table3_C table3_B base big table2_en_de_big > $STORE.chain1.log 2>&1 &
  chain $STORE-b table3_A table3_D table3_E table2_en_de_base table4_wsj > $STORE-b.chain2.log 2>&1 &
  wait
fi
if want report; then
  if [ -f $STORE/zoo.db ]; then  # where the runs ran: merged, and committed compressed (README: results/)
    [ -f $STORE-b/zoo.db ] && .venv/bin/zoo merge $STORE/zoo.db $STORE-b/zoo.db
    scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz
  fi  # elsewhere (a fresh clone) the committed $OUT/zoo.db.xz, which $OUT/zoo.db finds
  .venv/bin/zoo status --runs $OUT/zoo.db
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --profile quick
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
