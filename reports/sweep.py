"""`zoo report --sweep SPEC`: one page for a swept spec (grid x variants x seeds).

Every point of the sweep (a variant and its swept values) with the mean and spread of its figures
over the seeds that finished, and a figure of the metric against each swept field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError
from zoo.reports.cells import Column, Section, State, Table, count, over_seeds, profile_notes, state
from zoo.reports.runs import Runs
from zoo.result import Trial


@dataclass
class SweepRow:
    """One point of a sweep: its swept values and its figures over the seeds that finished."""
    name: str                         # its trials' name without the seed
    values: dict = field(default_factory=dict)  # swept field -> value
    mean: float | None = None         # the metric (BLEU or F1), mean over seeds
    sd: float | None = None
    ppl: float | None = None
    seeds: int | None = None
    state: State | None = None
    profile: str | None = None
    group: str | None = None


def sweep_columns(fields: list[str], label: str) -> list[Column]:
    """The swept fields (one column each), then the measured figures and the run."""
    return [Column(f, f, "swept", get=lambda r, f=f: r.values.get(f)) for f in fields] + [
        Column("mean", label, "measured", "{:.2f}"), Column("sd", f"{label} sd", "measured", "{:.2f}"),
        Column("ppl", "PPL", "measured", "{:.2f}"), Column("seeds", "seeds", "measured", "{:d}"),
        Column("state", "state", "run", align="text"), Column("profile", "profile", "run", align="text")]


def sweep_table(runs: Runs, spec: str) -> Table:
    stem = Path(spec).stem
    mine = [t for t in runs.trials if Path(t.spec).stem == stem]
    if not mine:
        raise UserError(f"--sweep {spec}: no trials of that spec in {runs.path} (run `zoo run {spec}` first)")
    points: dict[tuple, list[Trial]] = {}  # (profile, variant, swept values) -> its trials, one per seed
    for t in mine:
        swept = {k: v for k, v in (t.config.overrides if t.config else {}).items() if k != "train.seed"}
        key = (t.profile, t.variant, json.dumps(swept, sort_keys=True))
        points.setdefault(key, []).append(t)
    fields = sorted({k for _, _, s in points for k in json.loads(s)})
    metric = "f1" if any(t.finished and t.result.primary and t.result.primary.f1 is not None for t in mine) else "bleu"
    label = {"bleu": "BLEU", "f1": "F1"}[metric]
    rows, shown = [], []
    for (profile, variant, swept), trials in sorted(points.items()):
        m = over_seeds(trials, metric)
        st = [state(t) for t in trials]
        ok = sum(s.key == "done" for s in st)
        summary = State("done") if ok == len(trials) else \
            State(st[0].key, f"{ok} of {len(trials)} seeds done; {', '.join(sorted({s for s in st if s.key != 'done'}))}")
        # a grid point's name is its trial's without the seed (the variant is the spec's, for every point)
        name = trials[0].trial.rsplit("-seed", 1)[0] if len(trials) > 1 else trials[0].trial
        rows.append(SweepRow(name, json.loads(swept), m.mean, m.sd, over_seeds(trials, "dev_ppl").mean,
                             m.n or None, summary, profile))
        shown += [(t.trial, t) for t in trials]
    notes = [f"Every point of the sweep: its swept values, and over the seeds that finished the mean "
             f"{label} on the spec's eval split, its standard deviation (sd) and the mean dev perplexity "
             "per word-piece.", *profile_notes([t for _, t in shown])]
    return Table(f"sweep-{stem}", f"Sweep: {stem}", f"{len(mine)} trials of {spec}: {len(points)} points "
                 f"x their seeds.", [Section("", sweep_columns(fields, label), rows, index="trial")], notes, shown,
                 count([r.state for r in rows]), sweep=(fields, label))
