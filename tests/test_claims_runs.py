"""Claims runs (issue 51, item 4): `--until-resolved` extends the seeds the spec names (never 1, 2, 3 in their
place, never fewer of them than it names), refuses a profile too small for any claim, and a `zoo train` cut by
train.time_limit_minutes says so and records it."""
import json
from pathlib import Path

import pytest

from zoo import evidence as E
from zoo.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_seed_order_starts_with_the_named_seeds_and_adds_new_ones():
    assert E.seed_order([5, 9], 3) == [5, 9, 10]
    assert E.seed_order([1, 2], 4) == [1, 2, 3, 4]  # --seeds 2, or no seeds named: as before
    assert E.seed_order([9, 5], 2) == [9, 5]
    assert E.seed_order([2**32 - 1, 0], 3) == [2**32 - 1, 0, 1]  # past the bound: the smallest unused
    with pytest.raises(ValueError, match="below the 3 seeds the first round runs .5, 9, 13."):
        E.seed_order([5, 9, 13], 2)


def spec(tmp_path: Path, seeds: str) -> str:
    path = tmp_path / "mine.yaml"
    path.write_text(f"extends: table3_A\nseeds: {seeds}\n")
    return str(path)


def plan(tmp_path, seeds: str, max_seeds: int, capsys, profile: str = "quick") -> tuple[int, str, str]:
    code = main(["run", spec(tmp_path, seeds), "--variant", "A3", "--profile", profile, "--plan", "--no-measure",
                 "--until-resolved", "--max-seeds", str(max_seeds)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_until_resolved_extends_the_spec_seeds(tmp_path, capsys):
    code, out, err = plan(tmp_path, "[5, 9]", 3, capsys)
    assert code == 0, err
    assert "A3-seed5" in out and "A3-seed9" in out and "A3-seed1 " not in out, out
    assert "runs these trials first (seeds 5, 9)" in err and "one a round (10), up to --max-seeds 3" in err, err


def test_until_resolved_refuses_to_look_at_fewer_seeds_than_the_spec_names(tmp_path, capsys):
    for argv in ([], ["--plan", "--no-measure"]):  # the run itself is refused before anything starts
        code = main(["run", spec(tmp_path, "[5, 9, 13]"), "--variant", "A3", "--profile", "quick", *argv,
                     "--until-resolved", "--max-seeds", "2", "--storage", str(tmp_path / "runs")])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert "--max-seeds 2 is below the 3 seeds the first round runs (5, 9, 13)" in err, err
    assert not (tmp_path / "runs").exists()


def test_until_resolved_refuses_a_profile_that_cannot_test_claims(tmp_path, capsys):
    code, out, err = plan(tmp_path, "[1, 2]", 3, capsys, profile="smoke")
    assert code == 2 and "under profile smoke: smoke trains" in err and "untestable at this budget" in err, err


@pytest.mark.slow
def test_a_train_cut_by_its_time_limit_says_so(tmp_path, capsys, data_root):
    """Real training, one step: a time limit of 6 ms is reached at the first step's clock read."""
    out = tmp_path / "run"
    code = main(["train", str(REPO / "specs" / "base.yaml"), "--profile", "smoke", "--out", str(out),
                 "--set", "train.time_limit_minutes=0.0001", "--set", "eval.max_sentences=2"])
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.startswith("cut short: stopped at step 1 of 30 by train.time_limit_minutes (0.0001 min)"), printed
    assert json.loads((out / "summary.json").read_text())["time_limited"] is True
    # asked again: the finished run's summary, still marked
    assert main(["train", str(REPO / "specs" / "base.yaml"), "--profile", "smoke", "--out", str(out),
                 "--set", "train.time_limit_minutes=0.0001", "--set", "eval.max_sentences=2"]) == 0
    assert "cut short: stopped at step 1 of 30" in capsys.readouterr().out
