"""`zoo report --sweep SPEC`: one page for a swept spec (grid x variants x seeds).

Every point of the sweep (a variant and its swept values) with the mean and spread of its figures
over the seeds that finished, and a figure of the metric against each swept field.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError
from zoo.reports.cells import Column, Section, State, Table, columns, count, over_seeds, profile_notes, state, text_col
from zoo.reports.runs import Runs
from zoo.reports.verdicts import in_units, reference, shared_resampler, spec_claims, versus
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


def which_spec(runs: Runs, spec: str) -> tuple[str, str]:
    """The store's spec that `spec` names (its path as recorded, or its file name when only one spec in the
    store has it) and its page's name: the file's stem, with a digest of the path when two specs in the
    store share the stem (my/a.yaml and yours/a.yaml are two specs, two pages)."""
    recorded = {t.spec for t in runs.trials}
    stem = Path(spec).stem
    alike = sorted(s for s in recorded if Path(s).stem == stem)
    chosen = spec if spec in recorded else alike[0] if len(alike) == 1 else None
    if chosen is None and alike:
        raise UserError(f"--spec {spec}: {len(alike)} specs in {runs.path} have that name ({', '.join(alike)}); "
                        "name one by its path as shown")
    if chosen is None:
        from zoo.spec import builtin_specs
        from zoo.text import did_you_mean
        stems = sorted({Path(s).stem for s in recorded})
        if not Path(spec).is_file() and Path(spec).stem not in builtin_specs():  # a name that is no spec at all
            hint = did_you_mean(stem, stems) if stems else " The store holds no trials yet."
            raise UserError(f"--spec {spec}: no such spec file, and no spec of that name in {runs.path}"
                            + (hint if hint.startswith(";") else "." + hint.replace("Allowed:", "Its specs:")))
        raise UserError(f"--spec {spec}: no trials of that spec in {runs.path} (run `zoo run {spec}` first)")
    if len(alike) > 1:
        stem += "-" + hashlib.sha256(chosen.encode()).hexdigest()[:6]
    return chosen, stem


def sweep_table(runs: Runs, spec: str) -> Table:
    spec, stem = which_spec(runs, spec)
    mine = [t for t in runs.trials if t.spec == spec]
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
    sections = [Section("", sweep_columns(fields, label), rows, index="trial"),
                *_against(runs, mine, resampler := shared_resampler()), *_claims(runs, mine, resampler)]
    varied = [f for f in fields if len({json.dumps(r.values.get(f)) for r in rows}) > 1]  # a figure each
    return Table(f"sweep-{stem}", f"{'Sweep' if varied else 'Spec'}: {stem}", f"{len(mine)} trials of {spec}: "
                 f"{len(points)} points x their seeds.", sections, notes, shown, count([r.state for r in rows]),
                 sweep=(varied, label))


@dataclass
class VersusRow:
    """One of the spec's rows against its reference row (`paper: {compare_to: ROW}`, default base)."""
    name: str
    group: str | None = None
    profile: str | None = text_col("", "profile")
    vs: str | None = text_col("", "against")
    seeds: str | None = text_col("", "seeds")
    d_ppl: str | None = text_col("measured", "Δ PPL [95%]")
    p_ppl: str | None = text_col("measured", "p (PPL)")
    d_bleu: str | None = text_col("measured", "Δ BLEU [95%]")
    p_bleu: str | None = text_col("measured", "p (BLEU)")


def _against(runs: Runs, mine: list[Trial], resampler) -> list[Section]:
    """Each (profile, variant) of a spec against its reference row, where the spec names a paper table."""
    out = []
    for key in sorted({(t.profile, t.variant) for t in mine if t.paper_table}):
        t = max((x for x in mine if (x.profile, x.variant) == key), key=lambda x: (x.finished, x.updated_at or 0))
        name, ref = reference(runs, t)
        cells, seeds = {}, None
        for metric in ("ppl", "bleu"):
            e = (comp := versus(runs, t, ref, metric, resampler)).estimate
            if e is None:
                cells[metric] = (comp.missing, None)
                continue
            d, lo, hi = in_units(e, metric)  # this row minus the reference
            cells[metric] = (f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]", f"{e.p:.3g}")
            seeds = seeds or "{} / {}".format(*e.seeds)
        out.append(VersusRow(t.variant, profile=t.profile, vs=name if ref else f"{name} (not run)", seeds=seeds,
                             d_ppl=cells["ppl"][0], p_ppl=cells["ppl"][1], d_bleu=cells["bleu"][0],
                             p_bleu=cells["bleu"][1]))
    if not out:
        return []
    return [Section("Against the reference row", columns(VersusRow), out, [
        "Each row minus its reference (`paper: {compare_to: ROW}` in the spec, default base; a variant of this spec "
        "first, else the paper's row; of the same profile), mean over the seeds both ran, with its 95% interval and "
        "p: paired by seed, plus the test-set noise the seeds share (the statistics of the report's claims, and "
        "of `zoo compare`, which prints the same digits). Unadjusted: one comparison per row; the spec's claims "
        "below are the Holm-corrected tests."], index="row")]


def _claims(runs: Runs, mine: list[Trial], resampler) -> list[Section]:
    from zoo.reports.verdicts import ClaimRow, claim_row  # one row type for every claims table
    judged = spec_claims(runs, mine[0].spec, resampler)
    if not judged:
        return []
    rows = [claim_row(v, v.claim.id, v.claim.text, why) for v, why in judged]
    return [Section("Claims", columns(ClaimRow), rows, [
        "The spec's `claims:`, tested as the paper's are (zoo.claims): held / within noise / flipped, or for a tie "
        "equivalent / different / inconclusive within its margin; Holm over this spec's claims on each metric. "
        "A claim whose text or rows changed after its rows' first trial is post hoc."], index="claim",
        data=[v for v, _ in judged])]
