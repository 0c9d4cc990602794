#!/usr/bin/env bash
# The reference report for Table 3 as evidence, profile `ablation` (v2): every Table 3 row x 3 seeds
# (the profile's `seeds:`) on one 2-core CPU (no GPU), then the add-ons that give the claims needing
# a longer budget their own runs (profiles `ablation_dropout` and `ablation_big`, which extend
# `ablation`). Run from the repository root after README's set-up:
#   bash results/ablation2-cpu2/commands.sh                 # everything, in order
#   bash results/ablation2-cpu2/commands.sh main report     # some stages: lr_pilot overfit_pilot main addons seeds report
# Two chains of `zoo run` share one loopback-only Ray head with 2 CPUs; each trial takes 1 CPU
# (1 thread). A `zoo run` holds its --storage for itself, so each chain has its own and `zoo merge`
# joins them for the report. The budget is steps, so a slower or busier machine takes longer, not
# fewer steps. Interrupted, run the same command again: finished trials are skipped and the others
# resume from their last checkpoint.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-ablation2
OUT=results/ablation2-cpu2
PORT=6392

run() { local store=$1 profile=$2; shift 2
  .venv/bin/zoo run "$@" --profile "$profile" --address 127.0.0.1:$PORT --storage "$store"; }
chain() { local store=$1; shift; for s in "$@"; do run "$store" ablation "specs/$s.yaml"; done; }
# The pilots (dev only, chosen before the sweep; see README): the learning rate and warmup, then
# where base without dropout begins to over-fit (it sets the dropout add-on's data and budget).
lr_pilot() {
  run runs-pilot ablation specs/pilots/ablation_lr.yaml --seeds 1 --set 'eval.extra_splits=[]' --set 'eval.ppl_splits=[]'; }
overfit_pilot() {  # the whole corpus (about 26 epochs), then a quarter of it (about 47 of its epochs)
  run runs-pilot-overfit ablation specs/pilots/ablation_overfit.yaml --seeds 1 --set train.steps=6600 \
    --set train.eval_every=100 --set train.checkpoint_every=500 --set train.schedule.cooldown=0 \
    --set 'eval.extra_splits=[]' --set 'eval.ppl_splits=[]'
  run runs-pilot-overfit ablation specs/pilots/ablation_overfit_quarter.yaml --seeds 1 --set train.steps=3000 \
    --set train.eval_every=32 --set train.checkpoint_every=500 --set train.schedule.cooldown=0 \
    --set 'eval.extra_splits=[]' --set 'eval.ppl_splits=[]'; }
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: lr_pilot overfit_pilot main addons seeds report (default: all, in that order)
if want lr_pilot || want overfit_pilot || want main || want addons; then
  source scripts/loopback_ray_head.sh  # the head on $PORT, ended with this script
fi
want lr_pilot && lr_pilot > runs-pilot.log 2>&1
if want main || want overfit_pilot; then  # the longest trials first, so the last ones to finish are short
  { want main && chain $STORE big table3_C table3_D; } > $STORE.chain1.log 2>&1 &
  { want overfit_pilot && overfit_pilot; want main && chain $STORE-b table3_A table3_B table3_E base; } \
    > $STORE-b.chain2.log 2>&1 &
  wait
fi
if want addons; then  # the budgets two claims need, after the 20 rows
  { run $STORE-c ablation_big specs/big.yaml; } > $STORE-c.chain1.log 2>&1 &
  { run $STORE-d ablation_dropout specs/base.yaml && run $STORE-d ablation_dropout specs/table3_D.yaml --variant D1 &&
    run $STORE-d ablation_dropout specs/table3_D.yaml --variant D2; } > $STORE-d.chain2.log 2>&1 &
  wait
fi
# the seed counts `zoo run --plan --power` printed from the 3-seed run (more_seeds.sh: its own Ray head)
if want seeds; then bash results/ablation2-cpu2/more_seeds.sh; fi
if want report; then
  if [ -f $STORE/zoo.db ]; then  # where the runs ran: merged, and committed compressed (README: results/)
    for s in $STORE-b $STORE-c $STORE-d; do [ -f $s/zoo.db ] && .venv/bin/zoo merge $STORE/zoo.db $s/zoo.db; done
    scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz
    [ -f runs-pilot/zoo.db ] && scripts/compact_store.sh runs-pilot/zoo.db $OUT/pilot-lr.db.xz
    [ -f runs-pilot-overfit/zoo.db ] && scripts/compact_store.sh runs-pilot-overfit/zoo.db $OUT/pilot-overfit.db.xz
  fi  # elsewhere (a fresh clone) the committed $OUT/zoo.db.xz, which $OUT/zoo.db finds
  .venv/bin/zoo status --runs $OUT/zoo.db
  .venv/bin/zoo report --runs $OUT/zoo.db --out $OUT --force --profile ablation --addon ablation_dropout --addon ablation_big
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
