"""The public Python API: `import zoo` is cheap, and its few names do what the CLI does."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zoo

ROOT = Path(__file__).resolve().parents[1]


def test_import_zoo_does_not_import_torch_or_ray():
    code = "import sys, zoo; zoo.load; print(sorted({'torch', 'ray'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_import_zoo_puts_large_tensors_on_huge_pages_unless_told_not_to():
    """torch reads THP_MEM_ALLOC_ENABLE at its first CPU allocation: `import zoo` sets it before
    any (zoo/__init__.py), and leaves a value the user set alone."""
    code = "import os, zoo, torch; torch.ones(3); print(os.environ['THP_MEM_ALLOC_ENABLE'])"
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    run = lambda env: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     env=env).stdout.strip()
    assert run(env) == "1" and run({**env, "THP_MEM_ALLOC_ENABLE": "0"}) == "0"


@pytest.mark.slow
def test_load_build_fit_results(tmp_path):
    cfg = zoo.load(ROOT / "specs/table3_A.yaml", variant="A1", profile="smoke",
                   sets=["train.steps=4", "eval.max_sentences=2", "train.checkpoint_every=2"])[0]
    assert isinstance(cfg, zoo.Config) and cfg.variant == "A1" and cfg.model.h == 1
    model = zoo.build_model(cfg.model, cfg.data.vocab_size)
    assert sum(p.numel() for p in model.parameters()) > 0
    summary = zoo.fit(cfg, out=tmp_path / "A1")
    assert summary.steps_done == 4 and (tmp_path / "A1" / "summary.json").exists()
    runs = zoo.results(ROOT / "results/quick-cpu2/zoo.db")
    assert len(runs.trials) >= 20
    from zoo.result import RunResult, Trial
    done = [t for t in runs.trials if t.finished]
    assert all(isinstance(t, Trial) and isinstance(t.config, zoo.Config) for t in runs.trials)
    assert done and all(isinstance(t.result, RunResult) for t in done)


def test_unknown_name_is_an_attribute_error():
    try:
        zoo.nope
    except AttributeError as e:
        assert "nope" in str(e)
    else:
        raise AssertionError("zoo.nope resolved")


def test_a_door_serves_its_parts_names_and_no_other():
    """The doors serve their parts' names (and their editors see the same: tests/test_structure.py); the names
    that moved to the ground floor (zoo.spec.Config, zoo.data.PAD, zoo.train.noam_lr) are served only there."""
    from zoo import data, spec
    from zoo.spec import resolve, SpecError  # noqa: F401  (served by the door)
    assert data.load_pairs is __import__("zoo.data.read", fromlist=["load_pairs"]).load_pairs
    for door, name in ((spec, "Config"), (spec, "nope"), (data, "PAD")):
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(door, name)


def test_no_door_serves_a_name_that_is_also_one_of_its_parts():
    """`zoo.data.fetch` once meant both a function and, after its module was imported, that module: a door's
    names and its parts' module names must differ, or the meaning of a name depends on import order."""
    from pathlib import Path
    from zoo import data, evidence, model, spec, train
    for door in (data, spec, train, model, evidence):
        parts = {p.stem for p in Path(door.__file__).parent.glob("*.py")}
        assert not parts & set(dir(door)) - {"__init__"}, (door.__name__, parts & set(dir(door)))
