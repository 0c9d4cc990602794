"""Names that become paths, and the check every write or delete of a run folder makes first.

A variant name, a spec file's stem, a profile name, a corpus or split name ends up in a folder or
file name (`STORAGE/<spec folder>/<trial>-<profile>/`, the spec folder being its stem plus, for a spec not
built in, a hash of its path: zoo.runner.sweep.spec_folder). Specs are shared between people, so such a
name is hostile input: it must be a plain name (`SAFE_NAME`), checked at validation; and, in case a
name reaches a path some other way, `inside()` refuses any path that resolves outside its root.
"""
from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from zoo.errors import UserError, disk_full
from zoo.text import shorten

# letters, digits and _ . + - = ; not starting with a dot (no "..", no hidden files), no "/" or "\",
# ASCII only (no look-alike or invisible characters), at most 64 characters
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=-]{0,63}")
SAFE_NAME_RULE = ("1-64 ASCII letters, digits and _ . + - =, not starting with '.' "
                  "(it becomes a folder or file name)")


def name_problem(name: object) -> str | None:
    """Why `name` cannot become part of a path, or None when it can."""
    if not isinstance(name, str) or isinstance(name, bool):
        return f"must be a string (got {'null' if name is None else repr(name)})"
    if SAFE_NAME.fullmatch(name):
        return None
    return f"'{shorten(name)}' is not a safe name: use {SAFE_NAME_RULE}"


def inside(root: str | Path, *parts: str | Path) -> Path:
    """root/parts, resolved (symlinks followed), refused with a UserError unless it lies inside root.

    Every place that writes or deletes a run folder calls this first, so no name, `..` or planted
    symlink can make it touch anything outside the storage root."""
    base = Path(os.path.realpath(root))
    path = Path(os.path.realpath(base.joinpath(*parts)))
    if path != base and base not in path.parents:
        shown = os.path.join(str(root), *map(str, parts))
        raise UserError(f"refusing to write or delete {shorten(shown, 200)}: it resolves to {path}, "
                        f"outside the storage folder {base}; names that become paths must be {SAFE_NAME_RULE}")
    return path


def inside_uri(root: str, *parts: str) -> str:
    """root/parts for a storage URI (s3://...), refused unless each part is one plain path segment."""
    for p in parts:
        if not p or "/" in p or "\\" in p or p in (".", ".."):
            raise UserError(f"refusing to write or delete {shorten(root + '/' + '/'.join(parts), 200)}: "
                            f"'{shorten(p)}' is not one folder name inside the storage {root}")
    return "/".join((root.rstrip("/"), *parts))


# A run's checkpoints, relative to its folder (a path or a storage URI): named here, on the ground floor, so the
# driver names a trial's last checkpoint without importing torch (zoo.train.checkpointing writes them).
CHECKPOINT_FOLDER = "checkpoints"
CHECKPOINTS = f"{CHECKPOINT_FOLDER}/step_*.pt"  # step_N.pt sorts by step


def checkpoint_name(step: int) -> str:
    """The checkpoint of `step`, relative to the run's folder."""
    return f"{CHECKPOINT_FOLDER}/step_{step:08d}.pt"


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write text so a reader (or a crash) sees the old file or the new one, never half of one;
    a full disk is a clear error naming the file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise disk_full(path, e) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return path
