"""`zoo run SPEC --plan [--json]` (issue 15): every trial and its cost, before anything runs."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def zoo(*args, cwd):
    return subprocess.run([sys.executable, "-m", "zoo.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_plan_lists_every_trial_with_its_cost_and_runs_nothing(tmp_path):
    r = zoo("run", "table3_A", "--profile", "smoke", "--seeds", "2", "--plan", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["trial"] for x in rows] == [f"A{i}-seed{s}" for i in range(1, 5) for s in (1, 2)]
    for x in rows:
        assert {"trial", "variant", "seed", "overrides", "params", "train_flops_total"} <= set(x)
        assert x["overrides"]["train.seed"] == x["seed"] and "model.h" in x["overrides"]
        assert x["params"] > 0 and x["train_flops_total"] > 0 and x["est_seconds"] > 0
        assert x["checkpoint_bytes"] >= 4 * x["params"] * 3  # at least the newest: weights + Adam
    # the variants differ in heads only: same parameters (attention projections are h*d_k wide)
    assert len({x["params"] for x in rows}) == 1
    assert not (tmp_path / "runs").exists()  # nothing ran, nothing was written

    table = zoo("run", "table3_A", "--profile", "smoke", "--plan", "--no-measure", cwd=tmp_path)
    assert table.returncode == 0 and "A4" in table.stdout and "4 trials" in table.stdout, table.stderr


def test_json_without_plan_is_a_usage_error(tmp_path):
    r = zoo("run", "table3_A", "--profile", "smoke", "--json", cwd=tmp_path)
    assert r.returncode == 2 and "--plan" in r.stderr and "Traceback" not in r.stderr
