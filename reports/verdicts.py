"""Table 3's judgement sections, as typed rows: each of the paper's claims with our difference, its
interval and a verdict (zoo.evidence.claims, zoo.evidence.stats), and the rank agreement (Spearman, Kendall) of our rows
with the paper's.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scipy.stats import spearmanr

from zoo import paper
from zoo.reports.cells import OLDER, Section, col, columns, p_value, text_col, truncated

if TYPE_CHECKING:  # annotations only: the claims read any object with pick, seeds and points
    from zoo.reports.runs import Runs


@dataclass
class ClaimRow:
    """One claim of the paper beside our measurement of it (None: nothing measured)."""
    name: str = ""                                   # the claim's id
    group: str | None = None
    verdict: str = text_col("verdict", "verdict")
    says: str = text_col("claim", "says")
    rows: str = text_col("claim", "rows")
    paper_delta: float | None = col("paper", "Δ")
    delta: float | None = col("measured", "Δ", "{:+.2f}")
    interval: str | None = text_col("measured", "95% interval")
    mc_error: str | None = text_col("measured", "MC error")
    p_holm: str | None = text_col("measured", "p (Holm)")
    delta_paper_bleu: float | str | None = col("measured", "Δ, paper's BLEU", "{:+.2f}")
    seeds: str | None = text_col("measured", "seeds")
    sentence: str = text_col("", "sentence")  # the verdict in one sentence, to paste (zoo.evidence.sentence)


def claims_section(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None,
                   plan=None) -> Section:
    """Each of the paper's Table 3 claims (zoo.evidence.claims) with our difference, its interval and a verdict;
    with an analysis plan (zoo.evidence.analysis), judged at its level and resamples, and a claim whose trials ran
    under another plan or none marked post hoc."""
    from zoo import evidence as E
    resamples = resamples or (plan.resamples if plan else E.RESAMPLES)
    bootstrap_seed = (plan.bootstrap_seed if plan else E.BOOTSTRAP_SEED) if bootstrap_seed is None else bootstrap_seed
    by_profile = {p: claim_rows(runs, p) for p in runs.profiles}
    resampler = shared_resampler(resamples, bootstrap_seed)  # one per number of sentences, shared by all claims

    claims = [c for c in E.CLAIMS if not plan or not plan.claims or c.id in plan.claims]
    verdicts = E.judge([comparison(runs, by_profile, c, resampler) for c in claims], refine=E.refiner(resampler),
                       **({"alpha": plan.alpha, "primary": plan.primary} if plan else {}))
    rows, mc, post_hoc = [], 0.0, {}
    for v in verdicts:
        c, e = v.claim, v.estimate
        mc = max(mc, e.mc_error if e else 0.0)
        source = f" ({v.comparison.source})" if v.comparison.source else ""
        if e and (why := E.post_hoc(plan, [x.analysis for r in c.rows for x in (v.comparison.rows or {}).get(r, [])])):
            post_hoc[c.id] = why
        verdict = f"{v.verdict}: {v.reason}" if v.reason else v.verdict
        rows.append(ClaimRow(
            c.id, verdict=verdict + (" (post hoc)" if c.id in post_hoc else ""),
            says=f"{c.group}: {c.text} ({'BLEU' if c.metric == 'bleu' else 'PPL'})",
            rows=f"{c.better} {'≈' if c.tie else '>'} {c.worse}{source}", paper_delta=round(c.paper_delta, 2),
            delta=e and e.delta, interval=e and f"[{e.lo:+.2f}, {e.hi:+.2f}]", mc_error=e and f"±{e.mc_error:.3f}",
            p_holm=None if v.p_holm is None else f"{v.p_holm:.3g}",
            delta_paper_bleu=_paper_metric_delta(v.comparison.rows or {}, c) if e else None,
            seeds=e and seeds_cell(e), sentence=E.say(v, "post hoc" if c.id in post_hoc else "")))
    yours = [(spec, v, why) for spec in user_specs(runs, 3) for v, why in spec_claims(runs, spec, resampler, plan)]
    mine = [v for _, v, _ in yours]
    mc = max([mc, *(v.estimate.mc_error for v in mine if v.estimate)])
    tally = E.Tally.of(verdicts)
    tested = [v for v in verdicts if v.p_holm is not None]
    n_ppl = sum(v.claim.metric == "ppl" for v in tested)
    n_bleu = len(tested) - n_ppl
    resampled = sorted({v.comparison.sentences for v in verdicts + mine if v.estimate})
    margins = sorted({f"{100 * v.claim.margin:g}%" for v in verdicts + mine if v.claim.tie})
    notes = [
        "Tally: " + tally.text() + (f" Your claims: {E.Tally.of(mine).text()}" if mine else ""),
        *([f"Analysis plan: {plan.name} ({plan.hash()}): level {plan.alpha:g}, primary {plan.primary}. Post hoc: "
           + "; ".join(f"{k} ({w})" for k, w in sorted(post_hoc.items())) if post_hoc else
           f"Analysis plan: {plan.name} ({plan.hash()}): level {plan.alpha:g}, primary {plan.primary}; every "
           "claim's trials ran under it."] if plan else []),
        f"Statistics: the difference's variance is the seed term plus the test-set noise shared by all seeds. "
        "The seed term is the unbiased variance over seeds of the per-seed differences (rows run on the same "
        "seeds are compared seed by seed: seed s gives every row the same data order), over the number of "
        "seeds; it already holds each seed's own sentence noise. The shared term is the covariance, across "
        f"{resamples:,} resamples of the scored sentences (bootstrap seed {bootstrap_seed}, `zoo report "
        "--bootstrap-seed N`; both rows always on the same sentences), between different seeds' differences: "
        "the part of the test set's noise that more seeds do not average away. Resampled here: "
        + ("; ".join(resampled) or "nothing yet") + ". The 95% interval is Δ ± t × se with the seeds' degrees "
        "of freedom (S - 1 for rows compared seed by seed: the seeds are the independent units). MC error: "
        f"the Monte Carlo error of each interval end from the finite resamples (at most {mc:.3f} here).",
        f"Multiple comparisons: two families, each corrected by Holm's method: perplexity, the primary metric "
        f"({n_ppl} of the paper's claims tested here), and BLEU, secondary ({n_bleu}); yours are families of "
        "their own, per spec and metric; within each the chance that any verdict "
        "is a false finding is at most 5%. The same two rows compared on both metrics are one comparison "
        "twice, so they are not counted in one family. Holm rather than Benjamini-Hochberg because each "
        "verdict is read on its own. p (Holm) is the adjusted p-value within the claim's own family; the "
        "interval is per claim, unadjusted.",
        "Verdicts. A claim that one row is better: held (Holm p < 0.05, Δ on the paper's side), flipped "
        "(Holm p < 0.05, the other side), within noise (no finding either way). A tie (the paper: nearly "
        "identical): equivalent (two one-sided tests show |Δ| is within the margin, "
        + (", ".join(margins) or "none") + " of the second row's figure: closer than the smallest difference "
        "the paper calls real, 0.4 BLEU of 25.8 and 0.1 PPL of 4.91), different (|Δ| beyond the margin), "
        "inconclusive (neither). At the boundary: a Holm p that another bootstrap seed could put on either side of "
        "the level (within 3 Monte Carlo errors of it) even after 4x and 16x the resamples, shown with that range; "
        "a claim near the level is measured again with those first, so no verdict moves with `--bootstrap-seed`. "
        "Untestable at this budget: a row ran at a profile too small for any claim (its `untestable:`, e.g. "
        "smoke), or a precondition written with the claim, from "
        "the paper, before any run (over-fitting for the dropout claim, the paper's 3x steps for big) "
        "is not met by these runs; the measured Δ is still shown, and such a claim is in no Holm family.",
        "Each claim compares two rows on one metric, written from the paper's text (section 6.2, 5.4) and "
        "its Table 3, never from our results. Δ: how much better the first row is (BLEU higher, PPL "
        "lower), the mean over seeds. A claim on a row stopped early by a time limit (truncated: a seed ran fewer "
        "than its planned steps) gets no Δ and no verdict: its cell says which row ran how many steps."]
    for spec, v, why in yours:
        rows.append(claim_row(v, f"{v.claim.id} ({spec})", f"yours: {v.claim.text}", why))
    if yours:
        notes.insert(1, "Your claims (a spec's `claims:`) are tested with the same statistics, each spec's claims "
                     "their own Holm family per metric, apart from the paper's (adding yours never changes the "
                     "paper's verdicts). A claim whose text or rows changed after its rows' first trial is post hoc.")
    return Section("Claims", columns(ClaimRow), rows, notes, index="claim", data=verdicts + mine)


def claim_row(v, name: str, says: str, post_hoc: str = "") -> ClaimRow:
    from zoo import evidence as E
    c, e = v.claim, v.estimate
    verdict = f"{v.verdict}: {v.reason}" if v.reason else v.verdict
    paper = c.paper_delta
    return ClaimRow(
        name, verdict=verdict + (f" ({post_hoc})" if post_hoc else ""),
        says=f"{says} ({'BLEU' if c.metric == 'bleu' else 'PPL'})", rows=f"{c.better} {'≈' if c.tie else '>'} {c.worse}",
        paper_delta=None if math.isnan(paper) else round(paper, 2), delta=e and e.delta,
        interval=e and f"[{e.lo:+.2f}, {e.hi:+.2f}]", mc_error=e and f"±{e.mc_error:.3f}",
        p_holm=None if v.p_holm is None else f"{v.p_holm:.3g}", seeds=e and seeds_cell(e),
        sentence=E.say(v, post_hoc.split(":")[0]))


def seeds_cell(e) -> str:
    """The seeds behind a claim's figures: "3 / 3" compared seed by seed; "2 / 2 (unpaired)" where the rows
    share fewer than 2 seeds (zoo.evidence.claims.compare)."""
    return "{} / {}".format(*e.seeds) + ("" if e.paired else " (unpaired)")


def user_specs(runs: Runs, table: int | None = None) -> list[str]:
    """The specs in the store that are not the paper's (of one paper table, or any), first run first."""
    from zoo.reports.runs import is_paper
    first: dict[str, float] = {}
    for t in runs.trials:
        if not is_paper(t) and (table is None or t.paper_table == table):
            first[t.spec] = min(first.get(t.spec, math.inf), t.created_at or 0)
    return sorted(first, key=lambda s: (first[s], s))


