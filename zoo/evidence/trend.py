"""The scale trend: does a comparison's effect move toward the paper's as the model grows?

The same two Table 3 rows are compared at several widths (one profile per width, zoo.evidence.analysis.Trend). At
each width the difference is relative: log(PPL worse / PPL better), the mean per-token NLL gap in nats,
pooled over every sentence the trials scored, positive when the paper's better row is better here too.
Its noise is zoo.evidence.stats's: the per-seed differences' variance over seeds (paired by seed) plus the
test-set noise the seeds share, from one bootstrap of the sentences.

Across widths the estimate is the least-squares slope over x = log2(d_model), equal weight per width:
slope = sum_w c_w delta_w with c_w = (x_w - mean x) / sum (x - mean x)^2, so its variance is

    sum_w c_w^2 v_seed,w                        the widths' seed terms (their trials are independent)
  + sum_w c_w^2 v_shared,w                      each width's test-set noise shared by its seeds
  + 2 sum_{w<v} c_w c_v cov(mean_w, mean_v)     and across widths: every trial is scored on the same
                                                sentences, so one hard sentence moves every width

(the last two from the same sentence resamples), with Welch-Satterthwaite degrees of freedom over the
widths' seed terms. "Toward the paper": the slope's sign is that of the paper's difference minus the
line at the widths' centre (the mean of the per-width differences), and its Holm-adjusted p over the
comparisons is below alpha; the opposite sign: away; else: can't tell.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats as st

from zoo import paper
from zoo.evidence.stats import Estimate, Resampler, holm

__all__ = ["AtWidth", "Seeded", "Slope", "fit_trend"]  # what it lends outside its package (the door serves these)

TOWARD, AWAY, CANT_TELL = "toward the paper", "away from the paper", "can't tell"


@dataclass(frozen=True)
class Seeded:
    """One row's finished trial at one width: its seed and per-sentence [NLL nats, tokens]."""
    seed: int
    nll_stats: np.ndarray


@dataclass(frozen=True)
class AtWidth:
    """One comparison at one width: the relative difference with its noise, and its verdict there."""
    profile: str
    d_model: int
    estimate: Estimate | None        # None: fewer than 2 seeds both rows ran (`missing` says why)
    missing: str = ""
    p_holm: float | None = None      # Holm over the comparisons at this width
    verdict: str = ""                # held / within noise / flipped; a tie: equivalent / different / inconclusive


@dataclass(frozen=True)
class Slope:
    """One comparison across the widths: the slope of its relative difference over log2(d_model)."""
    name: str
    better: str
    worse: str
    paper_delta: float               # log(PPL worse / PPL better) in the paper's Table 3
    tie: bool                        # the paper finds no difference
    widths: tuple[AtWidth, ...]
    slope: float | None = None       # per doubling of d_model (None: a width is missing)
    se: float | None = None
    df: float | None = None
    lo: float | None = None          # 95% interval, unadjusted
    hi: float | None = None
    centre: float | None = None      # the fitted line at the widths' centre
    p: float | None = None
    p_holm: float | None = None      # Holm over the comparisons' slopes
    verdict: str = ""                # TOWARD, AWAY, CANT_TELL, or why there is none

    @property
    def direction(self) -> int:
        """+1 when the paper's difference lies above the line's centre, -1 below (0: on it or unknown)."""
        return 0 if self.centre is None else int(np.sign(self.paper_delta - self.centre))


def paper_delta(better: str, worse: str) -> float:
    """The paper's relative difference: log(PPL worse / PPL better), Table 3's dev perplexities."""
    return math.log(paper.table3_row(worse)["ppl"] / paper.table3_row(better)["ppl"])


def _log_ppl(stats: np.ndarray) -> float:
    return float(stats[:, 0].sum() / stats[:, 1].sum())


def _width(counts: np.ndarray, better: Sequence[Seeded], worse: Sequence[Seeded], alpha: float):
    """The paired per-seed differences at one width: (Estimate, per-resample centred mean difference)."""
    b, w = ({r.seed: r for r in side} for side in (better, worse))
    seeds = sorted(set(b) & set(w))
    if len(seeds) < 2:
        return None, None
    d = np.array([_log_ppl(w[s].nll_stats) - _log_ppl(b[s].nll_stats) for s in seeds])
    S = len(seeds)
    v_seed = float(d.var(ddof=1) / S)
    # every seed of both rows in one product over the counts (read once, not twice a seed: the same numbers)
    both = np.concatenate([r[s].nll_stats for r in (w, b) for s in seeds], axis=1)  # (sentences, 2S x [NLL, tokens])
    sums = (counts @ both).reshape(len(counts), 2 * S, 2)
    log_ppl = sums[..., 0] / sums[..., 1]
    g = log_ppl[:, :S] - log_ppl[:, S:]  # (resamples, seeds)
    g = g - g.mean(0)
    shared = (g.sum(1) ** 2 - (g ** 2).sum(1)) / (S * (S - 1))  # per resample: mean over seed pairs s != t
    v_shared = max(float(shared.mean()), 0.0)
    se = math.sqrt(v_seed + v_shared)
    q = float(st.t.ppf(1 - alpha / 2, S - 1))
    delta = float(d.mean())
    mc = q * float(shared.std()) / math.sqrt(len(shared)) / (2 * se) if se > 0 else 0.0
    est = Estimate(delta, se, float(S - 1), delta - q * se, delta + q * se, mc, (S, S), True, counts.shape[1],
                   counts.shape[0], math.sqrt(v_seed), math.sqrt(v_shared))
    return est, g.mean(1)


