"""Specs bounded before they expand: trial counts by arithmetic, a megabyte of variants, YAML aliases (billion
laughs) and oversized files, each refused in little memory."""
import pytest

import re
import resource
import subprocess
import sys
from pathlib import Path

from helpers import fails_at, run, spec
from zoo.spec import MAX_TRIALS


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # validation stays under 1 GB


def _limit_memory_3gb():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a runaway expansion dies, not the machine


def _validate_capped(f: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zoo.cli", "validate", str(f)], capture_output=True, text=True,
                          timeout=60, preexec_fn=_limit_memory, cwd=f.parent)


def test_a_billion_point_grid_is_refused_by_arithmetic(tmp_path):
    axes = "\n".join(f"    {k}: [{', '.join(str(i) for i in range(10))}]" for k in (
        "model.dropout", "train.schedule.lr_scale", "model.attention_dropout", "model.ff_dropout",
        "train.label_smoothing", "eval.length_penalty", "train.schedule.warmup_steps", "eval.beam_size", "train.seed"))
    f = spec(tmp_path, f"extends: base\nsweep:\n  grid:\n{axes}\n")
    ok = spec(tmp_path, "extends: base\n", "ok.yaml")
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "validate", str(f), str(ok)], capture_output=True,
                       text=True, timeout=60, preexec_fn=_limit_memory)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"{f}:2: sweep: makes 1,000,000,000 trials" in r.stdout and f"ok    {ok}" in r.stdout  # the other file too


def test_trials_are_capped_across_variants_sweep_and_seeds(tmp_path, capsys):
    variants = "\n".join(f"  v{i}: {{}}" for i in range(30))
    fails_at(tmp_path, capsys, f"extends: base\nseeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nsweep:\n  random:\n"
                   f"    samples: 10\n    model.dropout: {{uniform: [0.0, 0.5]}}\nvariants:\n{variants}\n",
                   3, "sweep", fragment=f"makes 3,000 trials (30 variants x 10 sweep points x 10 seeds); at most {MAX_TRIALS:,}")


@pytest.mark.slow  # a megabyte of variants, validated in a process of its own
def test_a_megabyte_of_variants_validates_in_little_memory(tmp_path):
    lines, i = ["extends: base", "variants:"], 0
    size = sum(len(x) + 1 for x in lines)  # kept as it grows: summing the lines anew each time took ~50 s
    while size < 990_000:
        lines.append(f"  v{i}: {{model: {{h: 8}}}}")
        size += len(lines[-1]) + 1
        i += 1
    f = spec(tmp_path, "\n".join(lines) + "\n")
    r = _validate_capped(f)
    assert r.returncode == 2 and f"{f}:2: variants: makes {i:,} trials" in r.stdout, r.stdout + r.stderr[-2000:]


LAUGHS = "paper: {group: x}\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))


def test_billion_laughs_fails_fast_in_little_memory(tmp_path):
    f = tmp_path / "laughs.yaml"
    f.write_text(LAUGHS)
    assert len(LAUGHS) < 2000
    code = ("import resource, sys; from zoo.cli import main; rc = main(['validate', sys.argv[1]]); "
            "print(open('/proc/self/status').read()); sys.exit(rc)")  # VmHWM: this process's peak (ru_maxrss survives exec)
    r = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=60,
                       preexec_fn=_limit_memory_3gb)
    assert r.returncode == 2, r.stdout + r.stderr[-2000:]
    assert f"{f}:2: l0: YAML anchors and aliases (&name, *name) are not allowed" in r.stdout
    assert int(re.search(r"VmHWM:\s+(\d+) kB", r.stdout).group(1)) < 300_000  # start-up size, no expansion


def test_oversized_file_is_refused_before_parsing(tmp_path, capsys):
    f = tmp_path / "big.yaml"
    f.write_text("model:\n  N: 6\n" + "# padding\n" * 120_000)
    code, out, _ = run("validate", f, capsys=capsys)
    assert code == 2 and f"{f}:1: the file is larger than 1000 KB" in out
