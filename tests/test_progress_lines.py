"""zoo run's progress without a terminal: one line per event, each with its ETA."""
import io
from types import SimpleNamespace

from zoo.runner.store import Store


def test_plain_progress_lines_carry_the_eta(tmp_path):
    from zoo.runner.progress import Live
    stream = io.StringIO()  # not a terminal: one line per event
    live = Live(Store(tmp_path / "zoo.db"), "t.yaml", "smoke", {"A1": str(tmp_path / "A1")}, "exp", stream=stream)
    trial = SimpleNamespace(config={"trial": {"variant": "A1"}})
    live.started(trial)
    live.result(trial, {"step": 50, "steps": 200, "elapsed_s": 20.0, "dev_ppl": 12.5})
    line = stream.getvalue().splitlines()[-1]
    assert line.endswith("A1: step 50/200  dev ppl 12.50  ETA 60 s"), line  # 150 steps at 0.4 s each
    assert live.table().splitlines()[-1].rstrip().endswith("60 s")  # the terminal's table: the same ETA
