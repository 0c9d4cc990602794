"""Checkpoints on disk: written atomically (a crash leaves the old one or the new one, never half of
one), listed in step order, loaded, and averaged (the paper averages the last 5 or 20, section 6.1).
A checkpoint is checkpoints/step_N.pt (the weights, the loop's position, its generators' states), and for
the newest only, optim_N.pt beside it (Adam's state). The training loop hands its state to a
zoo.train.writer.Writer, which writes it in a process of its own (`write_checkpoint`); a run resumes
(`resume`) from the newest checkpoint that loads, the same one on every rank.
"""
from __future__ import annotations

import errno
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.distributed as dist

from zoo.errors import UserError, disk_full, on_sigterm
from zoo.train.device import rank_and_world

__all__ = ["average_checkpoints", "checkpoints", "load_checkpoint"]


# -- checkpoints --------------------------------------------------------------------------------

@contextmanager
def writing(path: Path, tmp: Path | None = None):
    """A full disk is a clear error naming the file (a half-written temporary file goes)."""
    try:
        yield
    except OSError as e:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if e.errno == errno.ENOSPC:
            raise disk_full(path, e) from None
        raise


def atomic_save(obj, path: Path) -> None:
    """obj written to a temporary file beside `path`, flushed to the disk, then renamed over `path`: a
    process killed (or a machine stopped) mid-write leaves only the temporary file, which nothing loads."""
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    with writing(path, tmp):
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def optim_file(path: Path) -> Path:
    """Where the optimizer state of the checkpoint at `path` (checkpoints/step_N.pt) is: optim_N.pt."""
    return path.with_name("optim_" + path.name.removeprefix("step_"))


def write_checkpoint(ck: dict, out: Path, keep: int) -> None:
    """ck (its "optim" entry: Adam's state) as the checkpoint of step ck["step"] under out/checkpoints. The
    optimizer state first, then step_N.pt, whose arrival makes the checkpoint whole: killed in between, the
    one before is the newest, its optim file still there. Then the older optim files go (only the newest
    checkpoint keeps Adam's two moments, twice the weights: big keeps 20, 51 GB with them, 19 GB without),
    and every checkpoint but the last `keep`. Nothing is written twice."""
    path = out / "checkpoints" / f"step_{ck['step']:08d}.pt"
    if "optim" in ck:
        atomic_save(ck["optim"], optim_file(path))
    atomic_save({k: v for k, v in ck.items() if k != "optim"}, path)
    for old in (out / "checkpoints").glob("optim_*.pt"):
        if old != optim_file(path):
            old.unlink(missing_ok=True)
    for old in checkpoints(out)[:-keep]:
        old.unlink(missing_ok=True)


class Interrupt:
    """Ctrl-C or SIGTERM while `zoo train` trains (the main thread; a Ray trial's thread cannot take signals,
    and Tune ends it by its own means): the step in flight finishes and is checkpointed before the run
    stops, so a resume redoes nothing (not even checkpoint_minutes of it); a second signal acts at once.
    `asked` is the signal, once one came; `stop()` raises what the signal would have."""

    def __init__(self, active: bool = True):
        self.asked: int | None = None
        self._before: dict = {}
        self.active = active and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> "Interrupt":
        if self.active:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._before[sig] = signal.signal(sig, self._ask)
        return self

    def _ask(self, signum, frame) -> None:
        self.asked = signum
        self._restore()  # a second Ctrl-C is not deferred

    def _restore(self) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler)
        self._before = {}

    def __exit__(self, *exc) -> None:
        self._restore()

    def stop(self) -> None:
        if self.asked == signal.SIGTERM:
            on_sigterm(self.asked)  # zoo's Terminated, as an undeferred SIGTERM raises
        raise KeyboardInterrupt


def load_checkpoint(path: Path, map_location="cpu") -> dict:
    """A checkpoint's contents. weights_only: tensors and plain Python values only, so a checkpoint
    from someone else cannot run code when loaded (pickled objects are refused)."""
    return torch.load(path, map_location=map_location, weights_only=True)


def checkpoints(out: Path) -> list[Path]:
    return sorted((out / "checkpoints").glob("step_*.pt"))


