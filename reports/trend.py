"""The scale-trend page (`zoo report --analysis PLAN` with a plan that has a `trend:`): per comparison, its
relative difference at each width with the verdict there, and its slope over log2(d_model) with the
verdict across widths (zoo.evidence.trend), as typed rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from zoo.reports.cells import Section, Table, col, columns, p_value, text_col
from zoo.reports.runs import Runs
from zoo.reports.verdicts import claim_rows


@dataclass
class SlopeRow:
    """One comparison across the widths."""
    name: str = ""
    group: str | None = None
    verdict: str = text_col("verdict", "verdict")
    rows: str = text_col("comparison", "rows")
    paper_delta: float | None = col("paper", "Δ log PPL", "{:+.3f}")
    centre: float | None = col("measured", "Δ at the centre", "{:+.3f}")
    slope: float | None = col("measured", "slope per doubling", "{:+.4f}")
    interval: str | None = text_col("measured", "95% interval")
    df: float | None = col("measured", "df", "{:.1f}")
    p_holm: float | None = col("measured", "p (Holm)", p_value)


@dataclass
class WidthRow:
    """One comparison at one width."""
    name: str = ""
    group: str | None = None
    d_model: int | None = col("width", "d_model")
    profile: str = text_col("width", "profile")
    seeds: int | None = col("width", "seeds")
    delta: float | None = col("measured", "Δ log PPL", "{:+.3f}")
    interval: str | None = text_col("measured", "95% interval")
    relative: str | None = text_col("measured", "PPL ratio")
    p_holm: float | None = col("measured", "p (Holm)", p_value)
    verdict: str = text_col("verdict", "verdict")


def d_models(runs: Runs, profiles) -> dict[str, int | None]:
    """Each profile's width: its base row's d_model (else any Table 3 trial of it that has a config)."""
    out = {}
    for p in profiles:
        t = runs.pick(3, "base", profile=p)
        if not (t and t.config):
            t = next((x for x in runs.trials if x.profile == p and x.config and x.paper_table == 3), None)
        out[p] = t.config.model.d_model if t and t.config else None
    return out


def trend_table(runs: Runs, plan, bootstrap_seed: int | None = None) -> Table:
    """The trend page of `plan` (its `trend:` names the profiles and comparisons) from the store's trials."""
    from zoo import evidence as E
    tr = plan.trend
    widths = d_models(runs, tr.profiles)
    ran = [p for p in tr.profiles if widths[p] is not None]
    rows, post_hoc, splits, untestable = {}, set(), set(), {}
    for p in ran:
        by_row = claim_rows(runs, p)
        untestable[p] = next((x.untestable for xs in by_row.values() for x in xs if x.untestable), "")
        rows[p] = {r: [E.Seeded(x.seed, x.nll_stats) for x in xs if x.nll_stats is not None]
                   for r, xs in by_row.items()}
        for r, xs in by_row.items():
            splits.update(x.nll_splits for x in xs)
            if E.post_hoc(plan, [x.analysis for x in xs]):
                post_hoc.add(f"{r} of {p}")
    notes = [f"Analysis plan: {plan.name} ({plan.hash()}), written before the runs: " + (
        "every trial ran under it." if not post_hoc else
        "post hoc: " + ", ".join(sorted(post_hoc)) + " ran under another plan or none.")]
    slopes, problem = [], ""
    if ran:  # every width of the plan, those not run yet said so
        try:
            slopes = E.fit_trend({p: rows.get(p, {}) for p in tr.profiles}, widths, tr.comparisons, plan.alpha,
                             plan.tie_margin, plan.resamples,
                             plan.bootstrap_seed if bootstrap_seed is None else bootstrap_seed, untestable)
        except ValueError as e:  # trials scored on different sentences: said, not drawn
            problem = str(e)
    missing = [p for p in tr.profiles if p not in ran]
    if missing or problem:
        notes.insert(0, "Not yet: " + "; ".join(
            ([f"no trials of {', '.join(missing)}"] if missing else []) + ([problem] if problem else [])) + ".")
    slope_rows, width_rows = [], []
    for s in slopes:
        tie = "≈" if s.tie else ">"
        slope_rows.append(SlopeRow(
            s.name, verdict=s.verdict, rows=f"{s.better} {tie} {s.worse}", paper_delta=s.paper_delta,
            centre=s.centre, slope=s.slope, interval=None if s.lo is None else f"[{s.lo:+.4f}, {s.hi:+.4f}]",
            df=s.df, p_holm=s.p_holm))
        for w in s.widths:
            e = w.estimate
            width_rows.append(WidthRow(
                f"{s.name} @ {w.d_model or w.profile}", group=s.name, d_model=w.d_model, profile=w.profile,
                seeds=e and e.seeds[0], delta=e and e.delta, interval=e and f"[{e.lo:+.3f}, {e.hi:+.3f}]",
                relative=e and f"{100 * math.expm1(e.delta):+.1f}%", p_holm=w.p_holm,
                verdict=w.verdict or w.missing))
    sentences = sorted({" + ".join(x) for x in splits})
    notes += [
        "Δ log PPL: log(PPL of the paper's worse row / PPL of its better row), the mean per-token NLL gap in nats, "
        "pooled over every sentence scored (" + ("; ".join(sentences) or "none yet") + "): positive when the "
        "paper's better row is better here too (PPL ratio: the same as a percentage). The paper's Δ is from its "
        "Table 3 dev perplexities.",
        "Per width: the difference's 95% t interval (paired by seed: the per-seed differences' variance plus the "
        "test-set noise the seeds share, from a bootstrap of the sentences; S - 1 degrees of freedom) and its "
        f"verdict, Holm over the {len(tr.comparisons)} comparisons at that width: held / within noise / flipped; "
        "for a tie (the paper: no difference) equivalent / different / inconclusive within "
        f"{100 * plan.tie_margin:g}% of the perplexity.",
        "Slope: least squares of the per-width differences on log2(d_model), equal weight per width, so per "
        "doubling of the width (with three evenly spaced widths it is half the outer difference; the middle "
        "width shows whether a line fits). Its variance: the widths' seed terms, plus the test-set noise shared "
        "within and across widths (every trial is scored on the same sentences, so a hard sentence moves every "
        "width alike and partly cancels in the slope); Welch-Satterthwaite degrees of freedom over the seed "
        "terms, so a width with 3 seeds leaves few. Widths are treated as independent, though seed s gives "
        "every width the same data order.",
        f"Verdict across widths: toward the paper when the slope's sign is that of the paper's Δ minus the "
        f"line at the widths' centre (Δ at the centre) and its p, Holm-adjusted over the {len(tr.comparisons)} "
        f"slopes, is below {plan.alpha:g}; away from the paper for the opposite sign; can't tell otherwise. "
        "A slope says how the effect moves over these widths only: it is not a forecast for the paper's "
        "d_model 512 (nor a claim that the proxy reaches the paper's Δ).",
    ]
    sections = [Section("Slopes over log2(d_model)", columns(SlopeRow), slope_rows, notes, index="comparison",
                        data=slopes),
                Section("At each width", columns(WidthRow), width_rows, [], index="comparison @ d_model")]
    return Table("trend", "Scale trend: do the proxy's effects move toward the paper's as the model grows?",
                 f"Six Table 3 comparisons at d_model {', '.join(str(widths[p]) for p in ran) or '(none yet)'} "
                 f"(profiles {', '.join(tr.profiles)}), judged under the analysis plan {plan.name}.",
                 sections, [], [], {}, show_runs=False)
