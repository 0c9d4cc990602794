"""`zoo report --sweep SPEC`: one page for a swept spec (grid x variants x seeds).

Every point of the sweep (a variant and its swept values) with the mean and spread of its figures
over the seeds that finished, and a figure of the metric against each swept field.
"""
from __future__ import annotations

import json
from pathlib import Path

from zoo.errors import UserError
from zoo.reports.runs import Runs
from zoo.result import Trial
from zoo.reports.cells import Section, State, SweepPoint, Table, _frame, _metrics, _profile_notes, over_seeds, state


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
    metric = "f1" if any((m := _metrics(t)) and m.primary and m.primary.f1 is not None for t in mine) else "bleu"
    label = {"bleu": "BLEU", "f1": "F1"}[metric]
    rows, index, states, shown, figure = [], [], [], [], []
    for (profile, variant, swept), trials in sorted(points.items()):
        values = json.loads(swept)
        mean, sd, n = over_seeds(trials, metric)
        ppl, _, _ = over_seeds(trials, "dev_ppl")
        st = [state(t) for t in trials]
        done = sum(s.key == "done" for s in st)
        summary = State("done") if done == len(trials) else \
            State(st[0].key, f"{done} of {len(trials)} seeds done; {', '.join(sorted({s for s in st if s.key != 'done'}))}")
        rows.append([values.get(f) for f in fields] + [mean, sd, ppl, n or None, summary, profile])
        figure.append(SweepPoint(values, mean, sd))
        # a grid point's name is its trial's without the seed (the variant is the spec's, for every point)
        index.append(trials[0].trial.rsplit("-seed", 1)[0] if len(trials) > 1 else trials[0].trial)
        states.append(summary)
        shown += [(t.trial, t) for t in trials]
    cols = [("swept", f) for f in fields] + [("measured", label), ("measured", f"{label} sd"),
                                             ("measured", "PPL"), ("measured", "seeds"), ("run", "state"),
                                             ("run", "profile")]
    frame = _frame(rows, index, cols, names=("trial",))
    notes = [f"Every point of the sweep: its swept values, and over the seeds that finished the mean "
             f"{label} on the spec's eval split, its standard deviation (sd) and the mean dev perplexity "
             "per word-piece.", *_profile_notes([t for _, t in shown])]
    counts: dict = {}
    for s in states:
        counts[s.key] = counts.get(s.key, 0) + 1
    return Table(f"sweep-{stem}", f"Sweep: {stem}", f"{len(mine)} trials of {spec}: {len(points)} points "
                 f"x their seeds.", [Section("", frame)], notes, shown, counts, sweep=(fields, label, figure))
