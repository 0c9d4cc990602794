#!/usr/bin/env bash
# README's "A first GPU run: the checklist", end to end on this machine: every step's figures beside the
# roofline's prediction (bench/bench_train.py --predict) in OUT/report.md, the raw numbers in OUT/measured.json
# and each command's output in OUT/logs/; the report names the figures that fall outside the predicted range.
#
#   scripts/first-gpu-run.sh [--out DIR] [--cpu]      (run from anywhere; ZOO_DATA_DIR as for zoo itself)
#
# --out DIR: where it writes (default results/gpu-first-run). --cpu: no GPU needed: every step's code path on
# tiny shapes (the smoke profile's models, small batches, a few steps) on the CPU, predicted against this
# CPU's own calibration; the figures then say nothing about a GPU. Two-GPU step: skipped, with a word, on a
# machine with one GPU (on the CPU it runs as two gloo workers).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=results/gpu-first-run
CPU=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --cpu) CPU=1; shift ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "first-gpu-run.sh: unknown argument $1 (--out DIR, --cpu)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
ZOO=("$PY" -m zoo.cli)
export ZOO_DATA_DIR=${ZOO_DATA_DIR:-../shared/data}
case "$ZOO_DATA_DIR" in /*) ;; *) ZOO_DATA_DIR="$PWD/$ZOO_DATA_DIR" ;; esac  # the steps run in other folders too
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/logs"
WORK="$OUT/work"  # the runs themselves (checkpoints): never committed
mkdir -p "$WORK" && echo "*" > "$WORK/.gitignore"
STATUS="$OUT/steps.tsv"  # step, exit status, seconds: the report reads it
: > "$STATUS"

step() {  # step NAME CMD...: run, log, record the exit status
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG/all.log"
  "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  echo -e "$name\t$rc\t$((SECONDS - t0))" >> "$STATUS"
  tail -n 3 "$LOG/$name.log" | sed 's/^/   /'
  return 0
}

# 1. what torch sees
step 1-cuda "$PY" -c "import torch; print(torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU', torch.cuda.device_count())"
GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
if [ "$CPU" = 0 ] && [ "$GPUS" = 0 ]; then
  echo "first-gpu-run.sh: torch sees no GPU here (logs/1-cuda.log); run with --cpu to exercise the steps on the CPU" >&2
  exit 2
fi
if [ "$CPU" = 1 ]; then
  DEV=cpu; TINY=--tiny; STEPS=2; PROFILE=smoke; TRAIN_STEPS=30; GPU_SET=resources.gpus=0
else
  DEV=cuda; TINY=; STEPS=20; PROFILE=gpu; TRAIN_STEPS=200; GPU_SET=resources.gpus=1
fi

# 2. the prediction; 3. the bench on the same batches (as a trial trains: zoo.train.step)
step 2-predict "$PY" bench/bench_train.py --predict $TINY --base-steps "$STEPS" --json "$OUT/predict.json"
step 3-bench "$PY" bench/bench_train.py --device "$DEV" $TINY --base-steps "$STEPS" --json "$OUT/bench.json"

# 4. zoo train, eager then compiled, each into its own folder (train.compile is not in the config hash: on
# the same --out zoo train says "already finished ... nothing trained"); decoding cut to 64 sentences a split
step 4-show "${ZOO[@]}" show base --profile "$PROFILE"
for mode in eager compiled; do
  sets=(--set "train.steps=$TRAIN_STEPS" --set eval.max_sentences=64 --set "$GPU_SET")
  [ "$mode" = compiled ] && sets+=(--set train.compile=on)
  rm -rf "$WORK/train-$mode"
  step "4-train-$mode" "${ZOO[@]}" train base --profile "$PROFILE" "${sets[@]}" --out "$WORK/train-$mode"
done

# 5. two data-parallel workers in one trial (two GPUs; on the CPU, two gloo workers)
rm -rf "$WORK/runs-workers" "$WORK/runs-shared"
if [ "$CPU" = 1 ] || [ "$GPUS" -ge 2 ]; then
  step 5-workers "${ZOO[@]}" run table3_A --variant A1 --profile smoke --set resources.workers=2 --set "$GPU_SET" \
    --storage "$WORK/runs-workers"
  step 5-status "${ZOO[@]}" status --json --runs "$WORK/runs-workers"
else
  echo -e "5-workers\tskipped: this machine has $GPUS GPU (the step needs 2)\t0" >> "$STATUS"
fi

# 6. four trials sharing one GPU (on the CPU: one CPU each)
share=(--set resources.cpus=1)
[ "$CPU" = 0 ] && share+=(--set resources.gpus=0.25)
step 6-shared "${ZOO[@]}" run table3_A --profile smoke "${share[@]}" --storage "$WORK/runs-shared"
step 6-status "${ZOO[@]}" status --json --runs "$WORK/runs-shared"

# 7. a GPU request where torch sees no CUDA exits 2 (CUDA hidden from this one command)
rm -rf "$WORK/no-cuda"
step 7-no-cuda env CUDA_VISIBLE_DEVICES= "${ZOO[@]}" train base --profile smoke --set resources.gpus=1 --out "$WORK/no-cuda"

"$PY" - "$OUT" "$CPU" "$GPUS" <<'EOF'
"""The report: each step's figures, the prediction beside them, and which fall outside its range."""
import json, statistics, sys
from pathlib import Path

out, cpu, gpus = Path(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
status = {l.split("\t")[0]: l.split("\t")[1:] for l in (out / "steps.tsv").read_text().splitlines()}
log = lambda name: (out / "logs" / f"{name}.log").read_text() if (out / "logs" / f"{name}.log").exists() else ""
load = lambda name: json.loads((out / name).read_text()) if (out / name).exists() else {}
pred, bench = load("predict.json"), load("bench.json")
lines, outside, raw = [], [], {"cpu": cpu, "gpus": gpus, "steps": status, "predict": pred, "bench": bench}
ok = lambda name: status.get(name, ["missing"])[0] == "0"

def check(what, value, lo, hi, unit=""):
    lo, hi = min(lo, (lo + hi) / 2 / 1.15), max(hi, (lo + hi) / 2 * 1.15)  # never tighter than the roofline's 15%
    inside = lo <= value <= hi
    if not inside:
        outside.append(f"{what}: {value:.3g}{unit} (predicted {lo:.3g}-{hi:.3g}{unit})")
    return f"{value:.3g}{unit} (predicted {lo:.3g}-{hi:.3g}{unit}){'' if inside else ' **outside**'}"

device = bench.get("device", "?")
lines.append(f"# First GPU run: {device}\n")
lines.append(("CPU rehearsal (`--cpu`): tiny shapes, compared with this CPU's own calibration; the figures "
              "say nothing about a GPU.\n") if cpu else f"One run of `scripts/first-gpu-run.sh` on {device} ({gpus} GPU).\n")
lines.append(f"1. torch sees: `{log('1-cuda').strip()}`\n")

# the predicted device: the datasheet entry for this GPU, or the calibrated CPU
name = None
for k in (pred.get("models", {}).get("base") or {}):
    if isinstance(pred["models"]["base"][k], dict) and ((cpu and k.startswith("this CPU")) or (not cpu and k.split()[0] in device.upper())):
        name = k
errs = ", ".join(f"{r['model']} {r['error']:+.0%}" for r in pred.get("cpu_check", []))
lines.append(f"2. prediction ({name or 'no entry for this device'}); the roofline's self-check on this machine's CPU: {errs or 'none'}\n")
lines.append("3. bench (zoo.train.step, the loop's step) against the prediction for the same batches:\n")
lines.append("| model | step ms | tokens/s | MFU of the measured peak | MFU of the spec peak |\n|---|---|---:|---:|---:|")
ratio_pred = None
for model, row in (bench.get("models") or {}).items():
    p = (pred.get("models", {}).get(model) or {}).get(name) if name else None
    step = check(f"{model} step", row["step_ms"], min(p["eager"]["ms"]), max(p["eager"]["ms"]), " ms") if p else f"{row['step_ms']:.3g} ms"
    lines.append(f"| {model} | {step} | {row['tokens_per_s']:.0f} | {row['mfu_measured_peak']:.2f} | {row['mfu_spec_peak']:.2f} |")
    if p and model == "base":
        e, c = p["eager"]["ms"], p["compiled"]["ms"]
        # the device's ranges move eager and compiled alike; how well inductor fuses is not in them: +-20%
        ratio_pred = [min(e[i] / c[i] for i in range(3)) / 1.2, e[1] / c[1], max(e[i] / c[i] for i in range(3)) * 1.2]
lines.append("")

def steady(run):  # tokens/s after the first two log points
    f = out / "work" / run / "metrics.jsonl"
    rows = [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []
    tps = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r][2:]
    return statistics.median(tps) if tps else None

eager, comp = steady("train-eager"), steady("train-compiled")
raw["train_tokens_per_s"] = {"eager": eager, "compiled": comp}
budget = next((l for l in log("4-show").splitlines() if "# budget:" in l), "").strip()
lines.append(f"4. `zoo train base` (exit {status.get('4-train-eager', ['?'])[0]} eager, "
             f"{status.get('4-train-compiled', ['?'])[0]} compiled); {budget}")
if eager and comp:
    got = comp / eager
    lines.append(f"   tokens/s after the first two log points: eager {eager:.0f}, compiled {comp:.0f}: compiled / eager "
                 + (check("compiled / eager tokens/s", got, ratio_pred[0], ratio_pred[2], "x") if ratio_pred else f"{got:.2f}x"))
else:
    lines.append("   no steady tokens/s (a run failed or logged too few points: see logs/4-train-*.log)")
if "GPUOutOfMemoryError" in log("4-train-eager") + log("4-train-compiled"):
    outside.append("zoo train ran out of GPU memory")
lines.append("")

def placements(name):  # each trial's placement in `zoo status --json`: workers, gpu_ids
    try:
        return [t.get("placement") or {} for t in json.loads(log(name))]
    except ValueError:
        return []

if status.get("5-workers", [""])[0].startswith("skipped"):
    lines.append(f"5. two workers: {status['5-workers'][0]}")
else:
    w = [p.get("workers") for p in placements("5-status")]
    good = ok("5-workers") and 2 in w
    lines.append(f"5. two workers: exit {status['5-workers'][0]}, workers {sorted(set(w))}: {'as expected' if good else '**not as expected**'}")
    good or outside.append("two-worker trial")
ids = [p.get("gpu_ids") for p in placements("6-status")]
good = ok("6-shared") and "4 finished, 0 failed" in log("6-shared") and (cpu or all(i == ["0"] for i in ids) and len(ids) >= 4)
lines.append(f"6. four trials sharing the device: exit {status['6-shared'][0]}, gpu_ids {ids}: {'as expected' if good else '**not as expected**'}")
good or outside.append("four trials on one GPU")
said = "sees 0 CUDA devices" in log("7-no-cuda")
good = status["7-no-cuda"][0] == "2" and said
lines.append(f"7. GPU asked, CUDA hidden: exit {status['7-no-cuda'][0]}{', says what torch sees' if said else ''}: "
             f"{'as expected' if good else '**not as expected**'}")
good or outside.append("no-CUDA refusal")
lines.append("\n## Outside the predicted range\n")
lines += [f"- {o}" for o in outside] or ["none"]
(out / "report.md").write_text("\n".join(lines) + "\n")
raw["outside"] = outside
(out / "measured.json").write_text(json.dumps(raw, indent=2))
print("\n".join(lines))
EOF
