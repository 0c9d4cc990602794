#!/usr/bin/env bash
# A follow-up chosen after the sweep (post hoc, so it changes no verdict of the reference): C-depth
# flipped, and C3 (4+4 layers) learned far slower than C1 (1+1) at the profile's learning rate, which
# the pilot chose for base (3+3) at the edge of what base tolerates (a shorter warmup already cost it
# 25-150% in PPL). Are deeper rows behind because of the depth or because of that learning rate? C1 and
# C3 x 3 seeds again at the pilot's runner-up, lr_scale 1.0 and warmup 500 (peak 5.6e-3 at d_model
# 64), every other setting as the profile. Run from the repository root after README's set-up:
#   bash results/ablation2-cpu2/followup_depth.sh               # its own loopback-only Ray
#   ADDRESS=127.0.0.1:6392 bash results/ablation2-cpu2/followup_depth.sh   # join a running head
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
if [ -n "${ADDRESS:-}" ]; then export RAY_AUTH_MODE=disabled; fi  # as commands.sh starts its loopback-only head
STORE=runs-ablation2-depth
OUT=results/ablation2-cpu2/depth-followup
.venv/bin/zoo run specs/table3_C.yaml --variant C1 --variant C3 --profile ablation ${ADDRESS:+--address $ADDRESS} \
  --set train.schedule.lr_scale=1.0 --set train.schedule.warmup_steps=500 --storage $STORE
scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz  # committed compressed (README: results/)
.venv/bin/zoo report --table 3 --runs $OUT/zoo.db --out $OUT --force --profile ablation
