"""The claims' statistics calibrated on synthetic runs with a known truth (no training, no store):
a null effect gets a non-null verdict at most 5% of the time (plus Monte Carlo error) at 3 and at 5
seeds; an effect of 2 sd is found with power above 0.8 at 5 seeds; a true tie is 'equivalent' when
the noise is small. At Holm's level, families of six comparisons (PPL and BLEU, paired and unpaired,
seed noise or test-set noise dominating) get a false finding in at most 5% of families, where a variance
without the shared test-set term, no Holm or Satterthwaite's df would not; and the power is printed.
And the vectorised BLEU is sacreBLEU's."""
import math
from pathlib import Path

import numpy as np
import pytest

from zoo.evidence import claims as C
from zoo.evidence import stats as S

SENTENCES, RESAMPLES, SIMULATIONS = 150, 1000, 500  # 1,000 resamples: the rates of 2,000 (within 0.004)
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


@pytest.mark.slow  # Monte Carlo calibration: thousands of simulated comparisons
@pytest.mark.parametrize("n_seeds", [3, 5])
@pytest.mark.parametrize("seed_sd", [0.05, 0.005])  # seed noise dominating, and sentence noise dominating
def test_null_effect_gets_few_verdicts(n_seeds, seed_sd):
    rates = verdict_rate(World(np.random.default_rng(n_seeds), list(range(1, n_seeds + 1)), seed_sd=seed_sd))
    false = 1 - rates.get("within noise", 0.0)
    assert false <= 0.05 + mc(0.05), rates


@pytest.mark.slow  # Monte Carlo calibration: thousands of simulated comparisons
def test_power_at_two_sd_and_five_seeds():
    """An effect of 2 sd of one seed's difference (the unit a paired comparison sees)."""
    world = World(np.random.default_rng(11), [1, 2, 3, 4, 5], seed_sd=0.05)
    world.effect = 2 * world.difference_sd()
    rates = verdict_rate(world, sims=300)
    power = rates.get("held", 0.0)
    print(f"power at 2 sd, 5 seeds: {power:.2f}")
    assert power > 0.8, rates
    assert rates.get("flipped", 0.0) == 0.0


@pytest.mark.slow  # Monte Carlo calibration: thousands of simulated comparisons
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
    # BLEU is its own (secondary) family: the same p = 0.028 beside the three PPL claims is a finding there
    bleu = C.Claim("X-bleu", "X", "a beats b", "bleu", "a", "b")
    mixed = C.judge([*comps, C.Comparison(bleu, e(2.2, 1.0))])
    assert [v.family for v in mixed] == ["primary (ppl)"] * 3 + ["", "", "secondary (bleu)"]
    assert mixed[-1].verdict == "held" and mixed[-1].p_holm == mixed[-1].p
    assert [v.p_holm for v in mixed[:3]] == [v.p_holm for v in got[:3]]


def test_holm_is_statsmodels():
    from statsmodels.stats.multitest import multipletests
    rng = np.random.default_rng(0)
    for m in (2, 5, 19):
        p = rng.uniform(0, 0.2, m) ** 2
        p[1] = p[0]  # ties
        assert S.holm(p) == pytest.approx(multipletests(p, method="holm")[1])


def test_no_noise_and_no_difference_is_no_finding():
    same = np.array([10.0, 11.0, 12.0])
    e = S.Resampler(0, 500, 1).compare("ppl", S.Side((1, 2, 3), figures=same), S.Side((1, 2, 3), figures=same))
    assert e.se == 0 and e.p == 1.0 and C.judge([C.Comparison(CLAIM, e)])[0].verdict == "within noise"


# -- calibration at Holm's level: families of comparisons on synthetic per-sentence statistics ------
#
# A world: each row's figure per (seed, sentence) is a base sentence difficulty shared by every row +
# the row's effect + a seed effect (shared by the rows of a seed when paired: same data order) + a
# row x seed effect + a row x sentence effect fixed for the test set (`shared_sd`: the test-set noise
# all seeds share) + a row x seed x sentence effect (`sentence_sd`: seed-specific). PPL: per-token NLL
# in nats; BLEU: the logit of a sentence's n-gram precision, counts drawn from it.

PAGE = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"


def page_row(label: str) -> list[str]:
    """The cells after `label` in docs/statistics.md's calibration tables: the page quotes these tests'
    figures, so a test that computes one checks the page says it (a stale page fails here)."""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"docs/statistics.md has no calibration row {label!r}")


