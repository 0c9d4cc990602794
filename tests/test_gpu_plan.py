"""Issue 52, item 4: `zoo run base table3_A ... --plan --seeds 10 --profile ablation_gpu` prints the minutes on one H100
(measured speeds, the stacking and sharing named as predictions), the K per row, and each claim's power at 10 seeds
from the committed CPU reference's noise. Slow on a busy machine: 19 rows' roofline traces and the reference store."""
import re

import pytest

from zoo.cli import main

TABLE3 = ["base", "table3_A", "table3_B", "table3_C", "table3_D", "table3_E"]


@pytest.mark.slow
def test_table3_x10_under_ablation_gpu_plans_within_half_an_hour_on_an_h100(capsys):
    assert main(["run", *TABLE3, "--plan", "--seeds", "10", "--profile", "ablation_gpu"]) == 0
    out = capsys.readouterr().out
    got = re.search(r"19 rows x 10 seeds, 4 processes sharing the card .*: about (\d+) minutes on one H100 "
                    r"\(PREDICTED, (\d+)-(\d+)", out)
    assert got, out[-3000:]
    assert int(got[1]) <= 30 and int(got[2]) <= int(got[1]) <= int(got[3])
    assert "Measured: the cpu-profile base alone on an H100: 2200 steps at 21.9 ms" in out
    rows = {l.split()[0]: l for l in out.splitlines() if re.match(r"^(base|[A-E]\d?) +10 +\d+ ", l)}
    assert len(rows) == 19 and all(" PREDICTED " in l for l in rows.values())  # K 10: no H100 measured a stack yet
    assert all(l.split()[2] == "10" for l in rows.values())  # the ten seeds of a row fit one stack on 80 GB
    # each claim resting on these rows: its power at 10 seeds and its Monte Carlo range, from the v2 reference
    power = {l.split()[0]: l for l in out.splitlines() if re.match(r"^[A-E]-[a-z-]+ +\d", l)}
    assert len(power) == 17, sorted(power)
    for claim, line in power.items():
        assert re.search(r"pilot: \d+ seeds +(0|1)\.\d\d +(0|1)\.\d\d-(0|1)\.\d\d", line), line
    assert "results/ablation2-cpu2/zoo.db.xz (profile ablation)" in out
    assert "(not planned here, a row of theirs is not in this plan: big-bleu, big-ppl)" in out


def test_graphed_and_packed_stacks_plan_from_the_cards_busy_time():
    """train.cuda_graph on: a step is the card's busy time and the loop's own host time (no kernel queue); train.pack
    on: fewer, wider rows. Graphed is predicted below the eager step, never below the card's busy time. Packing
    shares the fused kernel's tiles, so a seed alone is predicted faster packed; a stack's attention is the math
    backend (zoo.train.stacked.ATTENTION), which computes a packed row's whole block, so a stack is predicted
    slower packed."""
    from zoo.runner import gpu_plan
    from zoo.spec import resolve
    a = gpu_plan.anchor()
    step = {}
    for graph in ("off", "on"):
        for pack in ("off", "on"):
            c = resolve("base", profile="ablation_gpu", sets=[f"train.cuda_graph={graph}", f"train.pack={pack}"])[0]
            step[graph, pack] = gpu_plan.stacked_step(c, 10, a)
    (eager, _, busy), (graphed, measured, busy_g) = step["off", "off"], step["on", "off"]
    assert not measured and busy_g == busy and graphed[0] == max(busy, a.host) and graphed[2] == busy + a.host
    assert graphed[1] < eager[1]
    assert step["on", "on"][2] > busy and step["on", "on"][0][1] > graphed[1]
    alone = {pack: gpu_plan.stacked_step(resolve("base", profile="ablation_gpu", sets=[f"train.pack={pack}"])[0], 1, a)
             for pack in ("off", "on")}
    assert alone["on"][2] < alone["off"][2]


def test_several_specs_run_together_but_until_resolved_takes_one(capsys):
    assert main(["run", "base", "table3_A", "--profile", "smoke", "--until-resolved"]) == 2
    assert "--until-resolved takes one spec" in capsys.readouterr().err
    assert main(["run", "base", "specs/nope.yaml", "--profile", "smoke"]) == 2  # every spec checked before Ray
    assert "nope.yaml" in capsys.readouterr().err
    assert main(["run", "base", "specs/base.yaml", "--profile", "smoke"]) == 2  # one spec by two names
    assert "named twice" in capsys.readouterr().err


def test_a_claims_power_at_a_seed_count_carries_its_monte_carlo_range():
    """The plan's power column: at the test-set variance itself and at its Monte Carlo ends (more test-set noise,
    less power), for a directional claim and a tie."""
    from zoo import evidence as E
    from zoo.reports import power
    claim = next(c for c in E.CLAIMS if c.id == "A-too-many-heads-bleu")
    need = power.Need(claim, 0.31, 0.34, 0.048, "pilot: 3 seeds", 31, 3, mc=(27, 38), resamples=32000,
                      sent_mc=(0.044, 0.052), alpha=0.005)
    mid, lo, hi = need.power_at(10)
    assert mid == pytest.approx(power.power(0.31, 0.34, 0.048, 10, 0.005))
    assert lo == pytest.approx(power.power(0.31, 0.34, 0.052, 10, 0.005)) and lo < mid < hi
    tie = power.Need(claim, 0.5, 0.3, 0.05, "pilot: 3 seeds", None, 3, alpha=0.005, tie_margin=0.5)
    assert tie.power_at(10) == (pytest.approx(power.power(0.5, 0.3, 0.05, 10, 0.005, 0.5)),) * 3
