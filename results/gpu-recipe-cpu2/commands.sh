#!/usr/bin/env bash
# The gpu profile's schedule on this CPU (issue 44, item 3; plan.md beside this file, committed first):
# the paper's base under the old gpu-profile schedule and the new one, one thread each, side by side.
# Run from the repository root after README's set-up, best from a clone at a fixed commit:
#   bash results/gpu-recipe-cpu2/commands.sh            # both runs, then the report
#   bash results/gpu-recipe-cpu2/commands.sh runs       # or one stage: runs | report
# Interrupted, run the same command again: zoo train resumes each run from its last checkpoint.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
OUT=results/gpu-recipe-cpu2
RUNS=runs-recipe
STAGES="${*:-runs report}"
want() { [[ " $STAGES " == *" $1 "* ]]; }
COMMON=(--profile paper --set data.dataset=wmt_news_ende --set data.vocab_size=16000 --set train.batch_tokens=1000
        --set train.steps=2400 --set train.precision=bf16 --set train.log_every=20 --set train.eval_every=300
        --set eval.max_sentences=500 --set resources.cpus=1 --set resources.gpus=0)
train() { local name=$1 warmup=$2; mkdir -p logs
  OMP_NUM_THREADS=1 .venv/bin/zoo train specs/base.yaml "${COMMON[@]}" --set train.schedule.warmup_steps=$warmup \
    --set train.schedule.lr_scale=1.0 --out $RUNS/$name >> logs/recipe-$name.log 2>&1; }
if want runs; then
  train old 240 & train new 4000 & wait
fi
if want report; then
  for r in old new; do [ -f $RUNS/$r/metrics.jsonl ] && mkdir -p $OUT/$r && cp $RUNS/$r/metrics.jsonl $RUNS/$r/summary.json $OUT/$r/ 2>/dev/null; done
  .venv/bin/python $OUT/curves.py $OUT
fi
