#!/usr/bin/env bash
# More seeds for the claims that `zoo run --plan --power --pilot results/ablation2-cpu2/zoo.db`
# says a few more seeds would resolve at 80% power (Holm's strictest level over 19 claims), in
# the seed counts it printed from the 3-seed run, chosen before any new seed was seen:
#   B-small-dk-ppl 8 seeds (B1, base), C-width-ppl 6 (C4, C5), D-smoothing-ppl 4 (D3, base).
# Claims no seed count reaches (the test set's own noise is larger than the paper's effect), or that
# need more than a few hours (A-too-many-heads-ppl 18, C-depth-ppl 12, C-ffn-ppl 45), get none.
# Same profile and stores as commands.sh (which merges them in its report stage); its own
# loopback-only Ray head, so it can run beside commands.sh. Interrupted, run it again.
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
PORT=6393

source scripts/loopback_ray_head.sh  # the head on $PORT, ended with this script

run() { local store=$1 spec=$2 n=$3; shift 3
  .venv/bin/zoo run "specs/$spec.yaml" "$@" --seeds "$n" --profile ablation --address 127.0.0.1:$PORT --storage "$store"; }
{ run runs-ablation2-b base 8 && run runs-ablation2-b table3_B 8 --variant B1; } > runs-ablation2-b.seeds.log 2>&1 &
{ run runs-ablation2 table3_C 6 --variant C5 --variant C4 && run runs-ablation2 table3_D 4 --variant D3; } \
  > runs-ablation2.seeds.log 2>&1 &
wait
