"""Issue 10, the runner side: what a careful user hits in the first week, each a clear exit 2 or a run
that works around it. Faults are injected from here (a broken file, /dev/full, a dead pid, a lock held
by this process), never through hooks in the product's code.

Uses real `zoo` commands in subprocesses where a process of its own is the point (a lock another process
holds, a training run, a refusal that must not allocate here), `zoo` in this process (zoo.cli.main, the same
path without torch's import) for the read-only commands and clear errors, a real tiny training run, and (two
tests) a real embedded Ray.
"""
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # any Ray here binds 127.0.0.1 only

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from zoo.errors import UserError
from zoo.runner.local import LOCKFILE, RunLock
from zoo.runner.store import Store
from zoo.spec import resolve

from helpers import run

pytestmark = pytest.mark.slow  # zoo runs with Ray and training, as another user

REPO = Path(__file__).resolve().parents[1]
ZOO = [sys.executable, "-m", "zoo.cli"]
SPEC = REPO / "specs/table3_A.yaml"
TINY = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]


def zoo(*args, stdin=None, timeout=300, **kw):
    r = subprocess.run([*ZOO, *map(str, args)], cwd=REPO, capture_output=True, timeout=timeout,
                       input=stdin, text=not isinstance(stdin, bytes), **kw)
    out, err = (r.stdout, r.stderr) if isinstance(r.stdout, str) else (r.stdout.decode(), r.stderr.decode())
    return r.returncode, out, err


def sets(*items):
    return [x for v in items for x in ("--set", v)]


