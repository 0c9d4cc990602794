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


def test_a_reports_own_figure_is_copied_when_drawn_from_the_same_data_and_drawn_again_when_it_changes(tmp_path,
                                                                                                    monkeypatch):
    """A claims plot (as Table 3's scatters) keeps its fixed name in the report and is cached by what it is drawn
    from: a second report of the same verdicts copies it, a changed interval draws it again."""
    from types import SimpleNamespace as NS
    from zoo.reports import plots
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    claim = NS(id="A-heads", metric="bleu", paper_delta=0.9)
    t3 = lambda hi: NS(name="table3", verdicts=[NS(claim=claim, verdict="held", estimate=NS(delta=0.5, lo=0.1, hi=hi))])
    drawn = []
    draw = plots._draw_claims
    monkeypatch.setattr(plots, "_draw_claims", lambda *args: drawn.append(args) or draw(*args))
    ((_, a),) = plots.claims(t3(0.9), tmp_path / "a")
    ((_, b),) = plots.claims(t3(0.9), tmp_path / "b")
    ((_, c),) = plots.claims(t3(1.4), tmp_path / "c")
    assert a == b == c == "table3_claims.png" and len(drawn) == 2  # the same data copied; new data drawn
    assert (tmp_path / "a" / a).read_bytes() == (tmp_path / "b" / b).read_bytes() != (tmp_path / "c" / c).read_bytes()
    assert len(list(plots.shared_figures().glob("report_table3_claims_*.png"))) == 2


def test_a_figure_drawn_once_on_this_machine_is_copied_into_the_next_report_not_drawn(tmp_path, monkeypatch):
    """The machine's figure cache (reports.plots.shared_figures): a report into another folder copies the figure;
    other inputs draw a new one; the cache keeps its newest SHARED_FIGURES files; a cache that cannot be written
    leaves the report's figure drawn."""
    from pathlib import Path
    from zoo.reports import plots
    from zoo.result import Point, Trial
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    t = Trial(spec="specs/x.yaml", variant="v", trial="v", profile="smoke")
    pts = [Point(step=1, loss=3.0, dev_ppl=20.0), Point(step=2, loss=2.0)]
    a = plots.curves(t, pts, tmp_path / "a")
    assert (plots.shared_figures() / a).read_bytes() == (tmp_path / "a" / a).read_bytes()
    drawn = []
    draw = plots._draw_curves
    monkeypatch.setattr(plots, "_draw_curves", lambda *args: drawn.append(args) or draw(*args))
    assert plots.curves(t, pts, tmp_path / "b") == a and not drawn  # copied
    assert (tmp_path / "b" / a).read_bytes() == (tmp_path / "a" / a).read_bytes()
    monkeypatch.setattr(plots, "SHARED_FIGURES", 2)
    names = [plots.curves(t, pts[:1] + [Point(step=2, loss=x)], tmp_path / "c") for x in (1.5, 1.0)]
    assert len(drawn) == 2 and a not in names  # new inputs: drawn, under new names
    assert sorted(p.name for p in plots.shared_figures().glob("*.png")) == sorted(names)  # the oldest went
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a" / a))  # a file: no cache folder can be made there
    name = plots.curves(t, pts[:1] + [Point(step=2, loss=0.5)], tmp_path / "d")
    assert len(drawn) == 3 and (Path(tmp_path / "d") / name).stat().st_size > 1000
