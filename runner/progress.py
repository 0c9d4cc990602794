"""The driver side of a sweep: Tune's events -> the results store, and a compact live table.

`Live` writes every trial's state, curve points, final metrics and errors to the store and draws
the table (variant, state, step, loss, dev PPL, tokens/s, ETA) in place of Ray's reporter: redrawn
in place on a terminal, one line per event otherwise. Tune pickles its callbacks into the experiment
so a restored experiment brings back old ones; `Forward` is therefore stateless and hands each event
to whatever `Live` the current `zoo run` installed.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from ray import tune

from zoo.paths import checkpoint_name
from zoo.result import (BadCheckpoint, Best, Done, LogPoint, NoOptimizerState, Placement, Point, Resumed, RunResult,
                        Started, event)
from zoo.text import duration, text_table

LIVE: "Live | None" = None


class Forward(tune.Callback):
    """Only the variants this run set out to run: a restored experiment may restart a trial that
    had finished just before the last driver died (its summary is on disk; it re-trains nothing).
    A stacked trial (runner.stacking) stands for its members: each event goes to its member's row."""

    def on_trial_start(self, iteration, trials, trial, **info):
        for v in _ours(trial):
            LIVE.started(v)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        for v, m in _seats(trial, result):
            LIVE.result(v, m)

    def on_trial_complete(self, iteration, trials, trial, **info):
        for v in _ours(trial):
            LIVE.completed(v)

    def on_trial_error(self, iteration, trials, trial, **info):
        for v in _ours(trial):
            if LIVE.rows[v].state not in ("finished", "failed"):  # a stack's member that ended already keeps its end
                LIVE.failed(v, _error_text(trial))

    def on_trial_recover(self, iteration, trials, trial, **info):
        for v in _ours(trial):
            LIVE.retrying(v, _error_text(trial))

    def on_step_end(self, iteration, trials, **info):
        if LIVE is not None:
            LIVE.tick()


@dataclass
class Row:
    """One trial's line of the live table."""
    trial: str
    state: str = "pending"
    step: int | None = None
    steps: int | None = None
    loss: float | None = None
    dev_ppl: float | None = None
    tokens_per_s: float | None = None
    elapsed_s: float | None = None

    def eta(self) -> str | None:
        """The time left at the pace so far, while it runs (None before a step has been timed)."""
        if self.state == "running" and self.step and self.elapsed_s and self.steps:
            return duration(self.elapsed_s / self.step * (self.steps - self.step))
        return None


