"""`zoo run SPEC... --plan` for a GPU profile: the minutes on one H100, from the speeds an H100 measured, with
what no H100 has measured yet (seeds stacked side by side, several trials sharing the card) predicted by the
roofline (bench/roofline.py, calibrated on an H100) and named as predictions.

The model of a row's time:
- measured: the cpu-profile base trained alone on an H100 (results/gpu-check/profile-runs/gpu-profile: 2200
  steps of 4000 tokens, precision auto (TF32), zoo at 5e794a1): its seconds a step, and its seconds outside
  training (dev perplexity, dev and test BLEU, setup) per trial; a process's start (import, CUDA, data) from
  the check's small-trial step (results/gpu-check/measured.json `4-trial`: 16 s for 5 s of training);
- predicted: the step of another shape, or of K seeds stacked: the roofline's step of that shape (K stacked:
  every kernel K times the work, the same kernels), plus the host's time a step outside the roofline's kernels
  (the loop's Python, batches, logging: measured minus the roofline's prediction at the measured shape), once
  a step (best case: shared by the stack) to K times (worst case: each seed's own); the point is the middle;
- predicted: with train.cuda_graph on, a step is the card's busy time and the loop's own host time (above), side by
  side or one after the other;
- predicted: P = 1 / resources.gpus processes share the card (four smoke trials shared it in the check, at
  their size): the wall time is the trials' time over P, or the card's busy time if that is longer.
"""
from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from zoo.config import Config
from zoo.errors import UserError
from zoo.result import RunResult
from zoo.text import text_table



def _checkout() -> Path:
    """The checkout whose bench/roofline.py and results/gpu-check the estimate reads: this file's (a clone), else the
    working folder (a GPU machine runs an installed zoo from the clone's root)."""
    here = Path(__file__).resolve().parents[1]
    return here if (here / "bench" / "roofline.py").is_file() else Path.cwd()


ROOT = _checkout()
MEASURED_RUN = Path("results/gpu-check/profile-runs/gpu-profile/summary.json")
MEASURED_START = 16 - 5.4  # s: results/gpu-check/measured.json 4-trial's wall minus its 5.4 s of training
H100_BYTES = 80 * 2 ** 30  # one H100 80GB: what stack_size fills
MEAN_LEN = 17  # Multi30k sentences at 4000-8000 BPE pieces, with eos (the roofline's shape: a batch of them)
# train.pack on: Multi30k's 4,000-token batches packed (zoo.data.packing) are rows about 61 positions wide a side, 90.2%
# of them tokens (`bench/bench_speed.py --part pack`: 40 batches, 9.8% padding against make_batches' own 7.8%)
PACKED_WIDTH, PACKED_FILL = 61, 0.902


@dataclass(frozen=True)
class RowTime:
    row: str
    seeds: int
    K: int                        # seeds stacked in one process (zoo.train.stacked.stack_size), 1: solo
    why_solo: str                 # why this row cannot stack ("" when it does)
    step_ms: tuple                # one process's step: (best, mid, worst); measured rows have best = worst
    measured: bool                # the step is the measured one (the measured shape, alone)
    gpu_ms: float                 # the card's busy time of that step (roofline, mid)
    steps: int
    eval_s: float                 # a trial's seconds outside training (measured)
    busy: float                   # the card's busy seconds for the row

    def seconds(self, case: int = 1) -> float:
        """The row's trials one after another (case 0 best, 1 mid, 2 worst): stacks x (start + steps x step)
        + seeds x a trial's evaluation."""
        stacks = math.ceil(self.seeds / self.K)
        return stacks * (MEASURED_START + self.steps * self.step_ms[case] / 1e3) + self.seeds * self.eval_s


@dataclass(frozen=True)
class GpuPlan:
    rows: list[RowTime]
    P: int                        # processes sharing the card
    minutes: float                # predicted wall (mid)
    range: tuple                  # (best, worst) minutes
    anchor: str                   # what was measured
    card_minutes: float = 0.0     # the card's busy time, summed over the rows: no sharing makes the wall shorter


def _roofline():
    path = ROOT / "bench"
    if not (path / "roofline.py").is_file():
        raise UserError("the H100 estimate needs a source checkout (its bench/roofline.py); this zoo is installed "
                        "without it: run `zoo run --plan` from a clone of the repository")
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    import roofline
    return roofline


_TRACES: dict[str, object] = {}  # one trace per shape (rows that differ in label smoothing or seed share it)


