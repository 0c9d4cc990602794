"""Checkpoints written by a process of its own, beside training (issue 37).

Why a process and not a thread: on a thread, torch.save's pickling (Python, per tensor) shares the GIL
with the training loop's own Python. On a tiny CPU model (12 ms steps) saving every 18 steps, as the gpu
profile's base does, a writer thread cost 4.6% of tokens/s while the loop itself waited 0.9%; this process,
with nothing rewritten (zoo.train.checkpointing.write_checkpoint), costs 1.5% (bench/bench_checkpoints.py,
quiet machine). The loop copies its state into a host buffer the two processes share (tensor copies, which
release the GIL; from a GPU, the transfer), sends the writer the buffer's layout and the checkpoint's other
fields (a few kB), and goes on.

One write is in flight at most: the next save waits for it, so host memory holds one copy and a disk slower
than the cadence shows as the loop's wait; a write's error (a full disk) is raised in the training thread at
the next save or at `wait`. The buffer is an anonymous shared file (memfd) the writer inherits, so nothing is
left behind whichever process is killed; a terminal's Ctrl-C does not reach the writer (its trainer decides
when to stop), and it ends with the process that started it (on Linux even when that is killed). A writer
serves one run at a time and then the process's next, from whichever thread (started at a run's first save:
importing torch takes it seconds), so a notebook's, a test session's or a reused Ray trial worker's many runs
(a Tune trial is a thread of its own) start it once.

A run whose whole state is small (under INLINE_BYTES: the smoke profile's models, about 1 MB) writes in its own
thread until those writes have taken INLINE_S, and only then starts a writer: a process costs about 3 s of CPU to
start (its torch import: 4.6 s for bench/bench_checkpoints.py's writer on one core), more than all the writes of a
short run (the smoke profile's three, ~20 ms each); on a 2-core machine running two trials, that CPU is theirs.
"""
from __future__ import annotations

import atexit
import math
import mmap
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["Writer"]  # what it lends outside its package (the door serves these)

ALIGN = 64  # bytes: every tensor's offset in the buffer, so any dtype's view is aligned
# bytes of a run's state (weights and Adam's two moments) below which it writes in its own thread, until that has
# taken INLINE_S seconds; 0: every run has a writer process from its start (the tests of the process set it so)
INLINE_BYTES = int(os.environ.get("ZOO_WRITER_INLINE_BYTES", 16 * 2**20))
INLINE_S = 0.5


@dataclass(frozen=True)
class Slot:
    """What a checkpoint's structure holds in place of a tensor: its place in the buffer."""
    offset: int
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize * math.prod(self.shape)


@dataclass(frozen=True)
class Job:
    """One checkpoint for the writer: `skeleton` is the checkpoint with Slots for its tensors."""
    skeleton: dict
    size: int  # the buffer's bytes the slots need
    out: str
    keep: int


def _replace(obj, kind: type, fn):
    """obj (nested dicts, lists, tuples) with each value of type `kind` replaced by fn(value)."""
    if isinstance(obj, kind):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _replace(v, kind, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_replace(v, kind, fn) for v in obj)
    return obj


