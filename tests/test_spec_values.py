"""Spec values, round 4 (issue 38): numbers at the edges of floats and int64 in sweeps, values that read
as the same (0, 0.0, -0.0), seeds set in two places, resource shares finer than Ray's precision, profile
head scaling that merges rows, and errors that point at the line the user wrote, never a traceback."""
from pathlib import Path

import pytest

from zoo.cli import main

B = "extends: base\n"


def run(*argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, (out.out + out.err).strip()


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def fails(capsys, where: str, field: str, *argv, fragment: str = "") -> str:
    """`zoo ARGV` exits 2 with `WHERE: FIELD: ...` (one paragraph, no traceback)."""
    code, msg = run(*argv, capsys=capsys)
    assert code == 2 and "Traceback" not in msg, msg
    assert f"{where}: {field}: " in msg, msg
    assert fragment in msg, msg
    return msg


def random_space(space: str, samples: str = "2", field: str = "model.dropout") -> str:
    return f"{B}sweep:\n  random:\n    samples: {samples}\n    {field}: {space}\n"


# -- numbers past what floats and int64 hold --------------------------------------------------------

@pytest.mark.parametrize("space", ["{uniform: [0, .inf]}", "{uniform: [-.inf, 1]}",
                                   "{uniform: [-1.7e308, 1.7e308]}", "{loguniform: [1e-3, .inf]}",
                                   "{uniform: [0, 1" + "0" * 400 + "]}"])
def test_random_float_spaces_must_be_finite(tmp_path, capsys, space):
    f = write(tmp_path, random_space(space))
    fails(capsys, f"{f}:5", "sweep.random.model.dropout", "validate", f, fragment="finite")


@pytest.mark.parametrize("bounds", ["[1, 99999999999999999999999]", "[-9223372036854775809, 4]",
                                    "[1, 9223372036854775808]"])
def test_randint_bounds_must_fit_int64(tmp_path, capsys, bounds):
    f = write(tmp_path, random_space(f"{{randint: {bounds}}}", field="model.N"))
    fails(capsys, f"{f}:5", "sweep.random.model.N", "validate", f, fragment="int64")


def test_thousands_of_digits_of_samples(tmp_path, capsys):
    f = write(tmp_path, "extends: base\nseeds: [1, 2]\n" + random_space("{uniform: [0, 1]}", "9" * 4300)[len(B):])
    msg = fails(capsys, f"{f}:5", "sweep.random.samples", "validate", f, fragment="whole number from 1 to 1000")
    assert len(msg) < 1000, msg


def test_a_billion_samples_blames_samples(tmp_path, capsys):
    f = write(tmp_path, random_space("{uniform: [0, 1]}", "1000000000"))
    fails(capsys, f"{f}:4", "sweep.random.samples", "validate", f, fragment="1000000000")


def test_a_grid_too_large_to_print_is_counted_not_printed(tmp_path, capsys):
    axes = "".join(f"    model.x{i}: [0, 1]\n" for i in range(15000))  # 2^15000 points: 4,516 digits
    f = write(tmp_path, f"{B}sweep:\n  grid:\n{axes}")
    fails(capsys, f"{f}:2", "sweep", "validate", f, fragment="10^4515")


def test_a_cpu_share_below_ray_precision_in_a_plan(tmp_path, capsys):
    f = write(tmp_path, f"{B}resources:\n  cpus: 5e-324\n")
    fails(capsys, f"{f}:3", "resources.cpus", "run", f, "--profile", "smoke", "--plan", "--no-measure",
          fragment="0.0001")


@pytest.mark.parametrize("field,value", [("gpus", "0.33333"), ("cpus", "0.00015")])
def test_shares_come_in_steps_of_ray_precision(tmp_path, capsys, field, value):
    f = write(tmp_path, f"{B}resources:\n  {field}: {value}\n")
    fails(capsys, f"{f}:3", f"resources.{field}", "validate", f, fragment="steps of 0.0001")
    ok = write(tmp_path, f"{B}resources:\n  gpus: 0.25\n  cpus: 0.5\n", "ok.yaml")
    assert run("validate", ok, capsys=capsys)[0] == 0


# -- values that read the same are one trial --------------------------------------------------------

@pytest.mark.parametrize("values", ["[0, 0.0]", "[0.0, -0.0]", "[0, 0.0, -0.0]"])
def test_grid_values_that_read_the_same_are_refused(tmp_path, capsys, values):
    f = write(tmp_path, f"{B}sweep:\n  grid:\n    model.dropout: {values}\n")
    fails(capsys, f"{f}:4", "sweep.grid.model.dropout", "validate", f, fragment="same model")


def test_choice_values_that_read_the_same_are_refused(tmp_path, capsys):
    f = write(tmp_path, random_space("{choice: [1, 1.0]}", field="train.schedule.lr_scale"))
    fails(capsys, f"{f}:5", "sweep.random.train.schedule.lr_scale", "validate", f, fragment="same model")


def test_a_variants_own_seed_on_a_seeds_axis(tmp_path, capsys):
    f = write(tmp_path, "extends: base\nseeds: [1, 2]\nvariants:\n  X: {train: {seed: 5}}\n")
    fails(capsys, f"{f}:4", "variants.X.train.seed", "validate", f, fragment=f"{f}:2")
    g = write(tmp_path, "extends: base\nvariants:\n  X: {train: {seed: 5}}\n", "g.yaml")
    fails(capsys, f"{g}:3", "variants.X.train.seed", "run", g, "--seeds", "2", "--plan", "--no-measure",
          fragment="--seeds")


def test_set_seed_on_a_seeds_axis(tmp_path, capsys):
    f = write(tmp_path, "extends: base\nseeds: [1, 2]\n")
    fails(capsys, "--set train.seed=5", "train.seed", "show", f, "--set", "train.seed=5", fragment=f"{f}:2")


def test_profile_heads_that_merge_rows_are_refused(tmp_path, capsys):
    p = write(tmp_path, "scale:\n  width: 0.125\n  heads: 0.3\n", "p.yaml")
    msg = fails(capsys, f"{p}:3", "scale.heads", "show", "table3_A", "--profile", p, fragment="A2")
    assert "A1" in msg, msg
    q = write(tmp_path, "scale: {heads: 0.25}\n", "q.yaml")  # A1's 1 head stays 1, A2's 4 become 1
    msg = fails(capsys, f"{q}:1", "scale.heads", "show", "table3_A", "--profile", q, fragment="A1")
    assert "A2" in msg, msg
    assert run("show", "table3_A", "--profile", "ablation", capsys=capsys)[0] == 0  # 1, 2, 8, 16 heads
    # only the rows that run are compared: A1, A3 and A4 keep 1, 4 and 8 heads (the trend's narrowest width)
    a = str(Path(__file__).parents[1] / "specs" / "table3_A.yaml")
    assert run("run", a, "--variant", "A1", "--variant", "A3", "--variant", "A4", "--profile", q, "--plan",
               "--no-measure", "--storage", str(tmp_path / "runs"), capsys=capsys)[0] == 0
    fails(capsys, f"{q}:1", "scale.heads", "run", a, "--variant", "A1", "--variant", "A2", "--profile", q,
          "--plan", "--no-measure", "--storage", str(tmp_path / "runs"), fragment="A2")


def test_set_a_section_null_after_setting_its_field(capsys):
    fails(capsys, "--set model=null", "model", "show", "base", "--set", "model.h=4", "--set", "model=null",
          fragment="--set model.h=4")


# -- errors point at the line the user wrote --------------------------------------------------------

def test_a_profile_scaling_past_a_cap_blames_the_profile(tmp_path, capsys):
    p = write(tmp_path, "description: x\nscale:\n  heads: 64\n", "p.yaml")
    fails(capsys, f"{p}:3", "model.h", "show", "base", "--profile", p, fragment="got 512")


def test_gpu_rules_point_at_the_field(tmp_path, capsys):
    f = write(tmp_path, f"{B}resources:\n  workers: 2\n  gpus: 0.5\n")
    fails(capsys, f"{f}:4", "resources.gpus", "validate", f, fragment="one-worker")
    f = write(tmp_path, f"{B}resources:\n  cpus: 2\n  gpus: 2\n")
    fails(capsys, f"{f}:4", "resources.gpus", "validate", f, fragment="per worker")
    fails(capsys, "--set resources.gpus=2", "resources.gpus", "show", "base", "--set", "resources.gpus=2")
    f = write(tmp_path, f"{B}resources:\n  gpus: 0.5\n")
    fails(capsys, "--set resources.workers=2", "resources.workers", "show", f, "--set", "resources.workers=2",
          fragment="one-worker")


def test_a_cross_field_rule_blames_the_variants_line(tmp_path, capsys):
    f = write(tmp_path, f"{B}eval:\n  average_checkpoints: 5\nvariants:\n  X:\n    train: {{keep_checkpoints: 2}}\n")
    fails(capsys, f"{f}:6", "train.keep_checkpoints", "validate", f, fragment="keep_checkpoints >= 5")


def test_set_into_a_plain_value_blames_the_set(capsys):
    fails(capsys, "--set model.h.x=4", "model.h", "show", "base", "--set", "model.h.x=4")