def _traces(cfg: Config, stacked: bool = False):
    """The roofline's kernels of one training step of `cfg` on a batch of MEAN_LEN-token sentences; `stacked`: as a
    stack runs it (attention as the math backend's kernels, zoo.train.stacked.ATTENTION)."""
    key = _shape_key(cfg) + ("stacked" if stacked else "")
    if key not in _TRACES:
        _TRACES[key] = _trace(cfg, stacked)
    return _TRACES[key]


def _trace(cfg: Config, stacked: bool = False):
    import torch
    from zoo.model import build_model
    rf = _roofline()
    with torch.device("meta"):
        model = build_model(cfg.model, cfg.data.vocab_size).train()
    packed = cfg.train.pack == "on"  # rows of PACKED_WIDTH positions, PACKED_FILL of them tokens
    L = PACKED_WIDTH if packed else MEAN_LEN
    B = max(1, math.ceil(cfg.train.batch_tokens / (PACKED_WIDTH * PACKED_FILL)) if packed
            else cfg.train.batch_tokens // MEAN_LEN)
    ids = lambda: torch.ones((B, L), dtype=torch.long, device="meta")
    from zoo.train import smoothed_loss
    loss = lambda lg, t: smoothed_loss(lg, t, cfg.train.label_smoothing)[0]
    return rf.step(model, ids(), ids(), ids(), loss, amp=cfg.train.precision == "bf16",
                   segments={"src_seg": ids(), "tgt_seg": ids()} if packed else None, math_attention=stacked)[0]


def step_seconds(trace, K: int) -> tuple[float, float]:
    """The roofline's (wall, card-busy) seconds of a step of K stacked seeds on the calibrated H100."""
    rf = _roofline()
    d = rf.CALIBRATED["H100 SXM"]
    t = rf.Trace([rf.Kernel(k.kind, k.flops * K, k.bytes * K, None, k.tiles * K) for k in trace.kernels])
    idle_host = rf.Device(**{**d.__dict__, "host": (0.0, 0.0)})
    return t.seconds(d), t.seconds(idle_host)


def measured() -> dict:
    path = ROOT / MEASURED_RUN
    if not path.is_file():
        raise UserError(f"the H100 estimate reads the measured run {MEASURED_RUN} of a source checkout; it is missing")
    r = RunResult.model_validate_json(path.read_text())
    return {"step": r.train_seconds / r.steps_done, "eval": r.total_seconds - r.train_seconds,
            "steps": r.steps_done, "tokens": r.tokens_seen / r.steps_done}


def anchor_config() -> Config:
    """The measured run's shape: the cpu profile's base (the gpu profile's Multi30k fallback trains it), TF32."""
    from zoo.spec import resolve
    return resolve("base", profile="cpu", sets=["train.precision=fp32"])[0]


@dataclass(frozen=True)
class Anchor:
    """The measured solo run and the host's time a step outside the roofline's kernels."""
    step: float          # seconds a step, measured
    eval: float          # seconds a trial outside training, measured
    steps: int
    tokens: float        # target tokens a step, measured
    host: float          # measured step minus the roofline's at its shape
    key: str             # its shape


@functools.cache
def anchor() -> Anchor:
    m, cfg = measured(), anchor_config()
    return Anchor(m["step"], m["eval"], m["steps"], m["tokens"], m["step"] - step_seconds(_traces(cfg), 1)[0],
                  _shape_key(cfg))


def stacked_step(c: Config, K: int, a: Anchor, trace=None, stacked: bool | None = None) -> tuple[tuple, bool, float]:
    """(best, mid, worst) seconds a step of K stacked seeds of `c`, whether it is the measured one, and the card's
    busy seconds of it. The host's own time a step is shared by the stack (best) or each seed's (worst). With
    train.cuda_graph on (zoo.train.graphed: one launch a step, the kernels' queue gone) the loop's own host time a
    step remains, beside the card's work (best) or after it (worst). `stacked`: whether the step is a stack's (its
    attention the math backend's); by default when K > 1 (one seed trains alone, with the fused kernel)."""
    stacked = K > 1 if stacked is None else stacked
    wall, busy = step_seconds(trace or _traces(c, stacked), K)
    if c.train.cuda_graph == "on":
        best, worst = max(busy, a.host), busy + a.host
        return (best, (best + worst) / 2, worst), False, busy
    if K == 1 and not stacked and _shape_key(c) == a.key:
        return (a.step,) * 3, True, busy
    return (wall + a.host, wall + a.host * (1 + K) / 2, wall + a.host * K), False, busy


def side_by_side(c: Config, K: int, P: int = 1) -> dict:
    """The predictions the GPU check prints beside its side-by-side figures: K seeds stacked in one process, or P
    solo processes sharing the card (each at the solo step, unless their summed busy time fills the card)."""
    a = anchor()
    tokens = a.tokens * c.train.batch_tokens / anchor_config().train.batch_tokens
    step, was_measured, busy = stacked_step(c, K, a, stacked=P == 1)  # the check's K = 1 is a stack of one too
    if P > 1:
        wall = [max(x, P * busy) for x in step]
        return {"P": P, "summed_tokens_per_s": [P * tokens / w for w in wall], "step_ms": [1e3 * w for w in wall],
                "solo_measured": was_measured}
    return {"K": K, "step_ms": [1e3 * x for x in step], "summed_tokens_per_s": [K * tokens / x for x in step],
            "trials_per_min": [60 * K / (c.train.steps * x) for x in step], "measured": was_measured}


def gpu_plan(cfgs: list[Config]) -> GpuPlan:
    """Each row's K, step time and minutes on one H100, and the whole's (a row: a variant, its trials its seeds)."""
    from zoo.train import stack_problem, stack_size
    a = anchor()
    rows: dict[str, list[Config]] = {}
    for c in cfgs:
        rows.setdefault(c.variant, []).append(c)
    out = []
    for row, cs in rows.items():
        c, seeds = cs[0], len(cs)
        # a seed's `overrides` record names its train.seed: the fields themselves are what stack_problem weighs
        why = stack_problem([x.model_copy(update={"overrides": {}}) for x in cs]) or ""
        K = 1 if why else stack_size(c, seeds, H100_BYTES)
        step, solo_measured, busy = stacked_step(c, K, a)
        steps = c.train.steps
        out.append(RowTime(row, seeds, K, why, tuple(x * 1e3 for x in step), solo_measured, busy * 1e3, steps,
                           a.eval, math.ceil(seeds / K) * steps * busy))
    P = max(1, int(1 / min(c.resources.gpus for c in cfgs))) if all(c.resources.gpus > 0 for c in cfgs) else 1
    busy = sum(r.busy for r in out)
    ends = [max(sum(r.seconds(i) for r in out) / P, busy) / 60 for i in range(3)]  # best, mid, worst
    return GpuPlan(out, P, ends[1], (ends[0], ends[2]),
                   f"the cpu-profile base alone on an H100: {a.steps} steps at {a.step * 1e3:.1f} ms, "
                   f"{a.eval:.1f} s a trial outside training ({MEASURED_RUN}), {MEASURED_START:.1f} s a process's start",
                   busy / 60)


def _shape_key(c: Config) -> str:
    return json.dumps([c.model.model_dump(mode="json"), c.data.vocab_size, c.train.batch_tokens, c.train.precision,
                       c.train.pack], sort_keys=True)


def print_gpu_plan(p: GpuPlan, stream=None) -> None:
    stream = stream or sys.stdout
    table = [("row", "seeds", "K stacked", "step ms (best-worst)", "", "card busy ms", "row minutes, one process")]
    for r in p.rows:
        kind = "measured" if r.measured else "PREDICTED"
        step = f"{r.step_ms[1]:.1f}" if r.measured else f"{r.step_ms[1]:.1f} ({r.step_ms[0]:.1f}-{r.step_ms[2]:.1f})"
        table.append((r.row, r.seeds, f"{r.K}" + (f" ({r.why_solo})" if r.why_solo else ""), step, kind,
                      f"{r.gpu_ms:.1f}", f"{r.seconds() / 60:.1f}"))
    print("On one H100 80GB (measured speeds where an H100 measured them; PREDICTED: the roofline's, "
          "bench/roofline.py calibrated on an H100, not yet measured):", file=stream)
    print(text_table(table, right=(1, 3, 5, 6)), file=stream)
    bound = f"; at least the card's summed busy time, {p.card_minutes:.0f} minutes, however the trials share it"
    print(f"{len(p.rows)} rows x {p.rows[0].seeds if p.rows else 0} seeds, {p.P} processes sharing the card "
          f"(1 / resources.gpus; PREDICTED to overlap): about {p.minutes:.0f} minutes on one H100 "
          f"(PREDICTED, {p.range[0]:.0f}-{p.range[1]:.0f}: the loop's host time a step shared by a stack, or each "
          f"seed's own{bound}). Measured: {p.anchor}.", file=stream)

