"""Seeds side by side in `zoo run` (runner.stacking): which trials stack, and a stacked sweep's rows as a solo
sweep's. The grouping tests build configs only; the sweep runs `zoo run --stack on` on table3_A x 4 seeds under
the smoke profile (shrunk with --set) with its own embedded Ray, then `zoo report --table 3` reads its store.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.runner.stacking import stacks
from zoo.runner.store import Store
from zoo.spec import resolve

REPO = Path(__file__).resolve().parents[1]
SPEC = "specs/table3_A.yaml"
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]
BIG_NODE = [{"CPU": 2.0, "memory": 64 * 2**30}]  # room for many smoke seeds beside one another


def _cfgs(sets=(), seeds=(1, 2, 3, 4)):
    return resolve(REPO / SPEC, None, "smoke", [*SMALL, *sets], list(seeds))


def _names(groups):
    return [[c.trial for c in g] for g in groups]


def test_the_seeds_of_a_row_stack_and_rows_of_other_shapes_do_not():
    """table3_A's rows change the heads (another forward): each row's 4 seeds are one stack, in the order given."""
    groups = _names(stacks(_cfgs(), "on", BIG_NODE))
    assert groups == [[f"A{r}-seed{s}" for s in (1, 2, 3, 4)] for r in (1, 2, 3, 4)]


def test_auto_leaves_cpu_trials_alone_and_off_or_a_scheduler_never_stacks():
    cfgs = _cfgs()
    solo = [[c.trial] for c in cfgs]
    assert _names(stacks(cfgs, "auto", BIG_NODE)) == solo  # smoke trains on the CPU: solo results stay bit-identical
    assert _names(stacks(cfgs, "off", BIG_NODE)) == solo
    assert _names(stacks(cfgs, "on", BIG_NODE, scheduled=True)) == solo  # ASHA stops trials one by one
    assert _names(stacks(_cfgs(["resources.gpus=1"]), "auto", BIG_NODE))[0] == ["A1-seed1", "A1-seed2", "A1-seed3",
                                                                               "A1-seed4"]


def test_k_follows_the_memory_and_splits_evenly():
    """A node whose share holds 3 of these seeds cuts a row's 5 seeds into stacks of 3 and 2 (K = stack_size)."""
    from zoo.model import train_memory
    from zoo.train import stack_size
    cfgs = _cfgs(seeds=(1, 2, 3, 4, 5))[:5]
    est = train_memory(cfgs[0])
    share = est["runtime"] + 3 * (est["total"] - est["runtime"])  # one runtime, three seeds
    node = [{"CPU": 2.0, "memory": 2 * share}]  # a 1-CPU trial gets half of it
    assert stack_size(cfgs[0], 5, share) == 3
    assert [len(g) for g in stacks(cfgs, "on", node)] == [2, 3]


def test_a_stack_is_one_tune_trial_with_one_trials_resources():
    from zoo.runner.stacking import stacked
    from zoo.runner.trial import Setup, resources
    setups = [Setup(trial=c.trial, config=c, out_dir=f"/r/{c.trial}", train_storage="/t") for c in _cfgs()[:4]]
    one = stacked(setups)
    assert one.trial == "A1-seed1+3" and [m.trial for m in one.stack] == [s.trial for s in setups]
    assert stacked(setups[:1]) is setups[0]
    bundle = resources({"trial": one.model_dump(mode="json")}).required_resources
    assert bundle == {"CPU": setups[0].config.resources.cpus}  # not 4 times


