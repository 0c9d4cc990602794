"""The claims' statistics calibrated on synthetic runs with a known truth (no training, no store):
a null effect gets a non-null verdict at most 5% of the time (plus Monte Carlo error) at 3 and at 5
seeds; an effect of 2 sd is found with power above 0.8 at 5 seeds; a true tie is 'equivalent' when
the noise is small. And the vectorised BLEU is sacreBLEU's."""
import math

import numpy as np
import pytest

from zoo import claims as C
from zoo import stats as S

SENTENCES, RESAMPLES, SIMULATIONS = 150, 2000, 500
CLAIM = C.Claim("X-ppl", "X", "a beats b", "ppl", "a", "b")
TIE = C.Claim("X-tie-ppl", "X", "a ties b", "ppl", "a", "b", tie=True, margin=C.TIE_MARGIN)


class World:
    """Per-sentence dev NLL of two rows: a shared seed effect (same data order: paired), a row x seed
    effect (training noise, sd `seed_sd` nats per token), a row x sentence effect fixed for the test set
    (test-set noise) and a residual; row a's NLL is lower by `effect` nats per token."""

    def __init__(self, rng, seeds, effect=0.0, seed_sd=0.02, sentence_sd=0.15, residual_sd=0.1):
        self.rng, self.seeds, self.effect = rng, seeds, effect
        self.seed_sd, self.sentence_sd, self.residual_sd = seed_sd, sentence_sd, residual_sd

    def tokens(self):
        return self.rng.integers(5, 30, SENTENCES).astype(float)

    def rows(self) -> dict:
        tok = self.tokens()
        base = self.rng.normal(2.0, 0.4, SENTENCES)
        shared = self.rng.normal(0, 0.05, len(self.seeds))  # the seed's own effect, on every row
        out = {}
        for row, shift in (("a", -self.effect), ("b", 0.0)):
            g = self.rng.normal(0, self.sentence_sd, SENTENCES)
            runs = []
            for k, s in enumerate(self.seeds):
                e = self.rng.normal(0, self.seed_sd)
                per_token = base + shift + shared[k] + e + g + self.rng.normal(0, self.residual_sd, SENTENCES)
                runs.append(C.RowRun(seed=s, steps=100, nll_stats=np.stack([per_token * tok, tok], 1)))
            out[row] = runs
        return out

    def difference_sd(self) -> float:
        """sd of one seed's difference in mean NLL per token (both rows' training and test noise),
        approximately, with tokens of typical sizes."""
        tok = np.arange(5, 30, dtype=float).repeat(SENTENCES // 25 + 1)[:SENTENCES]
        w2 = (tok ** 2).sum() / tok.sum() ** 2
        return math.sqrt(2 * self.seed_sd ** 2 + 2 * (self.sentence_sd ** 2 + self.residual_sd ** 2) * w2)


def verdict_rate(world: World, claim=CLAIM, sims=SIMULATIONS) -> dict:
    resampler = S.Resampler(SENTENCES, RESAMPLES, seed=7)
    got: dict = {}
    for _ in range(sims):
        v = C.judge([C.compare(claim, world.rows(), lambda n: resampler)])[0].verdict
        got[v] = got.get(v, 0) + 1
    return {k: n / sims for k, n in got.items()}


def mc(rate, sims=SIMULATIONS):
    return 2 * math.sqrt(max(rate, 0.05) * (1 - rate) / sims)


@pytest.mark.parametrize("n_seeds", [3, 5])
@pytest.mark.parametrize("seed_sd", [0.05, 0.005])  # seed noise dominating, and sentence noise dominating
def test_null_effect_gets_few_verdicts(n_seeds, seed_sd):
    rates = verdict_rate(World(np.random.default_rng(n_seeds), list(range(1, n_seeds + 1)), seed_sd=seed_sd))
    false = 1 - rates.get("within noise", 0.0)
    assert false <= 0.05 + mc(0.05), rates


def test_power_at_two_sd_and_five_seeds():
    """An effect of 2 sd of one seed's difference (the unit a paired comparison sees)."""
    world = World(np.random.default_rng(11), [1, 2, 3, 4, 5], seed_sd=0.05)
    world.effect = 2 * world.difference_sd()
    rates = verdict_rate(world, sims=300)
    power = rates.get("held", 0.0)
    print(f"power at 2 sd, 5 seeds: {power:.2f}")
    assert power > 0.8, rates
    assert rates.get("flipped", 0.0) == 0.0


def test_a_true_tie_is_equivalent_when_the_noise_is_small():
    world = World(np.random.default_rng(3), [1, 2, 3], seed_sd=0.0005, sentence_sd=0.005, residual_sd=0.005)
    rates = verdict_rate(world, TIE, sims=100)
    assert rates.get("equivalent", 0.0) >= 0.95, rates
    noisy = verdict_rate(World(np.random.default_rng(4), [1, 2, 3], seed_sd=0.05), TIE, sims=100)
    assert noisy.get("inconclusive", 0.0) >= 0.9, noisy  # noise is no evidence of a tie
    far = World(np.random.default_rng(5), [1, 2, 3], effect=0.2, seed_sd=0.002, sentence_sd=0.005, residual_sd=0.005)
    assert verdict_rate(far, TIE, sims=50).get("different", 0.0) >= 0.95


def test_seeds_only_fallback_is_a_paired_t_test():
    """Without per-sentence figures the interval is exactly the paired t interval of the per-seed
    differences (nothing left to resample: no Monte Carlo error)."""
    from scipy import stats as st
    a, b = np.array([30.0, 33.0, 28.0]), np.array([31.0, 35.5, 28.2])
    e = S.Resampler(0, 10_000, 1).compare("ppl", S.Side((1, 2, 3), figures=a), S.Side((1, 2, 3), figures=b))
    d = b - a  # perplexity: lower is better, so a's advantage
    lo, hi = st.t.interval(0.95, 2, d.mean(), d.std(ddof=1) / math.sqrt(3))
    assert e.paired and e.sentences == 0 and e.df == pytest.approx(2)
    assert e.mc_error == 0 and (e.lo, e.hi) == pytest.approx((lo, hi), abs=1e-9)


def test_pairing_removes_the_shared_seed_noise():
    rng = np.random.default_rng(0)
    shared = rng.normal(0, 5, 5)
    a, b = 30 + shared + rng.normal(0, 0.1, 5), 31 + shared + rng.normal(0, 0.1, 5)
    paired = S.Resampler(0, 2000, 1).compare("ppl", S.Side((1, 2, 3, 4, 5), figures=a), S.Side((1, 2, 3, 4, 5), figures=b))
    unpaired = S.Resampler(0, 2000, 1).compare("ppl", S.Side((1, 2, 3, 4, 5), figures=a), S.Side((6, 7, 8, 9, 10), figures=b))
    assert not unpaired.paired and paired.se < unpaired.se / 10 and paired.lo > 0 > unpaired.lo


def test_bleu_from_stats_is_sacrebleus():
    from sacrebleu.metrics import BLEU
    rng = np.random.default_rng(1)
    total = rng.integers(0, 40, (200, 4)).cumsum(1)[:, ::-1]
    correct = np.minimum(total, rng.integers(0, 30, (200, 4)))
    correct[:20, 2:] = 0  # orders without a match: exp smoothing
    stats = np.concatenate([total[:, :1] + rng.integers(-5, 5, (200, 1)), total[:, :1] + rng.integers(-5, 5, (200, 1)),
                            correct, total], 1).clip(min=0)
    theirs = np.array([BLEU()._compute_score_from_stats(list(map(int, s))).score for s in stats])
    assert S.bleu_from_stats(stats) == pytest.approx(theirs, abs=1e-9)


def test_holm_and_the_verdict_family():
    e = lambda delta, se: S.Estimate(delta, se, math.inf, delta - 1.96 * se, delta + 1.96 * se, 0.0, (3, 3), True, 0, 100, se, 0.0)
    comps = [C.Comparison(CLAIM, e(2.2, 1.0)), C.Comparison(CLAIM, e(-10, 1.0)), C.Comparison(CLAIM, e(0.5, 1.0)),
             C.Comparison(CLAIM, e(-10, 1.0), untestable="no over-fitting"), C.Comparison(CLAIM, missing="not run")]
    got = C.judge(comps)
    # alone p = 0.028 would hold; in a family of three tested claims Holm raises it above 0.05
    assert comps[0].estimate.p < 0.05 and got[0].verdict == "within noise" and got[0].p_holm > 0.05
    assert [v.verdict for v in got[1:]] == ["flipped", "within noise", C.UNTESTABLE, "not run"]
    assert got[3].p_holm is None  # untestable claims are not in the family


def test_no_noise_and_no_difference_is_no_finding():
    same = np.array([10.0, 11.0, 12.0])
    e = S.Resampler(0, 500, 1).compare("ppl", S.Side((1, 2, 3), figures=same), S.Side((1, 2, 3), figures=same))
    assert e.se == 0 and e.p == 1.0 and C.judge([C.Comparison(CLAIM, e)])[0].verdict == "within noise"
