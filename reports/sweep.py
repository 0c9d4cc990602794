"""`zoo report --spec SPEC` (or --sweep): the page of one spec of yours.

Its rows over their seeds, with the settings where each differs from its reference row (default base) as it
ran, each row's Δ against that row, and the spec's claims; a spec with a `sweep:` block also gets a figure
of its figures against each swept field. One sign convention on the whole page: Δ is how much better the
first row named is than the second, positive when better (lower perplexity, higher BLEU).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError
from zoo.reports.cells import (Column, Section, State, Table, columns, count, over_seeds, profile_notes, run_column,
                               shown_path, state, text_col)
from zoo.reports.runs import Runs
from zoo.reports.verdicts import reference, shared_resampler, spec_claims, user_rows_of, versus
from zoo.result import Trial

SIGN = ("Δ on this page is how much better the first row named is than the second (its reference, or the "
        "claim's second row): positive when it is better, that is lower perplexity or higher BLEU.")


@dataclass
class SweepRow:
    """One row of the spec (a variant, or a variant at one sweep point) over the seeds that finished."""
    name: str                         # its trials' name without the seed
    values: dict = field(default_factory=dict)  # swept field -> value, as the spec writes it
    diffs: dict = field(default_factory=dict)   # setting -> value as run, where it differs from the reference row
    mean: float | None = None         # the metric (BLEU or F1), mean over seeds
    sd: float | None = None
    ppl: float | None = None
    ppl_sd: float | None = None
    seeds: int | None = None
    state: State | None = None
    profile: str | None = None
    group: str | None = None


def short(f: str) -> str:
    """A setting's column header: model fields by their own name (ffn, h_kv), others dotted (train.label_smoothing)."""
    return f.removeprefix("model.")


def sweep_columns(fields: list[str], diffs: list[str], against: str, label: str) -> list[Column]:
    """The swept fields as written, the settings that differ from the reference as run (one column each),
    then the measured figures and the run."""
    return ([Column(f, short(f), "swept", get=lambda r, f=f: r.values.get(f)) for f in fields] +
            [Column(f"as run: {f}", short(f), f"differs from {against}", get=lambda r, f=f: r.diffs.get(f))
             for f in diffs] + [
        Column("ppl", "PPL", "measured", "{:.2f}"), Column("ppl_sd", "PPL sd", "measured", "{:.2f}"),
        Column("mean", label, "measured", "{:.2f}"), Column("sd", f"{label} sd", "measured", "{:.2f}"),
        Column("seeds", "seeds", "measured", "{:d}"),
        run_column("state"), run_column("profile")])


def settings(cfg) -> dict:
    """A config's settings as dotted names (model.ffn, train.label_smoothing), the seed left out."""
    out = {}

    def walk(prefix: str, v) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}", x)
        else:
            out[prefix] = v
    dumped = cfg.model_dump(mode="json")
    for section in ("model", "train", "data"):  # what a row is; how it is scored (eval) is the page's, in its notes
        walk(section, dumped[section])
    out.pop("train.seed", None)
    return {k: v for k, v in out.items() if not isinstance(v, list)}


