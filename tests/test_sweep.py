"""`zoo report --sweep SPEC` (issue 15): every point of a grid, mean and spread over seeds, a figure per field."""
import pytest
import subprocess
import sys
from pathlib import Path

from helpers import ran
from zoo.runner.store import Store
from zoo.spec import resolve

REPO = Path(__file__).resolve().parents[1]
GRID = "extends: base\nseeds: [1, 2]\nsweep:\n  grid: {model.h: [1, 4], model.dropout: [0.0, 0.1]}\n"


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_the_sweep_page_shows_every_point_over_its_seeds(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "grid.yaml"
    spec.write_text(GRID)
    st = Store(tmp_path / "zoo.db")
    for c in resolve(spec, profile="smoke"):
        o = c.overrides
        bleu = 10 + o["model.h"] + 5 * o["model.dropout"] + 0.5 * o["train.seed"]  # seeds 1, 2: mean + 0.75
        m = {"variant": c.variant, "profile": c.profile, "steps_done": c.train.steps, "dev_ppl": 30.0,
             "eval_split": "dev", "splits": {"dev": {"eval_split": "dev", "bleu": bleu}}}
        st.upsert(str(spec), c.trial, c.profile, status="finished", config_hash=c.config_hash(),
                  config=c.model_dump(mode="json"), steps=c.train.steps, step=c.train.steps, metrics=m)
    out = tmp_path / "out"
    monkeypatch.chdir(REPO)
    r = ran("report", "--sweep", spec, "--runs", tmp_path / "zoo.db", "--out", out, capsys=capsys)  # in this process
    assert r.returncode == 0, r.stderr
    md = (out / "sweep-grid.md").read_text()
    for name, bleu in (("grid-h=1-dropout=0.0", 11.75), ("grid-h=4-dropout=0.1", 15.25)):
        line = next(l for l in md.splitlines() if l.startswith(f"| {name} |"))
        assert f"| {bleu:.2f} |" in line and "| 2 |" in line, line  # the mean over its 2 seeds
    assert sum(l.startswith("| grid-") for l in md.splitlines()) == 4
    assert len(list((out / "img").glob("sweep_*.png"))) == 2  # BLEU against model.h and model.dropout
    assert (out / "sweep-grid.html").exists()

    missing = subprocess.run([sys.executable, "-m", "zoo.cli", "report", "--sweep", "other.yaml", "--runs",
                              str(tmp_path / "zoo.db"), "--out", str(out)], capture_output=True, text=True, cwd=REPO)
    assert missing.returncode == 2 and "no such spec file, and no spec of that name" in missing.stderr


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_two_specs_with_one_file_name_are_two_pages(tmp_path, capsys, monkeypatch):
    """mine/grid.yaml and yours/grid.yaml: each its own rows and page; the bare name is ambiguous."""
    st = Store(tmp_path / "zoo.db")
    for who, h in (("mine", 2), ("yours", 4)):
        (tmp_path / who).mkdir()
        spec = tmp_path / who / "grid.yaml"
        spec.write_text(f"extends: base\nmodel: {{h: {h}}}\n")
        c = resolve(spec, profile="smoke")[0]
        m = {"variant": c.variant, "profile": c.profile, "steps_done": c.train.steps, "dev_ppl": 30.0,
             "eval_split": "dev", "splits": {"dev": {"eval_split": "dev", "bleu": 10.0 * h}}}
        st.upsert(str(spec), c.trial, c.profile, status="finished", config_hash=c.config_hash(),
                  config=c.model_dump(mode="json"), steps=c.train.steps, step=c.train.steps, metrics=m)
    monkeypatch.chdir(REPO)
    report = lambda *a: ran("report", *a, "--runs", tmp_path / "zoo.db", capsys=capsys)  # in this process
    r = report("--spec", "grid.yaml", "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "2 specs" in r.stderr and "yours/grid.yaml" in r.stderr, r.stderr
    r = report("--spec", str(tmp_path / "yours" / "grid.yaml"), "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    (page,) = (tmp_path / "b").glob("sweep-grid-*.md")
    assert "| 40.00 |" in page.read_text() and "| 20.00 |" not in page.read_text()
