"""`zoo run SPEC --plan [--json]`: what a run will cost, before anything starts.

Each trial's parameters, training FLOPs (zoo.model.costs), estimated peak memory of a training process,
checkpoint disk, and a wall time estimated from a throughput measured here and now: a few steps of
zoo.train.step.train_step, the step the trial's loop takes, with the trial's choices (its model,
precision and train.compile; random ids, `resources.cpus` threads, steps of the trial's own batch_tokens,
or of fewer for a model whose step would take more than about a second: such small steps run below a
real step's efficiency, so their estimate leans long). Measured on a busy machine (load at half its
cores or more), the times are a busy machine's, and the plan says so.
No Ray starts and nothing is written.
"""
from __future__ import annotations

import json
import os
import sys
import time

from pydantic import BaseModel

from zoo.model import (FLOAT, SEQ_LEN, forward_flops, forward_flops_per_token, params_analytic, train_flops_total,
                       train_memory)
from zoo.text import duration, text_table
from zoo.config import Config

MEASURE_TOKENS = 512  # target tokens per measured step at least
MEASURE_FLOPS = 2e11  # training FLOPs per measured step at most (unless MEASURE_TOKENS needs more): seconds even
                      # for the paper's big model on a CPU; a small model's step is its trial's own batch


class PlannedTrial(BaseModel):
    trial: str
    variant: str
    seed: int
    overrides: dict
    params: int
    train_flops_total: float
    peak_memory_bytes: int
    checkpoint_bytes: int  # the kept checkpoints: weights each, plus Adam's two moments in the newest
    cpus: float  # per trial (resources.cpus)
    measured_flops_per_s: float | None = None
    est_seconds: float | None = None
    steps: int = 0  # train.steps: the steps it is planned to run
    time_limit_minutes: float | None = None  # train.time_limit_minutes: it stops there, cut short (None: none)

    @property
    def cut(self) -> bool:
        """Whether its estimate runs past its time limit (the run would stop it before its planned steps)."""
        return bool(self.time_limit_minutes and self.est_seconds and self.est_seconds > 60 * self.time_limit_minutes)


def plan(cfgs: list[Config], measure: bool = True, stream=sys.stderr) -> list[PlannedTrial]:
    rates: dict[str, float] = {}  # one measurement per distinct model, thread count, precision, compile and layout
    out = []
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if measure and cfgs and load >= cores / 2:  # the measured steps share the cores, and their threads wait on each other
        print(f"note: this machine is busy (load {load:.1f} on {cores} cores): the speed measured now, and the "
              "times below, are a busy machine's", file=stream, flush=True)
    for c in cfgs:
        P = params_analytic(c.model, c.data.vocab_size)
        flops = train_flops_total(c)
        rate = None
        if measure:
            key = json.dumps([c.model.model_dump(mode="json"), c.data.vocab_size, c.resources.cpus,
                              c.train.precision, c.train.compile, c.train.pack], sort_keys=True)
            if key not in rates:
                print(f"measuring {c.trial} ...", file=stream, flush=True)
                rates[key] = measured_flops_per_s(c)
            rate = rates[key]
        out.append(PlannedTrial(
            trial=c.trial, variant=c.variant, seed=c.train.seed, overrides=c.overrides, params=P,
            train_flops_total=flops, peak_memory_bytes=int(train_memory(c)["total"]),
            checkpoint_bytes=FLOAT * P * (c.train.keep_checkpoints + 2), cpus=c.resources.cpus,
            measured_flops_per_s=rate, est_seconds=flops / rate if rate else None, steps=c.train.steps,
            time_limit_minutes=c.train.time_limit_minutes))
    return out