class Live:
    def __init__(self, store, spec: str | dict[str, str], profile: str, run_dirs: dict[str, str], experiment: str,
                 on_tick=None, stream=sys.stdout):
        """spec: the store's spec of every trial, or each trial's (trial -> spec: several specs in one experiment)."""
        self.store, self.profile, self.experiment = store, profile, experiment
        self.spec_of = spec if isinstance(spec, dict) else dict.fromkeys(run_dirs, spec)
        self.run_dirs = run_dirs
        self.rows = {v: Row(v) for v in run_dirs}
        self.best = {v: t.best if (t := store.get(self.spec_of[v], v, profile)) else Best() for v in run_dirs}  # kept on resume
        self.on_tick, self.stream, self.tty = on_tick, stream, stream.isatty()
        self.drawn, self.last_draw, self.last_tick = 0, 0.0, 0.0
        self.scheduled = False  # a scheduler (ASHA) may end trials early: `completed` records them as stopped

    # -- Tune events --------------------------------------------------------------------------
    def started(self, trial) -> None:
        v = _name(trial)
        self.rows[v].state = "running"
        self._save(v, status="running", started_at=time.time(), error=None, finished_at=None,
                   experiment=self.experiment)
        self._say(f"{v}: started")

    def result(self, trial, m: dict) -> None:
        """One event from the trial, as runner.trial sent it (zoo.result.wire), read back into its type: once, here;
        or the error that ended a stacked trial's member alone (its traceback, under "failed")."""
        v = _name(trial)
        if "failed" in m:
            return self.failed(v, m["failed"])
        row, e = self.rows[v], event(m)
        if isinstance(e, Started):
            p = e.placement
            self._save(v, placement=p, hardware=_hardware(p))
            self._say(f"{v}: on {p.hostname} (node {p.node_id[:8]}, pid {p.pid})"
                      + (f", GPU {','.join(p.gpu_ids)}" if p.gpu_ids else ""))
        elif isinstance(e, Resumed):
            self._save(v, resumed_from=e.step)
            self._say(f"{v}: resumed from its checkpoint at step {e.step}")
        elif isinstance(e, BadCheckpoint):
            note = f"checkpoint {e.path} cannot be loaded ({e.error}); set aside as {e.moved_to}"
            self._save(v, warning=note)
            self._say(f"{v}: {note}; resuming from the one before it")
        elif isinstance(e, NoOptimizerState):
            note = (f"resumed from {e.path} (step {e.step}), an older checkpoint that keeps weights only: "
                    "Adam's moments start afresh")
            old = (t := self.store.get(self.spec_of[v], v, self.profile)) and t.warning
            self._save(v, warning=f"{old}; {note}" if old else note)
            self._say(f"{v}: {note}")
        elif isinstance(e, Done) and e.result is not None:
            self._done(v, e.result)
        elif isinstance(e, LogPoint):
            for k in ("step", "steps", "loss", "dev_ppl", "tokens_per_s", "elapsed_s"):
                if (x := getattr(e, k)) is not None:
                    setattr(row, k, x)
            best = self.best.setdefault(v, Best())
            for k in ("loss", "dev_ppl"):
                best.update(k, getattr(e, k), e.step)
            self.store.add_points(self.spec_of[v], v, self.profile, [Point.model_validate(e.model_dump())])
            self._save(v, step=e.step, steps=e.steps, tokens_seen=e.tokens_seen, train_seconds=e.elapsed_s, best=best)
            if e.dev_ppl is not None:  # without a terminal (CI, nohup) this line is the progress: ETA as the table's
                eta = f"  ETA {x}" if (x := row.eta()) else ""
                self._say(f"{v}: step {e.step}/{e.steps}  dev ppl {e.dev_ppl:.2f}{eta}")
        self.tick()

    def _done(self, v: str, r: RunResult) -> None:
        row = self.rows[v]
        row.state, row.step, row.dev_ppl = "finished", r.steps_done, r.dev_ppl
        best = self.best.setdefault(v, Best())
        best.update("dev_ppl", r.dev_ppl, r.steps_done)
        ckpt = f"{self.run_dirs[v]}/{checkpoint_name(r.steps_done)}"  # zoo.train saves the last step
        self._save(v, status="finished", metrics=r.stored(), attention=r.attention, best=best,
                   step=r.steps_done, tokens_seen=r.tokens_seen, train_seconds=r.train_seconds,
                   checkpoint=ckpt, finished_at=time.time(), error=None)
        score = f"{r.primary.score[0]} {r.primary.score[1]:.2f}" if r.primary and r.primary.score else ""
        self._say(f"{v}: finished  dev ppl {r.dev_ppl or float('nan'):.2f}  {score}".rstrip())

    def reconcile(self, result) -> None:
        """A trial that a restored experiment had already seen finish (the driver died before the
        store heard of it): record it from the final result Tune kept."""
        for v, m in _seats(result, result.metrics):  # none: a trial an interrupt left unstarted (no config)
            e = event(m)
            if self.rows[v].state != "finished" and not result.error \
                    and isinstance(e, Done) and e.result is not None:
                self._done(v, e.result)

    def completed(self, trial) -> None:
        """Tune ended the trial without an error. No "done" event came: a scheduler stopped it early."""
        v = _name(trial)
        if not self.scheduled or self.rows[v].state in ("finished", "failed"):
            return  # without a scheduler nothing stops a trial early (an interrupted one stays resumable)
        step = self.rows[v].step or 0
        self.rows[v].state = "stopped"
        self._save(v, status="stopped", finished_at=time.time(), error=None)
        self._say(f"{v}: stopped early at step {step} (the scheduler: it trailed the others)")

    def failed(self, trial, text: str | None = None) -> None:
        """The trial failed: `text`, its traceback (by default the one Tune recorded)."""
        v = _name(trial)
        err = short_error(_error_text(trial) if text is None else text)
        self.rows[v].state = "failed"
        self._save(v, status="failed", error=err, finished_at=time.time())
        self._say(f"{v}: FAILED  {err}")

    def retrying(self, trial, text: str | None = None) -> None:
        v = _name(trial)
        self._say(f"{v}: failed, retrying ({short_error(_error_text(trial) if text is None else text)})")

    # -- drawing -----------------------------------------------------------------------------
    def tick(self) -> None:
        now = time.time()
        if self.on_tick and now - self.last_tick > 2:
            self.last_tick = now
            self.on_tick()
        if self.tty and now - self.last_draw > 0.5:
            self.draw()

    def table(self) -> str:
        rows = [("trial", "state", "step", "loss", "dev PPL", "tok/s", "ETA")]
        for r in self.rows.values():
            step = f"{r.step}/{r.steps}" if r.steps else str("-" if r.step is None else r.step)
            rows.append((r.trial, r.state, step, _f(r.loss, 3), _f(r.dev_ppl, 2), _f(r.tokens_per_s, 0), r.eta() or "-"))
        return text_table(rows, right=(2, 3, 4, 5, 6))

    def draw(self) -> None:
        text = self.table()
        up = f"\x1b[{self.drawn}F" if self.drawn else ""
        self.stream.write(up + "\n".join(l + "\x1b[K" for l in text.splitlines()) + "\n")
        self.stream.flush()
        self.drawn, self.last_draw = text.count("\n") + 1, time.time()

    def _say(self, line: str) -> None:
        if self.tty:
            self.draw()  # the table carries the state on a terminal
        else:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", file=self.stream, flush=True)

    def _save(self, v: str, **fields) -> None:
        self.store.upsert(self.spec_of[v], v, self.profile, **fields)


