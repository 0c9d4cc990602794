"""Ctrl-C stops pytest (issue 51): a `zoo run` called in-process (zoo.cli.main(argv), as the tests call it)
that is interrupted cleans up (trials resumable, Ray stopped, the storage's lock let go) and re-raises
KeyboardInterrupt, so the caller stops too; it returned 130, which a test read as a failure while the
suite went on. The console script still exits 130 with one line (tests/test_runner.py's Ctrl-C test)."""
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.runner import local
from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]


def argv(storage: Path) -> list[str]:
    return ["run", str(REPO / "specs/table3_A.yaml"), "--profile", "smoke", "--variant", "A3", "--storage",
            str(storage), *(x for s in SMALL for x in ("--set", s))]


def test_an_interrupted_run_in_process_raises_and_lets_go_of_its_storage(tmp_path, monkeypatch, data_root):
    """Ctrl-C while Ray starts: KeyboardInterrupt reaches the caller, and the lock is let go."""
    def interrupted(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(local.LocalRay, "start", interrupted)  # where the Ctrl-C lands, not what is tested
    with pytest.raises(KeyboardInterrupt):
        main(argv(tmp_path / "runs"))
    assert local.run_driver(tmp_path / "runs")[1] is False  # not held: the next run may start


@pytest.mark.slow
def test_ctrl_c_inside_the_run_loop_leaves_the_trial_resumable_and_raises(tmp_path, monkeypatch, data_root):
    """Ctrl-C in the run loop, with Ray started (Tune's fit is where it lands): the trial is left pending
    (resumable), Ray is shut down and the lock let go, then KeyboardInterrupt reaches the caller."""
    import types

    import ray

    from zoo.runner import sweep

    def fit():
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "_tuner", lambda *a, **k: types.SimpleNamespace(fit=fit))
    storage = tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt):
        main(argv(storage))
    assert {t.trial: t.status.value for t in Store(storage / "zoo.db").trials()} == {"A3": "pending"}
    assert local.run_driver(storage)[1] is False and not ray.is_initialized()
