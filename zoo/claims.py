"""The paper's Table 3 claims as data, what each needs of a run before it can be tested, and a
verdict on each from our runs, with its noise.

A claim compares two rows on one metric: "one head is worse than eight by 0.9 BLEU". Our difference
and its 95% interval come from zoo.stats (the seeds' variance plus the test-set noise they share,
paired by seed). Dev perplexity is the primary metric: its claims are one family, corrected by Holm's
method, so the chance that any of its verdicts is a false finding stays at 5%. BLEU is secondary, its
own Holm family: the same comparison on both metrics is one question asked twice (near-duplicates that
would only inflate one family), and the plan fixes which metric decides before the runs (zoo.analysis):

    directional claims   held (better on the paper's side), within noise (no finding), flipped
    ties                 equivalent (two one-sided tests: within the margin), different (beyond
                         the margin), inconclusive (neither)
    either               untestable at this budget: a precondition the paper's claim rests on is
                         not met by the run (the measured difference is still shown)

Holm rather than Benjamini-Hochberg: a reader takes each verdict on its own ("the paper's dropout
claim flipped"), so what must stay bounded is the chance that any one verdict is wrong (the
family-wise error), not the expected share of wrong ones among the findings.

Claims, margins and preconditions are written from the paper's text and Table 3 (../shared/paper),
never from our results. A precondition states what the claim needs, never how a result came out:
the capacity claims (depth, width, d_ff, heads, key size) have none, since a larger model should win
per token whenever training is well conditioned; a flip there is a finding about the recipe.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from zoo import paper
from zoo.stats import Estimate, Metric, Resampler, Side, holm

ALPHA = 0.05
PRIMARY: Metric = "ppl"  # the metric whose family decides (zoo.analysis.AnalysisPlan.primary); others secondary
DIRECTIONAL = ("held", "within noise", "flipped")
TIE = ("equivalent", "different", "inconclusive")
UNTESTABLE = "untestable at this budget"
VERDICTS = DIRECTIONAL + TIE + (UNTESTABLE,)


@dataclass(frozen=True)
class RowRun:
    """What a claim reads of one finished trial of a row (built from the store by the report)."""
    seed: int
    steps: int
    dev_ppl: float | None = None
    bleu_paper: float | None = None           # the paper's own BLEU (zoo.metrics.paper_bleu)
    dev_ppl_curve: tuple[float, ...] = ()     # dev perplexity at each evaluation, in step order
    train_loss_tail: float | None = None      # mean training loss (label-smoothed, nats) over the last tenth
    bleu_stats: np.ndarray | None = None      # (sentences, 10): sacreBLEU's per-sentence statistics
    nll_stats: np.ndarray | None = None       # (sentences, 2): per-sentence NLL (nats) and tokens
    bleu_splits: tuple[str, ...] = ("dev",)   # the splits whose sentences bleu_stats pools, in order
    nll_splits: tuple[str, ...] = ("dev",)    # and nll_stats's
    analysis: str | None = None               # the hash of the analysis plan it ran under (zoo.analysis)


Rows = Mapping[str, Sequence[RowRun]]  # row label -> its finished trials, one per seed


@dataclass(frozen=True)
class Precondition:
    """What a claim needs of the runs before it can be tested, in words, and the check from the store:
    `check(rows)` returns why it is not met (None when it is)."""
    needs: str
    check: Callable[[Rows], str | None]
    across_profiles: bool = False  # its rows may come from two profiles that differ only in the budget


def overfits(row: str, rise: float = 0.02, gap: float = 1.25) -> Precondition:
    """The row over-fits: its dev perplexity rose by `rise` from its lowest, or it sits `gap` x above the
    training perplexity (exp of the label-smoothed training loss, which only overstates the training
    perplexity, so the check is conservative), in at least half of the seeds."""
    def check(rows: Rows) -> str | None:
        runs = rows.get(row) or []
        if not runs:
            return f"{row} has not run"
        rising = [r for r in runs if len(r.dev_ppl_curve) > 1 and r.dev_ppl_curve[-1] > (1 + rise) * min(r.dev_ppl_curve)]
        gapped = [r for r in runs if r.dev_ppl and r.train_loss_tail is not None
                  and r.dev_ppl > gap * math.exp(r.train_loss_tail)]
        if 2 * max(len(rising), len(gapped)) >= len(runs):
            return None
        worst = max((r.dev_ppl_curve[-1] / min(r.dev_ppl_curve) - 1 for r in runs if r.dev_ppl_curve), default=0.0)
        return (f"{row} does not over-fit: its dev perplexity is lowest at or near the last step (at most "
                f"{100 * max(worst, 0):.1f}% above its lowest, needs {100 * rise:.0f}%) and no higher than "
                f"{gap:g}x its training perplexity, in {len(runs) - max(len(rising), len(gapped))} of {len(runs)} seeds")
    return Precondition(f"over-fitting in {row} (dev perplexity rising by {100 * rise:.0f}%+ from its lowest, or "
                        f"{gap:g}x+ the training perplexity)", check)


def step_ratio(longer: str, shorter: str, ratio: float) -> Precondition:
    """`longer` trained at least `ratio` x the steps of `shorter`."""
    def check(rows: Rows) -> str | None:
        a, b = rows.get(longer) or [], rows.get(shorter) or []
        if not a or not b:
            return "not run"
        sa, sb = min(r.steps for r in a), max(r.steps for r in b)
        if sa >= ratio * sb:
            return None
        return f"{longer} trained {sa} steps and {shorter} {sb}: the paper trains {longer} {ratio:g}x as long"
    return Precondition(f"{longer} trained {ratio:g}x the steps of {shorter}", check, across_profiles=True)


@dataclass(frozen=True)
class Claim:
    id: str
    group: str              # Table 3 group (A-E, big)
    text: str               # what the paper says, in its words where it has them
    metric: Metric
    better: str             # the row the paper finds better (for a tie: either row)
    worse: str
    tie: bool = False       # the paper finds no difference
    margin: float = 0.0     # a tie's equivalence margin, relative to the `worse` row's figure
    needs: tuple[Precondition, ...] = ()
    addon: str = ""         # the profile that gives its rows the budget its preconditions need

    @property
    def paper_delta(self) -> float:
        """The paper's difference, signed so that positive means `better` is better."""
        return delta(self.metric, _paper_value(self.better, self.metric), _paper_value(self.worse, self.metric))

    @property
    def rows(self) -> tuple[str, str]:
        return self.better, self.worse


