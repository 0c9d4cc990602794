"""A run's checkpoints, the one home of what they hold and where: the loop's position (`State`) and a
checkpoint's contents (`Checkpoint`), typed; their file names; written atomically (a crash leaves the old
one or the new one, never half of one), listed in step order, loaded, and averaged (the paper averages the
last 5 or 20, section 6.1). A checkpoint is checkpoints/step_N.pt (the weights, the loop's position, its
generators' states), and for the newest only, optim_N.pt beside it (Adam's state). The training loop
`save`s through a zoo.train.writer.Writer, which writes in a process of its own (`write_checkpoint`); a run
resumes (`resume`) from the newest checkpoint that loads, the same one on every rank.
"""
from __future__ import annotations

import errno
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.distributed as dist

from zoo.config import Config, dotted
from zoo.errors import UserError, disk_full, on_sigterm
from zoo.paths import CHECKPOINT_FOLDER, CHECKPOINTS, checkpoint_name
from zoo.result import BadCheckpoint, ConfigChanged, Event, NoOptimizerState, RunResult
from zoo.train.device import rank_and_world

__all__ = ["atomic_save", "average_checkpoints", "checkpoints", "load_checkpoint",
           "optim_file"]  # what it lends outside its package (the door serves these)


# -- what a checkpoint holds --------------------------------------------------------------------

@dataclass
class State:
    """Where the loop stands: a checkpoint keeps these fields (by name), so a resumed run continues exactly."""
    step: int = 0
    epoch: int = 0
    cursor: int = 0  # the next batch of the epoch's order
    elapsed: float = 0.0  # training seconds, earlier attempts included
    tokens_seen: int = 0
    save_seconds: float = 0.0  # of those, the seconds the loop waited on checkpoints


@dataclass
class Checkpoint:
    """One checkpoint's contents. On disk (`as_dict`) a dict of plain values and tensors, which loads with
    weights_only; `optim` goes to a file of its own (optim_N.pt)."""
    state: State
    model: dict  # the weights (state_dict)
    rng: torch.Tensor  # rank 0's CPU generator
    config: dict  # the run's Config, as JSON
    cuda_rng: torch.Tensor | None = None  # a GPU's dropout masks come from its own generator
    optim: dict | None = None  # Adam's state

    def as_dict(self) -> dict:
        extra = {k: v for k, v in (("cuda_rng", self.cuda_rng), ("optim", self.optim)) if v is not None}
        return {"model": self.model, **asdict(self.state), "rng": self.rng, "config": self.config, **extra}

    @classmethod
    def of(cls, ck: dict) -> "Checkpoint":
        """From its dict; elapsed, tokens_seen and save_seconds are 0 in checkpoints from before they were kept."""
        int(ck["step"]), int(ck["epoch"]), int(ck["cursor"])  # a foreign file fails here, not later
        state = State(**{f.name: ck[f.name] for f in fields(State) if f.name in ck})
        return cls(state, ck["model"], ck["rng"], ck.get("config", {}), ck.get("cuda_rng"), ck.get("optim"))

    def restore_generators(self, seed: int, device) -> None:
        """The generators as they were at the save: rank 0's own; the other ranks draw their masks afresh."""
        torch.set_rng_state(self.rng.cpu())  # loaded onto the device with the rest: the generator wants host bytes
        if device.type == "cuda" and self.cuda_rng is not None:
            torch.cuda.set_rng_state(self.cuda_rng.cpu(), device)
        rank = rank_and_world()[0]
        if rank:  # the checkpoint holds rank 0's generator: the others draw their own masks again
            torch.manual_seed(seed * 1000 + rank + 1_000_003 * self.state.step)
            if device.type == "cuda":
                torch.cuda.manual_seed(seed * 1000 + rank + 1_000_003 * self.state.step)


def averaged_from(cfg: Config) -> int:
    """The step after which every checkpoint_every-th step is saved, whatever the clock: the last
    eval.average_checkpoints of them are averaged, so they keep the spec's spacing. A time-limited run
    cannot know where it ends (all of it); a run that does not average, never."""
    k = cfg.eval.average_checkpoints
    if not k:
        return cfg.train.steps
    return 0 if cfg.train.time_limit_minutes is not None else cfg.train.steps - k * cfg.train.checkpoint_every


def save(writer, out: Path, cfg: Config, model, opt, st: State, device) -> None:
    """Checkpoint `st`: the state now, copied to the writer (a zoo.train.writer.Writer: the loop goes on
    changing it in place), written in the writer's process (write_checkpoint), the last k kept."""
    ck = Checkpoint(st, model.state_dict(), torch.get_rng_state(), cfg.model_dump(mode="json"),
                    torch.cuda.get_rng_state(device) if device.type == "cuda" else None, opt.state_dict())
    writer.save(ck.as_dict(), out, cfg.train.keep_checkpoints)


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
    path = out / checkpoint_name(ck["step"])
    if "optim" in ck:
        atomic_save(ck["optim"], optim_file(path))
    atomic_save({k: v for k, v in ck.items() if k != "optim"}, path)
    for old in (out / CHECKPOINT_FOLDER).glob("optim_*.pt"):
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
    return sorted(out.glob(CHECKPOINTS))


def clear_unfinished(out: Path) -> None:
    """Temporary files of writes a killed process left (never loaded, but as large as a checkpoint)."""
    for tmp in (out / CHECKPOINT_FOLDER).glob("*_*.pt.tmp*"):
        tmp.unlink(missing_ok=True)


