"""`zoo merge`: trials of several stores (two `zoo run`s with their own --storage) read as one."""
import subprocess
import sys
from pathlib import Path

from helpers import run
from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]


def _trial(st: Store, variant: str, bleu: float, steps=(10, 20)):
    m = {"variant": variant, "profile": "p", "steps_done": steps[-1], "eval_split": "dev",
         "splits": {"dev": {"eval_split": "dev", "bleu": bleu}}}
    st.upsert("s.yaml", variant, "p", status="finished", config_hash="h", config={}, metrics=m)
    st.add_points("s.yaml", variant, "p", [{"step": s, "loss": 1.0 / s} for s in steps])


def test_merge_copies_trials_with_their_curves_and_the_newer_row_wins(tmp_path, capsys):
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b" / "zoo.db")
    _trial(a, "A1", 10.0)
    _trial(b, "A2", 11.0)
    _trial(b, "A1", 12.0, steps=(10, 20, 30))  # updated after a's A1: it wins, with its curve
    code, out, err = run("merge", tmp_path / "a.db", tmp_path / "b", capsys=capsys)  # in this process: the
    assert code == 0 and "2 trials copied, 0 kept" in out, err  # subprocess contract is the refusal's, below
    rows = {t.trial: t for t in Store(tmp_path / "a.db", readonly=True).trials()}
    assert sorted(rows) == ["A1", "A2"] and rows["A1"].result.primary.bleu == 12.0
    assert [p.step for p in a.points("s.yaml", "A1", "p")] == [10, 20, 30]
    # merging again changes nothing: a's rows are now as new as b's
    assert a.merge(Store(tmp_path / "b" / "zoo.db", readonly=True)) == (0, 2)


def test_merge_refuses_a_missing_source(tmp_path):
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "merge", str(tmp_path / "a.db"), str(tmp_path / "none.db")],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "no results store" in r.stderr and "Traceback" not in r.stderr
