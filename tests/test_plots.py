"""The report's figures change nothing in the caller's matplotlib (a notebook keeps its backend and style)."""
import subprocess
import sys


def test_importing_and_drawing_leaves_global_matplotlib_state_alone(tmp_path):
    code = f"""
import matplotlib
before = (matplotlib.get_backend(), dict(matplotlib.rcParams))
from zoo.reports import plots
from zoo.result import Point, Trial
t = Trial(spec="specs/x.yaml", variant="v", trial="v", profile="smoke")
name = plots.curves(t, [Point(step=1, loss=3.0, dev_ppl=20.0), Point(step=2, loss=2.0)], __import__("pathlib").Path({str(tmp_path)!r}))
after = (matplotlib.get_backend(), dict(matplotlib.rcParams))
assert name and (__import__("pathlib").Path({str(tmp_path)!r}) / name).stat().st_size > 1000
changed = sorted(k for k in before[1] if before[1][k] != after[1][k] and k != "backend")
assert before[0] == after[0] and not changed, (before[0], after[0], changed)
assert "matplotlib.pyplot" not in __import__("sys").modules
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"MPLBACKEND": "svg", "PATH": ""})
    assert r.stdout.strip() == "ok", r.stderr[-2000:]
