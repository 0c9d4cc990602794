"""Each trial's folder in the storage: named by what its spec is, never by a file name alone; never one that
holds another trial's work; emptied (--rerun, a changed config) only when it is the trial's own."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.errors import UserError
from zoo.paths import inside
from zoo.result import Trial

if TYPE_CHECKING:
    from zoo.runner.sweep import Storage, Sweep

__all__ = ["FRESH", "spec_folder", "stale", "trial_folders", "wipe"]


def spec_folder(spec: str) -> str:
    """The folder of a spec's trials under the storage, named by what the spec is, not by its file name
    alone: a built-in spec's (zoo's specs/*.yaml) is its stem, as it always was; any other's is its stem
    and 8 hex digits of its resolved path, so `mine/x.yaml`, `other/x.yaml` and a user's `base.yaml`
    beside the built-in base each have their own (`x-1f0c2a9b/`, `x-7d41e0c3/`, `base-5a2b...`, `base/`)."""
    from zoo.spec import specs_dir
    path = Path(os.path.realpath(spec))
    if path.suffix == ".yaml" and path.parent == Path(os.path.realpath(specs_dir())):
        return path.stem
    return f"{path.stem}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def trial_folders(sw: Sweep, cfgs: list, profile: str) -> dict[str, tuple[str, str]]:
    """Each trial's (folder in the storage, working folder on the node that runs it):
    `<spec folder>/<trial>-<profile>/`, unless that folder holds another trial's work (another row of the
    store points at it, or its config.json is another config and not this trial's own earlier one: an
    older zoo named folders by the spec's file name alone, so two specs could share one, and `zoo train
    --out` may write anywhere); then `<trial>-<profile>-<8 hex of the config hash>/`. A row of an older
    store keeps its folder while that holds this very config (its interrupted run resumes there). No
    trial ever resumes, wipes or writes into another's folder: when neither is free, it is refused."""
    st, folder = sw.st, spec_folder(sw.spec)
    if st.uri:  # the URI holds the folders (a node-local copy while a trial runs): named, not inspected
        return {c.trial: (st.run_dir(folder, c.trial, profile), st.scratch_dir(folder, c.trial, profile))
                for c in cfgs}
    held = _holders(sw.store)
    out = {}
    for c in cfgs:
        me = (sw.spec_key, c.trial, profile)
        row = sw.store.get(*me)
        tries = [st.run_dir(folder, c.trial, profile), st.run_dir(folder, c.trial, profile, c.config_hash()[:8])]
        if row and row.run_dir and row.run_dir not in tries and _old_folder(st, row.run_dir, me, c, held):
            tries.insert(0, row.run_dir)
        free = next((d for d in tries if _free(d, me, row, c, held)), None)
        if free is None:
            raise UserError(f"{sw.spec}: trial {c.trial}: its folders {tries[-2]} and {tries[-1]} both hold another "
                            "trial's work (another row of the results store points at them, or their config.json "
                            "is another config), and a run never writes into another's folder; move those folders "
                            "aside or give --storage another folder")
        out[c.trial] = (free, free)
    return out


def _holders(store) -> dict[str, set]:
    """Each trial folder the store's rows point at (resolved) -> the (spec, trial, profile) keys pointing there."""
    held: dict[str, set] = {}
    if store.empty:
        return held
    for spec, trial, profile, run_dir in store.run_dirs():
        held.setdefault(os.path.realpath(run_dir), set()).add((spec, trial, profile))
    return held


def _folder_hash(d: str) -> str | None:
    """The config hash of the run in folder `d` (its config.json): "" when there is none, None when it does not read."""
    from zoo.config import Config
    f = Path(d) / "config.json"
    if not f.exists():
        return ""
    try:
        return Config.model_validate_json(f.read_text()).config_hash()
    except (OSError, ValueError):
        return None


def _free(d: str, me: tuple, row: Trial | None, cfg, held: dict) -> bool:
    """Whether trial `me` (config `cfg`, store row `row`) may use folder `d`: no other row points at it, and
    it holds no run, this config's, or this trial's own earlier config's (which then starts afresh, as said)."""
    if held.get(os.path.realpath(d), set()) - {me}:
        return False
    h = _folder_hash(d)
    if h in ("", cfg.config_hash()):
        return True
    return bool(row and row.run_dir and os.path.realpath(row.run_dir) == os.path.realpath(d)
                and h in (None, row.config_hash))


def _old_folder(st: Storage, d: str, me: tuple, cfg, held: dict) -> bool:
    """Whether `d`, the folder an older store's row names, is this trial's with this very config (so it resumes there)."""
    try:
        inside(st.local, d)
    except UserError:
        return False
    return Path(d).is_dir() and not held.get(os.path.realpath(d), set()) - {me} and _folder_hash(d) == cfg.config_hash()


FRESH = ("warning", "step", "metrics", "best", "attention", "placement", "hardware", "checkpoint", "tokens_seen",
         "train_seconds", "started_at", "finished_at")


def stale(row: Trial | None, scratch: str, cfg) -> bool:
    """The trial's folder holds another config's checkpoints (the spec or --set changed): start afresh
    rather than resume them into this config."""
    from zoo.config import Config
    if row and row.config_hash not in ("", cfg.config_hash()):
        return True
    f = Path(scratch) / "config.json"
    try:
        return f.exists() and Config.model_validate_json(f.read_text()).config_hash() != cfg.config_hash()
    except ValueError:
        return True


def wipe(out_dir: str, root: str | Path, mirror: str | None = None, mirror_root: str | None = None) -> None:
    """--rerun: start the trial from scratch (its checkpoints and summary go; the folder stays).
    Refuses, before deleting anything, a folder outside `root` (or a mirror outside `mirror_root`)."""
    out = inside(root, out_dir)
    if out == Path(os.path.realpath(root)):
        raise UserError(f"refusing to wipe the storage folder {root} itself; a trial folder lies inside it")
    if mirror and not mirror.startswith(str(mirror_root).rstrip("/") + "/"):
        raise UserError(f"refusing to delete {mirror}: it is outside the storage {mirror_root}")
    shutil.rmtree(out / "checkpoints", ignore_errors=True)
    for f in ("summary.json", "metrics.jsonl"):
        (out / f).unlink(missing_ok=True)
    if mirror:  # the copy in the storage URI too
        import pyarrow.fs as pafs
        fs, root = pafs.FileSystem.from_uri(mirror)
        fs.delete_dir_contents(root, missing_dir_ok=True)
