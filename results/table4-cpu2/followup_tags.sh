#!/usr/bin/env bash
# Item 5's lift, tried once on dev: the pointer row with POS tags instead of XX as preterminals
# (`data.preterminals: tags`), everything else as the cpu profile's pointer row. One run, scored on
# dev to decide; not a row of the reference. Run from the repository root after README's set-up:
#   bash results/table4-cpu2/followup_tags.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0  # bind 127.0.0.1 only
STORE=runs-table4-tags
OUT=results/table4-cpu2/tags-followup
.venv/bin/zoo run specs/table4_wsj.yaml --variant wsj_only_pointer --profile cpu --set data.preterminals=tags --storage $STORE
scripts/compact_store.sh $STORE/zoo.db $OUT/zoo.db.xz  # committed compressed (README: results/)
.venv/bin/zoo status --runs $OUT/zoo.db