def spec_claims(runs: Runs, spec: str, resampler, plan=None) -> list[tuple]:
    """A user spec's claims (its `claims:`, as its latest trial recorded them) judged on the store's rows:
    (Verdict, why it is post hoc or ""). One Holm family per metric, of this spec's claims only."""
    from zoo import evidence as E
    latest = latest_config(runs, spec)
    if latest is None:
        return []
    specs = latest.config.claims
    claims = E.from_specs(specs, latest.paper_group or "", spec)
    comparisons = [user_comparison(runs, c, latest.profile, resampler) for c in claims]
    verdicts = E.judge(comparisons, refine=E.refiner(resampler), **({"alpha": plan.alpha} if plan else {}))
    return [(v, _edited(runs, spec, cs, v.comparison) or E.claim_post_hoc(plan, v.comparison)) for v, cs in zip(verdicts, specs)]


def latest_config(runs: Runs, spec: str):
    """The spec's most recently updated trial with a config (what its `claims:` say now), or None."""
    mine = [t for t in runs.trials if t.spec == spec and t.config]
    return max(mine, key=lambda t: t.updated_at or 0, default=None)


def user_rows_of(runs: Runs, claim, profile: str | None) -> dict:
    """The trials a user's claim names: each row the spec's own variant, else the paper's row of that name
    (of `profile`); a row not run is None."""
    spec = claim.source
    table = next((t.paper_table for t in runs.trials if t.spec == spec and t.paper_table), 3)
    return {name: runs.row_of(spec, name, profile) or runs.pick(table, name, profile=profile) for name in claim.rows}


