"""`zoo run SPEC --plan [--json]` (issue 15): every trial and its cost, before anything runs."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import zoo
from zoo.spec import builtin_specs

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
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


GRID = """extends: base
seeds: [1, 2]
sweep:
  grid:
    model.h: [1, 4]
    model.dropout: [0.0, 0.1]
"""


def test_a_grid_times_seeds_is_planned_as_one_trial_each(tmp_path):
    (tmp_path / "grid.yaml").write_text(GRID)
    r = zoo("run", "grid.yaml", "--profile", "smoke", "--plan", "--json", "--no-measure", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 8 and len({x["trial"] for x in rows}) == 8
    assert "grid-h=4-dropout=0.1-seed2" in {x["trial"] for x in rows}
    assert {(x["overrides"]["model.h"], x["overrides"]["model.dropout"], x["seed"]) for x in rows} == \
        {(h, p, s) for h in (1, 4) for p in (0.0, 0.1) for s in (1, 2)}
    # the schema `zoo schema` prints accepts it too
    import jsonschema
    import yaml
    schema = json.loads(zoo("schema", cwd=tmp_path).stdout)
    jsonschema.validate(yaml.safe_load(GRID), schema)


def test_one_bad_combination_fails_the_whole_command_and_says_which(tmp_path):
    (tmp_path / "bad.yaml").write_text("extends: base\nsweep:\n  grid:\n    model.dropout: [0.1, 1.5]\n    model.h: [1, 2]\n")
    r = zoo("run", "bad.yaml", "--profile", "smoke", "--plan", cwd=tmp_path)
    assert r.returncode == 2 and "bad.yaml:4: model.dropout" in r.stderr and "bad-dropout=1.5-h=1" in r.stderr
    (tmp_path / "typo.yaml").write_text("extends: base\nsweep:\n  grid:\n    modle.h: [1, 2]\n")
    r = zoo("run", "typo.yaml", "--profile", "smoke", "--plan", cwd=tmp_path)
    assert r.returncode == 2 and "typo.yaml:4: sweep.grid.modle.h" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "rand.yaml").write_text("extends: base\nsweep:\n  random: {samples: 8, model.dropout: {normal: [0, 1]}}\n")
    r = zoo("run", "rand.yaml", "--profile", "smoke", "--plan", cwd=tmp_path)
    assert r.returncode == 2 and "rand.yaml:3: sweep.random.model.dropout" in r.stderr and "loguniform" in r.stderr
    (tmp_path / "asha.yaml").write_text("extends: base\nsweep:\n  grid: {model.h: [1]}\n  scheduler: {asha: {}}\n")
    r = zoo("run", "asha.yaml", "--profile", "smoke", "--plan", cwd=tmp_path)
    assert r.returncode == 2 and "asha.yaml:4: sweep.scheduler.asha.grace_steps" in r.stderr, r.stderr


RANDOM = """extends: base
sweep:
  grid: {model.h: [1, 4]}
  random:
    samples: 3
    train.schedule.lr_scale: {loguniform: [0.25, 4.0]}
    model.dropout: {choice: [0.0, 0.1, 0.2]}
"""


def test_random_draws_are_validated_named_and_the_same_on_every_resolve(tmp_path):
    (tmp_path / "rand.yaml").write_text(RANDOM)
    runs = [json.loads(zoo("run", "rand.yaml", "--profile", "smoke", "--plan", "--json", "--no-measure",
                           cwd=tmp_path).stdout) for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == 6  # 2 grid points x 3 draws, drawn alike each time
    lrs = {x["overrides"]["train.schedule.lr_scale"] for x in runs[0]}
    assert len(lrs) == 3 and all(0.25 <= v <= 4.0 for v in lrs)
    assert {x["overrides"]["model.dropout"] for x in runs[0]} <= {0.0, 0.1, 0.2}
    assert all(x["trial"].startswith(("rand-h=1-r", "rand-h=4-r")) for x in runs[0])
    import jsonschema
    import yaml
    jsonschema.validate(yaml.safe_load(RANDOM), json.loads(zoo("schema", cwd=tmp_path).stdout))


def test_a_logger_that_is_not_installed_is_a_clear_error_before_anything_runs(tmp_path):
    # both trackers are in the test extras: the child is made to lack one for real (None in sys.modules is
    # Python's own "no such module": find_spec answers None, an import fails), then zoo runs as its command does
    for name in ("wandb", "mlflow"):
        hide = f"import sys; sys.modules[{name!r}] = None; from zoo.cli import main; sys.exit(main())"
        r = subprocess.run([sys.executable, "-c", hide, "run", "table3_A", "--profile", "smoke", "--logger", name],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert r.returncode == 2 and f"--logger {name} needs the `{name}` package: pip install {name}" in r.stderr, r
        assert "Traceback" not in r.stderr and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("spec", builtin_specs())
def test_every_builtin_spec_plans(spec, capsys):
    from zoo.cli import main
    assert main(["run", spec, "--plan", "--no-measure", "--profile", "smoke"]) == 0, capsys.readouterr().err
    assert "trials" in capsys.readouterr().out


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_the_parsing_spec_measures_its_word_pointer_model(tmp_path):
    # the plan's measured steps build the model as zoo.build_model does: with the word pointer
    r = zoo("run", "table4_wsj", "--profile", "smoke", "--plan", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)  # the paper's model and the pointer variant, each measured
    assert len(plan) == 2 and all(p["est_seconds"] > 0 for p in plan)