def flatten(obj) -> tuple[dict, list[tuple[torch.Tensor, Slot]], int]:
    """obj with each tensor replaced by its Slot; the (tensor, slot) pairs; the bytes the slots take."""
    tensors, end = [], 0

    def place(t: torch.Tensor) -> Slot:
        nonlocal end
        slot = Slot(end, t.dtype, tuple(t.shape))
        tensors.append((t, slot))
        end += -(-slot.nbytes // ALIGN) * ALIGN
        return slot
    return _replace(obj, torch.Tensor, place), tensors, end


def unflatten(obj, view):
    """flatten's inverse: each Slot replaced by `view(slot)`."""
    return _replace(obj, Slot, view)


def view_of(buf: mmap.mmap, slot: Slot) -> torch.Tensor:
    """The slot's tensor in the shared buffer: its own bytes only, so torch.save writes just those."""
    if slot.nbytes == 0:
        return torch.empty(slot.shape, dtype=slot.dtype)
    return torch.frombuffer(buf, dtype=slot.dtype, count=math.prod(slot.shape), offset=slot.offset).view(slot.shape)


def _shared_file() -> int:
    if hasattr(os, "memfd_create"):  # Linux: shared memory no folder holds (a container's small /dev/shm neither)
        return os.memfd_create("zoo-checkpoint")
    fd, name = tempfile.mkstemp(prefix="zoo-checkpoint-")
    os.unlink(name)  # open, and unnamed: gone with the last process that holds it
    return fd


class _Process:
    """The writer process and the buffer it shares with this one."""

    def __init__(self):
        self.fd = _shared_file()
        self.size, self.buf = 0, None
        self.proc = _spawn([sys.executable, "-m", "zoo.train.writer", str(self.fd), str(os.getpid())],
                           pass_fds=[self.fd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           start_new_session=True)  # a terminal's Ctrl-C is ours

    def alive(self) -> bool:
        return self.proc.poll() is None

    def grow(self, size: int) -> None:
        if size > self.size:
            os.ftruncate(self.fd, size)
            self.size, self.buf = size, mmap.mmap(self.fd, size)  # views of the old map keep it alive till they go

    def shrink(self) -> None:
        """The buffer's memory given back while no run holds this writer."""
        self.buf, self.size = None, 0
        os.ftruncate(self.fd, 0)

    def send(self, job: Job) -> None:
        pickle.dump(job, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def end(self) -> None:
        """Its stdin closed, it ends after any write in flight."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc.stdout.close()

    def reply(self):
        try:
            return pickle.load(self.proc.stdout)
        except EOFError:
            raise RuntimeError(f"the checkpoint writer (pid {self.proc.pid}) ended mid-write (exit code "
                               f"{self.proc.wait()}): its error, if any, is above") from None


_lock = threading.Lock()
_idle: list[_Process] = []  # writers no run holds: the next run takes one rather than start its own
_spawner: list = []  # [queue] of the thread that starts every writer (PR_SET_PDEATHSIG ties one to a thread)


def _spawn(argv: list, **kw) -> subprocess.Popen:
    """Popen from a daemon thread that lives as long as this process: the kernel ends a writer when the thread
    that started it ends, and a run's own thread (a Tune trial's) ends before the process's next run could take
    the idle writer."""
    import queue
    with _lock:
        if not _spawner:
            jobs: queue.Queue = queue.Queue()

            def serve() -> None:
                while True:
                    args, kwargs, done = jobs.get()
                    try:
                        done.put(subprocess.Popen(args, **kwargs))
                    except BaseException as e:  # raised in the caller's thread
                        done.put(e)
            threading.Thread(target=serve, name="zoo-writer-spawner", daemon=True).start()
            _spawner.append(jobs)
    done: queue.Queue = queue.Queue()
    _spawner[0].put((argv, kw, done))
    got = done.get()
    if isinstance(got, BaseException):
        raise got
    return got


@atexit.register
def end_idle() -> None:
    """The writers no run holds, ended now (each after its write in flight): also at exit."""
    while _idle:
        _idle.pop().end()


class Writer:
    """A run's checkpoints, handed to a writer process the run holds till `close`. `save` returns once the
    state is copied. `state_bytes`: the run's weights and optimizer state; under INLINE_BYTES, `save` writes
    in the caller's thread (and returns once written) until that has taken INLINE_S (None: always a process)."""

    def __init__(self, state_bytes: int | None = None):
        self._process: _Process | None = None
        self._pending = False
        self.inline = state_bytes is not None and state_bytes < INLINE_BYTES
        self.inline_s = 0.0  # seconds its writes took in the caller's thread

    def start(self) -> None:
        """The run's writer taken now (an idle one of this process, or one started now), so a new one's imports
        overlap the first steps instead of delaying the first save's reply (a short run waited seconds for it)."""
        if not self.inline and (self._process is None or not self._process.alive()):
            self._process = _take()

    def save(self, ck: dict, out: Path, keep: int) -> None:
        """Checkpoint `ck` (zoo.train.checkpointing.write_checkpoint's contents) under `out`, the last `keep`
        kept. Waits for the write before it; copies the tensors (from any device) into the shared buffer."""
        if self.inline:
            from zoo.train.checkpointing import write_checkpoint
            t0 = time.perf_counter()
            write_checkpoint(_replace(ck, torch.Tensor, lambda t: t.detach().cpu()), out, keep)  # host tensors, as the writer's
            self.inline_s += time.perf_counter() - t0
            self.inline = self.inline_s < INLINE_S  # past it, a process pays: the next save starts one
            return
        self.wait()
        if self._process is None or not self._process.alive():
            self._process = _take()
        skeleton, tensors, size = flatten(ck)
        p = self._process
        p.grow(size)
        for t, slot in tensors:
            if slot.nbytes:
                view_of(p.buf, slot).copy_(t)
        p.send(Job(skeleton, size, str(out), keep))
        self._pending = True

    def wait(self) -> None:
        """The write in flight, finished; its error raised here."""
        if not self._pending:
            return
        self._pending = False
        err = self._process.reply()
        if err is not None:
            raise err  # the writer's own exception: an OSError, zoo's DiskFullError for a full disk

    def close(self) -> None:
        """The last write finished (its error raised); the writer goes back to the process's idle ones."""
        try:
            self.wait()
        finally:
            p, self._process = self._process, None
            if p is not None and p.alive():
                p.shrink()
                with _lock:
                    _idle.append(p)


def _take() -> _Process:
    """An idle writer of this process, or a new one."""
    with _lock:
        while _idle:
            p = _idle.pop()
            if p.alive():
                return p
    return _Process()


# -- the writer process ---------------------------------------------------------------------------

def _die_with(parent: int) -> None:
    """Linux: the kernel kills this process when the thread that started it (`_spawn`'s, which lives as long as
    its process) ends: the trainer's process killed, as a writer thread would end."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # elsewhere the closed stdin ends it after its write
    if os.getppid() != parent:
        sys.exit(0)


def main(fd: int, parent: int) -> None:
    from zoo.train.checkpointing import write_checkpoint
    _die_with(parent)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to the trainer's stderr, not into the replies
    buf, size = None, 0
    while True:
        try:
            job: Job = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        try:
            if job.size != size:  # the buffer grew, or shrank between two runs
                buf, size = mmap.mmap(fd, job.size), job.size
            write_checkpoint(unflatten(job.skeleton, lambda s: view_of(buf, s)), Path(job.out), job.keep)
            err = None
        except Exception as e:
            err = e
        try:
            reply = pickle.dumps(err)
        except Exception:  # an exception that does not pickle: its text
            reply = pickle.dumps(RuntimeError(f"checkpoint writer: {type(err).__name__}: {err}"))
        replies.write(reply)
        replies.flush()


if __name__ == "__main__":  # python -m zoo.train.writer FD PARENT: run as the module, whose Slot the jobs hold
    from zoo.train.writer import main as serve
    serve(int(sys.argv[1]), int(sys.argv[2]))