STALE = ("docs/statistics.md's calibration table is stale: copy the printed figures "
         "(pytest -q -s -k holms_level tests/test_stats.py)")

FAMILY, ROWS_SENTENCES, FAMILY_RESAMPLES, FAMILIES = 6, 100, 400, 300
WORLDS = {  # seed_sd, sentence_sd, shared_sd (PPL nats per token; BLEU logits x 5)
    "seed noise": (0.05, 0.1, 0.0),        # the seed term alone: the t test is exact here
    "mixed": (0.02, 0.1, 0.066),           # shared test-set variance ~0.3 x the seed term's (3 seeds)
    "test-set noise": (0.005, 0.1, 0.3),   # the shared test-set noise dominates
}


def family_stats(rng, metric, paired, world, seeds=3, effects=(0.0,) * FAMILY):
    """(2 x FAMILY rows, seeds, sentences, k) statistics: comparison j is row 2j (better by effects[j])
    against row 2j + 1, all scored on one test set."""
    seed_sd, sentence_sd, shared_sd = WORLDS[world]
    if metric == "bleu":
        seed_sd, sentence_sd, shared_sd = 5 * seed_sd, 5 * sentence_sd, 5 * shared_sd
    R, n = 2 * len(effects), ROWS_SENTENCES
    shift = np.zeros(R)
    shift[0::2] = effects if metric == "bleu" else -np.asarray(effects)  # PPL: lower NLL is better
    seed_effect = rng.normal(0, 2 * seed_sd, (1 if paired else R, seeds, 1))  # paired: cancels
    z = (rng.normal(2.0 if metric == "ppl" else 0.5, 0.5, n) + shift[:, None, None] + seed_effect
         + rng.normal(0, seed_sd, (R, seeds, 1)) + rng.normal(0, shared_sd, (R, 1, n))
         + rng.normal(0, sentence_sd, (R, seeds, n)))
    ref = rng.integers(5, 30, n).astype(float)
    if metric == "ppl":
        return np.stack([z * ref, np.broadcast_to(ref, z.shape)], -1)
    sys_len = np.maximum(1, ref + np.rint(rng.normal(0, 2, z.shape)))
    total = np.maximum(sys_len[..., None] - np.arange(4), 0)
    correct = rng.binomial(total.astype(int), (1 / (1 + np.exp(-z)))[..., None] ** np.arange(1, 5))
    return np.concatenate([sys_len[..., None], np.broadcast_to(ref[:, None], z.shape + (1,)), correct, total], -1)


def simulate(metric, paired, world, seeds=3, effects=(0.0,) * FAMILY, families=FAMILIES, seed=0):
    """Estimates of every comparison of `families` simulated families: (families, len(effects))."""
    rng = np.random.default_rng(seed)
    resampler = S.Resampler(ROWS_SENTENCES, FAMILY_RESAMPLES, seed=seed)
    ids = [tuple(range(seeds)), tuple(range(seeds)) if paired else tuple(range(seeds, 2 * seeds))]
    out = []
    for _ in range(families):
        x = family_stats(rng, metric, paired, world, seeds, effects)
        out.append([resampler.compare(metric, S.Side(ids[0], x[2 * j]), S.Side(ids[1], x[2 * j + 1]))
                    for j in range(len(effects))])
    return out


def findings(metric, estimates) -> np.ndarray:
    """(families, comparisons): the comparisons zoo.evidence.claims.judge calls significant (held or flipped),
    each family one Holm family of its metric."""
    claims = [C.Claim(f"X{j}-{metric}", "X", "a beats b", metric, f"a{j}", f"b{j}") for j in range(len(estimates[0]))]
    got = []
    for fam in estimates:
        verdicts = C.judge([C.Comparison(c, e) for c, e in zip(claims, fam)])
        assert {v.family for v in verdicts} == {C.family(metric)}
        got.append([v.verdict in ("held", "flipped") for v in verdicts])
    return np.array(got)


def raw_findings(estimates, se=lambda e: e.se, df=lambda e: e.df, level=C.ALPHA / FAMILY) -> np.ndarray:
    """Findings of a variant test (another se or df; no Holm: level alpha) at Holm's first step."""
    from scipy import stats as st
    t = np.array([[(abs(e.delta) / se(e), df(e)) for e in fam] for fam in estimates])
    return 2 * st.t.sf(t[..., 0], t[..., 1]) < level  # one vectorised call: the same values as one by one