def clear_unfinished(out: Path) -> None:
    """Temporary files of writes a killed process left (never loaded, but as large as a checkpoint)."""
    for tmp in (out / "checkpoints").glob("*_*.pt.tmp*"):
        tmp.unlink(missing_ok=True)


# -- resuming ----------------------------------------------------------------------------------

def _load_into(path: Path, model, opt, device, report) -> dict:
    """The checkpoint at `path` loaded into model and opt; its contents. Raises when it does not load."""
    ck = load_checkpoint(path, device)
    model.load_state_dict(ck["model"])
    int(ck["step"]), int(ck["epoch"]), int(ck["cursor"]), ck["rng"]
    if optim_file(path).exists():
        opt.load_state_dict(load_checkpoint(optim_file(path), device))
    elif "optim" in ck:  # written before optim files (one file held both)
        opt.load_state_dict(ck["optim"])
    else:  # an older, weights-only checkpoint (the newest could not be loaded): Adam starts afresh
        report({"event": "no_optimizer_state", "path": str(path), "step": int(ck["step"])})
    return ck


def _first_line(e: Exception) -> str:
    return next((l.strip() for l in str(e).splitlines() if l.strip()), type(e).__name__)[:300]


def _resume(out: Path, model, opt, device, report) -> tuple[Path, dict] | None:
    """Load the newest checkpoint that loads, into model and opt; (its path, its contents), or None.

    A truncated or otherwise unloadable newest checkpoint (a full disk, a copy cut short, a file
    that is not ours) does not block the run: it is named in the report and set aside as NAME.bad
    so no later run trips on it; the one before it is used."""
    for path in reversed(checkpoints(out)):
        try:
            return path, _load_into(path, model, opt, device, report)
        except Exception as e:  # torch's zip errors, weights_only refusals, missing keys, wrong shapes
            bad = path.with_name(path.name + ".bad")
            for f in (path, optim_file(path)):
                try:
                    os.replace(f, f.with_name(f.name + ".bad"))
                except OSError:
                    pass
            report({"event": "bad_checkpoint", "path": str(path), "moved_to": str(bad),
                    "error": f"{type(e).__name__}: {_first_line(e)}"})
    return None


def resume(out: Path, model, opt, device, report, changes: list[str] = ()) -> tuple[Path, dict] | None:
    """The checkpoint a run resumes from, loaded into model and opt: (its path, its contents), or None.

    _resume on rank 0; every other rank loads the checkpoint rank 0 chose from its own copy of the run
    folder (with a storage URI, each node's scratch, which every rank pulls first), so all ranks start at
    one step, and every rank reports rank 0's events alike (Ray Train's report is collective: each rank
    must send as many). A rank that cannot load it stops every rank with one error, none left waiting."""
    rank, world = rank_and_world()
    events: list[dict] = []
    got = _resume(out, model, opt, device, events.append) if rank == 0 else None
    if got and changes:  # rank 0's reading of the config before this one (zoo.result.ConfigChanged)
        events.append({"event": "config_changed", "changes": list(changes)})
    if world > 1:
        msg = [got[0].name if got else None, events]
        dist.broadcast_object_list(msg, src=0, device=device if device.type == "cuda" else None)
        name, events = msg
        error = None
        if rank and name:
            path = out / "checkpoints" / name
            try:
                got = path, _load_into(path, model, opt, device, lambda m: None)
            except Exception as e:
                error = f"rank {rank} cannot load {path} ({type(e).__name__}: {_first_line(e)})"
        errors = [None] * world
        dist.all_gather_object(errors, error)
        if any(errors):
            raise UserError(f"{'; '.join(filter(None, errors))}: rank 0 resumes from {name}, and every rank must "
                            "load the same checkpoint (a --storage folder every node mounts, or a storage URI)")
    for m in events:
        report(m)
    return got


def average_checkpoints(paths: list[Path]) -> dict:
    """Element-wise mean of the models' parameters (section 6.1: the last 5 or 20 checkpoints)."""
    avg = None
    for p in paths:
        sd = load_checkpoint(p)["model"]
        if avg is None:
            avg = {k: v.clone().double() for k, v in sd.items()}
        else:
            for k, v in sd.items():
                avg[k] += v.double()
    return {k: (v / len(paths)).to(torch.float32) for k, v in avg.items()}