def user_comparison(runs: Runs, claim, profile: str | None, resampler):
    """A user's claim measured on its rows (zoo.evidence.claims.compare), or why it cannot be."""
    from zoo import evidence as E
    picked = user_rows_of(runs, claim, profile)
    if not all(t and t.finished for t in picked.values()):
        return E.Comparison(claim, missing="not run")
    if why := cut_short(runs, picked.items()):
        return E.Comparison(claim, missing=why)
    return E.compare(claim, {name: row_runs(runs, t) for name, t in picked.items()}, resampler)


def _edited(runs: Runs, spec: str, cs, comp) -> str:
    """Why a claim is post hoc: it is not, or not so, in the config its rows' first trial recorded."""
    if comp.rows is None:
        return ""
    picked = user_rows_of(runs, comp.claim, None)
    ran = [x for t in picked.values() if t for x in runs.seeds(t) if x.spec == spec]
    first = min(ran, key=lambda x: x.created_at or 0, default=None)
    recorded = {c.id: c for c in first.config.claims} if first and first.config else {}
    if cs.id not in recorded:
        return "post hoc: the claim was added after its rows' first trial"
    if recorded[cs.id] != cs:
        return "post hoc: the claim changed after its rows' first trial"
    return ""



def _paper_metric_delta(rows: dict, c):
    """A BLEU claim's difference in the paper's own BLEU, mean over the seeds both rows ran (shown beside
    the verdict, which is on sacreBLEU); n/a for an older store."""
    if c.metric != "bleu":
        return None
    a, b = ({r.seed: r.bleu_paper for r in rows.get(row) or []} for row in c.rows)
    common = [s for s in a if s in b]
    if not common or any(a[s] is None or b[s] is None for s in common):
        return OLDER
    return sum(a[s] - b[s] for s in common) / len(common)


