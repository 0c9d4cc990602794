"""The paper's Table 3 claims (read from specs/claims/paper.yaml, as a spec's `claims:` block is read),
what each needs of a run before it can be tested, and a verdict on each from our runs, with its noise.

A claim compares two rows on one metric: "one head is worse than eight by 0.9 BLEU". Our difference
and its 95% interval come from zoo.evidence.stats (the seeds' variance plus the test-set noise they share,
paired by seed). Dev perplexity is the primary metric: its claims are one family, corrected by Holm's
method, so the chance that any of its verdicts is a false finding stays at 5%. BLEU is secondary, its
own Holm family: the same comparison on both metrics is one question asked twice (near-duplicates that
would only inflate one family), and the plan fixes which metric decides before the runs (zoo.evidence.analysis):

    directional claims   held (better on the paper's side), within noise (no finding), flipped
    ties                 equivalent (two one-sided tests: within the margin), different (beyond
                         the margin), inconclusive (neither)
    either               untestable at this budget: a precondition the paper's claim rests on is
                         not met by the run, or a row ran at a profile too small for any claim
                         (its `untestable:`); the measured difference is still shown

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
from pydantic import Field, ValidationError, model_validator

from zoo import paper
from zoo.config import ClaimSpec, CrossFieldError, Strict
from zoo.spec import read_yaml, specs_dir
from zoo.evidence.stats import Estimate, Metric, Resampler, Side, holm

__all__ = ["ALPHA", "BOUNDARY", "CLAIMS", "Claim", "Comparison", "MC_RANGE", "REFINE", "RowRun", "TIE_MARGIN", "Tally", "UNTESTABLE",
           "VERDICTS", "compare", "from_specs", "judge", "kendall_tau", "refiner"]  # what it lends outside its package (the door serves these)

ALPHA = 0.05
PRIMARY: Metric = "ppl"  # the metric whose family decides (a plan's `primary`, zoo.evidence.analysis); others secondary
DIRECTIONAL = ("held", "within noise", "flipped")
TIE = ("equivalent", "different", "inconclusive")
UNTESTABLE = "untestable at this budget"
# a Holm p that another bootstrap seed could put on either side of the level, even after REFINE's resamples
BOUNDARY = "at the boundary"
VERDICTS = DIRECTIONAL + TIE + (BOUNDARY, UNTESTABLE)
MC_RANGE = 3.0     # Monte Carlo errors either way: the test-set variances another bootstrap seed could give
REFINE = (4, 16)   # the resamples a verdict near its level is judged again with, x the report's


@dataclass(frozen=True)
class RowRun:
    """What a claim reads of one finished trial of a row (built from the store by the report)."""
    seed: int
    steps: int
    dev_ppl: float | None = None
    bleu_paper: float | None = None           # the paper's own BLEU (zoo.evidence.metrics.paper_bleu)
    dev_ppl_curve: tuple[float, ...] = ()     # dev perplexity at each evaluation, in step order
    train_loss_tail: float | None = None      # mean training loss (label-smoothed, nats) over the last tenth
    bleu_stats: np.ndarray | None = None      # (sentences, 10): sacreBLEU's per-sentence statistics
    nll_stats: np.ndarray | None = None       # (sentences, 2): per-sentence NLL (nats) and tokens
    bleu_splits: tuple[str, ...] = ("dev",)   # the splits whose sentences bleu_stats pools, in order
    nll_splits: tuple[str, ...] = ("dev",)    # and nll_stats's
    analysis: str | None = None               # the hash of the analysis plan it ran under (zoo.evidence.analysis)
    untestable: str = ""                      # why its profile can test no claim ("": it can), in words


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
    source: str = ""        # the spec file of a spec's claim ("" for the paper's)

    @property
    def paper_delta(self) -> float:
        """The paper's difference, signed so that positive means `better` is better (NaN when a row is
        not the paper's)."""
        return delta(self.metric, _paper_value(self.better, self.metric), _paper_value(self.worse, self.metric))

    @property
    def rows(self) -> tuple[str, str]:
        return self.better, self.worse


def delta(metric: Metric, better: float, worse: float) -> float:
    """How much better `better` is: BLEU higher, perplexity lower."""
    return better - worse if metric == "bleu" else worse - better