def measured_flops_per_s(c: Config, steps: int = 2) -> float:
    """Model FLOP/s of a few training steps of this trial on this machine (after one warm-up step of the same
    shape): zoo.train.step.train_step with the trial's precision, compile and batch layout (train.pack: rows of
    several sentences, kept apart by masks), as its loop runs it. The sentences are all SEQ_LEN word-pieces long,
    so neither layout pads: the figure is the model's speed, not the corpus's padding."""
    import torch
    from zoo.model import build_model
    from zoo.train import keep_freed_memory, make_optimizer, step_setup, train_step, training_batch
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, int(c.resources.cpus)))  # what a trial gets
    try:
        V = c.data.vocab_size
        L = min(SEQ_LEN, c.model.max_len - 2)  # ids a side; collate adds eos (and bos)
        per_token = 3 * forward_flops_per_token(c.model, V, L + 1)
        tokens = min(c.train.batch_tokens, max(MEASURE_TOKENS, MEASURE_FLOPS / per_token))
        B = max(1, int(tokens) // (L + 1))
        g = torch.Generator().manual_seed(0)
        ids = lambda: torch.randint(4, V, (L,), generator=g).tolist()
        batch = training_batch(c, [(ids(), ids()) for _ in range(B)], list(range(B)))
        device = torch.device("cuda" if c.resources.gpus > 0 and torch.cuda.is_available() else "cpu")
        if device.type == "cpu":  # as a trial's process does (zoo.train.train); `--plan` ends after this
            keep_freed_memory()
        model = build_model(c.model, V).to(device)
        fwd, amp = step_setup(c, model, device)
        opt = make_optimizer(model, 0.0, tuple(c.train.optimizer.betas), c.train.optimizer.eps)
        stats = torch.zeros(2, dtype=torch.float64, device=device)
        lr = c.train.schedule.lr(1, c.model.d_model, c.train.steps)
        t = 0.0
        for i in range(steps + 1):
            t0 = time.perf_counter()
            train_step(c, fwd, opt, device, [(batch, 1.0)], batch.n_tgt_tokens, stats, amp, lr)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t += (time.perf_counter() - t0) if i else 0.0  # the first step warms up (and compiles)
        work = 3 * forward_flops(c.model, V, batch.n_src_tokens, batch.n_tgt_tokens, L + 1, L + 1) * steps
        return work / t
    finally:
        torch.set_num_threads(threads)


def _size(n: float, unit: str = "B") -> str:
    for k, p in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= p:
            return f"{n / p:.1f} {k}{unit}"
    return f"{n:.0f} {unit}"


def print_plan(rows: list[PlannedTrial], as_json: bool, stream=None, unmeasured: str = "") -> None:
    stream = stream or sys.stdout  # looked up at the call: a default bound at import outlives a redirect
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2), file=stream)
        return
    head = ("trial", "seed", "overrides", "params", "train FLOPs", "peak memory", "checkpoints", "est. training")
    table = [head] + [(r.trial, str(r.seed), ", ".join(f"{k}={v}" for k, v in r.overrides.items()) or "-",
                       _size(r.params, ""), _size(r.train_flops_total, "FLOP"), _size(r.peak_memory_bytes),
                       _size(r.checkpoint_bytes), duration(r.est_seconds)) for r in rows]
    print(text_table(table), file=stream)
    total = sum(r.est_seconds or 0 for r in rows)
    slots = max(1, int((os.cpu_count() or 1) // max(r.cpus for r in rows))) if rows else 1
    measured = rows and all(r.est_seconds is not None for r in rows)
    when = (f"est. {duration(total)} one after another"
            + (f", about {duration(total / slots)} with {slots} at once on this machine" if slots > 1 and total else "")
            if measured else f"training time not estimated here ({unmeasured or 'nothing was measured: leave out --no-measure'})")
    print(f"\n{len(rows)} trials, {_size(sum(r.train_flops_total for r in rows), 'FLOP')} of training, "
          f"{_size(sum(r.checkpoint_bytes for r in rows))} of checkpoints; {when}", file=stream)
    if line := time_limit_text(rows, measured):
        print(line, file=stream)


def time_limit_text(rows: list[PlannedTrial], measured: bool) -> str:
    """The time limit the trials run under and the trials whose estimate runs past it ("" when none has one)."""
    limits = sorted({r.time_limit_minutes for r in rows if r.time_limit_minutes})
    if not limits:
        return ""
    head = (f"time limit: train.time_limit_minutes: {', '.join(f'{m:g}' for m in limits)} (minutes of a trial's "
            "training; a trial stopped there before its planned steps is cut short: shown, but given no Δ and no "
            "verdict)")
    if not measured:
        return f"{head}; which trials it would stop is not estimated (leave out --no-measure)"
    cut = [r for r in rows if r.cut]
    if not cut:
        return f"{head}; at these estimates it would stop none"
    each = "; ".join(f"{r.trial} (est. {duration(r.est_seconds)} against {r.time_limit_minutes:g} min: about step "
                     f"{int(r.steps * 60 * r.time_limit_minutes / r.est_seconds)} of {r.steps})" for r in cut[:6]) \
        + (f"; and {len(cut) - 6} more" if len(cut) > 6 else "")
    return (f"{head}; at these estimates it would stop {len(cut)} of {len(rows)} trials: {each}. The estimates count "
            "training steps only (the limit's clock also runs through dev evaluations): raise "
            "train.time_limit_minutes (--set) or use a profile without one to run them to their steps")