def claim_rows(runs: Runs, profile: str | None = None) -> dict[str, list]:
    """Per Table 3 row, its finished seeds as zoo.evidence.claims.RowRun (truncated rows left out), of `profile`
    (default: the main one)."""
    out = {}
    for row, *_ in paper.TABLE3:
        t = runs.pick(3, row, profile=profile)
        if t and t.finished and not truncated(t):
            out[row] = row_runs(runs, t)
    return out


def row_runs(runs: Runs, t) -> list:
    """A row's finished seeds (the trials that differ from `t` only in the seed) as zoo.evidence.claims.RowRun."""
    from zoo import evidence as E
    got = []
    for x in runs.seeds(t):
        m = x.result
        points = runs.points(x)
        curve = tuple(p.dev_ppl for p in points if p.dev_ppl)
        losses = [p.loss for p in points if p.loss is not None]
        tail = losses[-max(1, len(losses) // 10):]
        (bleu, bleu_splits), (nll, nll_splits) = _pooled(x, "bleu"), _pooled(x, "nll")
        got.append(E.RowRun(
            seed=x.seed or 0, steps=m.steps_done, dev_ppl=m.dev_ppl,
            bleu_paper=m.primary.bleu_paper if m.primary else None,
            dev_ppl_curve=curve, train_loss_tail=sum(tail) / len(tail) if tail else None,
            bleu_stats=bleu, nll_stats=nll, bleu_splits=bleu_splits, nll_splits=nll_splits,
            analysis=x.analysis, untestable=untestable_of(x)))
    return got


def untestable_of(t) -> str:
    """Why no claim can be tested on trial `t`: what its profile's `untestable:` said when it ran, or, for a
    trial stored before trials recorded it, what the profile of that name says now; "" when claims can be."""
    why = t.config.untestable if t.config else None
    if why is None:
        why = _profile_says(t.profile, str(Path(t.spec).resolve().parent))
    return f"run at profile {t.profile}: {why}" if why else ""


@functools.lru_cache(maxsize=64)  # read once per report, not once per trial and claim
def _profile_says(profile: str, spec_dir: str) -> str:
    from zoo.spec import SpecError, find_profile, profile_untestable
    try:
        return profile_untestable(find_profile(profile, Path(spec_dir) / "spec.yaml"))
    except (SpecError, OSError):  # no such profile here any more: nothing says its budget is too small
        return ""


def reference(runs: Runs, t):
    """The row a user's row is compared with: its `compare_to` (a variant of its own spec first, else a
    paper row of its table), default base; of the same profile. (label, trial or None)."""
    name = (t.config.paper.compare_to if t.config else None) or "base"
    own = runs.row_of(t.spec, name, t.profile)
    if own is not None and own.key != t.key:
        return name, own
    return name, runs.pick(t.paper_table or 3, name, profile=t.profile)


def versus(runs: Runs, a, b, metric: str, resampler):
    """Row `a` against row `b` on one metric (their finished seeds, paired where both ran them): a
    zoo.evidence.claims.Comparison whose estimate is positive when `a` is better (None with `missing` when it cannot
    be measured). `resampler(n)` is the report's shared resampler, so every page prints the same digits."""
    from zoo import evidence as E
    claim = E.Claim("versus", "", "", metric, "a", "b")
    if not (a and b and a.finished and b.finished):
        return E.Comparison(claim, missing="not run")
    if why := cut_short(runs, [(a.variant, a), (b.variant, b)]):
        return E.Comparison(claim, missing=why)
    return E.compare(claim, {"a": row_runs(runs, a), "b": row_runs(runs, b)}, resampler)


def cut_short(runs: Runs, named) -> str:
    """Why rows ((name, a trial of the row) pairs) get no Δ and no verdict: a seed of theirs stopped before its
    planned steps (train.time_limit_minutes), so it would be compared at unequal training, not as the
    recipe differs. "cut short: A2 ran 240 of 500 steps (seeds 1, 2; the 5-minute train.time_limit_minutes)";
    "" when every seed ran its steps."""
    parts, limits = [], set()
    for name, t in named:
        short = sorted((x for x in runs.seeds(t) if truncated(x)), key=lambda x: x.seed or 0)
        if not short:
            continue
        done = sorted({x.result.steps_done for x in short})
        ran = f"{done[0]}" if len(done) == 1 else f"{done[0]}-{done[-1]}"
        seeds = ", ".join(str(x.seed) for x in short)
        parts.append(f"{name} ran {ran} of {max(x.steps for x in short)} steps (seed{'s' * (len(short) > 1)} {seeds}")
        limits |= {m for x in short if x.config and (m := x.config.train.time_limit_minutes)}
    if not parts:
        return ""
    limit = (f"; the {', '.join(f'{m:g}' for m in sorted(limits))}-minute train.time_limit_minutes" if limits
             else "")
    return "cut short: " + "; ".join(f"{p}{limit})" for p in parts)


def shared_resampler(resamples: int | None = None, bootstrap_seed: int | None = None):
    """One resampler per number of sentences, seeded as the claims section seeds it (bootstrap seed + n)."""
    from zoo import evidence as E
    resamples = resamples or E.RESAMPLES
    bootstrap_seed = E.BOOTSTRAP_SEED if bootstrap_seed is None else bootstrap_seed
    made: dict[int, E.Resampler] = {}

    def resampler(n: int) -> E.Resampler:
        if n not in made:
            made[n] = E.Resampler(n, resamples, bootstrap_seed + n)
        return made[n]
    return resampler


def _pooled(t, kind: str):
    """A trial's per-sentence statistics pooled over the splits it scored, in the config's order (the
    eval split, its extra splits, then for perplexity the perplexity-only ones): more sentences, less
    sentence noise on a claim. Splits without statistics (an older run) are left out; (None, ()) when
    the eval split itself has none."""
    import numpy as np
    m, e = t.result, t.config.eval if t.config else None
    names = [m.eval_split] + ([*e.extra_splits, *(e.ppl_splits if kind == "nll" else [])] if e else [])
    parts, used = [], []
    for split in dict.fromkeys(names):
        s = m.split(split)
        stats = (s and s.bleu_stats) if kind == "bleu" else (
            m.dev_nll_stats if split == "dev" else s and s.nll_stats)
        if stats:
            parts.append(np.asarray(stats, float))
            used.append(split)
        elif split == m.eval_split:
            return None, ()
    return np.concatenate(parts), tuple(used)


BUDGET = {"steps", "checkpoint_every", "checkpoint_minutes", "compile", "eval_every", "seed"}  # what an add-on may change


def comparison(runs: Runs, by_profile: dict, c, resampler):
    """The claim measured on the first source of its rows that can test it: the main profile, then each
    add-on (`zoo report --addon`), then, for a claim resting on a step ratio (big: 3x base), its rows
    from two of them that differ only in the budget. A source where a precondition fails is kept only
    when none meets them all (the claim is then untestable, and says which add-on would test it)."""
    profiles = list(by_profile)
    sources = [(p, p) for p in profiles]
    if any(n.across_profiles for n in c.needs):
        sources += [(a, b) for a in profiles for b in profiles if a != b]
    first = None
    for pb, pw in sources:
        comp = _compare_from(runs, by_profile, c, resampler, pb, pw)
        if comp.estimate is not None and not comp.untestable:
            return comp
        if first is None or (first.estimate is None and comp.estimate is not None):
            first = comp
    by_profile_only = any(r.untestable for rs in (first.rows or {}).values() for r in rs or ())  # smoke's: no add-on helps
    if first.untestable and c.addon and c.addon not in profiles[1:] and not by_profile_only:
        first = dataclasses.replace(first, untestable=f"{first.untestable}; the add-on profile {c.addon} gives "
                                    f"these rows that budget (`zoo report --addon {c.addon}` reads its runs)")
    return first


def _compare_from(runs: Runs, by_profile: dict, c, resampler, pb, pw):
    from zoo import evidence as E
    picked = [runs.pick(3, c.better, profile=pb), runs.pick(3, c.worse, profile=pw)]
    if not all(t and t.finished for t in picked):
        return E.Comparison(c, missing="not run")
    if why := cut_short(runs, zip(c.rows, picked)):
        return E.Comparison(c, missing=why)
    if picked[0].profile != picked[1].profile and not _budget_only(*picked):
        return E.Comparison(c, missing="rows ran under profiles that differ in more than the budget")
    rows = {c.better: by_profile[pb].get(c.better), c.worse: by_profile[pw].get(c.worse)}
    comp = E.compare(c, rows, resampler)
    if (pb, pw) != (runs.profile, runs.profile) and runs.addons:
        comp = dataclasses.replace(comp, source=f"{c.better} of {pb}, {c.worse} of {pw}" if pb != pw else pb)
    return comp


def _budget_only(a, b) -> bool:
    """Two trials whose recipes (data, evaluation, training apart from its length) are the same."""
    if not (a.config and b.config):
        return False
    ta, tb = (x.config.model_dump(mode="json", include={"data", "eval", "train"}) for x in (a, b))
    for t in (ta, tb):
        for k in BUDGET:
            t["train"].pop(k, None)
    return ta == tb


@dataclass
class RankRow:
    """Spearman's rho between our values and the paper's, over one group's rows that ran."""
    name: str = ""                                   # the group, or "overall"
    group: str | None = None
    n: int = col("", "rows ran")
    bleu_rho: float | None = col("BLEU", "rho", "{:.2f}", nan="undefined")
    bleu_p: float | None = col("BLEU", "p", p_value)
    ppl_rho: float | None = col("PPL", "rho", "{:.2f}", nan="undefined")
    ppl_p: float | None = col("PPL", "p", p_value)
    note: str = text_col("", "note")


def rank_section(rows: list) -> Section:
    """Rank agreement of Table 3's rows (its typed rows: paper_bleu, bleu, paper_ppl, ppl, letter, run)
    with the paper's: Spearman per group and overall, Kendall's tau over seeds."""
    ran = [r for r in rows if (r.bleu is not None or r.ppl is not None) and not truncated(r.run.trial)]

    def rho(pairs):
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if len(pairs) < 3:
            return None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant input: rho is undefined (nan), said in the cell
            r = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        return float(r.statistic), float(r.pvalue)

    groups = [(title, [r for r in ran if r.letter == g]) for g, title in paper.TABLE3_GROUPS.items()]
    out = []
    for title, xs in groups + [("overall", ran)]:
        rb, pb = rho([(x.paper_bleu, x.bleu) for x in xs])
        rp, pp = rho([(x.paper_ppl, x.ppl) for x in xs])
        n = len(xs)
        if n < 3:
            note = f"n = {n}: too few rows ran (needs 3)"
        elif any(v is not None and math.isnan(v) for v in (rb, rp)):
            note = "undefined where one side is constant"
        else:
            note = ""
        out.append(RankRow(title, n=n, bleu_rho=rb, bleu_p=pb, ppl_rho=rp, ppl_p=pp, note=note))
    return Section("Rank agreement (Spearman) between measured and paper", columns(RankRow), out, [
        "Spearman's rho between our values and the paper's, across the rows that ran to their planned "
        "steps (a truncated row is shown above but compared with nothing), per group of the "
        "paper and overall; computed where at least 3 rows ran. PPL: lower is better in both, so a "
        "positive rho means the same order. With few rows the p-values are weak evidence.",
        *_kendall_notes(ran)], index="group")


def _kendall_notes(ran: list) -> list[str]:
    """Kendall's tau of our rows' order against the paper's, with a bootstrap over rows and seeds."""
    from zoo import evidence as E
    out = []
    for key, ref, label in (("bleu", "paper_bleu", "BLEU"), ("dev_ppl", "paper_ppl", "PPL")):
        pairs = [(getattr(r, ref), vals) for r in ran
                 if (vals := [v for x in r.run.seeds if (v := x.result.figure(key)) is not None])]
        if len(pairs) >= 4:
            tau, lo, hi = E.kendall_tau([p for p, _ in pairs], [v for _, v in pairs])
            if math.isnan(tau):  # as Spearman's cell: said in words, never printed as a figure
                out.append(f"Kendall tau ({label}, {len(pairs)} rows): undefined where one side is constant.")
            elif math.isnan(lo):
                out.append(f"Kendall tau ({label}, {len(pairs)} rows): {tau:+.2f}, 95% interval undefined (too few "
                           "distinct rows to resample).")
            else:
                out.append(f"Kendall tau ({label}, {len(pairs)} rows): {tau:+.2f}, 95% interval [{lo:+.2f}, "
                           f"{hi:+.2f}] (bootstrap over rows and seeds); an interval covering 0 is no evidence of "
                           "agreement.")
    return out
