#!/usr/bin/env bash
# Table 3 x 10 seeds on one GPU (issue 52, item 7): every Table 3 row and the paper's base, profile ablation_gpu,
# under the analysis plan beside this file (committed before the first trial). A device session has minutes, so it
# runs in parts, each resuming from the store the last part committed:
#   bash results/table3-gpu-h200/commands.sh part [MINUTES [ROWS]]   # on the GPU: the rows not finished yet
#   bash results/table3-gpu-h200/commands.sh report                  # anywhere: the pages from the committed store
# A part runs `zoo run` over the six specs for at most MINUTES (default 8), and only the first ROWS rows not finished
# yet (default all; four trials share the card at a time, so ROWS in fours wastes the least), then writes the store,
# compacted, to this folder's zoo.db.xz (and to $BACK too when set: a device session's $OUT). Trials still running at
# the deadline are stopped (SIGTERM) and start again in the next part: their checkpoints stay on the device that is
# given back. GRAPH=off runs the stacks eagerly (train.cuda_graph changes no result; use it if the GPU check's
# graphed stacks failed). MPS=on runs the part under CUDA MPS (scripts/mps.sh, its daemon in $STORE/mps; where the
# driver has none the part runs without, and says so): set it if the check's 9-concurrent-mps measured a gain.
# PROFILE, SEEDS and ZOO_ARGS exist for the CPU rehearsal (tests/test_reference_parts.py).
# Its work folder is runs-table3-gpu-h200/ in the checkout (ignored); it deletes nothing.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2  # the checkout's root (a device's copy of the tree has no .git)
HERE=results/table3-gpu-h200
PLAN=$HERE/plan.yaml
STORE=${STORE:-runs-table3-gpu-h200}
KEEP=${KEEP:-$HERE/zoo.db.xz}  # the committed store: where a part starts from and what it writes
PROFILE=${PROFILE:-ablation_gpu}
SPECS=(base table3_A table3_B table3_C table3_D table3_E)
ROW_ORDER="base A1 A2 A3 A4 B1 B2 C1 C2 C3 C4 C5 C6 C7 D1 D2 D3 D4 E"
export ZOO_DATA_DIR="${ZOO_DATA_DIR:-../shared/data}"
PY=${PYTHON:-.venv/bin/python}; [ -x "$PY" ] || PY=python3
ZOO=.venv/bin/zoo; [ -x "$ZOO" ] || ZOO=zoo  # a GPU machine staged with ../shared/gpu/stage.sh: setup.sh's zoo
say() { echo "commands.sh: $*" >&2; }
count() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; [ "$1" -gt 0 ]; }
minutes() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] && [[ ! $1 =~ ^0+(\.0*)?$ ]]; }  # 8, or 0.5 (a rehearsal's)

# the rows not finished yet (all their seeds finished under this profile), in ROW_ORDER: `zoo status --json` reads the
# store (none yet: every row)
left_rows() {
  if [ ! -f "$STORE/zoo.db" ]; then echo "$ROW_ORDER"; return 0; fi
  "$ZOO" status --runs "$STORE/zoo.db" --json | "$PY" -c 'import collections, json, sys
profile, seeds, order = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
done = collections.Counter(t["variant"] for t in json.load(sys.stdin)
                           if t["profile"] == profile and t["status"] == "finished")
print(" ".join(r for r in order if done[r] < seeds))' "$PROFILE" "${SEEDS:-10}" "$ROW_ORDER"
}

part() {
  local minutes=${1:-8} rows=${2:-}
  minutes "$minutes" || { say "part MINUTES: a number of minutes above 0, such as 8 or 2.5 (got '$minutes')"; return 2; }
  [ -z "$rows" ] || count "$rows" || { say "part MINUTES ROWS: ROWS a whole number above 0 (got '$rows')"; return 2; }
  if [ -e "$STORE" ] && [ ! -d "$STORE" ]; then say "$STORE is not a folder; move it away"; return 2; fi
  mkdir -p "$STORE"
  if [ ! -e "$STORE/zoo.db" ] && [ -f "$KEEP" ]; then  # a fresh machine: the parts before this one
    "$PY" -c 'import lzma, os, sys; d = lzma.open(sys.argv[1]).read(); p = sys.argv[2] + ".part"
open(p, "wb").write(d); os.replace(p, sys.argv[2])' "$KEEP" "$STORE/zoo.db" || return 1
  fi
  local left; left=$(left_rows) || return 1
  [ -n "$left" ] || { say "every row has its ${SEEDS:-10} seeds finished: nothing to run (commands.sh report)"; return 0; }
  local pick=($left); [ -n "$rows" ] && pick=("${pick[@]:0:$rows}")
  say "rows to run now: ${pick[*]} (of the rows left: $left); at most $minutes min"
  local variants=(); for r in "${pick[@]}"; do variants+=(--variant "$r"); done
  local seeds=(); [ -n "${SEEDS:-}" ] && seeds=(--seeds "$SEEDS")
  if [ "${MPS:-off}" = on ]; then
    if bash scripts/mps.sh start "$STORE/mps" >&2; then
      eval "$(bash scripts/mps.sh env "$STORE/mps")"
      trap 'bash scripts/mps.sh stop "$STORE/mps" >&2' EXIT
    else
      say "no MPS (scripts/mps.sh said why above): this part runs without it"
    fi
  fi
  local t0=$SECONDS
  # SIGTERM at the deadline: zoo run stops its trials and exits 143 (what finished stays finished); KILL 60 s on
  # shellcheck disable=SC2086
  timeout -s TERM -k 60 "${minutes}m" "$ZOO" run "${SPECS[@]}" "${variants[@]}" "${seeds[@]}" --profile "$PROFILE" \
    --analysis "$PLAN" --storage "$STORE" --set "train.cuda_graph=${GRAPH:-on}" ${ZOO_ARGS:-}
  local rc=$?
  say "zoo run ended with status $rc after $((SECONDS - t0)) s (143 or 124: stopped at the deadline)"
  scripts/compact_store.sh "$STORE/zoo.db" "$KEEP" || return 1
  if [ -n "${BACK:-}" ]; then cp "$KEEP" "$BACK/zoo.db.xz" || return 1; fi
  say "rows still to run: $(left_rows)"
  "$ZOO" status --runs "$KEEP" >&2 || true
  return 0
}

report() {  # the pages beside the committed store
  [ -f "$KEEP" ] || { say "no store yet ($KEEP): run a part first"; return 2; }
  "$ZOO" report --runs "${KEEP%.xz}" --out "$(dirname "$KEEP")" --force --table 3 --profile "$PROFILE" --analysis "$PLAN"
}

case "${1:-}" in
  part) shift; part "$@" ;;
  report) report ;;
  *) say "usage: commands.sh part [MINUTES [ROWS]] | report"; exit 2 ;;
esac
