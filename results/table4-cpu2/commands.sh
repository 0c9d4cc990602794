#!/usr/bin/env bash
# The Table 4 reference: `zoo run specs/table4_wsj.yaml --profile cpu` on one 2-core CPU (no GPU),
# both rows (the paper's model, wsj_only, and ours with the word pointer, wsj_only_pointer), one
# after the other with both threads, then the report. Run from the repository root after README's set-up:
#   bash results/table4-cpu2/commands.sh
# `zoo run` starts its own loopback-only Ray (127.0.0.1, no dashboard) and ends it when done.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-table4
OUT=results/table4-cpu2
.venv/bin/zoo run specs/table4_wsj.yaml --profile cpu --storage $STORE
.venv/bin/zoo status --runs $STORE/zoo.db
.venv/bin/zoo report --table 4 --runs $STORE/zoo.db --out $OUT --force --profile cpu
cp $STORE/zoo.db $OUT/zoo.db