def _paper_value(row: str, metric: Metric) -> float:
    r = paper.table3_row(row)  # None for a spec's own row: the paper has no figure for it
    return math.nan if r is None else r["bleu"] if metric == "bleu" else r["ppl"]


# A spec's tie without a margin gets the paper's (specs/claims/paper.yaml says why 1.5%).
TIE_MARGIN = 0.015
PAPER_CLAIMS = specs_dir() / "claims" / "paper.yaml"


class StepRatio(Strict):
    longer: str
    shorter: str
    ratio: float = Field(gt=1)


class Need(Strict):
    """One precondition by name: `{overfits: ROW}` or `{step_ratio: {longer: ROW, shorter: ROW, ratio: X}}`."""
    overfits: str | None = None
    step_ratio: StepRatio | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.overfits is None) == (self.step_ratio is None):
            raise ValueError("a need names one precondition: `overfits: ROW` or `step_ratio: {longer, shorter, ratio}`")
        return self

    def precondition(self) -> Precondition:
        return overfits(self.overfits) if self.overfits is not None else step_ratio(**dict(self.step_ratio))


class PaperClaim(ClaimSpec):
    """A claim of specs/claims/paper.yaml: a spec's claim plus its Table 3 group, what it needs of a run,
    the add-on profile that gives it that, and `both: true` for one claim per metric."""
    metric: Literal["dev_ppl", "bleu"] | None = None
    both: bool = False
    group: str
    needs: list[Need] = []
    addon: str = ""

    @model_validator(mode="after")
    def _metric_or_both(self):
        if (self.metric is None) != self.both:
            raise CrossFieldError(("metric", "both"), "a claim has a `metric:` or `both: true`, one of the two")
        return self

    def expand(self) -> list[PaperClaim]:
        """`both: true` as its two claims, BLEU then perplexity (ids <id>-bleu, <id>-ppl)."""
        if not self.both:
            return [self]
        return [self.model_copy(update={"id": f"{self.id}-{m}", "metric": metric, "both": False})
                for m, metric in (("bleu", "bleu"), ("ppl", "dev_ppl"))]


class PaperClaims(Strict):
    claims: list[PaperClaim]


def from_specs(claims: Sequence[ClaimSpec], group: str, source: str = "") -> list[Claim]:
    """Claims from a spec's `claims:` (or the paper file's), in `group`; `source`: the spec file they came
    from. A PaperClaim brings its own group, preconditions and add-on."""
    out = []
    for c in claims:
        metric: Metric = "ppl" if c.metric == "dev_ppl" else "bleu"
        (a, b), tie = c.rows, c.tie is not None
        what = "dev perplexity" if metric == "ppl" else "BLEU"
        out.append(Claim(c.id, getattr(c, "group", group), c.text or f"{a} {'ties' if tie else 'beats'} {b} on {what}",
                         metric, a, b, tie=tie, margin=(c.margin or TIE_MARGIN) if tie else 0.0,
                         needs=tuple(n.precondition() for n in getattr(c, "needs", ())),
                         addon=getattr(c, "addon", ""), source=source))
    return out


def load_paper(path: Path = PAPER_CLAIMS) -> list[Claim]:
    """The paper's claims from their data file, in its order, read as a spec's `claims:` block is (same
    errors: file:line and the field)."""
    from zoo.spec import check_claims, spec_error  # here: a module-level import makes the chain too long
    doc = read_yaml(path)
    try:
        specs = PaperClaims.model_validate(doc.data).claims
    except ValidationError as e:
        raise spec_error(doc, e, PaperClaims) from None
    check_claims(doc, specs, [r[0] for r in paper.TABLE3], "rows of the paper's Table 3")
    return from_specs([x for c in specs for x in c.expand()], "")