# -- resuming ----------------------------------------------------------------------------------

def _load_into(path: Path, model, opt, device, report) -> Checkpoint:
    """The checkpoint at `path` loaded into model and opt; its contents. Raises when it does not load."""
    ck = Checkpoint.of(load_checkpoint(path, device))
    model.load_state_dict(ck.model)
    if optim_file(path).exists():
        opt.load_state_dict(load_checkpoint(optim_file(path), device))
    elif ck.optim is not None:  # written before optim files (one file held both)
        opt.load_state_dict(ck.optim)
    else:  # an older, weights-only checkpoint (the newest could not be loaded): Adam starts afresh
        report(NoOptimizerState(path=str(path), step=int(ck.state.step)))
    return ck


def _first_line(e: Exception) -> str:
    return next((l.strip() for l in str(e).splitlines() if l.strip()), type(e).__name__)[:300]


def _resume(out: Path, model, opt, device, report) -> tuple[Path, Checkpoint] | None:
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
            report(BadCheckpoint(path=str(path), moved_to=str(bad), error=f"{type(e).__name__}: {_first_line(e)}"))
    return None


def resume(out: Path, model, opt, device, report, changes: list[str] = ()) -> Checkpoint | None:
    """The checkpoint a run resumes from, loaded into model and opt, or None.

    _resume on rank 0; every other rank loads the checkpoint rank 0 chose from its own copy of the run
    folder (with a storage URI, each node's scratch, which every rank pulls first), so all ranks start at
    one step, and every rank reports rank 0's events alike (Ray Train's report is collective: each rank
    must send as many). A rank that cannot load it stops every rank with one error, none left waiting."""
    rank, world = rank_and_world()
    events: list[Event] = []
    got = _resume(out, model, opt, device, events.append) if rank == 0 else None
    if got and changes:  # rank 0's reading of the config before this one (zoo.result.ConfigChanged)
        events.append(ConfigChanged(changes=list(changes)))
    if world > 1:
        msg = [got[0].name if got else None, events]
        dist.broadcast_object_list(msg, src=0, device=device if device.type == "cuda" else None)
        name, events = msg
        error = None
        if rank and name:
            path = out / CHECKPOINT_FOLDER / name
            try:
                got = path, _load_into(path, model, opt, device, lambda m: None)
            except Exception as e:
                error = f"rank {rank} cannot load {path} ({type(e).__name__}: {_first_line(e)})"
        errors = [None] * world
        dist.all_gather_object(errors, error)
        if any(errors):
            raise UserError(f"{'; '.join(filter(None, errors))}: rank 0 resumes from {name}, and every rank must "
                            "load the same checkpoint (a --storage folder every node mounts, or a storage URI)")
    for e in events:
        report(e)
    return got and got[1]


def ready_folder(out: Path) -> None:
    """The run folder and its checkpoints folder made, and each proven writable before the first step: a
    path that is a file, or a folder this user cannot write, is one paragraph now (exit 2), not a traceback
    at the first checkpoint."""
    for d in (out, out / CHECKPOINT_FOLDER):
        if d.exists() and not d.is_dir():
            raise UserError(f"the run folder {out}: {d} is a file, not a folder; a run needs a folder of its own "
                            "(give --out a new folder, or move the file away)")
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe = d / f".zoo-write-check-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise
            raise UserError(f"the run folder {out}: cannot write in {d} ({e.strerror or e}); give --out a folder "
                            "you can write, or change its permissions") from None


def refuse_other_model(out: Path, cfg: Config) -> None:
    """A folder holding the work (a summary or checkpoints) of another model or data: refused, naming what
    differs. Resuming would set its checkpoints aside as unloadable and append a second model's metrics to
    the first one's metrics.jsonl. A change elsewhere (eval, more train.steps) still resumes, with its note."""
    changes = [c for c in config_changes(out, cfg) if c.split(".", 1)[0] in ("model", "data")]
    if not changes or not ((out / "summary.json").exists() or any((out / CHECKPOINT_FOLDER).glob("step_*.pt"))):
        return
    before = Config.model_validate_json((out / "config.json").read_text())
    state = "finished" if (out / "summary.json").exists() else "unfinished"
    raise UserError(f"the run folder {out} holds the {state} run of another model (config {before.config_hash()}, "
                    f"this one is {cfg.config_hash()}): {'; '.join(changes[:6])}"
                    f"{f'; and {len(changes) - 6} more' if len(changes) > 6 else ''}. Its checkpoints cannot be "
                    "resumed by this model and its metrics would mix with this one's: train into a new --out, or "
                    f"delete {out} to start over")


def config_changes(out: Path, cfg: Config) -> list[str]:
    """How the config of the run in `out` (its config.json) differs from `cfg` in what identifies a run,
    as "field: old -> new"; [] when it is the same run, or there is none (or none that reads)."""
    try:
        before = Config.model_validate_json((out / "config.json").read_text())
    except (OSError, ValueError):
        return []
    if before.config_hash() == cfg.config_hash():
        return []
    old, new = (dotted(c.model_dump(mode="json")) for c in (before, cfg))
    return [f"{k}: {old.get(k)} -> {new.get(k)}" for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]


def finished(out: Path, cfg: Config) -> RunResult | None:
    """The run's result when it finished before under this config (summary.json); None when absent, unreadable
    (a half-copied or foreign file is not a reason to skip training) or another config's."""
    try:
        done = RunResult.model_validate_json((out / "summary.json").read_text())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    return done if done.config_hash == cfg.config_hash() else None


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


