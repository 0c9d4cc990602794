#!/usr/bin/env bash
# A follow-up chosen after the big add-on ran (post hoc, so it changes no verdict of the reference):
# big at 3000 steps (`ablation_big`) stayed behind base at 1000, its translations fluent German that
# follows the source only loosely, and its training perplexity (with dropout on) close to its dev
# perplexity: under-fitting, not over-fitting. Is it the paper's P_drop 0.3, which at d_model 128
# leaves too little signal in 12 epochs? big x seed 1 again with P_drop 0.1 (base's), every other
# setting as the add-on. Run from the repository root after README's set-up (its own loopback-only Ray):
#   bash results/ablation2-cpu2/followup_big_dropout.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
STORE=runs-ablation2-bigdrop
OUT=results/ablation2-cpu2/big-dropout-followup
.venv/bin/zoo run specs/big.yaml --profile ablation_big --seeds 1 --set model.dropout=0.1 --storage $STORE
scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz  # committed compressed (README: results/)
.venv/bin/zoo status --runs $OUT/zoo.db
