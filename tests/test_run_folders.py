"""Issue 45, items 2 and 3: every trial has a folder of its own, and Ctrl-C/SIGTERM on `zoo run` ends in one line.

Two specs with one file name (mine/x.yaml and other/x.yaml; a user's base.yaml beside the built-in base)
once shared `STORAGE/<stem>/<trial>-<profile>/`: the second run replaced the first's checkpoints and config.
The Ray tests run `zoo run` in a subprocess (its own loopback Ray, smoke profile shrunk with --set) and are
marked slow; the folder choice itself, over a store written by an older zoo, is checked without Ray.
"""
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zoo.config import Config
from zoo.runner import sweep
from zoo.runner import folders
from zoo.runner.store import Store
from zoo.spec import resolve

REPO = Path(__file__).resolve().parents[1]
ZOO = [sys.executable, "-m", "zoo.cli"]
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]
WAIT, RUN = 600, 1200  # a busy 2-core machine: tests wait on a condition, never a fixed time


def flags(values):
    return [x for v in values for x in ("--set", v)]


def zoo(*args, timeout=RUN):
    return subprocess.run([*ZOO, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def running(storage: Path) -> bool:
    """Whether the store shows a trial running (read in this process: no Python start a poll)."""
    try:
        return (storage / "zoo.db").exists() and any(r.status.value == "running" for r in rows(storage).values())
    except Exception:  # the driver is creating the store
        return False


def rows(storage: Path) -> dict:
    return {(r.spec, r.trial): r for r in Store(storage / "zoo.db", readonly=True).trials()}


def folder_config(run_dir: str) -> Config:
    return Config.model_validate_json((Path(run_dir) / "config.json").read_text())


def user_spec(path: Path, dropout: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"extends: base\nmodel: {{dropout: {dropout}}}\n")
    return path


def run_both(first: Path, second: Path, storage: Path) -> dict:
    r = zoo("run", str(first), str(second), "--profile", "smoke", "--storage", str(storage), *flags(SMALL))
    assert r.returncode == 0, r.stdout + r.stderr  # one command, one Ray, the two specs in turn
    assert r.stdout.count("1 finished, 0 failed") == 2 and r.stdout.index(str(first)) < r.stdout.index(str(second))
    got = rows(storage)
    assert len(got) == 2 and all(t.status.value == "finished" for t in got.values()), got
    dirs = {t.run_dir for t in got.values()}
    assert len(dirs) == 2, f"two specs share one trial folder: {dirs}"
    for t in got.values():  # each folder holds its own trial's config and its own last checkpoint
        assert folder_config(t.run_dir).config_hash() == t.config_hash, t.run_dir
        assert Path(t.checkpoint).is_file() and Path(t.checkpoint).parent.parent == Path(t.run_dir)
        assert Path(t.run_dir).is_relative_to(storage)
    return got


@pytest.mark.slow
def test_two_specs_with_one_file_name_keep_a_folder_each(tmp_path, data_root):
    mine, other = user_spec(tmp_path / "mine" / "x.yaml", 0.3), user_spec(tmp_path / "other" / "x.yaml", 0.2)
    storage = tmp_path / "runs"
    got = run_both(mine, other, storage)
    assert {folder_config(t.run_dir).model.dropout for t in got.values()} == {0.3, 0.2}
    again = zoo("run", str(mine), "--profile", "smoke", "--storage", str(storage), *flags(SMALL))
    assert again.returncode == 0 and "nothing to run" in again.stdout, again.stdout + again.stderr


@pytest.mark.slow
def test_a_users_base_beside_the_builtin_base_keeps_a_folder_each(tmp_path, data_root):
    mine = user_spec(tmp_path / "base.yaml", 0.3)
    storage = tmp_path / "runs"
    got = run_both(REPO / "specs" / "base.yaml", mine, storage)
    paper = next(t for (spec, _), t in got.items() if spec == "specs/base.yaml")
    assert folder_config(paper.run_dir).model.dropout != 0.3  # the paper's base still holds the paper's model
    assert Path(paper.run_dir) == storage / "base" / "base-smoke"  # a built-in spec's folder keeps its name


# -- the folder choice over a store an older zoo wrote (no Ray) ------------------------------------

def _setup(tmp_path, spec: Path, dropout: float | None = None):
    if dropout is not None:
        user_spec(spec, dropout)
    (cfg,) = resolve(spec, None, "smoke", SMALL)
    storage = tmp_path / "runs"
    st = sweep.Storage(str(storage))
    st.make()
    return cfg, st, Store(st.store_path)


def _old_row(store, spec_key, cfg, run_dir: Path, status="finished", config=None):
    """A row as an older zoo left it: its folder named by the spec's file name alone."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps((config or cfg).model_dump(mode="json")))
    (run_dir / "checkpoints").mkdir(exist_ok=True)
    (run_dir / "checkpoints" / "step_00000003.pt").write_bytes(b"old work")
    store.upsert(spec_key, cfg.trial, "smoke", variant=cfg.variant, config_hash=(config or cfg).config_hash(),
                 config=(config or cfg).model_dump(mode="json"), status=status, run_dir=str(run_dir))


def test_an_old_stores_rows_keep_their_folders(tmp_path):
    """A store an older zoo wrote: a finished trial is still skipped, its row still names its folder, and
    an unfinished one resumes in its old folder (it holds that very config) rather than start afresh."""
    spec = tmp_path / "mine" / "x.yaml"
    cfg, st, store = _setup(tmp_path, spec, 0.3)
    old = st.local / "x" / "x-smoke"
    _old_row(store, sweep.spec_in_store(str(spec)), cfg, old)
    out = io.StringIO()
    assert sweep.run(str(spec), "smoke", None, SMALL, storage=str(st.local), stream=out) == 0
    assert "nothing to run" in out.getvalue(), out.getvalue()
    (row,) = Store(st.store_path).trials()
    assert row.run_dir == str(old) and (old / "checkpoints" / "step_00000003.pt").read_bytes() == b"old work"

    (cfg2,) = resolve(user_spec(tmp_path / "y.yaml", 0.2), None, "smoke", SMALL)
    key = sweep.spec_in_store(str(tmp_path / "y.yaml"))
    old2 = st.local / "y" / "y-smoke"
    _old_row(store, key, cfg2, old2, status="pending")
    sw = sweep.Sweep(str(tmp_path / "y.yaml"), key, st, store, False, None, None, io.StringIO())
    assert folders.trial_folders(sw, [cfg2], "smoke")[cfg2.trial] == (str(old2), str(old2))


def test_a_new_spec_never_takes_a_folder_another_spec_holds(tmp_path):
    """Another spec of the same file name in an old store held `x/x-smoke`: this one gets its own folder."""
    spec = tmp_path / "mine" / "x.yaml"
    cfg, st, store = _setup(tmp_path, spec, 0.3)
    (theirs,) = resolve(user_spec(tmp_path / "other" / "x.yaml", 0.2), None, "smoke", SMALL)
    old = st.local / "x" / "x-smoke"
    _old_row(store, sweep.spec_in_store(str(tmp_path / "other" / "x.yaml")), theirs, old)
    sw = sweep.Sweep(str(spec), sweep.spec_in_store(str(spec)), st, store, False, None, None, io.StringIO())
    run_dir, scratch = folders.trial_folders(sw, [cfg], "smoke")[cfg.trial]
    assert run_dir == scratch and Path(run_dir) != old and Path(run_dir).is_relative_to(st.local)
    assert Path(run_dir).parent.name.startswith("x-")  # the spec's folder: its name and its identity


def test_the_builtin_base_never_writes_into_its_old_folder_when_a_users_base_took_it(tmp_path, monkeypatch):
    """An old store: a user's base.yaml wrote its dropout-0.3 model into `base/base-smoke`, the built-in
    base's folder. The paper base neither wipes nor resumes it: it trains in a folder of its own."""
    monkeypatch.chdir(REPO)
    cfg, st, store = _setup(tmp_path, REPO / "specs" / "base.yaml")
    (users,) = resolve(user_spec(tmp_path / "base.yaml", 0.3), None, "smoke", SMALL)
    natural = st.local / "base" / "base-smoke"
    _old_row(store, str(tmp_path / "base.yaml"), users, natural)
    sw = sweep.Sweep("specs/base.yaml", "specs/base.yaml", st, store, False, None, None, io.StringIO())
    run_dir, _ = folders.trial_folders(sw, [cfg], "smoke")[cfg.trial]
    assert Path(run_dir) != natural and Path(run_dir).parent == natural.parent
    # and with no store row at all (zoo train --out there, a deleted store): its config.json says whose it is
    store2 = Store(tmp_path / "empty.db")
    sw2 = sweep.Sweep("specs/base.yaml", "specs/base.yaml", st, store2, False, None, None, io.StringIO())
    assert Path(folders.trial_folders(sw2, [cfg], "smoke")[cfg.trial][0]) != natural
    sweep._register(sw, [cfg], "smoke", {cfg.trial: (run_dir, run_dir)}, str(st.local / "tune" / "x"))
    assert folder_config(str(natural)).config_hash() == users.config_hash()
    assert (natural / "checkpoints" / "step_00000003.pt").read_bytes() == b"old work"


# -- Ctrl-C and SIGTERM ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130)])
def test_ctrl_c_on_a_sweep_prints_one_line_and_the_rerun_finishes_every_trial(tmp_path, data_root, sig, code):
    storage = tmp_path / "runs"
    cmd = [*ZOO, "run", "specs/table3_A.yaml", "--profile", "smoke", "--variant", "A1", "--variant", "A2",
           "--variant", "A3", "--storage", str(storage),
           *flags(["train.steps=100", "train.checkpoint_every=10", "train.eval_every=100", "eval.max_sentences=4",
                   "train.stop_if_not_learning=false"])]  # smoke's lr stalls A1 (issue 44's check would stop it)
    log = tmp_path / "driver.log"  # a file, not a pipe: a long wait never blocks the driver on a full pipe
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + WAIT
        while True:  # until `zoo status --json` shows a trial running
            assert proc.poll() is None, f"the driver ended (exit {proc.returncode}) first:\n{log.read_text()}"
            assert time.time() < deadline, "no trial ran"
            if running(storage):
                break
            time.sleep(0.5)
        proc.send_signal(sig)
        proc.wait(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = log.read_text()
    assert proc.returncode == code, out
    assert "Traceback" not in out and "Error" not in out, out
    said = [l for l in out.splitlines() if "interrupted" in l]
    assert len(said) == 1 and "zoo run specs/table3_A.yaml" in said[0] and "resume" in said[0], out
    assert not any(t.status.value == "running" for t in rows(storage).values())
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=RUN)
    assert again.returncode == 0, again.stdout + again.stderr
    got = rows(storage)
    assert len(got) == 3 and all(t.status.value == "finished" for t in got.values()), got