def reference_config(runs: Runs, t: Trial):
    """The config `t`'s reference row ran with (None: not known): its trial's, else, for base, the built-in
    spec resolved under the same profile (what `zoo run base` would run)."""
    name, ref = reference(runs, t)
    if ref is not None and ref.config is not None:
        return ref.config
    if name != "base" or (t.paper_table or 3) != 3:  # base is a row of Table 3 only
        return None
    from zoo.spec import resolve
    try:
        return resolve("base", profile=t.profile)[0]
    except (UserError, OSError, ValueError):  # the profile file has gone: no columns rather than a failure
        return None


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
    # swept: what differs between points of one variant (a `sweep:` block); a variant's own fields are not a sweep
    per_variant: dict[tuple, list[dict]] = {}
    for profile, variant, swept in points:
        per_variant.setdefault((profile, variant), []).append(json.loads(swept))
    fields = sorted({k for pts in per_variant.values() for k in pts[0]
                     if len({json.dumps(p.get(k)) for p in pts}) > 1})
    metric = "f1" if any(t.finished and t.result.primary and t.result.primary.f1 is not None for t in mine) else "bleu"
    label = {"bleu": "BLEU", "f1": "F1"}[metric]
    rows, shown, refs = [], [], set()
    for (profile, variant, swept), trials in sorted(points.items()):
        m, ppl = over_seeds(trials, metric), over_seeds(trials, "dev_ppl")
        st = [state(t) for t in trials]
        ok = sum(s.key == "done" for s in st)
        summary = State("done") if ok == len(trials) else \
            State(st[0].key, f"{ok} of {len(trials)} seeds done; {', '.join(sorted({s for s in st if s.key != 'done'}))}")
        # a grid point's name is its trial's without the seed (the variant is the spec's, for every point)
        name = trials[0].trial.rsplit("-seed", 1)[0] if len(trials) > 1 else trials[0].trial
        refs.add(reference(runs, trials[0])[0])
        rows.append(SweepRow(name, {k: v for k, v in json.loads(swept).items() if k in fields},
                             _differs(runs, trials[0]), m.mean, m.sd, ppl.mean, ppl.sd, max(m.n, ppl.n) or None,
                             summary, profile))
        shown += [(t.trial, t) for t in trials]
    diffs = sorted({k for r in rows for k in r.diffs}, key=lambda f: (not f.startswith("model."), f))
    against = next(iter(refs)) if len(refs) == 1 else "its reference"
    notes = [f"Every row of the spec over the seeds that finished (seeds: how many): the mean dev perplexity per "
             f"word-piece (PPL) and {label} on the spec's eval split, with their standard deviations (sd)."
             + (f" Differs from {against}: each setting where a row ran otherwise than {against} under the same "
                f"profile, as it ran (a profile scales widths, so d_ff reads smaller than the spec writes it); "
                f"blank: as {against}." if diffs else "")
             + (" Swept: the values of the spec's `sweep:` fields, as it writes them." if fields else ""),
             *profile_notes([t for _, t in shown])]
    resampler = shared_resampler()
    versus_rows = _against(runs, mine, resampler)
    sections = [Section("", sweep_columns(fields, diffs, against, label), rows, index="trial"), *versus_rows,
                *(claims := _claims(runs, mine, resampler))]
    kind = "Sweep" if fields else "Spec"
    return Table(f"sweep-{stem}", f"{kind}: {stem}", f"{len(mine)} trials of {shown_path(spec)}: {len(points)} "
                 f"{'points' if fields else 'rows'} x their seeds. {SIGN}", sections, notes, shown,
                 count([r.state for r in rows]), verdicts=claims[0].data if claims else [],
                 sweep=(fields, label, versus_rows[0].rows if versus_rows else []),
                 warnings=_not_run_here(runs, mine))


def _differs(runs: Runs, t: Trial) -> dict:
    """The settings where `t` ran otherwise than its reference row (as run; {} when that is not known)."""
    ref = reference_config(runs, t)
    if ref is None or t.config is None:
        return {}
    mine, theirs = settings(t.config), settings(ref)
    return {k: v for k, v in mine.items() if k in theirs and theirs[k] != v}


def _not_run_here(runs: Runs, mine: list[Trial]) -> list[str]:
    """A warning per row that the page compares with but the spec does not run (base, for most specs):
    its figures come from trials run apart from the spec's, or from none."""
    variants = {t.variant for t in mine}
    latest = max(mine, key=lambda t: t.updated_at or 0)
    named = dict(reference(runs, t) for t in mine if t.paper_table)
    if latest.config:
        from zoo import evidence as E
        for c in E.from_specs(latest.config.claims, latest.paper_group or "", latest.spec):
            named.update({k: v for k, v in user_rows_of(runs, c, latest.profile).items() if k not in named or v})
    out = []
    for name, t in sorted(named.items()):
        if name in variants:
            continue
        spec = shown_path(latest.spec)
        if t is None:
            how = (f"`zoo run base --profile {latest.profile} --storage STORAGE`" if name == "base" else
                   "the spec that has it, with the same profile,")
            out.append(f"{spec} does not run {name}, and the store holds no run of it (profile {latest.profile}): "
                       f"the Δ and claims here that need it say 'not run'. Run {how} beside your rows, or add "
                       f"{name} as a variant of {spec}.")
            continue
        n = len(runs.seeds(t))
        out.append(f"The Δ and claims here compare with {name}, which {spec} does not run: {name}'s figures are the "
                   f"store's {n} finished seed{'s' * (n != 1)} of {shown_path(t.spec)} (profile {t.profile}), run on "
                   "their own, not with this spec's rows. Add it as a variant of the spec to be sure both ran alike.")
    return out


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
    estimates: dict = field(default_factory=dict)  # metric -> (Δ, lo, hi, p): the figure's


