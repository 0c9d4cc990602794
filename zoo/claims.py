"""The paper's Table 3 claims as data, and a verdict on each from our runs, with its noise.

A claim compares two rows on one metric: "one head is worse than eight by 0.9 BLEU". Our difference
gets a 95% interval from a hierarchical bootstrap: over dev sentences (paired: the same resampled
sentences for both rows, as sacreBLEU's paired bootstrap does) and over seeds (each resample also
draws seeds with replacement), so it holds both the test-set noise and the seed-to-seed noise.

    held          the interval lies on the paper's side of zero (a tie: it covers zero)
    within noise  the interval covers zero (a tie claim cannot be within noise: it holds or flips)
    flipped       the interval lies on the other side (a tie: it excludes zero)

Claims are written from the paper's text and Table 3 (../shared/paper), never from our results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from zoo import paper

Metric = Literal["bleu", "ppl"]
VERDICTS = ("held", "within noise", "flipped")


@dataclass(frozen=True)
class Claim:
    id: str
    group: str              # Table 3 group (A-E, big)
    text: str               # what the paper says, in its words where it has them
    metric: Metric
    better: str             # the row the paper finds better (for a tie: either row)
    worse: str
    tie: bool = False       # the paper finds no difference

    @property
    def paper_delta(self) -> float:
        """The paper's difference, signed so that positive means `better` is better."""
        return delta(self.metric, _paper_value(self.better, self.metric), _paper_value(self.worse, self.metric))


def delta(metric: Metric, better: float, worse: float) -> float:
    """How much better `better` is: BLEU higher, perplexity lower."""
    return better - worse if metric == "bleu" else worse - better


def _paper_value(row: str, metric: Metric) -> float:
    r = paper.table3_row(row)
    return r["bleu"] if metric == "bleu" else r["ppl"]


def _both(id, group, text, better, worse, tie=False) -> list[Claim]:
    return [Claim(f"{id}-{m}", group, text, m, better, worse, tie) for m in ("bleu", "ppl")]


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
    *_both("D-dropout", "D", "dropout is very helpful in avoiding over-fitting (P_drop 0.1 beats 0)", "base", "D1"),
    Claim("D-smoothing-ppl", "D", "label smoothing hurts perplexity, as the model learns to be more unsure "
          "(eps_ls 0 has the lower perplexity)", "ppl", "D3", "base"),
    Claim("D-smoothing-bleu", "D", "... but improves accuracy and BLEU score (eps_ls 0.1 beats 0)", "bleu",
          "base", "D3"),
    *_both("E-positions", "E", "learned positional embeddings give nearly identical results to sinusoids",
           "E", "base", tie=True),
    *_both("big", "big", "the big model beats base", "big", "base"),
]


@dataclass(frozen=True)
class Interval:
    delta: float            # our difference on the full dev set, mean over seeds
    lo: float               # 95% bootstrap interval
    hi: float
    seeds: tuple[int, int]  # seeds behind each side


def verdict(claim: Claim, ours: Interval) -> str:
    covers_zero = ours.lo <= 0 <= ours.hi
    if claim.tie:
        return "held" if covers_zero else "flipped"
    if covers_zero:
        return "within noise"
    return "held" if ours.lo > 0 else "flipped"


# ---------------------------------------------------------------------------------------------
# Bootstrap


def sentence_stats(hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
    """sacreBLEU's per-sentence sufficient statistics, as a run stores them (zoo.metrics.bleu_stats)."""
    from zoo.metrics import bleu_stats
    return np.asarray(bleu_stats(list(hyps), list(refs)), dtype="float32")


def _bleu(summed: np.ndarray) -> np.ndarray:
    from sacrebleu.metrics import BLEU
    metric = BLEU()
    return np.array([metric._compute_score_from_stats(s).score for s in summed])


def resample_indices(n: int, samples: int, seed: int) -> np.ndarray:
    """The same draws sacreBLEU's paired bootstrap makes for `seed` (numpy's default_rng)."""
    return np.random.default_rng(seed).choice(n, size=(samples, n), replace=True)


def bleu_interval(better: Sequence[np.ndarray], worse: Sequence[np.ndarray], samples: int = 1000,
                  seed: int = 12345) -> Interval:
    """95% interval of BLEU(better) - BLEU(worse); each argument holds one `sentence_stats` per seed."""
    n = len(better[0])
    if any(len(s) != n for s in (*better, *worse)):
        raise ValueError("every run must be scored on the same dev sentences")
    idx = resample_indices(n, samples, seed)
    rng = np.random.default_rng(seed + 1)

    def resampled(runs):  # (samples,): per resample, the mean BLEU over seeds drawn with replacement
        per_seed = np.stack([_bleu(s[idx].sum(1)) for s in runs], axis=1)  # (samples, seeds)
        pick = rng.integers(len(runs), size=per_seed.shape)
        return np.take_along_axis(per_seed, pick, 1).mean(1)

    full = np.mean([_bleu(s.sum(0, keepdims=True))[0] for s in better]) - \
        np.mean([_bleu(s.sum(0, keepdims=True))[0] for s in worse])
    diffs = resampled(better) - resampled(worse)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return Interval(float(full), float(lo), float(hi), (len(better), len(worse)))


def scalar_interval(metric: Metric, better: Sequence[float], worse: Sequence[float], samples: int = 1000,
                    seed: int = 12345) -> Interval | None:
    """95% interval of a per-run figure's difference (perplexity) from its spread over seeds; None
    with fewer than two seeds on a side, where the noise cannot be estimated."""
    if min(len(better), len(worse)) < 2:
        return None
    rng = np.random.default_rng(seed)
    b, w = np.asarray(better, float), np.asarray(worse, float)
    bs = b[rng.integers(len(b), size=(samples, len(b)))].mean(1)
    ws = w[rng.integers(len(w), size=(samples, len(w)))].mean(1)
    diffs = delta(metric, bs, ws)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return Interval(float(delta(metric, b.mean(), w.mean())), float(lo), float(hi), (len(b), len(w)))


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
