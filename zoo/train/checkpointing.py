"""Checkpoints on disk: written atomically (a crash leaves the old one or the new one, never half of
one), listed in step order, loaded, and averaged (the paper averages the last 5 or 20, section 6.1).
"""
from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from pathlib import Path

import torch

from zoo.errors import disk_full


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
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    with writing(path, tmp):
        torch.save(obj, tmp)
        os.replace(tmp, path)


def load_checkpoint(path: Path, map_location="cpu") -> dict:
    """A checkpoint's contents. weights_only: tensors and plain Python values only, so a checkpoint
    from someone else cannot run code when loaded (pickled objects are refused)."""
    return torch.load(path, map_location=map_location, weights_only=True)


def checkpoints(out: Path) -> list[Path]:
    return sorted((out / "checkpoints").glob("step_*.pt"))


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


