"""The noise on a difference between two rows: a hierarchical bootstrap over training seeds and test
sentences jointly (the Multi-Bootstrap of Sellam et al., 2022), paired by seed where the design pairs
rows, and a t interval built from it.

Why not the bootstrap's own percentiles: with 3 seeds a percentile interval covers a null effect in
about 80% of cases, not 95%, since resampling 3 values with replacement sees only (S-1)/S of their
variance and has no tails. So the resamples estimate the variance of the difference (seeds and
sentences together), the seed part is corrected to its unbiased value, and the interval is
delta +- t(df) x se with the seeds' degrees of freedom (paired: S - 1, so an exact paired t-test on
the per-seed differences when seed noise dominates; conservative when sentence noise dominates).

Pairing: seed s gives every row the same data order and same-shape rows the same initial weights, so
two rows run on the same seeds are compared seed by seed (their per-seed differences), and both rows
are always scored on the same resampled sentences.

A corpus metric is computed from summed per-sentence statistics (sacreBLEU's 13a counts for BLEU;
summed NLL and tokens for perplexity), so a resample of sentences is a weighted sum: one matrix
product per trial, vectorised over all resamples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np
from scipy import stats as st

Metric = Literal["bleu", "ppl"]
RESAMPLES = 10_000
BOOTSTRAP_SEED = 2017  # the default, fixed, so a report rebuilds identically
METHOD = ("hierarchical bootstrap over seeds and sentences (Multi-Bootstrap, Sellam et al. 2022), "
          "paired by seed; t interval with its standard error, seed part unbiased, the seeds' degrees of freedom")


# -- corpus metrics from summed per-sentence statistics, vectorised over leading axes -------------

def bleu_from_stats(summed: np.ndarray) -> np.ndarray:
    """sacreBLEU's corpus BLEU (exp smoothing, no effective order) from summed 13a statistics
    [sys_len, ref_len, correct 1-4, total 1-4], over any leading axes."""
    s = np.asarray(summed, dtype=float)
    sys_len, ref_len, correct, total = s[..., 0], s[..., 1], s[..., 2:6], s[..., 6:10]
    zero = correct == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        # exp smoothing: the k-th n-gram order without a match counts as 1 / 2^k matches
        prec = np.where(zero, 100.0 / (2.0 ** np.cumsum(zero, -1) * total), 100.0 * correct / total)
        logs = np.where((total > 0) & (prec > 0), np.log(np.where(prec > 0, prec, 1.0)), -np.inf)
        bp = np.where(sys_len < ref_len, np.exp(1 - ref_len / np.maximum(sys_len, 1e-300)), 1.0)
        score = bp * np.exp(logs.mean(-1))
    return np.where(sys_len > 0, np.nan_to_num(score, nan=0.0, neginf=0.0), 0.0)


def ppl_from_stats(summed: np.ndarray) -> np.ndarray:
    """Perplexity per token from summed [NLL in nats, tokens]."""
    s = np.asarray(summed, dtype=float)
    return np.exp(s[..., 0] / s[..., 1])


CORPUS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"bleu": bleu_from_stats, "ppl": ppl_from_stats}


def goodness(metric: Metric, x):
    """A figure signed so that higher is better: BLEU as is, perplexity negated."""
    return x if metric == "bleu" else -x


# -- one row's trials ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One row's trials for one metric: per seed, the per-sentence statistics (seeds, sentences, k),
    or, for a store without them, only the per-seed figure (then `figures`, and `stats` is None)."""
    seeds: tuple[int, ...]
    stats: np.ndarray | None = None
    figures: np.ndarray | None = None

    def full(self, metric: Metric) -> np.ndarray:
        """The figure of each seed on the whole test set."""
        return CORPUS[metric](self.stats.sum(1)) if self.stats is not None else np.asarray(self.figures, float)


@dataclass(frozen=True)
class Estimate:
    """A difference between two rows (positive: the first is better) with its noise."""
    delta: float            # on the full test set, mean over seeds
    se: float               # standard error: seeds and sentences
    df: float               # degrees of freedom of the seeds (paired: S - 1; unpaired: Welch's)
    lo: float               # 95% interval
    hi: float
    mc_error: float         # Monte Carlo error of each interval end (from the finite resamples)
    seeds: tuple[int, int]  # seeds behind each side
    paired: bool            # compared seed by seed
    sentences: int          # sentences resampled (0: seeds only, the store has no per-sentence figures)
    resamples: int
    seed_se: float          # the seed part of se
    sentence_se: float      # the sentence part of se

    def t(self, shift: float = 0.0) -> float:
        """The t statistic of 'the difference is `shift`' (no noise at all: 0 when equal, else infinite)."""
        d = self.delta - shift
        return d / self.se if self.se > 0 else 0.0 if d == 0 else math.copysign(math.inf, d)

    @property
    def p(self) -> float:
        """Two-sided p-value of 'no difference'."""
        return float(2 * st.t.sf(abs(self.t()), self.df))

    def p_equivalent(self, margin: float) -> float:
        """TOST: the larger of the two one-sided p-values of 'the difference is at least the margin'."""
        return float(max(st.t.sf(self.t(-margin), self.df), st.t.cdf(self.t(margin), self.df)))

    def p_beyond(self, margin: float) -> float:
        """p-value of 'the difference is within the margin' (both directions tested: x2, capped)."""
        return float(min(1.0, 2 * min(st.t.sf(self.t(margin), self.df), st.t.cdf(self.t(-margin), self.df))))


