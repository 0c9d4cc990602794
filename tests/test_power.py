"""`zoo run SPEC --plan --power`: seeds a claim needs, from a pilot store's noise."""
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.reports import power

REFERENCE = Path(__file__).resolve().parents[1] / "results/ablation-cpu2/zoo.db"


def test_power_is_the_paired_t_tests():
    from statsmodels.stats.power import TTestPower
    for n in (3, 5, 10):  # no sentence noise: a one-sample t-test on the per-seed differences
        ours = power.power(2.0, 1.0, 0.0, n, 0.05)
        assert ours == pytest.approx(TTestPower().power(effect_size=2.0, nobs=n, alpha=0.05), abs=1e-6)
    assert power.seeds_needed(2.0, 1.0, 0.0, 0.05) == 5
    assert power.power(1.0, 1.0, 0.3, 20, 0.05) < power.power(1.0, 1.0, 0.0, 20, 0.05)  # test-set noise costs power
    assert power.seeds_needed(0.1, 1.0, 0.5, 0.05) is None  # never, however many seeds: the sentences' noise


def test_plan_power_on_the_reference_store(capsys):
    assert main(["run", "specs/table3_C.yaml", "--plan", "--power", "--pilot", str(REFERENCE),
                 "--profile", "ablation"]) == 0
    out = capsys.readouterr().out
    lines = {l.split()[0]: l for l in out.splitlines() if l.startswith("C-")}
    assert set(lines) == {"C-depth-bleu", "C-depth-ppl", "C-width-bleu", "C-width-ppl", "C-ffn-bleu", "C-ffn-ppl"}
    assert all("pilot: 3 seeds" in l for l in lines.values())
    assert "Cost:" in out and "hours" in out


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_power_has_no_nan_where_scipys_noncentral_t_does():
    """scipy's nct returns NaN far in its tail (293 of this grid's 1386 points), which read as 'no power' and
    asked for more seeds than needed (issue 34): the planner's power is finite everywhere, and where scipy
    is finite the two agree."""
    import math
    from scipy import stats as st
    nan = 0
    for df in range(1, 100):
        for ncp in (0.1, 1, 5, 10, 20, 40, 80):
            for alpha in (0.005, 0.05):
                q = st.t.ppf(1 - alpha / 2, df)
                raw = st.nct.sf(q, df, ncp) + st.nct.cdf(-q, df, ncp)
                got = power.power(ncp, math.sqrt(df + 1), 0.0, df + 1, alpha)  # se 1: ncp is the effect
                assert math.isfinite(got) and 0 <= got <= 1
                if math.isfinite(raw):
                    assert got == pytest.approx(raw, abs=1e-9)
                else:
                    nan += 1
                    assert got == pytest.approx(power._power_by_integral(q, df, ncp))
    assert nan > 0  # the grid reaches scipy's NaN region, so the fallback is exercised


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_the_planner_on_the_v2_reference_finds_no_nan():
    import math
    import shutil
    import tempfile
    from zoo.reports import runs as runs_mod
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "zoo.db"
        from zoo.runner.storefile import unpacked
        shutil.copy(unpacked(REFERENCE.parents[1] / "ablation2-cpu2/zoo.db.xz"), db)
        p = power.plan(runs_mod.load(db, "ablation"))
    assert p.needs and all(math.isfinite(x) for n in p.needs for x in (n.effect, n.seed_sd, n.sentence_se))
    for n in p.needs:
        if n.seeds:
            assert 2 <= n.seeds <= 100


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_the_planners_counts_hold_over_bootstrap_seeds():
    """Issue 52: at 2,000 resamples A-too-many-heads-bleu's count moved from 'not reachable in 100' (seed 2017)
    to 39-42 (seeds 1, 2). Sized again with more resamples while its Monte Carlo range is wide, two
    bootstrap seeds give counts within 10%, and the range is stated."""
    from zoo import evidence as E
    from zoo.reports import runs as runs_mod
    runs = runs_mod.load(REFERENCE.parents[1] / "ablation2-cpu2/zoo.db", "ablation")
    claims = [c for c in E.CLAIMS if c.id == "A-too-many-heads-bleu"]
    a, b = (power.plan(runs, claims, seed=s).needs[0] for s in (1, 2))
    assert a.seeds and b.seeds and abs(a.seeds - b.seeds) <= 0.1 * max(a.seeds, b.seeds)
    assert a.resamples > power.RESAMPLES and a.mc[0] <= a.seeds <= a.mc[1]
