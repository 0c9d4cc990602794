"""The built wheel installs one import name, `zoo`, with the paper specs and profiles inside it.

Built with pip as a user would (`pip wheel .`), unpacked, and imported by the base interpreter from an
empty folder with only the wheel and the dependencies on its path (no editable finder, no checkout)."""
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_only_zoo_with_builtin_specs(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("*.whl"))
    assert not wheel.name.startswith("zoo-"), "the distribution name 'zoo' is taken on PyPI"
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    top = {p.name for p in site.iterdir() if not p.name.endswith(".dist-info")}
    assert top == {"zoo"}, top
    assert (site / "zoo/specs/table3_A.yaml").is_file() and (site / "zoo/specs/profiles/smoke.yaml").is_file()
    assert (site / "zoo/specs/claims/paper.yaml").is_file()  # zoo.evidence.claims reads the paper's claims from it
    assert (site / "zoo/reports/templates").is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    deps = sysconfig.get_paths()["purelib"]  # this venv's packages; .pth files there are not processed
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{deps}"}
    code = """
import importlib.util, sys
import zoo, zoo.runner.store, zoo.reports.tables, zoo.evidence.claims
assert len(zoo.evidence.claims.CLAIMS) == 19
assert zoo.__file__.startswith(sys.argv[1]), zoo.__file__
assert importlib.util.find_spec("runner") is None and importlib.util.find_spec("reports") is None
from zoo.cli import main
assert main(["show", "big", "--profile", "smoke"]) == 0          # built-in spec and profile by name
assert main(["validate", "table3_A", "--profile", "cpu"]) == 0
"""
    r = subprocess.run([getattr(sys, "_base_executable", sys.executable), "-c", code, str(site)],
                       cwd=empty, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "variant big" in r.stdout and "ok    " in r.stdout
    assert list(empty.iterdir()) == []  # reading specs wrote nothing into the working folder
