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