def _against(runs: Runs, mine: list[Trial], resampler) -> list[Section]:
    """Each (profile, variant) of a spec against its reference row, where the spec names a paper table."""
    out = []
    for key in sorted({(t.profile, t.variant) for t in mine if t.paper_table}):
        t = max((x for x in mine if (x.profile, x.variant) == key), key=lambda x: (x.finished, x.updated_at or 0))
        name, ref = reference(runs, t)
        cells, seeds, estimates = {}, None, {}
        for metric in ("ppl", "bleu"):
            comp = versus(runs, t, ref, metric, resampler)
            if (e := comp.estimate) is None:
                cells[metric] = (comp.missing, None)
                continue
            # e is "how much better this row is", the one sign of the pages and of zoo compare (SIGN)
            cells[metric] = (f"{e.delta:+.2f} [{e.lo:+.2f}, {e.hi:+.2f}]", f"{e.p:.3g}")
            estimates[metric] = (e.delta, e.lo, e.hi, e.p)
            ran = len(runs.seeds(t)), len(runs.seeds(ref))
            seeds = seeds or (f"{e.seeds[0]} paired of {ran[0]} / {ran[1]}" if e.paired else
                              f"{e.seeds[0]} / {e.seeds[1]} unpaired")
        out.append(VersusRow(t.variant, profile=t.profile, vs=name if ref else f"{name} (not run)", seeds=seeds,
                             d_ppl=cells["ppl"][0], p_ppl=cells["ppl"][1], d_bleu=cells["bleu"][0],
                             p_bleu=cells["bleu"][1], estimates=estimates))
    if not out:
        return []
    return [Section("Against the reference row", columns(VersusRow), out, [
        "Each row against its reference (`paper: {compare_to: ROW}` in the spec, default base; a variant of this spec "
        "first, else the paper's row; of the same profile): Δ (positive: the row is better), its 95% interval and "
        "p, over the seeds both ran. Seeds: \"2 paired of 2 / 3\": compared seed by seed on the 2 seeds both rows "
        "ran, of the 2 and 3 each ran (a row's mean above is over all of its own); \"unpaired\": the rows share "
        "fewer than 2 seeds, so each row's seeds count as independent samples. Paired by seed, plus the test-set "
        "noise the seeds share: the statistics of the claims below and of `zoo compare ROW REF`, which prints the "
        "same digits as ROW minus REF in the metric's units (for PPL, the opposite sign). Unadjusted: one "
        "comparison per row; the spec's claims below are the Holm-corrected tests."], index="row")]


def _claims(runs: Runs, mine: list[Trial], resampler) -> list[Section]:
    from zoo.reports.verdicts import ClaimRow, claim_row  # one row type for every claims table
    judged = spec_claims(runs, mine[0].spec, resampler)
    if not judged:
        return []
    rows = []
    for v, why in judged:
        row = claim_row(v, v.claim.id, v.claim.text, why)
        if v.claim.tie:  # the margin a tie is judged within, said where it is judged
            unit = "BLEU" if v.claim.metric == "bleu" else "PPL"
            m = v.comparison.margin
            row.rows += f" within ±{100 * v.claim.margin:g}%" + (f" (±{m:.2f} {unit})" if m is not None else "")
        rows.append(row)
    # the paper's columns (its Δ, its BLEU) are empty for a spec's own claims: left out, so the rest fits
    shown = [c for c in columns(ClaimRow) if c.group not in ("paper",) and c.key != "delta_paper_bleu"
             and (c.key in ("verdict", "delta", "interval") or any(c.value(r) not in (None, "") for r in rows))]
    return [Section("Claims", shown, rows, [
        "The spec's `claims:`, tested as the paper's are (zoo.evidence.claims): held / within noise / flipped, or "
        "for a tie equivalent / different / inconclusive within its margin (in the rows column: a share of the second "
        "row's figure, and that in the metric's units); Holm over this spec's claims on each metric. A claim whose "
        "text or rows changed after its rows' first trial is post hoc."], index="claim",
        data=[v for v, _ in judged])]
