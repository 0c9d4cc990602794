#!/usr/bin/env bash
# The scale trend (issue 34): six Table 3 comparisons (nine rows) at d_model 32, 64 and 128 (profiles
# trend_32, trend_64, trend_128: 5, 5 and 3 seeds) on one 2-core CPU, under the analysis plan
# results/trend-cpu2/plan.yaml, committed before the first trial (its hash goes with every trial).
# Run from the repository root after README's set-up, best from a clone at a fixed commit (so work on
# the code cannot change a running reference):
#   bash results/trend-cpu2/commands.sh              # everything: the runs, then the report
#   bash results/trend-cpu2/commands.sh runs         # or some stages: runs snapshot report
# Two chains of `zoo run` share one loopback-only Ray head with 2 CPUs; each trial takes 1 CPU (1 thread);
# each chain has its own --storage (a `zoo run` holds its store for itself) and `zoo merge` joins them.
# The budget is steps, so a busier machine takes longer, not fewer steps. Interrupted, run the same
# command again: finished trials are skipped and the others resume from their last checkpoint.
# `snapshot` merges what has finished so far into $OUT/zoo.db.xz (while the runs go on), for committing.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-trend
OUT=results/trend-cpu2
PLAN=$OUT/plan.yaml
PORT=6394
WIDTHS="trend_32 trend_64 trend_128"  # narrowest first: every row of a width finishes before the next starts

run() { local store=$1 profile=$2; shift 2
  .venv/bin/zoo run "$@" --profile "$profile" --analysis $PLAN --address 127.0.0.1:$PORT --storage "$store"; }
# the two chains take about the same time (the longest rows first in each): at trend_128, whose trials are
# the longest, chain 1 takes B1 and D3 too (from the resume of 2026-11-24 on; each row runs in one chain only)
chain1() { for p in $WIDTHS; do
  run $STORE-1 $p specs/table3_A.yaml --variant A1 --variant A3 --variant A4 && run $STORE-1 $p specs/table3_E.yaml &&
  if [ $p = trend_128 ]; then
    run $STORE-1 $p specs/table3_B.yaml --variant B1 && run $STORE-1 $p specs/table3_D.yaml --variant D3; fi
  done; }
chain2() { for p in $WIDTHS; do
  run $STORE-2 $p specs/table3_C.yaml --variant C1 --variant C3 &&
  if [ $p != trend_128 ]; then
    run $STORE-2 $p specs/table3_B.yaml --variant B1 && run $STORE-2 $p specs/table3_D.yaml --variant D3; fi &&
  run $STORE-2 $p specs/base.yaml
  done; }
merged() {  # the two chains' stores, where they ran, merged afresh and committed compressed as $OUT/zoo.db.xz
  [ -f $STORE-1/zoo.db ] || [ -f $STORE-2/zoo.db ] || return 0  # elsewhere (a fresh clone): the committed one
  rm -f $STORE.db; for s in $STORE-1 $STORE-2; do [ -f $s/zoo.db ] && .venv/bin/zoo merge $STORE.db $s/zoo.db; done
  scripts/compact_store.sh $STORE.db $OUT/zoo.db.xz; }
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: runs snapshot report (default: runs, then report)
if want runs; then
  source scripts/loopback_ray_head.sh  # the head on $PORT, ended with this script
  chain1 >> $STORE-1.log 2>&1 &  # appended: a resumed run keeps the log of before
  chain2 >> $STORE-2.log 2>&1 &
  wait
fi
if [[ " $STAGES " == *" snapshot "* ]]; then merged; .venv/bin/zoo status --runs $OUT/zoo.db | tail -3; fi
if want report; then
  merged
  .venv/bin/zoo status --runs $OUT/zoo.db
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --table 3 --analysis $PLAN
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