# Section 6.2 ("Model Variations") and 5.4 (label smoothing), with the rows of Table 3 they rest on.
CLAIMS: list[Claim] = load_paper()


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
    seed_sets: tuple[tuple[int, ...], ...] = ()  # the seeds behind each row's figure (better, worse), as compared
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
    # Fewer than 2 shared seeds: unpaired (zoo.evidence.stats: each row's seeds as independent samples, Welch's degrees
    # of freedom, the test-set noise both rows share still taken out), said in words by `sentences` and by
    # whoever prints `seed_sets`. Not paired on one seed: one per-seed difference has no variance over seeds
    # to test against. Not "no verdict" either: the unpaired test is valid for any seed sets, uses every seed
    # each row ran, and errs on the safe side where the rows share a seed (its common data order only makes
    # the two rows more alike, which the unpaired variance does not subtract).
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
    exact = "an exact paired t interval" if est.paired else "Welch's t interval, unpaired"
    what = f"seeds and {n} sentences ({' + '.join(pool)})" if n else \
        f"seeds only (this store keeps no per-sentence dev likelihoods: {exact})" if claim.metric == "ppl" else "seeds only"
    # a row run at a profile too small for any claim (smoke) first: no precondition could make up for it
    reasons = [*dict.fromkeys(r.untestable for rs in runs for r in rs if r.untestable)] or \
        [why for p in claim.needs if (why := p.check(rows))]
    return Comparison(claim, est, untestable="; ".join(reasons), level=float(np.mean(w.full(claim.metric))),
                      sentences=what, seed_sets=(b.seeds, w.seeds), rows=rows)


@dataclass(frozen=True)
class Verdict:
    comparison: Comparison
    verdict: str                    # one of VERDICTS, or the reason there is none ("not run", ...)
    p: float | None = None          # the test's p-value (directional: no difference; tie: TOST or beyond)
    p_holm: float | None = None     # Holm-adjusted within its family: the tested claims of its metric
    family: str = ""                # "primary (ppl)" or "secondary (bleu)" (empty: not tested)
    note: str = ""                  # at the boundary: the range of Holm p the bootstrap seed could give

    @property
    def claim(self) -> Claim:
        return self.comparison.claim

    @property
    def estimate(self) -> Estimate | None:
        return self.comparison.estimate

    @property
    def reason(self) -> str:
        return self.comparison.untestable or self.note


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


def _holm_by_family(tested: Sequence[Comparison], p: Mapping[int, float], alpha: float) -> dict[int, float]:
    adjusted = {}
    for metric in {c.claim.metric for c in tested}:
        members = [c for c in tested if c.claim.metric == metric]
        adjusted.update(zip(map(id, members), map(float, holm([p[id(c)] for c in members], alpha))))
    return adjusted


def _judge_once(comparisons: Sequence[Comparison], alpha: float, primary: Metric) -> tuple[list[Verdict], set[int]]:
    """Verdicts, and the claims whose verdict another bootstrap seed could change: judged again with the
    test-set variance MC_RANGE Monte Carlo errors lower and higher (lower and higher p), their verdicts differ."""
    tested = [c for c in comparisons if c.estimate is not None and not c.untestable]
    outcome = {id(c): _test(c) for c in tested}
    q = _holm_by_family(tested, {k: p for k, (p, _) in outcome.items()}, alpha)
    ends = [_holm_by_family(tested, {id(c): _test(replace(c, estimate=c.estimate.moved(k)))[0] for c in tested},
                            alpha) for k in (-MC_RANGE, MC_RANGE)]
    near = {id(c) for c in tested if (ends[0][id(c)] < alpha) != (ends[1][id(c)] < alpha)}
    out = []
    for c in comparisons:
        if c.estimate is None:
            out.append(Verdict(c, c.missing))
        elif c.untestable:
            out.append(Verdict(c, UNTESTABLE))
        else:
            (p, finding), qc = outcome[id(c)], q[id(c)]
            v = finding if qc < alpha else ("inconclusive" if c.claim.tie else "within noise")
            note = ""
            if id(c) in near:
                v, note = BOUNDARY, (f"Holm p {qc:.4f}, {ends[0][id(c)]:.4f}-{ends[1][id(c)]:.4f} within "
                                     f"{MC_RANGE:g} Monte Carlo errors of its {c.estimate.resamples:,} resamples, "
                                     f"either side of {alpha:g}: {finding} or not as the bootstrap seed goes")
            out.append(Verdict(c, v, p, qc, family(c.claim.metric, primary), note))
    return out, near


