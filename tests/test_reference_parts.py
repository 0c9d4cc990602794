"""Issue 52, item 7: the GPU reference runs in parts (results/table3-gpu-h200/commands.sh), each part within its
minutes, each from the store the last one committed: rehearsed on this CPU at the smoke profile (two rows x two
seeds, stacked). A part stopped at its deadline keeps the store whole; a part on a fresh machine (no trial folders)
finishes the rows; the rows of several specs train side by side in one experiment, under the analysis plan."""
import lzma
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # Ray and real (tiny) training

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "results" / "table3-gpu-h200" / "commands.sh"
STEPS = 300


def _part(tmp_path, *args, **env):
    e = {**os.environ, "STORE": str(tmp_path / "store"), "KEEP": str(tmp_path / "kept" / "zoo.db.xz"),
         "PROFILE": "smoke", "SEEDS": "2", "GRAPH": "on",
         "ZOO_ARGS": f"--stack on --set train.pack=on --set train.steps={STEPS}", **env}
    return subprocess.run(["bash", str(SCRIPT), *args], env=e, capture_output=True, text=True, timeout=600)


def _rows(xz: Path) -> dict:
    db = xz.with_suffix("")  # an uncompressed copy beside it, to read with sqlite
    db.write_bytes(lzma.decompress(xz.read_bytes()))
    with sqlite3.connect(db) as c:
        got = {r[0]: r[1:] for r in c.execute("SELECT trial, status, step, started_at, finished_at, analysis FROM trials")}
    db.unlink()
    return got


def test_a_part_stops_at_its_deadline_and_the_next_one_finishes_on_a_fresh_machine(tmp_path):
    from zoo.evidence.analysis import load_plan
    plan = load_plan(SCRIPT.parent / "plan.yaml").hash()
    (tmp_path / "kept").mkdir()
    canary = tmp_path / "kept" / "canary.txt"
    canary.write_text("mine")
    cut = _part(tmp_path, "part", "0.15", "2")  # 9 s: Ray's start and the first steps of base and A1
    assert cut.returncode == 0, cut.stderr[-3000:]
    assert "rows to run now: base A1 (of the rows left: base A1 A2" in cut.stderr
    assert "stopped at the deadline" in cut.stderr and "zoo run ended with status 124" in cut.stderr, cut.stderr[-2000:]
    rows = _rows(tmp_path / "kept" / "zoo.db.xz")
    assert set(rows) == {"base-seed1", "base-seed2", "A1-seed1", "A1-seed2"}
    assert all(r[0] == "pending" and (r[1] or 0) < STEPS for r in rows.values()), rows  # resumable, not running
    assert {r[4] for r in rows.values()} == {plan}  # every trial under the plan: specs named together, one plan

    # the next device is a fresh machine: the committed store, no trial folders, no checkpoints
    import shutil
    shutil.rmtree(tmp_path / "store")
    done = _part(tmp_path, "part", "5", "2", MPS="on")  # no MPS on this CPU: said, and the part runs without it
    assert done.returncode == 0, done.stderr[-3000:]
    assert "commands.sh: no MPS (scripts/mps.sh said why above): this part runs without it" in done.stderr
    assert "the 2 specs' 4 trials run side by side in one experiment" in done.stdout, done.stdout[-3000:]
    rows = _rows(tmp_path / "kept" / "zoo.db.xz")
    assert all(r[0] == "finished" and r[1] == STEPS for r in rows.values()), rows
    # side by side: each spec's stack started before the other's ended (one after another, they would not overlap)
    start = {r: min(rows[f"{r}-seed{k}"][2] for k in (1, 2)) for r in ("base", "A1")}
    end = {r: max(rows[f"{r}-seed{k}"][3] for k in (1, 2)) for r in ("base", "A1")}
    assert start["base"] < end["A1"] and start["A1"] < end["base"], rows
    assert "rows still to run: A2 A3 A4 B1" in done.stderr
    assert canary.read_text() == "mine" and sorted(p.name for p in (tmp_path / "kept").iterdir()) == \
        ["canary.txt", "zoo.db.xz"]
    again = _part(tmp_path, "part", "0.05", "2")  # the rows it ran are finished: it takes the next two (cut at 3 s)
    assert "rows to run now: A2 A3" in again.stderr


@pytest.mark.parametrize("args, said", [
    (["part", "abc"], "part MINUTES: a number of minutes above 0"),
    (["part", "0"], "part MINUTES: a number of minutes above 0"),
    (["part", "-1"], "part MINUTES: a number of minutes above 0"),
    (["part", "1", "two"], "ROWS a whole number above 0"),
    (["part", "1", "0"], "ROWS a whole number above 0"),
    (["nope"], "usage: commands.sh part [MINUTES [ROWS]] | report"),
    ([], "usage: commands.sh part [MINUTES [ROWS]] | report"),
])
def test_a_mistake_is_one_line_and_touches_nothing(tmp_path, args, said):
    canary = tmp_path / "store"
    canary.write_text("not a folder of the script's")
    r = _part(tmp_path, *args)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert canary.read_text() == "not a folder of the script's" and not (tmp_path / "kept").exists()


def test_a_store_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "store").write_text("someone's file")
    r = _part(tmp_path, "part", "1")
    assert r.returncode == 2 and "is not a folder; move it away" in r.stderr, r.stderr
    assert (tmp_path / "store").read_text() == "someone's file"


def test_no_report_before_the_first_part(tmp_path):
    r = _part(tmp_path, "report")
    assert r.returncode == 2 and "no store yet" in r.stderr and "run a part first" in r.stderr, r.stderr
