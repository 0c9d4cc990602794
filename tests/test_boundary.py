"""Verdicts that do not move with the bootstrap seed (issue 45, item 4): a claim whose Holm p another seed could put
on the other side of the level is measured again with more resamples, and judged "at the boundary" with its range
of p when even those leave it there; the committed stores' verdicts are the same for --bootstrap-seed 1..5."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from zoo.evidence import claims as C
from zoo.evidence import stats as S

REPO = Path(__file__).resolve().parents[1]
CLAIM = C.Claim("X-ppl", "X", "a beats b", "ppl", "a", "b")


def estimate(p: float, shared_mc: float, resamples: int = 10_000) -> S.Estimate:
    """A paired 3-seed estimate whose two-sided p is `p`, half its variance the test set's."""
    df, se = 2.0, 1.0
    delta = float(st.t.isf(p / 2, df)) * se
    v = se ** 2 / 2
    return S.Estimate(delta, se, df, delta - 4.3 * se, delta + 4.3 * se, 0.0, (3, 3), True, 500, resamples,
                      math.sqrt(v), math.sqrt(v), shared_mc)


def test_a_p_within_its_monte_carlo_error_of_the_level_is_at_the_boundary_without_more_resamples():
    (v,) = C.judge([C.Comparison(CLAIM, estimate(0.0501, 0.01))])
    assert v.verdict == C.BOUNDARY and "either side of 0.05" in v.note and v.note in v.reason
    # far from the level, or with no Monte Carlo error (seeds only), the verdict is the test's
    assert C.judge([C.Comparison(CLAIM, estimate(0.0501, 0.0))])[0].verdict == "within noise"
    assert C.judge([C.Comparison(CLAIM, estimate(0.01, 0.01))])[0].verdict == "held"
    assert C.judge([C.Comparison(CLAIM, estimate(0.2, 0.01))])[0].verdict == "within noise"


def test_more_resamples_settle_a_verdict_near_the_level():
    asked = []

    def refine(c, factor):  # the Monte Carlo error shrinks as 1 / sqrt(resamples)
        asked.append(factor)
        p = 0.05 if c.estimate.p > 0.0499 else 0.0495
        return C.Comparison(c.claim, estimate(p, 0.004 / math.sqrt(factor), 10_000 * factor))

    (v,) = C.judge([C.Comparison(CLAIM, estimate(0.0495, 0.004))], refine=refine)
    assert asked == [4] and v.verdict == "held" and v.estimate.resamples == 40_000
    # still at the level after the last refinement: at the boundary, its resamples named
    asked.clear()
    (v,) = C.judge([C.Comparison(CLAIM, estimate(0.05, 0.004))], refine=refine)
    assert asked == [4, 16] and v.verdict == C.BOUNDARY and "160,000 resamples" in v.note


def test_a_refined_resampler_keeps_the_first_resamples_and_draws_the_rest_in_chunks():
    r = S.Resampler(50, 300, seed=3)
    more = r.more(4)
    assert more.resamples == 1200 and np.array_equal(more.counts[:300], r.counts)  # one stream: its first draws
    side = S.Side((1, 2), stats=np.abs(np.random.default_rng(0).normal(2, 1, (2, 50, 2))) + [0, 1])
    small, big = r.figures("ppl", side), more.figures("ppl", side)
    assert big.shape == (1200, 2) and np.array_equal(big[:300], small)
    assert S.CHUNK >= 10_000  # the default resamples are one chunk: committed figures keep their draws


# -- the committed stores: identical verdicts for bootstrap seeds 1..5 ----------------------------------------
# (reference, profile, add-ons, analysis plan, tables): as each reference's commands.sh reports it, and ablation2
# without its add-ons (the case: D-smoothing-bleu at Holm p 0.0499-0.0502 moved with the seed)
CASES = [("ablation-cpu2", "ablation", (), None, (3,)),
         ("ablation2-cpu2", "ablation", ("ablation_dropout", "ablation_big"), None, (3,)),
         ("ablation2-cpu2", "ablation", (), None, (3,)),
         ("modern-cpu2", "ablation", (), "plan.yaml", (3,)),
         ("quick-cpu2", "quick", (), None, (3,)),
         ("trend-cpu2", None, (), "plan.yaml", (3,))]


def verdicts(ref, profile, addons, plan, tables, seeds, monkeypatch=None) -> list[dict]:
    """Each bootstrap seed's verdicts, by page and claim (the store read once: the seed is the report's; a page
    that reads the whole store again, the trend's, reads it once too when `monkeypatch` is given)."""
    import functools
    from zoo.evidence import load_plan
    from zoo.reports import pages, runs as runs_mod
    path = REPO / "results" / ref / "zoo.db"
    runs = runs_mod.load(path, profile, addons)
    if monkeypatch is not None:
        monkeypatch.setattr(runs_mod, "load", functools.lru_cache(runs_mod.load))
    plan = load_plan(REPO / "results" / ref / plan) if plan else None
    seen = []
    for seed in seeds:
        out = {}
        for t in pages.build(pages.Request(runs, path, tables, plan, seed)):
            for sec in t.sections:
                for v in sec.data or []:
                    if hasattr(v, "verdict"):  # a claim's Verdict, or a trend's Slope
                        out[f"{t.name} {v.claim.id if hasattr(v, 'claim') else v.name}"] = v.verdict
        seen.append(out)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}{'+addons' if c[2] else ''}" for c in CASES])
def test_committed_stores_give_the_same_verdicts_for_bootstrap_seeds_1_to_5(case, monkeypatch):
    seen = verdicts(*case, (1, 2, 3, 4, 5), monkeypatch)
    assert seen[0], "no verdicts read: the test reads nothing"
    moved = {k: [s.get(k) for s in seen] for k in seen[0] if len({s.get(k) for s in seen}) > 1}
    assert not moved, moved