def judge(comparisons: Sequence[Comparison], alpha: float = ALPHA, primary: Metric = PRIMARY,
          refine: Callable[[Comparison, int], Comparison] | None = None) -> list[Verdict]:
    """Verdicts for a report's claims: one Holm family per metric (the primary one's decides) over every
    claim with an estimate whose preconditions hold.

    A claim whose Holm p another bootstrap seed could put on the other side of `alpha` (within MC_RANGE
    Monte Carlo errors) is measured again by `refine(comparison, factor)` with REFINE's times the resamples,
    and the family judged again; still there after the last, it is judged BOUNDARY with its range of p, so
    no verdict moves with the bootstrap seed."""
    comparisons = list(comparisons)
    for factor in (*REFINE, None):
        verdicts, near = _judge_once(comparisons, alpha, primary)
        if not near or refine is None or factor is None:
            return verdicts
        comparisons = [refine(c, factor) if id(c) in near else c for c in comparisons]
    return verdicts


def refiner(resampler: Callable[[int], Resampler]) -> Callable[[Comparison, int], Comparison]:
    """`judge`'s refine for comparisons measured with `resampler(n)`: the same claim on the same rows, with
    `factor` times its resamples (the first ones the same)."""
    def again(c: Comparison, factor: int) -> Comparison:
        if c.rows is None or not c.estimate or not c.estimate.sentences:
            return c  # seeds only: no resamples to add (no Monte Carlo error either)
        return replace(compare(c.claim, c.rows, lambda n: resampler(n).more(factor)), source=c.source)
    return again


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
    def kind(v: Verdict) -> str:
        """A verdict's kind as counted: the verdict, or a reason's head ("cut short" of "cut short: A2 ran ...")."""
        return v.verdict.split(": ")[0]

    @staticmethod
    def row_verdict(vs: Sequence[Verdict]) -> str:
        """One word for a row comparison: its metrics' verdict when they agree, else 'mixed'."""
        kinds = {Tally.kind(v) for v in vs}
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
                m[self.kind(v)] = m.get(self.kind(v), 0) + 1
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
    """sacreBLEU's per-sentence sufficient statistics, as a run stores them (zoo.evidence.metrics.bleu_stats)."""
    from zoo.evidence.metrics import bleu_stats
    return np.asarray(bleu_stats(list(hyps), list(refs)), dtype="float32")


def _tau_b(x: np.ndarray, y: np.ndarray, pairs: tuple | None = None) -> float:
    """scipy.stats.kendalltau's tau-b, bit for bit (its integer counts, then its float steps) without its
    p-value and argument checks: the bootstrap below calls it a thousand times on at most ~20 rows."""
    i, j = np.triu_indices(len(x), 1) if pairs is None else pairs
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    tot, xtie, ytie = len(i), int((dx == 0).sum()), int((dy == 0).sum())
    if xtie == tot or ytie == tot:  # one side constant: no tau
        return math.nan
    con_minus_dis = int((dx * dy).sum())
    return np.minimum(1., max(-1., con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)))


def kendall_tau(paper_values: Sequence[float], ours: Sequence[Sequence[float]], samples: int = 1000,
                seed: int = 12345) -> tuple[float, float, float]:
    """Kendall tau between the paper's figures and ours (mean over seeds), with a 95% interval from resampling each
    row's seeds and the rows themselves (rows of equally many seeds drawn at once and summed at once: the stream
    and float steps of `rng.choice` and `np.mean` a row, tests/test_claims.py, 10x faster)."""
    p, rng, seeds = np.asarray(paper_values, float), np.random.default_rng(seed), [np.asarray(o, float) for o in ours]
    tau = _tau_b(p, np.array([np.mean(o) for o in ours]))
    S = len(seeds[0]) if len({len(s) for s in seeds}) == 1 else 0  # every row's seed count, or 0: unequal
    table, pairs, taus = np.stack(seeds) if S else None, np.triu_indices(len(p), 1), []
    for _ in range(samples):
        rows = rng.integers(len(p), size=len(p))
        m = table[rows[:, None], rng.integers(0, S, size=(len(p), S))].sum(1) / S if S else \
            np.array([np.mean(seeds[r][rng.integers(0, len(seeds[r]), size=len(seeds[r]))]) for r in rows])
        if len(set(rows.tolist())) > 2:
            taus.append(_tau_b(p[rows], m, pairs))
    taus = [t for t in taus if np.isfinite(t)]  # a resample of tied rows has no tau
    if not taus:  # too few distinct rows to resample: no interval rather than a numpy warning
        return float(tau), math.nan, math.nan
    lo, hi = np.percentile(taus, [2.5, 97.5])
    return float(tau), float(lo), float(hi)