def fwer_bound(families=FAMILIES, alpha=C.ALPHA) -> float:
    """The most families with a false finding a 5% test shows in 99.9% of simulations, as a rate."""
    from scipy import stats as st
    return float(st.binom.ppf(0.999, families, alpha)) / families


@pytest.mark.slow  # Monte Carlo calibration: thousands of simulated comparisons
@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("metric", ["ppl", "bleu"])
def test_null_family_wise_error_at_holms_level(metric, paired):
    """All rows equal: at most 5% of families get any finding (Holm over 6 comparisons), whichever
    noise dominates. And the assertion bites: without the shared test-set term, or without Holm, or
    with Satterthwaite's degrees of freedom, the same simulations give too many."""
    bound, rates = fwer_bound(), {}
    for w in WORLDS:
        est = simulate(metric, paired, w, seed=len(rates))
        rates[w] = findings(metric, est).any(1).mean()
        if w == "seed noise":  # the t test is near-exact here: each of 6 at 5% finds something in ~26%
            rates["no Holm"] = raw_findings(est, level=C.ALPHA).any(1).mean()
        if w == "test-set noise":
            rates["v_seed alone"] = raw_findings(est, se=lambda e: e.seed_se).any(1).mean()
        if w == "mixed" and paired:  # df counting v_shared as exact: too large when v_seed comes out small
            satterthwaite = lambda e: e.se ** 4 / (e.seed_se ** 4 / (e.seeds[0] - 1))
            rates["Satterthwaite df"] = raw_findings(est, df=satterthwaite).any(1).mean()
    print(f"{metric} {'paired' if paired else 'unpaired'}: family-wise false findings {rates} (bound {bound:.3f})")
    assert all(rates[w] <= bound for w in WORLDS), rates
    assert rates["no Holm"] > bound and rates["v_seed alone"] > bound, rates
    assert not paired or rates["Satterthwaite df"] > bound, rates
    shown = [f"{rates[k]:.3f}" for k in (*WORLDS, "no Holm", "v_seed alone")]
    shown.append(f"{rates['Satterthwaite df']:.3f}" if paired else "")
    assert page_row(f"{metric.upper()}, {'paired' if paired else 'unpaired'}") == shown, STALE


def difference_sd(world, seeds) -> float:
    """The sd of a paired comparison's difference (nats per token, or logits), to first order: the seed
    term over seeds plus the shared test-set term (sentences weighted by tokens: ~85 effective of 100)."""
    seed_sd, sentence_sd, shared_sd = WORLDS[world]
    return math.sqrt(2 * (seed_sd ** 2 + sentence_sd ** 2 / 85) / seeds + 2 * shared_sd ** 2 / 85)


@pytest.mark.slow  # Monte Carlo calibration: thousands of simulated comparisons
@pytest.mark.parametrize("world,seeds,least", [("seed noise", 3, 0.05), ("seed noise", 5, 0.5),
                                                ("test-set noise", 3, 0.0), ("test-set noise", 5, 0.6)])
def test_power_at_holms_level(world, seeds, least):
    """Three comparisons of six with an effect of 6 sd, paired PPL: the share found (held, Holm). Where the
    test-set noise dominates, the seeds' degrees of freedom cost all power at 3 seeds (t(2) at 0.05/6 is 7.6:
    found 0.00, against 0.76 at 5 seeds; at 3 seeds only the false findings are checked). The figures are
docs/statistics.md's power table."""
    effect = 6 * difference_sd(world, seeds)
    est = simulate("ppl", True, world, seeds, effects=(effect,) * 3 + (0.0,) * 3, families=100, seed=seeds)
    found = findings("ppl", est)
    power, false = found[:, :3].mean(), found[:, 3:].any(1).mean()
    print(f"power at 6 sd, {world}, {seeds} seeds: {power:.2f} (families with a false finding: {false:.2f})")
    assert power >= least and false <= fwer_bound(100)
    assert all(e.delta > 0 for fam in est for e in fam[:3] if e.p < 0.05)  # no flipped finding
    cells = page_row(world)  # power at 3 and 5 seeds, then families with a false finding at 3 and 5
    at = (3, 5).index(seeds)
    assert (cells[at], cells[2 + at]) == (f"{power:.2f}", f"{false:.2f}"), STALE
