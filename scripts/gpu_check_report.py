"""The GPU check's report (scripts/gpu_check.py): each step's one-line headline as it ends, then report.md (every
figure beside its prediction) and measured.json (the raw numbers), read from what the steps left in OUT: steps.tsv,
torch.json, predict.json, bench-*.json, shared-status.json, logs/ and the runs in work/. Standard library only (no
torch): it runs in whatever Python runs the check, and a test feeds it a made-up OUT."""
import json
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REF = Path("results/gpu-recipe-cpu2")  # the CPU reference's learning curves, relative to the checkout


def load(p):
    try:
        return json.loads(Path(p).read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Results:
    """What one run of the check left in `out`; `ref` is the checkout's CPU reference folder (REF)."""
    out: Path
    cpu: bool
    ref: Path = REF
    shown_ref: Path = field(default=REF)  # how the report names ref (relative to the checkout)

    @property
    def work(self) -> Path:
        return self.out / "work"

    def log(self, name):
        p = self.out / "logs" / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def steps(self):
        """steps.tsv: step, exit status (or `skipped: why`), seconds, limit."""
        rows, p = {}, self.out / "steps.tsv"
        for line in p.read_text().splitlines() if p.exists() else []:
            name, rc, secs, limit = (line.split("\t") + ["", "", ""])[:4]
            rows[name] = {"exit": rc, "seconds": int(secs or 0), "limit": int(limit or 0),
                          "timed_out": rc in ("124", "137")}
        return rows

    def torch(self):
        return load(self.out / "torch.json") or {}

    def run(self, name):
        """A run's tokens/s and checkpoint share from its summary.json in work/."""
        s = load(self.work / name / "summary.json")
        if not s:
            return None
        ts = max(s.get("train_seconds") or 0, 1e-9)
        hw = s.get("hardware") or {}
        return {"tokens_per_s": s.get("tokens_seen", 0) / ts, "train_seconds": s.get("train_seconds"),
                "checkpoint_share": (s.get("checkpoint_seconds") or 0) / ts, "steps": s.get("steps_done"),
                "compute_dtype": hw.get("compute_dtype"), "device": hw.get("device"), "dev_ppl": s.get("dev_ppl")}


# -- 2: the prediction and the bench --------------------------------------------------------------------
def predicted_device(r, pred):
    """The prediction's entry for this device: this GPU's datasheet entry, or on the rehearsal the calibrated CPU."""
    dev = (r.torch().get("device") or "").upper()
    keys = [k for k, v in ((pred or {}).get("models", {}).get("base") or {}).items()
            if isinstance(v, dict) and ((r.cpu and k.startswith("this CPU")) or (not r.cpu and k.split()[0] in dev))]
    # a roofline calibrated on a measured card of this kind ("H100 SXM (calibrated)") before its datasheet entry
    return next((k for k in keys if "calibrated" in k), keys[0] if keys else None)


def bench_rows(r, mode):
    """{model: {step_ms, tokens_per_s, ...}} from the bench's JSON, or what its log printed before a timeout."""
    j = load(r.out / f"bench-{mode}.json")
    if j and j.get("models"):
        return j["models"], j
    rows = {}
    for line in r.log(f"2-bench-{mode}").splitlines():  # "base: d_model ..., N target tokens/s, M ms a step..."
        name, _, rest = line.partition(": d_model")
        if rest and "target tokens/s" in rest:
            parts = rest.split(",")
            tps = next(float(p.split()[0]) for p in parts if "target tokens/s" in p)
            ms = next(float(p.split()[0]) for p in parts if "ms a step" in p)
            rows[name.strip()] = {"tokens_per_s": tps, "step_ms": ms, "partial": True}
    return rows, j or {}


def rng(v):
    return f"{v[1]:.4g} ({min(v[0], v[2]):.4g}-{max(v[0], v[2]):.4g})"


def widen(lo, hi):  # never tighter than the roofline's own 15% either side of the middle
    mid = (lo + hi) / 2
    return min(lo, mid / 1.15), max(hi, mid * 1.15)


# model.residual_stream bf16 against the fp32 stream, eager (bench --stream), before it was measured: the stream's
# share of the memory-bound bytes (adds, dropout, norms' reads and writes) halves; eager keeps a cast after each norm.
# A hypothesis from the roofline's split (memory-bound 18.2 of compiled base's 64.4 ms on the H100), not a measurement.
STREAM_PREDICTED = (1.00, 1.10)


def stream_lines(j):
    """The bf16 stream's speed against the fp32 stream's, per model and corpus, beside the prediction."""
    runs, L = j.get("runs") or {}, []
    for key, row in runs.items():
        if key.endswith(" zoo bf16 stream") and (ref := runs.get(key[: -len(" bf16 stream")])):
            x = row["tokens_per_s"] / ref["tokens_per_s"]
            lo, hi = STREAM_PREDICTED
            L.append(f"\n{key[: -len(' zoo bf16 stream')]} eager, model.residual_stream bf16 / fp32: {x:.2f}x the "
                     f"tokens/s (predicted {lo:.2f}-{hi:.2f}x){'' if lo / 1.05 <= x <= hi * 1.05 else ' **outside**'}")
    return L


# -- 3: the learning check ------------------------------------------------------------------------------
def curve(path):
    try:
        rows = [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]
    except (OSError, ValueError):
        return {}
    return {r["step"]: r["nll"] for r in rows if "nll" in r and "step" in r}


def noam(step, warmup, d=512):
    step = max(step, 1)
    return d ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def learning(r):
    gpu = {k: curve(r.work / f"learn-{k}" / "metrics.jsonl") for k in ("new", "old")}
    ref = {k: curve(r.ref / k / "metrics.jsonl") for k in ("new", "old")}
    last = max(gpu["new"] or gpu["old"] or [0])
    common = sorted(set(gpu["new"]) | set(gpu["old"]))
    pick = [s for s in common if s in (1, 20, 60, 100, 200, 240, 300) or s == last] or common
    diffs = {k: {s: gpu[k][s] - ref[k][s] for s in gpu[k] if s in ref[k]} for k in ("new", "old")}
    return {"steps": pick, "gpu": gpu, "ref": ref, "diff": diffs, "last": last,
            "ref_there": {k: bool(ref[k]) for k in ref}}


# -- 4: runs' checkpoint share --------------------------------------------------------------------------
def share_line(run):
    long = (run["train_seconds"] or 0) >= 60
    ok = run["checkpoint_share"] <= 0.02
    verdict = ("within" if ok else "**over**") + " the 2% target" if long else \
        f"the 2% target is for runs of a minute or more ({'within it anyway' if ok else 'over it'})"
    return f"{100 * run['checkpoint_share']:.1f}% of {run['train_seconds']:.0f} s waiting on checkpoints: {verdict}"


# -- 5: trials sharing the device ------------------------------------------------------------------------
def shared(r):
    rows = load(r.out / "shared-status.json") or []
    done = [x for x in rows if x.get("status") == "finished"]
    t0 = min((x["started_at"] for x in done if x.get("started_at")), default=None)
    t1 = max((x["finished_at"] for x in done if x.get("finished_at")), default=None)
    span = (t1 - t0) if t0 and t1 else None
    tps = [m["tokens_seen"] / m["train_seconds"] for x in done if (m := x.get("metrics")) and m.get("train_seconds")]
    return {"trials": len(rows), "finished": len(done), "span_s": span,
            "trials_per_min": 60 * len(done) / span if span else None, "summed_tokens_per_s": sum(tps) if tps else None,
            "gpu_ids": [(x.get("placement") or {}).get("gpu_ids") for x in rows]}


# -- 8, 9: seeds stacked, processes sharing the device (each beside the roofline's prediction) ----------------
def mid(pred, key):
    """The prediction's middle and range as text ('-' where none was made)."""
    v = (pred or {}).get(key)
    if not v:
        return "-"
    return f"{v[1]:.0f}" if v[0] == v[2] else f"{v[1]:.0f} ({min(v):.0f}-{max(v):.0f})"


def inside(pred, key, got):
    v = (pred or {}).get(key)
    return v is None or min(v) * 0.85 <= got <= max(v) * 1.15  # the roofline's own 15% either side


def stacked_name(x) -> str:
    """A stacked figure's name: K, graphed where train.cuda_graph was on (zoo.train.graphed.GraphedStack), packed
    where train.pack was (several sentences a row)."""
    return f"K {x['K']}" + (" graphed" if x.get("graph") else "") + (" packed" if x.get("pack") else "")


def stacked_headline(r, name):
    rows = load(r.out / "stacked.json") or []
    return "; ".join(f"{stacked_name(x)}: FAILED" if "error" in x else
                     f"{stacked_name(x)}: {x['summed_tokens_per_s']:.0f} tok/s summed (predicted "
                     f"{mid(x.get('predicted'), 'summed_tokens_per_s')})" for x in rows) or "no figures"


def mps_headline(r, name):
    rows = load(r.out / "concurrent-mps.json") or []
    if rows and rows[0].get("mps") is False:
        return f"no MPS: {rows[0].get('why', '')}"
    return "; ".join(f"{x['P']} at once under MPS: {x['summed_tokens_per_s']:.0f} tok/s summed, "
                     f"{x['trials_per_min']:.1f} trials/min" for x in rows) or "no figures"


def concurrent_headline(r, name):
    rows = load(r.out / "concurrent.json") or []
    return "; ".join(f"{x['P']} at once: {x['summed_tokens_per_s']:.0f} tok/s summed (predicted "
                     f"{mid(x.get('predicted'), 'summed_tokens_per_s')}), {x['trials_per_min']:.1f} trials/min"
                     for x in rows) or "no figures"


def side_by_side_section(r, raw, outside):
    st = r.steps()
    L = []
    rows = raw["stacked"] = load(r.out / "stacked.json")
    note = " (a CPU rehearsal of the smoke profile's base: the predictions are an H100's)" if r.cpu else ""
    L.append(f"8. seeds stacked in one process, the cpu profile's base{note} ({ran(st, '8-stacked')}):\n")
    if rows:
        L += ["| K | CUDA graph | packed | ms a step | predicted ms | tokens/s summed | predicted | trials a minute "
              "(training only) | predicted |", "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
        for x in rows:
            p = x.get("predicted")
            if "error" in x:  # that configuration failed; the others ran
                L.append(f"| {x['K']} | {'on' if x.get('graph') else 'off'} | {'on' if x.get('pack') else 'off'} | "
                         f"failed: {x['error'].replace('|', '/')} | {mid(p, 'step_ms')} | - | "
                         f"{mid(p, 'summed_tokens_per_s')} | - | {mid(p, 'trials_per_min')} |")
                outside.append(f"stacked {stacked_name(x)} failed: {x['error']}")
                continue
            graph = f"on ({x.get('buckets')} buckets, {x.get('eager_steps')} eager steps)" if x.get("graph") else "off"
            L.append(f"| {x['K']} | {graph} | {'on' if x.get('pack') else 'off'} | {x['step_ms']:.1f} | {mid(p, 'step_ms')} | {x['summed_tokens_per_s']:.0f} | "
                     f"{mid(p, 'summed_tokens_per_s')} | {x['trials_per_min']:.2f} | {mid(p, 'trials_per_min')} |")
            if not r.cpu and not inside(p, "summed_tokens_per_s", x["summed_tokens_per_s"]):
                outside.append(f"stacked {stacked_name(x)}: {x['summed_tokens_per_s']:.0f} tok/s summed (predicted "
                               f"{mid(p, 'summed_tokens_per_s')})")
        L.append("")
    rows = raw["concurrent"] = load(r.out / "concurrent.json")
    L.append(f"9. processes sharing the device, the same base{note} ({ran(st, '9-concurrent')}):\n")
    if rows:
        L += ["| processes | finished | wall s | tokens/s summed | predicted | trials a minute |",
              "|---:|---:|---:|---:|---:|---:|"]
        for x in rows:
            p = x.get("predicted")
            L.append(f"| {x['P']} | {x['finished']} | {x['wall_s']:.0f} | {x['summed_tokens_per_s']:.0f} | "
                     f"{mid(p, 'summed_tokens_per_s')} | {x['trials_per_min']:.1f} ({x['steps']}-step trials) |")
            if not r.cpu and not inside(p, "summed_tokens_per_s", x["summed_tokens_per_s"]):
                outside.append(f"{x['P']} processes: {x['summed_tokens_per_s']:.0f} tok/s summed (predicted "
                               f"{mid(p, 'summed_tokens_per_s')})")
        L.append("")
    mps = raw["concurrent_mps"] = load(r.out / "concurrent-mps.json")
    if mps:  # the same processes under CUDA MPS, beside the same count without it (no prediction: a measurement)
        without = {x["P"]: x for x in rows or []}
        L.append(f"Under CUDA MPS ({ran(st, '9-concurrent-mps')}):")
        for x in mps:
            if x.get("mps") is False:
                L.append(f"no MPS here: {x.get('why', '')}")
                continue
            w = without.get(x["P"])
            beside = f" (without MPS: {w['summed_tokens_per_s']:.0f}, {x['summed_tokens_per_s'] / w['summed_tokens_per_s']:.2f}x)" \
                if w and w.get("summed_tokens_per_s") else ""
            L.append(f"{x['P']} processes, {x['finished']} finished in {x['wall_s']:.0f} s: "
                     f"{x['summed_tokens_per_s']:.0f} tok/s summed{beside}, {x['trials_per_min']:.1f} trials a minute")
        L.append("")
    return L


# -- each step's headline: its one figure, printed as it ends ---------------------------------------------
def torch_headline(r, name):
    t = r.torch()
    return f"{t.get('device')}, bf16 {t.get('bf16')}, torch {t.get('torch')} (CUDA {t.get('cuda_version')})" if t else "nothing"


def predict_headline(r, name):
    p = load(r.out / "predict.json")
    dev = predicted_device(r, p)
    if not dev:
        return "no prediction (see logs/2-predict.log)" if not p else "no entry for this device"
    m = p["models"]
    return f"{dev}: base {rng(m['base'][dev]['eager']['ms'])} ms eager, {rng(m['base'][dev]['compiled']['ms'])} ms " \
           f"compiled; big {rng(m['big'][dev]['eager']['ms'])} ms eager"


def bench_headline(r, name):
    rows, _ = bench_rows(r, name[len("2-bench-"):])
    got = ", ".join(f"{k} {v['step_ms']:.1f} ms/step ({v['tokens_per_s']:.0f} tok/s)" for k, v in rows.items())
    timed_out = r.steps().get(name, {}).get("timed_out")
    return (got or "no model finished") + (" (finished before the limit)" if timed_out and got else "")


def learn_headline(r, name):
    k = name[len("3-learn-"):]
    c = curve(r.work / f"learn-{k}" / "metrics.jsonl")
    if not c:
        return "no training NLL logged"
    s = max(c)
    ref = curve(r.ref / k / "metrics.jsonl")
    cmp = f"CPU reference {ref[s]:.3f}" if s in ref else ("CPU reference not there yet" if not ref else "no CPU point at that step")
    return f"training NLL {c[s]:.3f} at step {s} ({cmp})"


def trial_headline(r, name):
    run = r.run("trial-auto" if name == "4-trial" else "trial-other")
    if not run:
        return "no summary"
    pre = "precision auto chose " if name == "4-trial" else ""
    return f"{pre}{run['compute_dtype']}: {run['tokens_per_s']:.0f} tok/s; {100 * run['checkpoint_share']:.1f}% of " \
           f"{run['train_seconds']:.0f} s waiting on checkpoints"


def shared_headline(r, name):
    return next((l.strip() for l in reversed(r.log(name).splitlines()) if "finished" in l), "see logs/5-shared.log")


def shared_status_headline(r, name):
    s = shared(r)
    tpm = f"{s['trials_per_min']:.1f} trials/min" if s["trials_per_min"] else "no span"
    tps = f"{s['summed_tokens_per_s']:.0f} tok/s summed" if s["summed_tokens_per_s"] else "no tokens/s"
    return f"{s['finished']} of {s['trials']} finished: {tpm}, {tps}; gpu_ids {s['gpu_ids']}"


def no_cuda_headline(r, name):
    said = "sees 0 CUDA devices" in r.log(name)
    return f"exit {r.steps().get(name, {}).get('exit')}" + \
        (", says what torch sees" if said else ", says nothing of what torch sees")


HEADLINES = {"1-torch": torch_headline, "2-predict": predict_headline, "2-bench-eager": bench_headline,
             "2-bench-compiled": bench_headline, "3-learn-new": learn_headline, "3-learn-old": learn_headline,
             "4-trial": trial_headline, "4-trial-other": trial_headline, "5-shared": shared_headline,
             "5-shared-status": shared_status_headline, "6-no-cuda": no_cuda_headline,
             "8-stacked": stacked_headline, "9-concurrent": concurrent_headline, "9-concurrent-mps": mps_headline}


def headline(r, name):
    """The step's one figure; never raises (a summary line never stops the check)."""
    try:
        return HEADLINES[name](r, name) if name in HEADLINES else ""
    except Exception as e:
        return f"(no headline: {type(e).__name__}: {e})"


# -- report.md, section by section: each takes the results, the raw numbers it adds to and the list of figures
# outside their prediction it adds to, and returns its lines -------------------------------------------------
def exit_of(st, n):
    return st.get(n, {}).get("exit", "missing")


def ran(st, n):
    """`exit 0, 12 s of 40` (and whether it timed out): a step's row in a sentence; a skipped step says why."""
    s = st.get(n, {})
    if exit_of(st, n).startswith("skipped"):
        return exit_of(st, n)
    return f"exit {exit_of(st, n)}, {s.get('seconds', 0)} s of {s.get('limit', 0)}" + \
        (" (**timed out**)" if s.get("timed_out") else "")


def torch_section(r, raw, outside):
    t, st = r.torch(), r.steps()
    raw["torch"] = t
    return [f"1. torch sees ({ran(st, '1-torch')}): {headline(r, '1-torch')}; Python {t.get('python')}, "
            f"{t.get('threads')} host threads\n"]


def bench_section(r, raw, outside):
    st = r.steps()
    pred = load(r.out / "predict.json") or {}
    dev = predicted_device(r, pred)
    raw["predict"] = pred
    errs = ", ".join(f"{x['model']} {x['error']:+.0%}" for x in pred.get("cpu_check", []))
    L = [f"2. bench against the roofline ({dev or 'no prediction for this device'}; prediction {ran(st, '2-predict')}; "
         f"its self-check on this host's CPU: {errs or 'none'}):\n",
         "| model | mode | measured ms a step | predicted ms (best-worst) | tokens/s | MFU of the spec peak | run |",
         "|---|---|---:|---:|---:|---:|---|"]
    meas = {}
    for mode in ("eager", "compiled"):
        rows, j = bench_rows(r, mode)
        meas[mode] = rows
        raw[f"bench_{mode}"] = j or {"models": rows}
        for model in ("base", "big"):
            m = rows.get(model)
            p = ((pred.get("models", {}).get(model) or {}).get(dev) or {}).get(mode) if dev else None
            ptxt = rng(p["ms"]) if p else "-"
            if m:
                mtxt = f"{m['step_ms']:.4g}"
                if p:
                    lo, hi = widen(min(p["ms"]), max(p["ms"]))
                    if not lo <= m["step_ms"] <= hi:
                        mtxt += " **outside**"
                        outside.append(f"{model} {mode} bench: {m['step_ms']:.3g} ms a step (predicted {ptxt})")
                mfu = f"{m['mfu_spec_peak']:.2f}" if "mfu_spec_peak" in m else "-"
                L.append(f"| {model} | {mode} | {mtxt} | {ptxt} | {m['tokens_per_s']:.0f} | {mfu} | {ran(st, '2-bench-' + mode)} |")
            else:
                L.append(f"| {model} | {mode} | not measured | {ptxt} | - | - | {ran(st, '2-bench-' + mode)} |")
    e, c = meas["eager"].get("base"), meas["compiled"].get("base")
    pb = (pred.get("models", {}).get("base") or {}).get(dev) if dev else None
    if e and c and pb:
        pe, pc = pb["eager"]["ms"], pb["compiled"]["ms"]
        ratio = e["step_ms"] / c["step_ms"]
        lo, hi = min(pe[i] / pc[i] for i in range(3)) / 1.2, max(pe[i] / pc[i] for i in range(3)) * 1.2
        ok = lo <= ratio <= hi
        ok or outside.append(f"base compiled / eager speed {ratio:.2f}x (predicted {pe[1] / pc[1]:.2f}x, {lo:.2f}-{hi:.2f})")
        L.append(f"\nbase compiled / eager speed: {ratio:.2f}x (predicted {pe[1] / pc[1]:.2f}x, {lo:.2f}-{hi:.2f})"
                 f"{'' if ok else ' **outside**'}")
    L += stream_lines(raw.get("bench_eager") or {})
    for model, m in meas["compiled"].items():
        if "warmup_s" in m:
            rec = m["graphs_after_warmup"] - m["graphs_after_first_step"]
            slow = m["warmup_s"] > 60  # issue 44's target: a warm-up under a minute
            L.append(f"\n{model} compiled: warm-up {m['warmup_s']:.0f} s over {m['warmup_shapes']} batch shapes "
                     f"(first step {m['first_step_s']:.0f} s; target: under a minute); "
                     f"{m['graphs_after_first_step']} graphs after the first step, "
                     f"{'no recompile after it' if rec == 0 else f'{rec} compiled after it (**recompiles**)'}"
                     f"{' **outside**' if slow else ''}")
            # and no recompile after the first step (regional compilation's prediction for an H100: warm-up
            # base 30 s, big 21 s; docs/benchmarks.md, change (e))
            rec == 0 or outside.append(f"{model} compiled: {rec} graphs compiled after the first step")
            slow and outside.append(f"{model} compiled: warm-up {m['warmup_s']:.0f} s (target: under a minute)")
    if st.get("2-bench-compiled", {}).get("timed_out"):
        L.append(f"\nThe compiled bench ran out of its {st['2-bench-compiled']['limit']} s (compile and recompiles "
                 "before the timed steps): reported, not fatal; the models it finished are above.")
    return L + [""]


def learning_section(r, raw, outside):
    st, lc = r.steps(), learning(r)
    raw["learning"] = lc
    L = [f"3. learning check: the paper's base on the news pool as {r.shown_ref} runs it (1000-token "
         f"batches, bf16, seed 1), {lc['last']} steps; new schedule (warmup 4000): {ran(st, '3-learn-new')}; "
         f"old (warmup 240): {ran(st, '3-learn-old')}."]
    if r.cpu:
        L.append("   **Rehearsal**: the smoke profile's model for a handful of steps, so its NLL is not comparable "
                 "with the CPU reference's paper-sized curve; the table shows the code path only.")
    for k in ("new", "old"):
        if not lc["ref_there"][k]:
            L.append(f"   The CPU reference's {k} curve is not there yet ({r.shown_ref / k / 'metrics.jsonl'}: "
                     "committed when its run reports); the GPU's curve stands alone.")
    L.append("\n| step | lr new | NLL new, this device | NLL new, CPU ref | lr old | NLL old, this device | NLL old, CPU ref | old - new |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    f = lambda d, s: f"{d[s]:.3f}" if s in d else "-"
    g, ref = lc["gpu"], lc["ref"]
    for s in lc["steps"]:
        gap = f"{g['old'][s] - g['new'][s]:+.3f}" if s in g["old"] and s in g["new"] else "-"
        L.append(f"| {s} | {noam(s, 4000):.2e} | {f(g['new'], s)} | {f(ref['new'], s)} | {noam(s, 240):.2e} | "
                 f"{f(g['old'], s)} | {f(ref['old'], s)} | {gap} |")
    for k in ("new", "old"):
        d = lc["diff"][k]
        if d:
            worst = max(d, key=lambda s: abs(d[s]))
            L.append(f"\n{k}: this device minus the CPU reference at {len(d)} equal steps: mean "
                     f"{statistics.mean(d.values()):+.3f}, largest {d[worst]:+.3f} (step {worst}); plan.md fixes no "
                     "tolerance: bf16 arithmetic and the devices' dropout draws differ, the batches and initialisation do not")
    return L + [""]


def trial_section(r, raw, outside):
    st, a, o = r.steps(), r.run("trial-auto"), r.run("trial-other")
    raw["trial"] = {"auto": a, "other": o}
    L = [f"4. small trial: `zoo train base --profile {'smoke' if r.cpu else 'cpu'}` on this device "
         f"(auto: {ran(st, '4-trial')}; other precision: {ran(st, '4-trial-other')}):"]
    if a:
        L.append(f"   precision auto chose **{a['compute_dtype']}** on {a['device']}; {a['tokens_per_s']:.0f} tokens/s "
                 f"over {a['steps']} steps; {share_line(a)}; dev perplexity {a['dev_ppl'] or float('nan'):.1f}")
    else:
        L.append("   no summary from the auto run (logs/4-trial.log)")
    if o:
        rel = f", {o['tokens_per_s'] / a['tokens_per_s']:.2f}x auto's" if a else ""
        L.append(f"   {o['compute_dtype']}: {o['tokens_per_s']:.0f} tokens/s{rel}; {share_line(o)}")
    if not r.cpu:
        L.append("   first H100 run (h100-first-run, 300 steps): bf16 100-128k tok/s, fp32 (TF32) 178-203k (1.6x), "
                 "34.7% / 40.9% of a 16 s run waiting on checkpoints")
    return L + [""]


def shared_section(r, raw, outside):
    st = r.steps()
    if st.get("5-shared", {}).get("exit", "").startswith("skipped"):
        raw["shared"] = None
        return [f"5. four trials sharing the device: {st['5-shared']['exit']}\n"]
    s = raw["shared"] = shared(r)
    good = exit_of(st, "5-shared") == "0" and s["finished"] == 4 and (r.cpu or all(i == ["0"] for i in s["gpu_ids"]))
    good or outside.append("four trials sharing the device")
    tpm = f"{s['trials_per_min']:.1f} trials finished a minute ({s['span_s']:.0f} s from the first start to the last end)" \
        if s["trials_per_min"] else "no span"
    tps = f"{s['summed_tokens_per_s']:.0f} tokens/s summed over the trials" if s["summed_tokens_per_s"] else "no tokens/s"
    return [f"5. four trials sharing the device ({ran(st, '5-shared')}): {s['finished']} of {s['trials']} finished; "
            f"{tpm}; {tps}; gpu_ids {s['gpu_ids']}: {'as expected' if good else '**not as expected**'}\n"]


def no_cuda_section(r, raw, outside):
    st = r.steps()
    said = "sees 0 CUDA devices" in r.log("6-no-cuda")
    good = exit_of(st, "6-no-cuda") == "2" and said
    good or outside.append("no-CUDA refusal")
    return [f"6. GPU asked, CUDA hidden: exit {exit_of(st, '6-no-cuda')}{', says what torch sees' if said else ''}: "
            f"{'as expected' if good else '**not as expected**'}\n"]


def checkpoint_section(r, raw, outside):
    L = ["## Checkpoint share (target: at most 2% of any run of a minute or more)\n",
         "| run | train seconds | tokens/s | waiting on checkpoints | target |\n|---|---:|---:|---:|---|"]
    shares = {}
    for name in ("learn-new", "learn-old", "trial-auto", "trial-other"):
        run = r.run(name)
        if run:
            shares[name] = run
            long = (run["train_seconds"] or 0) >= 60
            verdict = ("met" if run["checkpoint_share"] <= 0.02 else "**missed**") if long else "n/a (under a minute)"
            if long and run["checkpoint_share"] > 0.02:
                outside.append(f"{name}: {100 * run['checkpoint_share']:.1f}% waiting on checkpoints (target 2%)")
            L.append(f"| {name} | {run['train_seconds']:.1f} | {run['tokens_per_s']:.0f} | "
                     f"{100 * run['checkpoint_share']:.1f}% | {verdict} |")
    raw["runs"] = shares
    return L


def steps_section(r, raw, outside):
    st = r.steps()
    L = ["\n## Steps\n\n| step | exit | seconds | limit |\n|---|---|---:|---:|"]
    L += [f"| {n} | {x['exit']}{' (timed out)' if x['timed_out'] else ''} | {x['seconds']} | {x['limit']} |"
          for n, x in st.items()]
    outside += [f"step {n} timed out at its {x['limit']} s limit" for n, x in st.items() if x["timed_out"]]
    outside += [f"step {n} {x['exit']}" for n, x in st.items() if x["exit"].startswith("skipped: out of")]
    L.append(f"\nsteps' seconds summed: {sum(x['seconds'] for x in st.values())} (steps 3 run side by side)")
    return L


# the report's sections in order: a new step of the check adds its section here (and its headline above)
SECTIONS = [torch_section, bench_section, learning_section, trial_section, shared_section, no_cuda_section,
            side_by_side_section, checkpoint_section, steps_section]


def report(r):
    """report.md's lines and measured.json's dict."""
    t, outside = r.torch(), []
    raw = {"cpu": r.cpu, "steps": r.steps()}
    L = [f"# GPU check: {t.get('device', '?')}\n",
         "CPU rehearsal (`--cpu`): tiny shapes and few steps on this CPU, predicted against this CPU's own "
         "calibration; the figures say nothing about a GPU.\n" if r.cpu else
         f"One run of `scripts/gpu-check.sh` on {t.get('device')} ({t.get('gpus')} GPU).\n"]
    for section in SECTIONS:
        L += section(r, raw, outside)
    L += ["\n## Outside the predicted range or not as expected\n", *([f"- {x}" for x in outside] or ["none"])]
    raw["outside"] = outside
    return L, raw


def write(r):
    """Writes report.md and measured.json into r.out (each whole or not at all); returns the report's lines."""
    L, raw = report(r)
    for name, text in (("report.md", "\n".join(L) + "\n"), ("measured.json", json.dumps(raw, indent=2, default=str))):
        fd, part = tempfile.mkstemp(prefix=f".{name}.", dir=r.out)  # a name of its own: nobody's file is hit
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(part, r.out / name)
    return L + [f"report.md: {len(raw['outside'])} figure(s) outside the prediction or not as expected"]
