#!/usr/bin/env bash
# The committed reference report for Table 3 as evidence: every Table 3 row x 3 seeds (the profile's
# `seeds:`) plus Table 2's EN-DE base and big (one seed), profile `ablation_v1` (the first proxy: it
# was called `ablation` when this ran, the name the committed store's rows carry), on one 2-core CPU
# (no GPU). Run from the repository root after README's set-up:
#   bash results/ablation-cpu2/commands.sh            # the runs, then the report
#   bash results/ablation-cpu2/commands.sh report     # the report only (a fresh clone: from the committed store)
# Two chains of `zoo run` share one loopback-only Ray head with 2 CPUs; each trial takes 1 CPU
# (1 thread). A `zoo run` holds its --storage for itself, so each chain has its own and `zoo merge`
# joins them for the report. The budget is steps, so a slower or busier machine takes longer, not
# fewer steps.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-ablation
OUT=results/ablation-cpu2
PORT=6391

chain() { local store=$1; shift; for s in "$@"; do
  .venv/bin/zoo run "specs/$s.yaml" --profile ablation_v1 --address 127.0.0.1:$PORT --storage $store; done; }
t2() { .venv/bin/zoo run "specs/$2.yaml" --profile ablation_v1 --seeds 1 --address 127.0.0.1:$PORT --storage $1; }
# the longest trials first, so the last ones to finish are short; Table 2 with one seed each
# (averaging is judged against the same run's final weights)
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: runs report (default: both)
if want runs; then
  source scripts/loopback_ray_head.sh  # the head on $PORT, ended with this script
  { t2 $STORE table2_en_de_big; chain $STORE big table3_C; } > $STORE.chain1.log 2>&1 &
  { t2 $STORE-b table2_en_de_base; chain $STORE-b table3_A table3_B table3_D table3_E base; } > $STORE-b.chain2.log 2>&1 &
  wait
fi
if want report; then
  if [ -f $STORE/zoo.db ]; then  # where the runs ran: merged, and committed compressed (README: results/)
    [ -f $STORE-b/zoo.db ] && .venv/bin/zoo merge $STORE/zoo.db $STORE-b/zoo.db
    scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz
  fi  # elsewhere (a fresh clone) the committed $OUT/zoo.db.xz, which $OUT/zoo.db finds
  .venv/bin/zoo status --runs $OUT/zoo.db
  # --profile ablation: the name the committed store's rows carry (ablation_v1 selects none of them)
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --profile ablation
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