def delta(metric: Metric, better: float, worse: float) -> float:
    """How much better `better` is: BLEU higher, perplexity lower."""
    return better - worse if metric == "bleu" else worse - better


def _paper_value(row: str, metric: Metric) -> float:
    r = paper.table3_row(row)
    return r["bleu"] if metric == "bleu" else r["ppl"]


def _both(id, group, text, better, worse, **kw) -> list[Claim]:
    return [Claim(f"{id}-{m}", group, text, m, better, worse, **kw) for m in ("bleu", "ppl")]


# "Nearly identical": the smallest differences the paper's text calls real are 0.4 BLEU of 25.8
# (1.6%, h=32 against h=16) and 0.1 PPL of 4.91 (2%), so a tie must be closer than that: 1.5%.
TIE_MARGIN = 0.015
# Section 5.2: base trained 100,000 steps, big 300,000.
BIG_STEPS_RATIO = 3.0

# Section 6.2 ("Model Variations") and 5.4 (label smoothing), with the rows of Table 3 they rest on.
CLAIMS: list[Claim] = [
    Claim("A-one-head-bleu", "A", "single-head attention is 0.9 BLEU worse than the best setting (h=8)",
          "bleu", "base", "A1"),
    *_both("A-too-many-heads", "A", "quality also drops off with too many heads (h=32 worse than h=16)", "A3", "A4"),
    *_both("B-small-dk", "B", "reducing the attention key size d_k hurts model quality (d_k 16 worse than 64)",
           "base", "B1"),
    *_both("C-depth", "C", "bigger models are better: 8 layers beat 2", "C3", "C1"),
    *_both("C-width", "C", "bigger models are better: d_model 1024 beats 256", "C5", "C4"),
    *_both("C-ffn", "C", "bigger models are better: d_ff 4096 beats 1024", "C7", "C6"),
    *_both("D-dropout", "D", "dropout is very helpful in avoiding over-fitting (P_drop 0.1 beats 0)", "base", "D1",
           needs=(overfits("D1"),), addon="ablation_dropout"),
    Claim("D-smoothing-ppl", "D", "label smoothing hurts perplexity, as the model learns to be more unsure "
          "(eps_ls 0 has the lower perplexity)", "ppl", "D3", "base"),
    Claim("D-smoothing-bleu", "D", "... but improves accuracy and BLEU score (eps_ls 0.1 beats 0)", "bleu",
          "base", "D3"),
    *_both("E-positions", "E", "learned positional embeddings give nearly identical results to sinusoids",
           "E", "base", tie=True, margin=TIE_MARGIN),
    *_both("big", "big", "the big model beats base (trained 3x as long)", "big", "base",
           needs=(step_ratio("big", "base", BIG_STEPS_RATIO),), addon="ablation_big"),
]