@pytest.mark.slow
def test_a_stacked_sweep_writes_rows_that_report_reads_as_solo_rows(tmp_path):
    """`zoo run table3_A --seeds 4 --stack on` trains 4 stacked trials and writes 16 rows, each with its own
    folder, checkpoints, curve and scores; the only trace of the stack is provenance.stacked_with; `zoo report
    --table 3` reads them as solo rows (4 seeds a row, no provenance flag)."""
    env = os.environ | {"ZOO_DATA_DIR": os.environ.get("ZOO_DATA_DIR", str(REPO / "data"))}
    storage = tmp_path / "runs"
    run = subprocess.run([sys.executable, "-m", "zoo.cli", "run", SPEC, "--profile", "smoke", "--seeds", "4",
                          "--stack", "on", "--storage", str(storage), *[a for s in SMALL for a in ("--set", s)]],
                         cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {t.trial: t for t in Store(storage / "zoo.db").trials()}
    assert len(rows) == 16 and {t.status.value for t in rows.values()} == {"finished"}
    store = Store(storage / "zoo.db")
    for name, t in rows.items():
        row, seed = name.split("-seed")
        assert sorted(t.result.provenance.stacked_with) == [f"{row}-seed{s}" for s in (1, 2, 3, 4) if str(s) != seed]
        assert t.result.steps_done == 6 and t.result.primary.score and t.placement and t.attention
        folder = Path(t.run_dir)
        assert (folder / "summary.json").exists() and (folder / "checkpoints" / "step_00000006.pt").exists()
        assert json.loads((folder / "config.json").read_text())["trial"] == name
        assert [p.step for p in store.points("specs/table3_A.yaml", name, "smoke")] == [1, 6]
    for row in ("A1", "A2", "A3", "A4"):  # one process a stack (Tune's slots may reuse it for the next stack)
        assert len({rows[f"{row}-seed{s}"].placement.pid for s in (1, 2, 3, 4)}) == 1, row
    out = tmp_path / "report"  # in this process: the report's CLI contract has its own subprocess tests
    from zoo.cli import main
    assert main(["report", "--runs", str(storage), "--table", "3", "--format", "md", "--out", str(out)]) == 0
    page = (out / "table3.md").read_text()
    for r in ("A1", "A2", "A3", "A4"):
        line = next(l for l in page.splitlines() if l.startswith(f"| {r} |"))
        assert "| 4 |" in line and "| done |" in line, line  # 4 seeds, as 4 solo rows read
    assert "did not all run alike" not in page


def test_a_member_that_ends_alone_fails_its_own_row(tmp_path):
    """The driver's side of a stacked trial (runner.progress): each member's events go to its own row; a member's
    error (a diverged seed) fails its row alone; a later error of the whole trial leaves a finished or failed
    member as it was, and fails the others."""
    import io
    from types import SimpleNamespace
    from zoo.runner import progress
    store = Store(tmp_path / "zoo.db")
    names = ["A1-seed1", "A1-seed2", "A1-seed3"]
    live = progress.Live(store, "t.yaml", "smoke", {v: str(tmp_path / v) for v in names}, "exp", stream=io.StringIO())
    trial = SimpleNamespace(config={"trial": {"trial": "A1-seed1+2", "stack": [{"trial": v} for v in names]}},
                            error_file=None, get_error=lambda: "RuntimeError: the stack's process died")
    progress.LIVE, forward = live, progress.Forward()
    try:
        forward.on_trial_start(0, [], trial)
        forward.on_trial_result(0, [], trial, {"seats": {"A1-seed1": {"step": 1, "steps": 6, "loss": 7.0},
                                                        "A1-seed2": {"step": 1, "steps": 6, "loss": 7.5}}})
        text = ("Traceback (most recent call last):\n  ...\nzoo.train.loop.NonFiniteLoss: non-finite loss at step 2 "
                "(lr 9.9); lower train.schedule.lr_scale\n")
        forward.on_trial_result(0, [], trial, {"seats": {"A1-seed2": {"failed": text}}})
        rows = {t.trial: t for t in store.trials()}
        assert rows["A1-seed2"].status.value == "failed" and rows["A1-seed2"].error.startswith(
            "zoo.train.loop.NonFiniteLoss: non-finite loss at step 2")
        assert rows["A1-seed1"].status.value == "running" and rows["A1-seed1"].step == 1
        assert [p.step for p in store.points("t.yaml", "A1-seed1", "smoke")] == [1]
        assert rows["A1-seed3"].status.value == "running" and not store.points("t.yaml", "A1-seed3", "smoke")
        forward.on_trial_error(0, [], trial)
        rows = {t.trial: t for t in store.trials()}
        assert rows["A1-seed2"].error.startswith("zoo.train.loop.NonFiniteLoss")  # its own end, kept
        assert rows["A1-seed1"].status.value == rows["A1-seed3"].status.value == "failed"
        assert "the stack's process died" in rows["A1-seed3"].error
    finally:
        progress.LIVE = None
