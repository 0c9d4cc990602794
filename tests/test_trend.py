"""The scale trend (issue 34, zoo.evidence.trend): the slope of a comparison's relative difference over log2(d_model),
its interval and verdict, checked on simulated trials whose truth is known: at most 5% family-wise false
"toward"/"away" verdicts over six comparisons when no effect changes with width (Holm's level), and the
power it finds when one does."""
import math

import numpy as np
import pytest

from zoo.evidence import trend as T

ROWS = ("base", "A1", "A3", "A4", "B1", "C1", "C3", "D3", "E")
COMPARISONS = {"A-one-head": ("base", "A1"), "A-too-many-heads": ("A3", "A4"), "B-small-dk": ("base", "B1"),
               "C-depth": ("C3", "C1"), "D-smoothing": ("D3", "base"), "E-positions": ("E", "base")}
WIDTHS = {"w32": (32, 5), "w64": (64, 5), "w128": (128, 3)}  # profile -> (d_model, seeds), as the reference


def simulate(rng, effects, n=150, seed_sd=0.01, row_sentence_sd=0.05, noise_sd=0.3):
    """Trials whose log-PPL is a width level + the row's effect at that width (`effects[(row, profile)]`,
    nats) + a seed effect + a row-by-sentence effect shared by every seed and width (the test-set noise
    that more seeds do not average) + a trial's own sentence noise."""
    tokens = rng.integers(5, 25, size=n).astype(float)
    hard = rng.normal(0, 0.5, size=n)  # a sentence's difficulty, the same for every row
    row_sentence = {r: rng.normal(0, row_sentence_sd, size=n) for r in ROWS}
    out = {}
    for p, (d, seeds) in WIDTHS.items():
        level = 2.0 - 0.2 * math.log2(d / 32)
        out[p] = {}
        for r in ROWS:
            trials = []
            for s in range(1, seeds + 1):
                per_token = (level + effects.get((r, p), 0.0) + rng.normal(0, seed_sd) + hard + row_sentence[r]
                             + rng.normal(0, noise_sd, size=n) / np.sqrt(tokens))
                trials.append(T.Seeded(s, np.stack([per_token * tokens, tokens], axis=1)))
            out[p][r] = trials
    return out


def run(rows, **kw):
    return T.fit_trend(rows, {p: d for p, (d, _) in WIDTHS.items()}, COMPARISONS, resamples=300, **kw)


def test_a_known_slope_is_found_with_its_direction():
    """A1's penalty grows by 0.03 nats per doubling (toward the paper's +0.072 from 0); D3's shrinks
    (its paper difference is +0.052, the proxy's is above it and growing further: away)."""
    rng = np.random.default_rng(0)
    effects = {("A1", "w32"): 0.0, ("A1", "w64"): 0.03, ("A1", "w128"): 0.06,
               ("D3", "w32"): -0.10, ("D3", "w64"): -0.14, ("D3", "w128"): -0.18}
    slopes = {s.name: s for s in run(simulate(rng, effects))}
    a = slopes["A-one-head"]  # A1 (the worse row) falls behind base by 0.03 per doubling
    assert a.slope == pytest.approx(0.03, abs=0.01)
    assert a.lo < a.slope < a.hi and a.df > 1 and a.verdict == T.TOWARD, a
    assert [w.d_model for w in a.widths] == [32, 64, 128] and all(w.estimate.seeds == (5, 5) or
                                                                   w.estimate.seeds == (3, 3) for w in a.widths)
    d = slopes["D-smoothing"]  # D3 (the better row) gains 0.04 per doubling on base
    assert d.slope == pytest.approx(0.04, abs=0.01)
    assert d.verdict == T.AWAY, d  # its difference starts near +0.10 and grows, away from the paper's 0.052
    assert d.paper_delta == pytest.approx(math.log(4.92 / 4.67))
    e = slopes["E-positions"]
    assert e.tie and e.paper_delta == 0


def test_no_trend_gives_at_most_5_percent_false_verdicts_at_holms_level():
    """Under the null (every difference the same at every width, some not 0), the chance that any of the
    six slopes gets a verdict stays at 5% (binomial allowance for the replicates)."""
    rng = np.random.default_rng(1)
    effects = {(r, p): e for r, e in (("A1", 0.05), ("C1", 0.2), ("B1", 0.03)) for p in WIDTHS}
    reps, false = 160, 0
    for _ in range(reps):
        slopes = run(simulate(rng, effects), bootstrap_seed=int(rng.integers(1 << 30)))
        false += any(s.verdict in (T.TOWARD, T.AWAY) for s in slopes)
    rate = false / reps
    assert rate <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / reps), rate  # 5% + 2.5 standard errors
    print(f"family-wise false slope verdicts under the null: {rate:.3f} ({reps} replicates)")


def test_the_test_set_noise_shared_across_widths_is_counted():
    """With the seeds nearly silent, the row-by-sentence effect is the noise; it is common to every width,
    so it cancels in the slope, and the per-width intervals (which it does not cancel in) are wider."""
    rng = np.random.default_rng(2)
    rows = simulate(rng, {}, seed_sd=1e-4, row_sentence_sd=0.2, noise_sd=0.05)
    s = next(x for x in run(rows) if x.name == "A-one-head")
    width_se = max(w.estimate.se for w in s.widths)
    assert all(w.estimate.sentence_se > w.estimate.seed_se for w in s.widths)
    assert s.se < 0.5 * width_se, (s.se, width_se)


def test_power_for_a_real_slope():
    """The power it finds (printed): a slope of 0.03 or 0.05 nats per doubling is found about 70-75% of the
    time at this noise. The widest width's 3 seeds leave the slope few degrees of freedom (about 2-5), so
    even a t of 8 can miss Holm's level over six slopes: the design's limit, not the statistic's."""
    for per_doubling, at_least in ((0.03, 0.4), (0.05, 0.5)):
        rng = np.random.default_rng(3)
        effects = {("A1", p): per_doubling * math.log2(d / 32) for p, (d, _) in WIDTHS.items()}
        found = sum(next(x for x in run(simulate(rng, effects)) if x.name == "A-one-head").verdict == T.TOWARD
                    for _ in range(20))
        print(f"power at {per_doubling} nats per doubling: {found / 20:.2f}")
        assert found / 20 >= at_least


def test_a_missing_width_is_said_not_guessed():
    rng = np.random.default_rng(4)
    rows = simulate(rng, {})
    rows["w128"]["C3"] = rows["w128"]["C3"][:1]
    s = next(x for x in run(rows) if x.name == "C-depth")
    assert s.slope is None and "needs 2+ seeds" in s.verdict
    assert s.widths[-1].estimate is None and s.widths[0].estimate is not None


def test_trials_scored_on_other_sentences_are_refused():
    rng = np.random.default_rng(5)
    rows = simulate(rng, {})
    rows["w32"]["A1"] = [T.Seeded(x.seed, x.nll_stats[:-1]) for x in rows["w32"]["A1"]]
    with pytest.raises(ValueError, match="different numbers of sentences"):
        run(rows)
