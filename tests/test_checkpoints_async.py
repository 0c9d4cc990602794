"""Checkpoints off the critical path (issue 37): written by a process of their own from a shared host copy (a
small model's, in the loop's own thread: cheaper than starting that process), once
per `train.checkpoint_minutes` outside the averaging window and every `checkpoint_every` steps inside it; the
loop waits only for the copy; a process killed mid-write resumes from the last whole checkpoint."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from helpers import ran
from zoo.config import Config
from zoo.result import RunResult
from zoo.spec import resolve
from zoo.train import checkpoints, load_checkpoint, train
from zoo.train.checkpointing import optim_file
from zoo.train.writer import Writer
import zoo.train.writer as writer

SPEC = "specs/table3_A.yaml"
QUICK = ["eval.max_sentences=2", "train.checkpoint_minutes=0"]


def _cfg(repo, *sets):
    return resolve(repo / SPEC, "A2", "smoke", [*QUICK, *sets])[0]


def test_the_checkpoint_clock_is_not_part_of_a_runs_identity():
    """How often a run saves changes none of its results: every finished trial of every store stays finished."""
    base = Config(variant="x")
    assert base.train.checkpoint_minutes == 10
    for minutes in (0, 0.5, 60):
        assert Config(variant="x", train={"checkpoint_minutes": minutes}).config_hash() == base.config_hash()
    assert Config(variant="x", train={"checkpoint_every": 7}).config_hash() != base.config_hash()  # it places the averaged ones
    old = RunResult.model_validate({"variant": "x", "profile": "p", "steps_done": 3, "train_seconds": 2.0})
    assert old.checkpoint_seconds == 0.0 and old.checkpoint_share == 0.0  # summaries from before load


@pytest.mark.slow  # trains
def test_saving_often_writes_beside_training(repo, data_root, tmp_path, monkeypatch):
    """The gpu profile's cadence scaled down: a checkpoint every 3 steps of a tiny model (7 saves, two more
    than are kept; the gpu profile's base saves every 18). No write runs in the training process (torch.save
    holds the GIL there); the loop's share of time waiting on them is a benchmark's figure
    (bench/bench_checkpoints.py). Each save waits for the write before it (an fsync'd file or two), so more
    saves only make the test slower."""
    here = []
    monkeypatch.setattr(writer, "INLINE_BYTES", 0)  # a smoke model's state is small enough to write inline
    monkeypatch.setattr(torch, "save", lambda *a, **k: here.append(a[1]))
    cfg = _cfg(repo, "train.steps=21", "train.checkpoint_every=3", "train.eval_every=21")
    s = train(cfg, tmp_path / "run", data_root)
    kept = checkpoints(tmp_path / "run")
    assert [int(p.stem[5:]) for p in kept] == [9, 12, 15, 18, 21]  # every 3 steps, the last 5 kept
    assert [optim_file(p).exists() for p in kept] == [False] * 4 + [True]  # Adam's state: the newest's only
    assert sorted(p.name for p in (tmp_path / "run/checkpoints").iterdir()) == \
        ["optim_00000021.pt", *(p.name for p in kept)]  # nothing else left behind
    assert not here, here  # written by the writer's process: none by the training process
    assert 0 < s.checkpoint_seconds < s.train_seconds  # the copies to the writer, counted as the loop's wait
    ck = load_checkpoint(kept[-1])
    assert ck["step"] == 21 and "optim" not in ck and load_checkpoint(optim_file(kept[-1]))["state"]


@pytest.mark.slow  # trains
def test_a_small_run_writes_in_its_own_thread_and_starts_no_writer(repo, data_root, tmp_path, monkeypatch):
    """Under INLINE_BYTES of state (the smoke profile's ~1 MB), starting a process (a torch import: ~3 s of CPU)
    would cost more than every write of the run: the checkpoints are written by the loop, whole and loadable."""
    def no_process():
        raise AssertionError("a writer process started for a run of a small model")
    monkeypatch.setattr(writer, "_take", no_process)
    cfg = _cfg(repo, "train.steps=6", "train.checkpoint_every=3", "train.eval_every=6")
    s = train(cfg, tmp_path / "run", data_root)
    assert [int(p.stem[5:]) for p in checkpoints(tmp_path / "run")] == [3, 6] and s.checkpoint_seconds > 0
    assert load_checkpoint(optim_file(checkpoints(tmp_path / "run")[-1]))["state"]


def test_the_writer_copies_the_state_it_is_given_and_writes_every_dtype(tmp_path):
    """What `save` returns from is a copy: changing the tensors after it changes nothing written. Every
    dtype a state holds (bf16 weights, a bool mask, the generator's bytes, a 0-d step, an empty tensor)."""
    (tmp_path / "checkpoints").mkdir()
    w = Writer()
    ck = {"step": 7, "model": {"w": torch.arange(6.0).view(2, 3), "b": torch.ones(3, dtype=torch.bfloat16),
                               "m": torch.tensor([True, False]), "e": torch.empty(0, 4)},
          "optim": {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.full((2, 3), 0.5)}},
                    "param_groups": [{"lr": 1e-3, "params": [0]}]}, "rng": torch.get_rng_state()}
    w.save(ck, tmp_path, keep=2)
    ck["model"]["w"].add_(100)  # training goes on in place
    w.close()
    got = load_checkpoint(tmp_path / "checkpoints/step_00000007.pt")
    assert torch.equal(got["model"]["w"], torch.arange(6.0).view(2, 3))
    for k in ("b", "m", "e"):
        assert got["model"][k].dtype == ck["model"][k].dtype and torch.equal(got["model"][k], ck["model"][k])
    assert torch.equal(got["rng"], ck["rng"]) and got["step"] == 7
    opt = load_checkpoint(tmp_path / "checkpoints/optim_00000007.pt")
    assert opt["param_groups"] == ck["optim"]["param_groups"] and opt["state"][0]["step"].shape == ()
    assert torch.equal(opt["state"][0]["exp_avg"], torch.full((2, 3), 0.5))


@pytest.mark.slow  # trains
def test_outside_the_averaging_window_a_run_saves_on_the_clock(repo, data_root, tmp_path):
    """With the default 10 minutes a seconds-long run saves only at its end; averaging keeps every
    checkpoint_every-th step of the last k, whatever the clock, so the averaged weights are the same."""
    plain = train(_cfg(repo, "train.steps=12", "train.checkpoint_every=3", "train.checkpoint_minutes=10"),
                  tmp_path / "plain", data_root)
    assert [p.name for p in checkpoints(tmp_path / "plain")] == ["step_00000012.pt"] and plain.steps_done == 12
    avg = ["train.steps=12", "train.checkpoint_every=3", "eval.average_checkpoints=3", "train.keep_checkpoints=4"]
    scores = {}
    for minutes in (0, 10):
        out = tmp_path / f"avg{minutes}"
        scores[minutes] = train(_cfg(repo, *avg, f"train.checkpoint_minutes={minutes}"), out, data_root)
        steps = [int(p.stem[5:]) for p in checkpoints(out)]
        assert steps == ([3, 6, 9, 12] if minutes == 0 else [6, 9, 12]), steps
    assert scores[0].primary.eval_weights == scores[10].primary.eval_weights == "average of the last 3 checkpoints"
    assert scores[0].primary.bleu == scores[10].primary.bleu


def test_a_failed_write_is_raised_in_the_training_thread(tmp_path):
    (tmp_path / "checkpoints").write_text("a file where the folder should be")
    w = Writer()
    w.save({"step": 1, "model": {"w": torch.ones(2)}}, tmp_path, keep=1)
    with pytest.raises(NotADirectoryError):
        w.save({"step": 2, "model": {"w": torch.ones(2)}}, tmp_path, keep=1)  # waits for the one before
    w.close()
    (tmp_path / "checkpoints").unlink()
    (tmp_path / "checkpoints").mkdir()
    w = Writer()  # the writer process lived on: the next run uses it
    w.save({"step": 3, "model": {"w": torch.ones(2)}}, tmp_path, keep=1)
    w.close()
    assert checkpoints(tmp_path) == [tmp_path / "checkpoints/step_00000003.pt"]


# A write that takes a while, in the writer's process: half of it, a pause, the rest (a slow disk). The training
# process is killed with SIGKILL in the pause, leaving a torn temporary file; the writer dies with it.
TORN = """
import io, time, torch
save = torch.save
def slow(obj, f, *a, **k):
    if isinstance(f, (str, bytes)) or not hasattr(f, "write"):
        return save(obj, f, *a, **k)
    buf = io.BytesIO()
    save(obj, buf, *a, **k)
    data = buf.getvalue()
    f.write(data[: len(data) // 2])
    f.flush()
    time.sleep(0.5)
    f.write(data[len(data) // 2:])
torch.save = slow
"""




def _writers_of(pid: int) -> list[int]:
    """The checkpoint writer processes started by `pid` that still run (its pid is their last argument)."""
    found = []
    for d in os.listdir("/proc"):
        try:
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"zoo.train.writer" in argv and str(pid).encode() in argv:
            found.append(int(d))
    return found


def _size(path) -> int:
    """A file's size, 0 once it is gone (a temporary file renamed into place between the glob and the stat)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@pytest.mark.slow  # trains
def test_killed_mid_write_resumes_from_the_last_whole_checkpoint(repo, data_root, tmp_path, capsys):
    """Killed (SIGKILL) in the middle of a checkpoint's write: the torn file is never loaded, and the same command
    resumes from the last whole checkpoint (in this process: what is tested is the files the kill left)."""
    out = tmp_path / "run"
    args = ["train", str(repo / SPEC), "--variant", "A2", "--profile", "smoke", "--out", str(out),
            *[x for s in [*QUICK, "train.steps=30", "train.checkpoint_every=3", "train.eval_every=30"]
              for x in ("--set", s)]]
    env = {**os.environ, "ZOO_DATA_DIR": str(data_root), "ZOO_WRITER_INLINE_BYTES": "0"}  # the writer's process
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(TORN)  # every Python of the slow run: the writer's too
    slow = {**env, "PYTHONPATH": os.pathsep.join([str(hook), env.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "zoo.cli", *args], cwd=repo, env=slow, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    torn, deadline = None, time.time() + 300
    try:
        while torn is None and time.time() < deadline and p.poll() is None:
            tmps = [t for t in (out / "checkpoints").glob("*.pt.tmp*") if _size(t) > 0] \
                if (out / "checkpoints").is_dir() else []
            if tmps and checkpoints(out):
                torn = tmps[0]
                os.kill(p.pid, signal.SIGKILL)  # in the middle of that write
            time.sleep(0.005)
    finally:
        p.kill()
        p.wait()
    assert torn is not None, "never saw a checkpoint being written"
    deadline = time.time() + 10
    while _writers_of(p.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not _writers_of(p.pid), "the writer outlived the run that started it"
    with pytest.raises(Exception):
        torch.load(torn, weights_only=True)  # torn indeed
    writing = int(torn.name.split("_")[1][:8])  # its optimizer state, or its weights
    for c in checkpoints(out):  # every finished checkpoint loads: none is half of one
        load_checkpoint(c)
    last = int(checkpoints(out)[-1].stem[5:])
    assert last >= writing - 3  # at most one interval before the write that was cut
    assert optim_file(checkpoints(out)[-1]).exists()  # the newest whole checkpoint has Adam's state
    r = ran(*args, capsys=capsys)
    assert r.returncode == 0, r.stderr
    assert "cannot be loaded" not in r.stderr and not list((out / "checkpoints").glob("*.bad"))
    assert "Adam's moments start afresh" not in r.stderr and "another config" not in r.stderr
    resumed = int(r.stderr.split("resumed from the checkpoint at step ")[1].split()[0])
    assert resumed == last  # the last whole checkpoint
    assert not list((out / "checkpoints").glob("*.tmp*"))  # the torn file was cleared
    assert RunResult.model_validate_json((out / "summary.json").read_text()).steps_done == 30


def _interrupt_args(out, *sets):
    return ["train", SPEC, "--variant", "A2", "--profile", "smoke", "--out", str(out),
            *[x for s in ["eval.max_sentences=2", "train.checkpoint_minutes=10", "train.log_every=5", *sets]
              for x in ("--set", s)]]


@pytest.mark.slow  # trains
def test_an_interrupted_train_checkpoints_the_step_it_stopped_at(repo, data_root, tmp_path, capsys, monkeypatch):
    """Ctrl-C (or a scheduler's SIGTERM) with checkpoints 10 minutes apart: the run stops after the step in
    flight, saves it, and the same command resumes there, with nothing to redo. One run per signal, the two
    side by side (each is mostly its process's start: torch's import); the resumes in this process."""
    monkeypatch.chdir(repo)
    env = {**os.environ, "ZOO_DATA_DIR": str(data_root)}
    sigs = (signal.SIGINT, signal.SIGTERM)
    long = ["train.steps=3000", "train.eval_every=3000"]
    procs = {sig: subprocess.Popen([sys.executable, "-m", "zoo.cli", *_interrupt_args(tmp_path / sig.name, *long)],
                                   cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for sig in sigs}
    seen, err, deadline = {}, {}, time.time() + 300
    try:
        for sig, p in procs.items():
            metrics, seen[sig] = tmp_path / sig.name / "metrics.jsonl", 0
            while seen[sig] < 20 and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
                steps = [json.loads(l)["step"] for l in metrics.read_text().splitlines()] if metrics.exists() else []
                seen[sig] = max(steps, default=0)
            assert seen[sig] >= 20 and not checkpoints(tmp_path / sig.name), \
                "no step logged, or a checkpoint before the interrupt"
            p.send_signal(sig)
        for sig, p in procs.items():
            err[sig] = p.communicate(timeout=120)[1]
    finally:
        for p in procs.values():
            p.kill()
    stopped = {}
    for sig, p in procs.items():
        out = tmp_path / sig.name
        assert p.returncode == (130 if sig == signal.SIGINT else 143) and "zoo: interrupted" in err[sig], err[sig]
        (saved,) = checkpoints(out)
        stopped[sig] = int(saved.stem[5:])
        assert stopped[sig] >= seen[sig] and optim_file(saved).exists()
        more = str(stopped[sig] + 5)
        r = ran(*_interrupt_args(out, "train.steps=" + more, "train.eval_every=" + more), capsys=capsys)
        assert r.returncode == 0, r.stderr
        assert f"resumed from the checkpoint at step {stopped[sig]}" in r.stderr, r.stderr
        # it goes on to a new length: a changed config, said before it trains on (`zoo train` resumed silently)
        assert f"trained under another config (train.eval_every: 3000 -> {stopped[sig] + 5}; train.steps: 3000 -> " \
            f"{stopped[sig] + 5})" in r.stderr, r.stderr
