"""Table 3's judgement sections: each of the paper's claims with our difference, its interval and a
verdict (zoo.claims, zoo.stats), and the rank agreement (Spearman, Kendall) of our rows with the paper's.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import pandas as pd
from scipy.stats import spearmanr

from zoo import paper
from zoo.reports.cells import OLDER, Section, _frame, truncated
from zoo.reports.runs import Runs


CLAIM_COLUMNS = [("verdict", "verdict"), ("claim", "the paper says"), ("claim", "rows"),
                 ("paper", "Δ"), ("measured", "Δ"), ("measured", "95% interval"), ("measured", "MC error"),
                 ("measured", "p (Holm)"),
                 ("measured", "Δ, paper's BLEU"), ("measured", "seeds")]


def claims_section(runs: Runs, resamples: int | None = None, bootstrap_seed: int | None = None) -> Section:
    """Each of the paper's Table 3 claims (zoo.claims) with our difference, its interval and a verdict."""
    from zoo import claims as C, stats as S
    resamples = resamples or S.RESAMPLES
    bootstrap_seed = S.BOOTSTRAP_SEED if bootstrap_seed is None else bootstrap_seed
    rows = {p: claim_rows(runs, p) for p in runs.profiles}
    resamplers: dict[int, S.Resampler] = {}

    def resampler(n: int) -> S.Resampler:  # one per number of sentences (0: seeds only), shared by all claims
        if n not in resamplers:
            resamplers[n] = S.Resampler(n, resamples, bootstrap_seed + n)
        return resamplers[n]

    verdicts = C.judge([_comparison(runs, rows, c, resampler) for c in C.CLAIMS])
    frame_rows, index, mc = [], [], 0.0
    for v in verdicts:
        c, e = v.claim, v.estimate
        mc = max(mc, e.mc_error if e else 0.0)
        why = f"{v.verdict}: {v.reason}" if v.reason else v.verdict
        unit = "BLEU" if c.metric == "bleu" else "PPL"
        frame_rows.append([
            why, f"{c.group}: {c.text} ({unit})",
            f"{c.better} {'≈' if c.tie else '>'} {c.worse}" + (f" ({v.comparison.source})" if v.comparison.source else ""),
            round(c.paper_delta, 2), e and e.delta, e and f"[{e.lo:+.2f}, {e.hi:+.2f}]", e and f"±{e.mc_error:.3f}",
            None if v.p_holm is None else f"{v.p_holm:.3g}", _paper_metric_delta(v.comparison.rows or {}, c) if e else None,
            e and "{} / {}".format(*e.seeds)])
        index.append(c.id)
    frame = _frame(frame_rows, index, CLAIM_COLUMNS, names=("claim",))
    tally = C.Tally.of(verdicts)
    tested = [v for v in verdicts if v.p_holm is not None]
    resampled = sorted({v.comparison.sentences for v in verdicts if v.estimate})
    margins = sorted({f"{100 * v.claim.margin:g}%" for v in verdicts if v.claim.tie})
    notes = [
        "Tally: " + tally.text(),
        f"Statistics: {resamples:,} resamples of a hierarchical bootstrap (Multi-Bootstrap, Sellam et al. "
        f"2022; bootstrap seed {bootstrap_seed}, `zoo report --bootstrap-seed N`): each resample draws the "
        "seeds with replacement and the scored sentences with replacement (the dev split's, pooled with "
        "the other splits the profile scores, named under 'Resampled here'), and recomputes both rows' corpus "
        "BLEU or perplexity on the drawn sentences. Rows run on the same seeds are compared seed by seed "
        "(seed s gives every row the same data order), and both rows always on the same sentences. "
        "Resampled here: " + ("; ".join(resampled) or "nothing yet") + ". The resamples give the standard "
        "error of the difference; the 95% interval is Δ ± t × se, the seed part of the variance unbiased "
        "and the seeds' degrees of freedom (S - 1 for rows compared seed by seed: the seeds are the "
        "independent units) (a percentile bootstrap of 3 seeds covers a "
        "null effect only about 80% of the time). MC error: the Monte Carlo error of each interval end from "
        f"the finite resamples (at most {mc:.3f} here).",
        f"Multiple comparisons: Holm's correction across the {len(tested)} claims tested in this report "
        "(one family), so the chance that any verdict here is a false finding is at most 5%; Holm rather "
        "than Benjamini-Hochberg because each verdict is read on its own. p (Holm) is that adjusted "
        "p-value; the interval is per claim, unadjusted.",
        "Verdicts. A claim that one row is better: held (Holm p < 0.05, Δ on the paper's side), flipped "
        "(Holm p < 0.05, the other side), within noise (no finding either way). A tie (the paper: nearly "
        "identical): equivalent (two one-sided tests show |Δ| is within the margin, "
        + (", ".join(margins) or "none") + " of the second row's figure: closer than the smallest difference "
        "the paper calls real, 0.4 BLEU of 25.8 and 0.1 PPL of 4.91), different (|Δ| beyond the margin), "
        "inconclusive (neither). Untestable at this budget: a precondition written with the claim, from "
        "the paper, before any run (over-fitting for the dropout claim, the paper's 3x steps for big) "
        "is not met by these runs; the measured Δ is still shown, and such a claim is not in the Holm family.",
        "Each claim compares two rows on one metric, written from the paper's text (section 6.2, 5.4) and "
        "its Table 3, never from our results. Δ: how much better the first row is (BLEU higher, PPL "
        "lower), the mean over seeds. Rows stopped early by a time limit (truncated) are excluded."]
    return Section("Claims", frame, notes, verdicts)


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
    """Per Table 3 row, its finished seeds as zoo.claims.RowRun (truncated rows left out), of `profile`
    (default: the main one)."""
    from zoo import claims as C
    out = {}
    for row, *_ in paper.TABLE3:
        t = runs.pick(3, row, profile=profile)
        if not t or not t.finished or truncated(t):
            continue
        got = []
        for x in runs.seeds(t):
            m = x.result
            points = runs.points(x)
            curve = tuple(p.dev_ppl for p in points if p.dev_ppl)
            losses = [p.loss for p in points if p.loss is not None]
            tail = losses[-max(1, len(losses) // 10):]
            (bleu, bleu_splits), (nll, nll_splits) = _pooled(x, "bleu"), _pooled(x, "nll")
            got.append(C.RowRun(
                seed=x.seed or 0, steps=m.steps_done, dev_ppl=m.dev_ppl,
                bleu_paper=m.primary.bleu_paper if m.primary else None,
                dev_ppl_curve=curve, train_loss_tail=sum(tail) / len(tail) if tail else None,
                bleu_stats=bleu, nll_stats=nll, bleu_splits=bleu_splits, nll_splits=nll_splits))
        out[row] = got
    return out


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


BUDGET = {"steps", "checkpoint_every", "eval_every", "seed"}  # what an add-on profile may change


def _comparison(runs: Runs, by_profile: dict, c, resampler):
    """The claim measured on the first source of its rows that can test it: the main profile, then each
    add-on (`zoo report --addon`), then, for a claim resting on a step ratio (big: 3x base), its rows
    from two of them that differ only in the budget. A source where a precondition fails is kept only
    when none meets them all (the claim is then untestable, and says which add-on would test it)."""
    from zoo import claims as C
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
    if first.untestable and c.addon and c.addon not in profiles[1:]:
        first = dataclasses.replace(first, untestable=f"{first.untestable}; the add-on profile {c.addon} gives "
                                    f"these rows that budget (`zoo report --addon {c.addon}` reads its runs)")
    return first


def _compare_from(runs: Runs, by_profile: dict, c, resampler, pb, pw):
    from zoo import claims as C
    picked = [runs.pick(3, c.better, profile=pb), runs.pick(3, c.worse, profile=pw)]
    if not all(t and t.finished for t in picked):
        return C.Comparison(c, missing="not run")
    if any(truncated(t) for t in picked):
        return C.Comparison(c, missing="excluded: truncated")
    if picked[0].profile != picked[1].profile and not _budget_only(*picked):
        return C.Comparison(c, missing="rows ran under profiles that differ in more than the budget")
    rows = {c.better: by_profile[pb].get(c.better), c.worse: by_profile[pw].get(c.worse)}
    comp = C.compare(c, rows, resampler)
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


def _kendall_notes(per_seed: dict) -> list[str]:
    from zoo import claims as C
    out = []
    for key, label in (("bleu", "BLEU"), ("dev_ppl", "PPL")):
        pairs = per_seed[key]
        if len(pairs) >= 4:
            tau, lo, hi = C.kendall_tau([p for p, _ in pairs], [v for _, v in pairs])
            out.append(f"Kendall tau ({label}, {len(pairs)} rows): {tau:+.2f}, 95% interval [{lo:+.2f}, {hi:+.2f}] "
                       "(bootstrap over rows and seeds); an interval covering 0 is no evidence of agreement.")
    return out


def spearman_frame(measured: list[tuple]) -> pd.DataFrame:
    """measured: (group, paper BLEU, our BLEU, paper PPL, our PPL) per row that ran."""
    def rho(pairs):
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if len(pairs) < 3:
            return None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant input: rho is undefined (nan), said in the cell
            r = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        return float(r.statistic), float(r.pvalue)

    groups = [(title, [x for x in measured if x[0] == g]) for g, title in paper.TABLE3_GROUPS.items()]
    rows, index = [], []
    for title, xs in groups + [("overall", measured)]:
        rb, pb = rho([(x[1], x[2]) for x in xs])
        rp, pp = rho([(x[3], x[4]) for x in xs])
        n = len(xs)
        if n < 3:
            note = f"n = {n}: too few rows ran (needs 3)"
        elif any(v is not None and math.isnan(v) for v in (rb, rp)):
            note = "undefined where one side is constant"
        else:
            note = ""
        rows.append([n, rb, pb, rp, pp, note])
        index.append(title)
    cols = [("", "rows ran"), ("BLEU", "rho"), ("BLEU", "p"), ("PPL", "rho"), ("PPL", "p"), ("", "note")]
    return _frame(rows, index, cols, names=("group",))