# ---------------------------------------------------------------------------------------------
# Comparing two rows, and the verdicts


@dataclass(frozen=True)
class Comparison:
    """One claim measured: our estimate (None, with `missing` saying why), the precondition that
    fails (`untestable`, empty when all hold), and the worse row's figure for a tie's margin."""
    claim: Claim
    estimate: Estimate | None = None
    missing: str = ""
    untestable: str = ""
    level: float | None = None
    sentences: str = ""     # what was resampled: "seeds and 1014 sentences", or "seeds only (...)"
    source: str = ""        # the add-on profile its rows came from (empty: the report's main profile)
    rows: Rows | None = field(default=None, repr=False, compare=False)  # the rows it was measured on

    @property
    def margin(self) -> float | None:
        return None if not self.claim.tie or self.level is None else self.claim.margin * abs(self.level)


def side(claim: Claim, runs: Sequence[RowRun]) -> Side | None:
    """One row's trials for the claim's metric: per-sentence statistics when every seed kept them,
    else per-seed figures (None when some seed has neither)."""
    runs = sorted(runs, key=lambda r: r.seed)
    seeds = tuple(r.seed for r in runs)
    per_sentence = [r.bleu_stats if claim.metric == "bleu" else r.nll_stats for r in runs]
    if all(s is not None for s in per_sentence) and len({len(s) for s in per_sentence}) == 1:
        return Side(seeds, stats=np.stack(per_sentence).astype(float))
    if claim.metric == "ppl" and all(r.dev_ppl for r in runs):
        return Side(seeds, figures=np.array([r.dev_ppl for r in runs]))
    return None


def compare(claim: Claim, rows: Rows, resampler: Callable[[int], Resampler]) -> Comparison:
    """Measure one claim from the rows' trials; `resampler(n)` gives the report's shared resampler
    for n sentences."""
    runs = [rows.get(r) or [] for r in claim.rows]
    if not all(runs):
        return Comparison(claim, missing="not run")
    common = {r.seed for r in runs[0]} & {r.seed for r in runs[1]}
    if len(common) >= 2:  # compared seed by seed on the seeds both rows ran (a row may have more)
        runs = [[r for r in side if r.seed in common] for side in runs]
    if min(map(len, runs)) < 2:
        return Comparison(claim, missing="needs 2+ seeds")
    sides = [side(claim, r) for r in runs]
    if any(s is None for s in sides):
        what = "no per-sentence scores (run before they were kept)" if claim.metric == "bleu" else "no dev perplexity"
        return Comparison(claim, missing=what)
    b, w = sides
    if b.stats is not None and w.stats is not None and b.stats.shape[1] != w.stats.shape[1]:
        return Comparison(claim, missing="rows scored on different sentences")
    n = b.stats.shape[1] if b.stats is not None and w.stats is not None else 0
    est = resampler(n).compare(claim.metric, b, w)
    pool = runs[0][0].bleu_splits if claim.metric == "bleu" else runs[0][0].nll_splits
    what = f"seeds and {n} sentences ({' + '.join(pool)})" if n else         "seeds only (this store keeps no per-sentence dev likelihoods: an exact paired t interval)" if claim.metric == "ppl" else "seeds only"
    reasons = [why for p in claim.needs if (why := p.check(rows))]
    return Comparison(claim, est, untestable="; ".join(reasons), level=float(np.mean(w.full(claim.metric))),
                      sentences=what, rows=rows)


@dataclass(frozen=True)
class Verdict:
    comparison: Comparison
    verdict: str                    # one of VERDICTS, or the reason there is none ("not run", ...)
    p: float | None = None          # the test's p-value (directional: no difference; tie: TOST or beyond)
    p_holm: float | None = None     # Holm-adjusted within its family: the tested claims of its metric
    family: str = ""                # "primary (ppl)" or "secondary (bleu)" (empty: not tested)

    @property
    def claim(self) -> Claim:
        return self.comparison.claim

    @property
    def estimate(self) -> Estimate | None:
        return self.comparison.estimate

    @property
    def reason(self) -> str:
        return self.comparison.untestable


def _test(c: Comparison) -> tuple[float, str]:
    """The claim's p-value and the verdict it gives when significant."""
    e = c.estimate
    if not c.claim.tie:
        return e.p, "held" if e.delta > 0 else "flipped"
    p_eq, p_out = e.p_equivalent(c.margin), e.p_beyond(c.margin)
    return (p_eq, "equivalent") if p_eq <= p_out else (p_out, "different")