# -- the resampling -----------------------------------------------------------------------------

class Resampler:
    """One set of sentence resamples for a report: every row, claim and seed is resampled on the same
    sentences (paired), and each trial's resampled figure is computed once."""

    def __init__(self, n_sentences: int, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED):
        self.n, self.resamples, self.seed = n_sentences, resamples, seed
        self.rng = np.random.default_rng(seed)
        idx = self.rng.integers(n_sentences, size=(resamples, n_sentences))
        # counts[b, i]: how often resample b drew sentence i; a resampled sum is counts @ stats
        flat = (idx + n_sentences * np.arange(resamples)[:, None]).ravel()
        self.counts = np.bincount(flat, minlength=resamples * n_sentences).reshape(resamples, n_sentences)
        self.counts = self.counts.astype(np.float64)

    def figures(self, metric: Metric, side: Side) -> np.ndarray:
        """(resamples, seeds): each seed's figure on each resample of sentences."""
        if side.stats is None:  # seeds only: every sentence resample sees the same figure
            return np.broadcast_to(np.asarray(side.figures, float), (self.resamples, len(side.seeds)))
        return np.stack([CORPUS[metric](self.counts @ s) for s in side.stats], axis=1)

    def compare(self, metric: Metric, better: Side, worse: Side, alpha: float = 0.05) -> Estimate:
        """The difference better - worse (in `goodness` terms) with its noise."""
        if min(len(better.seeds), len(worse.seeds)) < 2:
            raise ValueError("needs 2+ seeds on each side to estimate the seed noise")
        sentences = self.n if better.stats is not None and worse.stats is not None else 0
        if not sentences:  # one side without per-sentence figures: both sides seeds only
            better, worse = (Side(s.seeds, figures=s.full(metric)) for s in (better, worse))
        gb, gw = (goodness(metric, self.figures(metric, s)) for s in (better, worse))
        fb, fw = (goodness(metric, s.full(metric)) for s in (better, worse))
        B = self.resamples
        paired = better.seeds == worse.seeds
        if paired:  # seed by seed: draw the same seeds for both rows
            S = len(better.seeds)
            d = gb - gw
            pick = self.rng.integers(S, size=(B, S))
            boot = np.take_along_axis(d, pick, 1).mean(1)
            parts = [(fb - fw, S)]
        else:  # each row's own seeds, drawn independently
            pb = self.rng.integers(gb.shape[1], size=(B, gb.shape[1]))
            pw = self.rng.integers(gw.shape[1], size=(B, gw.shape[1]))
            boot = np.take_along_axis(gb, pb, 1).mean(1) - np.take_along_axis(gw, pw, 1).mean(1)
            parts = [(fb, len(fb)), (fw, len(fw))]
        delta = float(np.mean(fb) - np.mean(fw))
        v_joint = float(boot.var())
        # the resamples see each seed part with ddof 0 (biased by (S-1)/S): add back the difference
        v_seed = sum(x.var(ddof=1) / k for x, k in parts)
        v_seed_plugin = sum(x.var(ddof=0) / k for x, k in parts)
        # the sentence part alone: every seed kept, sentences resampled (shown, and used by the planner)
        v_sent = float((gb.mean(1) - gw.mean(1)).var())
        # seeds only: the resamples would only estimate v_seed_plugin, so use the exact figure (no MC error)
        var = v_joint + v_seed - v_seed_plugin if sentences else v_seed
        se = math.sqrt(max(var, 0.0))
        # degrees of freedom from the seeds alone (paired: S - 1; unpaired: Welch's): the seeds are the
        # independent units. Welch-Satterthwaite with the sentence part as a near-exact term rejects a
        # null effect 7% of the time at 3 seeds (its df grows exactly when the seed variance comes out
        # small); this is conservative where sentence noise dominates
        denom = sum((x.var(ddof=1) / k) ** 2 / (k - 1) for x, k in parts)
        df = v_seed ** 2 / denom if denom > 0 else float(min(k for _, k in parts) - 1)
        q = float(st.t.ppf(1 - alpha / 2, df))
        # Monte Carlo error of se from B resamples (the variance of a sample variance), then of q x se
        m4 = float(((boot - boot.mean()) ** 4).mean())
        mc = q * math.sqrt(max(m4 - v_joint ** 2, 0.0) / B) / (2 * se) if se > 0 and sentences else 0.0
        return Estimate(delta, se, df, delta - q * se, delta + q * se, mc,
                        (len(better.seeds), len(worse.seeds)), paired, sentences, B,
                        math.sqrt(v_seed), math.sqrt(v_sent))


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels' multipletests)."""
    from statsmodels.stats.multitest import multipletests
    if len(pvalues) <= 1:  # a family of one is its own adjustment (and multipletests runs gc.collect)
        return np.asarray(pvalues, float)
    return multipletests(list(pvalues), alpha=alpha, method="holm")[1]
