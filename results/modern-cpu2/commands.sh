#!/usr/bin/env bash
# Table 3+ (issue 36): specs/modern.yaml's twelve rows and the paper's base, profile `ablation` x 3 seeds,
# on one 2-core CPU, under the analysis plan results/modern-cpu2/plan.yaml (committed before the first
# trial). Run from the repository root after README's set-up, best from a clone at a fixed commit:
#   bash results/modern-cpu2/commands.sh            # the runs, then the report
#   bash results/modern-cpu2/commands.sh report     # the report only
# Two chains share one loopback-only Ray head with 2 CPUs (1-thread trials); each has its own --storage
# and `zoo merge` joins them. Interrupted, run it again: finished trials are skipped.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-modern
OUT=results/modern-cpu2
PLAN=$OUT/plan.yaml
PORT=6396
run() { local store=$1; shift
  .venv/bin/zoo run "$@" --profile ablation --analysis $PLAN --address 127.0.0.1:$PORT --storage "$store"; }
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: runs report (default: both)
if want runs; then
  source scripts/loopback_ray_head.sh
  { run $STORE-1 specs/modern.yaml --variant C3_pre --variant modern --variant swiglu --variant gqa --variant mqa \
      --variant gelu; } >> $STORE-1.log 2>&1 &  # appended: a resumed run keeps the log of before
  { run $STORE-2 specs/base.yaml && run $STORE-2 specs/modern.yaml --variant pre_ln --variant rmsnorm --variant rope \
      --variant alibi --variant no_pos --variant C1_pre; } >> $STORE-2.log 2>&1 &
  wait
fi
if want report; then
  if [ -f $STORE-1/zoo.db ] || [ -f $STORE-2/zoo.db ]; then  # the chains' stores, where they ran: merged afresh
    rm -f $STORE.db; for s in $STORE-1 $STORE-2; do [ -f $s/zoo.db ] && .venv/bin/zoo merge $STORE.db $s/zoo.db; done
    scripts/compact_store.sh $STORE.db $OUT/zoo.db.xz  # committed compressed (README: results/)
  fi  # elsewhere (a fresh clone) the committed $OUT/zoo.db.xz, which $OUT/zoo.db finds
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --table 3 --profile ablation --analysis $PLAN
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --spec specs/modern.yaml --profile ablation
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