def _width_verdicts(ats: list[AtWidth], ties: list[bool], margin: float, alpha: float) -> list[AtWidth]:
    """Holm over the comparisons at one width (directional claims and ties, as zoo.evidence.claims judges them)."""
    tested = [i for i, a in enumerate(ats) if a.estimate is not None]
    outcome = {}
    for i in tested:
        e = ats[i].estimate
        if ties[i]:
            p_eq, p_out = e.p_equivalent(margin), e.p_beyond(margin)
            outcome[i] = (p_eq, "equivalent") if p_eq <= p_out else (p_out, "different")
        else:
            outcome[i] = (e.p, "held" if e.delta > 0 else "flipped")
    adjusted = dict(zip(tested, holm([outcome[i][0] for i in tested], alpha))) if tested else {}
    out = []
    for i, a in enumerate(ats):
        if i not in outcome:
            out.append(a)
            continue
        q = float(adjusted[i])
        none = "inconclusive" if ties[i] else "within noise"
        out.append(AtWidth(a.profile, a.d_model, a.estimate, a.missing, q, outcome[i][1] if q < alpha else none))
    return out


def fit_trend(rows: Mapping[str, Mapping[str, Sequence[Seeded]]], d_model: Mapping[str, int],
          comparisons: Mapping[str, tuple[str, str]], alpha: float = 0.05, tie_margin: float = 0.015,
          resamples: int = 10_000, bootstrap_seed: int = 2017, untestable: Mapping[str, str] | None = None
          ) -> list[Slope]:
    """Each comparison's slope over log2(d_model) with its verdict, and its difference at each width.

    rows: profile (one per width, narrowest first) -> Table 3 row -> its finished trials; d_model: each
    profile's width; comparisons: name -> (the paper's better row, the worse). Every trial must be scored
    on the same sentences (one bootstrap serves them all). untestable: profile -> why no claim can be tested
    on its rows (its `untestable:`): that width gets no difference, so no slope crosses it."""
    profiles = list(rows)
    sizes = {len(r.nll_stats) for by_row in rows.values() for side in by_row.values() for r in side}
    if len(sizes) > 1:
        raise ValueError(f"the trials were scored on different numbers of sentences ({sorted(sizes)}): one "
                         "bootstrap cannot pair them")
    n = sizes.pop() if sizes else 0
    counts = Resampler(n, resamples, bootstrap_seed + n).counts if n else np.zeros((resamples, 0))
    margin = math.log1p(tie_margin)  # relative to the worse row's perplexity, in log terms
    names = list(comparisons)
    ties = [paper_delta(*comparisons[c]) == 0 for c in names]
    per_width: dict[str, list[AtWidth]] = {}
    means: dict[tuple[str, str], np.ndarray] = {}
    for p in profiles:
        ats = []
        for c in names:
            better, worse = comparisons[c]
            b, w = rows[p].get(better) or [], rows[p].get(worse) or []
            why = (untestable or {}).get(p)
            est, m = _width(counts, b, w, alpha) if b and w and not why else (None, None)
            missing = "" if est is not None else f"untestable at this budget: {why}" if why else (
                "not run" if not (b and w) else "needs 2+ seeds both rows ran")
            ats.append(AtWidth(p, d_model[p], est, missing))
            if m is not None:
                means[(p, c)] = m
        per_width[p] = _width_verdicts(ats, ties, margin, alpha)
    slopes = [_slope(c, comparisons[c], tie, [per_width[p][i] for p in profiles],
                     [means.get((p, c)) for p in profiles], alpha)
              for i, (c, tie) in enumerate(zip(names, ties))]
    tested = [i for i, s in enumerate(slopes) if s.p is not None]
    adjusted = holm([slopes[i].p for i in tested], alpha) if tested else []
    out = list(slopes)
    for i, q in zip(tested, adjusted):
        s = slopes[i]
        found = float(q) < alpha and s.direction != 0
        verdict = (TOWARD if np.sign(s.slope) == s.direction else AWAY) if found else CANT_TELL
        out[i] = dataclasses.replace(s, p_holm=float(q), verdict=verdict)
    return out


def _slope(name: str, pair: tuple[str, str], tie: bool, ats: list[AtWidth], means: list, alpha: float) -> Slope:
    base = Slope(name, pair[0], pair[1], paper_delta(*pair), tie, tuple(ats))
    if any(a.estimate is None for a in ats):
        missing = sorted({a.missing for a in ats if a.estimate is None})
        return dataclasses.replace(base, verdict="not at every width: " + "; ".join(missing))
    x = np.log2([a.d_model for a in ats]).astype(float)
    if len(set(x)) < 2:
        return dataclasses.replace(base, verdict="the widths are not different")
    c = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    e = [a.estimate for a in ats]
    slope = float(sum(ci * ei.delta for ci, ei in zip(c, e)))
    parts = [ci ** 2 * ei.seed_se ** 2 for ci, ei in zip(c, e)]
    v_seed = sum(parts)
    v_shared = sum(ci ** 2 * ei.sentence_se ** 2 for ci, ei in zip(c, e))
    for i in range(len(ats)):
        for j in range(i + 1, len(ats)):
            v_shared += 2 * c[i] * c[j] * float(np.mean(means[i] * means[j]))
    se = math.sqrt(v_seed + max(v_shared, 0.0))
    denom = sum(pi ** 2 / ei.df for pi, ei in zip(parts, e) if pi > 0)
    df = v_seed ** 2 / denom if denom > 0 else float(min(ei.df for ei in e))
    q = float(st.t.ppf(1 - alpha / 2, df))
    t = slope / se if se > 0 else (0.0 if slope == 0 else math.copysign(math.inf, slope))
    centre = float(np.mean([ei.delta for ei in e]))
    return dataclasses.replace(base, slope=slope, se=se, df=df, lo=slope - q * se, hi=slope + q * se, centre=centre,
                               p=float(2 * st.t.sf(abs(t), df)))
