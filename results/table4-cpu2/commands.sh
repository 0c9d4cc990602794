#!/usr/bin/env bash
# The Table 4 reference: `zoo run specs/table4_wsj.yaml --profile cpu` on one 2-core CPU (no GPU),
# both rows (the paper's model, wsj_only, and ours with the word pointer, wsj_only_pointer), one
# after the other with both threads, then the report. Run from the repository root after README's set-up:
#   bash results/table4-cpu2/commands.sh            # the run, then the report
#   bash results/table4-cpu2/commands.sh report     # the report only (a fresh clone: from the committed store)
# `zoo run` starts its own loopback-only Ray (127.0.0.1, no dashboard) and ends it when done.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
STORE=runs-table4
OUT=results/table4-cpu2
want() { [ -z "$STAGES" ] || [[ " $STAGES " == *" $1 "* ]]; }
STAGES="$*"  # any of: runs report (default: both)
if want runs; then .venv/bin/zoo run specs/table4_wsj.yaml --profile cpu --storage $STORE; fi
if want report; then  # where the run ran, its store committed compressed (README: results/); elsewhere the committed one
  if [ -f $STORE/zoo.db ]; then scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz; fi
  .venv/bin/zoo status --runs $OUT/zoo.db
  .venv/bin/zoo report --table 4 --runs $OUT/zoo.db --out $OUT --force --profile cpu
  .venv/bin/python results/findings.py $OUT  # the README's findings block from the stores (tests/test_reference_readmes.py)
fi