def family(metric: Metric, primary: Metric = PRIMARY) -> str:
    """The Holm family a claim on `metric` belongs to."""
    return f"{'primary' if metric == primary else 'secondary'} ({metric})"


def judge(comparisons: Sequence[Comparison], alpha: float = ALPHA, primary: Metric = PRIMARY) -> list[Verdict]:
    """Verdicts for a report's claims: one Holm family per metric (the primary one's decides) over every
    claim with an estimate whose preconditions hold."""
    tested = [c for c in comparisons if c.estimate is not None and not c.untestable]
    outcome = {id(c): _test(c) for c in tested}
    adjusted = {}
    for metric in {c.claim.metric for c in tested}:
        members = [c for c in tested if c.claim.metric == metric]
        adjusted.update(zip(map(id, members), holm([outcome[id(c)][0] for c in members], alpha)))
    out = []
    for c in comparisons:
        if c.estimate is None:
            out.append(Verdict(c, c.missing))
        elif c.untestable:
            out.append(Verdict(c, UNTESTABLE))
        else:
            (p, finding), q = outcome[id(c)], float(adjusted[id(c)])
            v = finding if q < alpha else ("inconclusive" if c.claim.tie else "within noise")
            out.append(Verdict(c, v, p, q, family(c.claim.metric, primary)))
    return out


@dataclass
class Tally:
    """Verdicts counted by row comparison (two rows; several claims when the paper compares them on
    both metrics), with the per-metric counts beneath."""
    rows: dict[tuple[str, str], list[Verdict]] = field(default_factory=dict)

    @classmethod
    def of(cls, verdicts: Sequence[Verdict]) -> "Tally":
        t = cls()
        for v in verdicts:
            t.rows.setdefault(tuple(sorted(v.claim.rows)), []).append(v)
        return t

    @staticmethod
    def row_verdict(vs: Sequence[Verdict]) -> str:
        """One word for a row comparison: its metrics' verdict when they agree, else 'mixed'."""
        kinds = {v.verdict for v in vs}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for vs in self.rows.values():
            k = self.row_verdict(vs)
            out[k] = out.get(k, 0) + 1
        return out

    def by_metric(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for vs in self.rows.values():
            for v in vs:
                m = out.setdefault(v.claim.metric, {})
                m[v.verdict] = m.get(v.verdict, 0) + 1
        return out

    def text(self) -> str:
        """'10 row comparisons: 2 held, ...; by metric: BLEU 3 held, ...; PPL ...'"""
        def words(d):
            order = [*VERDICTS, "mixed"]
            return ", ".join(f"{n} {k}" for k, n in sorted(d.items(), key=lambda kv: (
                order.index(kv[0]) if kv[0] in order else len(order), kv[0])))
        metrics = self.by_metric()
        return (f"{len(self.rows)} row comparisons: {words(self.counts())}. By metric: "
                + "; ".join(f"{m.upper() if m == 'ppl' else 'BLEU'} ({sum(d.values())} claims): {words(d)}"
                            for m, d in sorted(metrics.items())) + ".")


def sentence_stats(hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """sacreBLEU's per-sentence sufficient statistics, as a run stores them (zoo.metrics.bleu_stats)."""
    from zoo.metrics import bleu_stats
    return np.asarray(bleu_stats(list(hyps), list(refs)), dtype="float32")


def kendall_tau(paper_values: Sequence[float], ours: Sequence[Sequence[float]], samples: int = 1000,
                seed: int = 12345) -> tuple[float, float, float]:
    """Kendall tau between the paper's figures and ours (mean over seeds), with a 95% interval from
    resampling each row's seeds and the rows themselves."""
    from scipy.stats import kendalltau
    p = np.asarray(paper_values, float)
    means = np.array([np.mean(o) for o in ours])
    tau = kendalltau(p, means).statistic
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(samples):
        rows = rng.integers(len(p), size=len(p))
        m = np.array([np.mean(rng.choice(ours[r], size=len(ours[r]))) for r in rows])
        if len(set(rows)) > 2:
            taus.append(kendalltau(p[rows], m).statistic)
    taus = [t for t in taus if np.isfinite(t)]  # a resample of tied rows has no tau
    if not taus:  # too few distinct rows to resample: no interval rather than a numpy warning
        return float(tau), math.nan, math.nan
    lo, hi = np.percentile(taus, [2.5, 97.5])
    return float(tau), float(lo), float(hi)