def _ours(trial) -> list[str]:
    """The rows of this run that a Tune trial stands for: its own, or a stacked trial's members'."""
    if LIVE is None:
        return []
    setup = (getattr(trial, "config", None) or {}).get("trial") or {}
    names = [m.get("trial") for m in setup.get("stack") or ()] or [trial_name(trial)]
    return [v for v in names if v in LIVE.rows]


def _seats(trial, metrics: dict | None) -> list[tuple[str, dict]]:
    """(row, message) of what a trial reported: its one message, or a stacked trial's, by member ("seats")."""
    ours = _ours(trial)
    if "seats" in (metrics or {}):
        return [(v, m) for v, m in metrics["seats"].items() if v in ours]
    return [(v, _zoo(metrics)) for v in ours]


def _name(trial) -> str:
    """A row's name: given as it is, or a Tune trial's own (trial_name)."""
    return trial if isinstance(trial, str) else trial_name(trial)


def trial_name(trial) -> str | None:
    """The trial's name, from the runner.trial.Setup that runner.sweep gave Tune (which keeps it as a
    plain dict: read by key, not parsed whole, on every event)."""
    setup = (getattr(trial, "config", None) or {}).get("trial") or {}  # None: a result Tune never started
    return setup.get("trial", setup.get("variant"))  # `variant`: the key before the rename




def _zoo(metrics: dict | None) -> dict:
    """What the trial reported, under the one key runner.trial uses (Tune's metrics are a plain dict)."""
    return (metrics or {}).get("zoo") or {}


def _hardware(p: Placement) -> str:
    """The display line for `zoo status` (reports read the structured placement, never this)."""
    n, t = p.workers, p.threads
    what = f"GPU {','.join(p.gpu_ids)}" if p.gpu_ids else f"cpu, {t} thread{'s' * (t != 1)}"
    return f"{what}{f', {n} workers' if n > 1 else ''} on {p.hostname} (node {p.node_id[:8]}, pid {p.pid})"


def _error_text(trial) -> str:
    """The trial's traceback: Tune writes it to the trial's local folder before telling callbacks."""
    try:
        with open(trial.error_file) as f:
            return f.read()
    except (OSError, TypeError):
        return trial.get_error() or "unknown error (no traceback recorded)"


def short_error(text: str) -> str:
    """The exception line of a traceback (the innermost one: Ray wraps the trial's error)."""
    lines = [l.strip() for l in str(text).splitlines() if l.strip()]
    pat = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Loss|Interrupt|Exit|Fault)\w*)(\([\w.]*\))?: \S")
    hits = [l for l in lines if pat.match(l) and not l.startswith(("ray.exceptions.RayTaskError",
                                                                     "ray.exceptions.RayActorError"))]
    line = hits[-1] if hits else (lines[-1] if lines else "unknown error")
    return line[:1000]


def _f(x, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