def clean_exit_2(code, out, err, *fragments):
    """Exit 2, one `zoo: error:` paragraph, no traceback, and the fragments in it."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err, err
    assert "zoo: error:" in err, err
    for f in fragments:
        assert f in err, (f, err)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_root) -> Path:
    """One tiny finished `zoo train` run: config.json, checkpoints at steps 3 and 6, summary.json."""
    out = tmp_path_factory.mktemp("trained") / "run"
    code, o, e = zoo("train", SPEC, "--variant", "A1", "--profile", "smoke", "--out", out, *sets(*TINY))
    assert code == 0, o + e
    assert [p.name for p in sorted((out / "checkpoints").glob("step_*.pt"))] == \
        ["step_00000003.pt", "step_00000006.pt"]
    return out


def copy_run(src: Path, dst: Path) -> Path:
    import shutil
    shutil.copytree(src, dst)
    return dst


def smoke_cfg(*extra):
    return resolve(SPEC, "A1", "smoke", [*TINY, *extra])[0]


# -- 4. one run per storage -------------------------------------------------------------------------

def test_a_held_run_lock_refuses_a_second_run(tmp_path, data_root):
    lock = RunLock(tmp_path).acquire()  # as a `zoo run` in this process would hold it
    try:
        clean_exit_2(*zoo("run", SPEC, "--profile", "smoke", "--variant", "A1", "--storage", tmp_path, *sets(*TINY)),
                     f"another `zoo run` (pid {os.getpid()}) is using {tmp_path}")
    finally:
        lock.release()
    assert not (tmp_path / "zoo.db").exists()  # the loser touched nothing
    again = RunLock(tmp_path).acquire()  # released: the next one gets it
    again.release()


def test_two_runs_started_at_once(tmp_path, data_root):
    """Both pass any pidfile check at the same moment; exactly one may run, the other exits 2."""
    argv = [*ZOO, "run", str(SPEC), "--profile", "smoke", "--variant", "A1", "--storage", str(tmp_path),
            *sets(*TINY)]
    procs = [subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    res = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(c for c, _, _ in res)
    assert codes == [0, 2], res
    loser = next(r for r in res if r[0] == 2)
    clean_exit_2(*loser, "another `zoo run`")
    rows = Store(tmp_path / "zoo.db").trials()
    assert [(r.trial, r.status) for r in rows] == [("A1", "finished")], rows
    assert (tmp_path / LOCKFILE).exists()  # the lock file stays, harmless: the lock went with its process


# -- 5. memory before start ---------------------------------------------------------------------------

HUGE = ["model.d_model=16384", "model.d_ff=65536", "model.h=4", "model.d_k=4096", "model.d_v=4096"]


def test_a_model_no_machine_holds_is_refused_before_allocating(tmp_path, data_root):
    code, out, err = zoo("train", SPEC, "--variant", "A1", "--profile", "smoke", "--out", tmp_path / "big",
                         *sets(*HUGE))
    clean_exit_2(code, out, err, "training needs about", "GiB", "weights", "adam", "activations")
    assert not list((tmp_path / "big").glob("checkpoints/*.pt"))


def test_check_fits_refuses_a_trial_too_big_for_every_node():
    from zoo.runner.fits import check_fits
    nodes = [{"CPU": 2.0, "memory": 8 * 2**30}, {"CPU": 2.0, "memory": 4 * 2**30}]
    check_fits([smoke_cfg()], nodes, "t.yaml")  # a smoke model fits
    with pytest.raises(UserError, match=r"variant A1: a training process needs about .* GiB.* offers 8.0 GiB"):
        check_fits([smoke_cfg(*HUGE)], nodes, "t.yaml")


def test_memory_estimate_counts_the_real_parameters():
    """weights / gradients / Adam are 4 / 4 / 8 bytes per parameter of the model zoo builds."""
    from zoo.model.costs import train_memory
    from zoo.model.transformer import build_model
    cfg = smoke_cfg()
    n = sum(p.numel() for p in build_model(cfg.model, cfg.data.vocab_size).parameters())
    est = train_memory(cfg)
    assert est["weights"] == 4 * n and est["adam"] == 8 * n
    assert est["activations"] > 0
    assert est["total"] == sum(est[k] for k in ("weights", "gradients", "adam", "activations", "runtime"))
    # more tokens per micro-batch, more activations; gradient accumulation splits them
    more = train_memory(smoke_cfg("train.batch_tokens=6000"))
    split = train_memory(smoke_cfg("train.batch_tokens=6000", "train.max_tokens_per_device=600"))
    assert more["activations"] > 5 * est["activations"] and split["activations"] == est["activations"]


@pytest.mark.parametrize("variant, h, L, B, V", [("A1", 1, 64, 8, 1000), ("A4", 32, 128, 4, 1000),
                                                  ("A3", 16, 32, 16, 8000)])
def test_activation_estimate_bounds_what_autograd_keeps(variant, h, L, B, V):
    """What autograd saves for the backward pass of one batch (measured with saved-tensor hooks) is at
    most the estimate, and the estimate at most 2.5x that: the rest is the backward pass's transient
    gradients (the logits' above all). Many heads do not multiply it: SDPA keeps no L x L scores."""
    from zoo.model.costs import FLOAT, activation_floats_per_token
    from zoo.model.transformer import build_model
    from zoo.train import smoothed_loss
    cfg = resolve(SPEC, variant, "quick")[0]
    assert cfg.model.h == h
    torch.manual_seed(0)
    model = build_model(cfg.model, V).train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            saved[s.data_ptr()] = max(saved.get(s.data_ptr(), 0), s.nbytes())
        return t

    src, tgt = torch.randint(4, V, (B, L)), torch.randint(4, V, (B, L))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        smoothed_loss(model(src, tgt), tgt, 0.1)
    kept = sum(saved.values())
    est = FLOAT * B * L * activation_floats_per_token(cfg.model, V, L)
    assert kept <= est <= 2.5 * kept, (kept, est)


# -- 6. checkpoint fallback ---------------------------------------------------------------------------

def test_a_truncated_newest_checkpoint_falls_back_to_the_one_before(trained, tmp_path, data_root):
    from zoo.result import BadCheckpoint, NoOptimizerState, Resumed
    from zoo.train import train
    run = copy_run(trained, tmp_path / "run")
    (run / "summary.json").unlink()  # unfinished, as after a kill
    newest = run / "checkpoints" / "step_00000006.pt"
    newest.write_bytes(newest.read_bytes()[:1000])  # a copy cut short
    events = []
    summary = train(smoke_cfg(), run, data_root, report=events.append)
    bad = [e for e in events if isinstance(e, BadCheckpoint)]
    assert len(bad) == 1 and bad[0].path == str(newest) and bad[0].error, events
    assert Resumed(step=3) in events
    # the one before keeps weights only (issue 12): training goes on, with Adam's moments afresh, and says so
    assert any(isinstance(e, NoOptimizerState) and e.step == 3 for e in events), events
    assert (run / "checkpoints" / "step_00000006.pt.bad").exists()  # set aside: no later run trips on it
    assert (run / "checkpoints" / "optim_00000006.pt.bad").exists()  # with its optimizer state
    assert (run / "checkpoints" / "step_00000006.pt").exists() and (run / "summary.json").exists()
    assert summary.config_hash == smoke_cfg().config_hash()


def test_the_skipped_checkpoint_is_named_in_the_store(tmp_path, capsys):
    from zoo.runner.progress import Live
    store = Store(tmp_path / "zoo.db")
    live = Live(store, "t.yaml", "smoke", {"A1": str(tmp_path / "A1")}, "exp", stream=io.StringIO())
    trial = SimpleNamespace(config={"trial": {"variant": "A1"}})
    live.result(trial, {"event": "bad_checkpoint", "path": "/r/A1/checkpoints/step_00000006.pt",
                        "moved_to": "/r/A1/checkpoints/step_00000006.pt.bad", "error": "RuntimeError: zip"})
    row = store.get("t.yaml", "A1", "smoke")
    assert "step_00000006.pt cannot be loaded (RuntimeError: zip)" in row.warning
    assert "step_00000006.pt" in live.stream.getvalue()
    code, out, err = run("status", "--runs", tmp_path / "zoo.db", capsys=capsys)
    assert code == 0 and "t A1: checkpoint /r/A1/checkpoints/step_00000006.pt cannot be loaded" in out, out + err


def test_zoo_train_prints_the_bad_checkpoint(trained, tmp_path, data_root, capsys):
    folder = copy_run(trained, tmp_path / "run")
    (folder / "summary.json").unlink()
    (folder / "checkpoints" / "step_00000006.pt").write_bytes(b"PK\x03\x04 not a whole zip")
    code, out, err = run("train", SPEC, "--variant", "A1", "--profile", "smoke", "--out", folder, *sets(*TINY),
                         capsys=capsys)
    assert code == 0, out + err
    assert "step_00000006.pt cannot be loaded" in out + err and "resumed from the checkpoint at step 3" in out + err


# -- 7. loading a checkpoint runs no code --------------------------------------------------------------

class _Payload:
    """Pickled into a checkpoint: unpickling it calls open(MARKER, "w"), i.e. runs code."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def translate_here(target, text: str, capsys, monkeypatch):
    """`zoo translate TARGET` in this process with `text` on stdin (the stdin contract itself: a subprocess,
    test_translate_binary_stdin_and_a_line_longer_than_max_len)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    return run("translate", target, capsys=capsys)


def test_a_checkpoint_with_pickled_code_is_refused(trained, tmp_path, data_root, capsys, monkeypatch):
    folder = copy_run(trained, tmp_path / "run")
    marker = tmp_path / "pwned"
    ck = torch.load(folder / "checkpoints" / "step_00000006.pt", weights_only=True)  # ours load weights-only
    ck["extra"] = _Payload(str(marker))
    evil = folder / "checkpoints" / "step_00000009.pt"
    torch.save(ck, evil)
    assert not marker.exists()
    for target in (evil, folder):  # the file itself, or the run folder (its newest checkpoint)
        clean_exit_2(*translate_here(target, "a man is walking .\n", capsys, monkeypatch),
                     "cannot load the checkpoint", "pickled objects are refused")
        assert not marker.exists(), "loading the checkpoint ran code"
    # the honest checkpoints of the same run still translate
    code, out, err = translate_here(folder / "checkpoints" / "step_00000006.pt", "a man is walking .\n", capsys,
                                    monkeypatch)
    assert code == 0 and len(out.splitlines()) == 1, err


# -- 8. clear errors, exit 2 -----------------------------------------------------------------------------

def test_evalb_missing_malformed_and_binary_files(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("(S (NP (DT a) (NN man)) (VP (VBZ walks)))\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("(S (NP a\n")  # a word outside its (TAG word): EVALB itself stops
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    clean_exit_2(*run("evalb", gold, tmp_path / "missing.txt", capsys=capsys), "cannot open the test file",
                 "missing.txt")
    clean_exit_2(*run("evalb", gold, bad, capsys=capsys), "cannot read this tree")
    clean_exit_2(*run("evalb", gold, binary, capsys=capsys), f"the test file {binary} is binary")
    clean_exit_2(*run("evalb", binary, gold, capsys=capsys), "gold file", "binary")


@pytest.mark.parametrize("storage, why", [("/proc/nonexistent", "No such file or directory"),
                                          ("/dev/null/x", "Not a directory")])
def test_storage_that_cannot_be_a_folder(storage, why, data_root, capsys, no_ray):
    clean_exit_2(*run("run", SPEC, "--profile", "smoke", "--storage", storage, *sets(*TINY), capsys=capsys),
                 f"--storage {storage}: cannot use", why)


def test_report_on_a_missing_store(tmp_path, capsys):
    clean_exit_2(*run("report", "--runs", "/nonexistent/zoo.db", "--out", tmp_path / "rep", capsys=capsys),
                 "no results store at /nonexistent/zoo.db")
    assert not (tmp_path / "rep").exists()


def test_a_full_disk_is_a_clear_error_in_zoo_train(trained, tmp_path, data_root, capsys):
    folder = copy_run(trained, tmp_path / "run")
    (folder / "summary.json").unlink()
    (folder / "metrics.jsonl").unlink()
    (folder / "metrics.jsonl").symlink_to("/dev/full")  # every write: ENOSPC, as on a full disk
    clean_exit_2(*run("train", SPEC, "--variant", "A1", "--profile", "smoke", "--out", folder,
                      *sets(*TINY, "train.steps=9", "train.eval_every=3"), capsys=capsys),
                 "no space left on device writing", "metrics.jsonl", "run the same command again")


DISK_FULL_DRIVER = """
import sqlite3, sys
from zoo.runner import store
upsert = store.Store.upsert
def full(self, spec, trial, profile, **fields):  # the store's disk fills once a trial is under way
    if fields.get("step") or fields.get("placement"):
        raise sqlite3.OperationalError("database or disk is full")
    return upsert(self, spec, trial, profile, **fields)
store.Store.upsert = full
from zoo.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_under_the_driver_leaves_no_trial_running(tmp_path, data_root):
    """The fault is injected by a wrapper around the CLI (this file's DISK_FULL_DRIVER), not by zoo."""
    r = subprocess.run([sys.executable, "-c", DISK_FULL_DRIVER, "run", str(SPEC), "--profile", "smoke",
                        "--variant", "A1", "--storage", str(tmp_path), *sets(*TINY)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    clean_exit_2(r.returncode, r.stdout, r.stderr, "no space left on device", "run the same command again")
    rows = Store(tmp_path / "zoo.db").trials()
    assert rows and all(x.status != "running" for x in rows), rows
    assert "no space left" in rows[0].error


def test_translate_binary_stdin_and_a_line_longer_than_max_len(trained):
    clean_exit_2(*zoo("translate", trained, stdin=b"a man\n\x00\x01\xff\xfe binary\n"), "stdin line 2 is not UTF-8")
    cfg = json.loads((trained / "config.json").read_text())
    long = " ".join(["walking"] * (cfg["model"]["max_len"] + 50))
    code, out, err = zoo("translate", trained, stdin=f"a man .\n{long}\n")
    assert code == 0, err
    assert len(out.splitlines()) == 2
    assert "line 2 has" in err and f"more than the model's max_len {cfg['model']['max_len']}" in err


# -- 10. smaller --------------------------------------------------------------------------------------

def _store_with_a_running_row(folder: Path) -> Path:
    st = Store(folder / "zoo.db")
    st.upsert("specs/t.yaml", "A1", "smoke", status="running", step=3, steps=6, started_at=time.time())
    return folder / "zoo.db"


def test_status_after_a_killed_driver_says_its_pid_is_gone(tmp_path, capsys):
    db = _store_with_a_running_row(tmp_path)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / LOCKFILE).write_text(f"{gone.pid}\n")  # what a SIGKILLed `zoo run` leaves: the file, no lock
    code, out, err = run("status", "--runs", db, capsys=capsys)
    assert code == 0, err
    assert f"running (driver pid {gone.pid} is gone)" in out, out
    # while a run holds the lock, running means running (asked from another process: a lock is a process's)
    lock = RunLock(tmp_path).acquire()
    try:
        code, out, err = zoo("status", "--runs", db)
    finally:
        lock.release()
    assert code == 0 and "is gone" not in out and "running" in out, out


def test_status_on_an_empty_file_writes_nothing(tmp_path, capsys):
    empty = tmp_path / "zoo.db"
    empty.touch()
    code, out, err = run("status", "--runs", empty, capsys=capsys)
    assert code == 0, err
    assert empty.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["zoo.db"]
    assert "no trials in" in out


def test_a_read_only_store_is_read_and_reported_as_read_only(data_root, as_nobody):
    import shutil
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="zoo-ro-"))  # not under pytest's root-only folder
    try:
        folder.chmod(0o755)
        db = _store_with_a_running_row(folder)
        db.chmod(0o444)
        folder.chmod(0o555)
        code, out, err = as_nobody("status", "--runs", db)
        assert code == 0 and "A1" in out and "running" in out, out + err  # read, not "not a results store"
        folder.chmod(0o777)  # a folder it may write, a store file it may not
        clean_exit_2(*as_nobody("run", "table3_A", "--profile", "smoke", "--variant", "A1", "--storage", folder,
                                *sets(*TINY)), f"{db} is read-only")
    finally:
        shutil.rmtree(folder)


def test_a_diverged_dev_loss_is_non_finite_not_an_overflow(data_root):
    """Past exp()'s range the dev perplexity is inf (then NonFiniteLoss), never OverflowError."""
    from zoo.model.transformer import build_model
    from zoo.train import dev_perplexity, prepare
    cfg = smoke_cfg()
    p = prepare(cfg, data_root)
    torch.manual_seed(0)
    model = build_model(cfg.model, p.vocab_size)
    with torch.no_grad():
        for name, w in model.named_parameters():
            if w.dim() == 2:
                w.mul_(300.0)  # a model that diverged: logits far past exp()'s range
    assert dev_perplexity(model, p.dev[:20], 600) == float("inf")


def test_a_diverged_zoo_train_exits_2_with_the_non_finite_loss_message(tmp_path, data_root, capsys):
    code, out, err = run("train", SPEC, "--variant", "A2", "--profile", "smoke", "--out", tmp_path / "d",
                         *sets(*TINY, "train.schedule.lr_scale=1000", "train.eval_every=3"), capsys=capsys)
    clean_exit_2(code, out, err, "non-finite loss at step", "lower train.schedule.lr_scale")
    assert "OverflowError" not in out + err


def test_no_fault_hooks_in_the_product():
    for f in [*REPO.glob("zoo/*.py"), *REPO.glob("runner/*.py"), *REPO.glob("reports/*.py")]:
        assert "ZOO_TEST_FAULT" not in f.read_text(), f


@pytest.fixture
def no_ray(monkeypatch):
    import zoo.runner.local as local
    monkeypatch.setattr(local.LocalRay, "start", lambda self: pytest.fail("zoo run started Ray for a bad spec"))


def test_a_store_that_is_a_device_is_refused_before_the_run(tmp_path, data_root, no_ray):
    from zoo.runner.sweep import run
    (tmp_path / "zoo.db").symlink_to("/dev/full")  # was: SQLite's first write ENOSPC; now no write at all
    with pytest.raises(UserError, match="is not a zoo results store: it is not a regular file"):
        run(str(SPEC), "smoke", ["A1"], TINY, storage=str(tmp_path), stream=io.StringIO())


def test_an_unreadable_data_folder_is_a_clear_error(tmp_path, data_root, as_nobody):
    import shutil
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="zoo-data-"))
    try:
        (folder / "multi30k").mkdir()
        (folder / "multi30k").chmod(0o700)  # someone else's corpus folder
        (folder / "out").mkdir(mode=0o777)
        (folder / "out").chmod(0o777)
        folder.chmod(0o755)
        clean_exit_2(*as_nobody("train", "table3_A", "--variant", "A1", "--profile", "smoke", "--data-dir", folder,
                                "--no-download", "--out", folder / "out" / "run"),
                     f"permission denied: {folder / 'multi30k'}")
    finally:
        shutil.rmtree(folder)


def test_reading_a_store_leaves_no_files_behind(tmp_path, capsys):
    """`zoo status` and `zoo report` only read: no -wal/-shm files stay beside the store."""
    db = _store_with_a_running_row(tmp_path / "s")
    assert sorted(p.name for p in db.parent.iterdir()) == ["zoo.db"]
    before = db.read_bytes()
    assert run("status", "--runs", db, capsys=capsys)[0] == 0
    assert run("report", "--runs", db, "--out", tmp_path / "rep", "--format", "md", capsys=capsys)[0] == 0
    assert sorted(p.name for p in db.parent.iterdir()) == ["zoo.db"] and db.read_bytes() == before
