"""Profiles: overlays that scale a paper spec to a budget (`--profile smoke|cpu|gpu|paper|auto|FILE`).

A profile may `extends:` another (a name beside it, or a file), changing only what it says (an add-on
budget of the same proxy keeps one home for the proxy), `scale:` widths, depth and steps together (h x d_k =
d_model keeps holding), `set:` fields outright, map the spec's corpus to the one this budget uses (`datasets:`,
with `prefer:` when a larger corpus is present, and a `scale:` of the corpus's own where it supports only a
smaller model) and give a `seeds:` axis. `paper` runs the spec exactly as written. A budget too small for any
claim says so in `untestable:` (why, in words): every trial run under it records that, and every claim on its rows
is "untestable at this budget" with that reason, never a verdict.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pydantic import ValidationError

from zoo.paths import name_problem
from zoo.config import DataSpec, MAX_STEPS, ModelSpec, TrainSpec
from zoo.text import did_you_mean, shorten
from zoo.spec.specfile import MAX_EXTENDS, Doc, SECTIONS, SpecError, deep_merge, read_yaml, specs_dir, without_empty

if TYPE_CHECKING:  # at run time imported where used: a module-level import makes the chain from reports too long
    from zoo.spec.profile_grammar import Profile, Scale

__all__ = ["WIDTHS", "ProfileFile", "apply_profile", "auto_profile", "check_heads", "find_profile", "load_profile",
           "profile_description", "profile_name", "profile_text", "profile_untestable", "profiles_dir", "read_profile"]


WIDTHS = {"d_model": True, "d_ff": False, "d_k": False, "d_v": False}  # what `scale.width` scales; True: kept even


class ProfileFile(NamedTuple):
    """A profile as read: its file (with `extends:` beneath it and a line for every key) and its checked grammar."""
    doc: Doc
    profile: Profile


def profiles_dir() -> Path:
    return specs_dir() / "profiles"


def profile_name(name: str | None) -> str:
    """The name a profile gives runs (a folder-name part): `cpu`, or a profile file's stem."""
    if name in ("paper", "", None):
        return "paper"
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def find_profile(name: str, spec_path: Path | None = None) -> Path | None:
    if name in ("paper", "", None):
        return None
    problem = name_problem(profile_name(name))
    if problem:
        what = "the profile file's name (without .yaml)" if name.endswith((".yaml", ".yml")) else "the profile name"
        raise SpecError("--profile", "", f"{what} {problem}")
    if name.endswith((".yaml", ".yml")):
        return Path(name)
    dirs = []
    if spec_path is not None:
        dirs += [p / "profiles" for p in Path(spec_path).resolve().parents][:3]
    dirs.append(profiles_dir())
    for d in dirs:
        if (d / f"{name}.yaml").exists():
            return d / f"{name}.yaml"
    known = sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")} | {"paper"})
    raise SpecError("--profile", "", f"unknown profile '{name}'{did_you_mean(name, known)}")


def read_profile(path: Path, _seen: tuple = ()) -> Doc:
    """A profile file, with what it `extends:` beneath it (mappings merge key by key, the file wins)."""
    prof = read_yaml(path)
    parent = prof.data.get("extends")
    if parent is None:
        return prof
    if not isinstance(parent, str):
        raise SpecError(prof.where(("extends",)), "extends", "must name one profile (a name or a .yaml file)")
    if len(_seen) >= MAX_EXTENDS or Path(path).resolve() in _seen:
        raise SpecError(prof.where(("extends",)), "extends", "profiles extend each other in a cycle (or a chain "
                        f"longer than {MAX_EXTENDS})")
    problem = name_problem(profile_name(parent))
    if problem:
        raise SpecError(prof.where(("extends",)), "extends", f"the profile name {problem}")
    beside = Path(path).parent / (parent if parent.endswith((".yaml", ".yml")) else f"{parent}.yaml")
    try:
        found = beside if beside.is_file() or parent in ("paper", "") else find_profile(parent)
    except SpecError:
        found = None
    if found is None or parent in ("paper", "") or not found.is_file():
        raise SpecError(prof.where(("extends",)), "extends", f"profile '{shorten(parent)}' not found (only a profile "
                        "file can be extended, not `paper`)")
    base = read_profile(found, _seen + (Path(path).resolve(),))
    own = {k: v for k, v in prof.data.items() if k != "extends"}
    return deep_merge(base, own, {p: loc for p, loc in prof.locs.items() if p[:1] != ("extends",)})


def auto_profile(profile: str, gpus: float | None = None) -> str:
    """`auto`: the gpu profile where there are GPUs, else cpu. `gpus`: what a cluster offers; None =
    this machine's own (torch is imported only then). Any other name is returned as it is."""
    if profile != "auto":
        return profile
    if gpus is None:
        import torch
        gpus = torch.cuda.device_count()
    return "gpu" if gpus else "cpu"


def load_profile(path: Path | None) -> ProfileFile | None:
    """The profile file with what it `extends:` beneath it, checked against its grammar (`Profile`): every
    mistake at its line, said together. None: `paper`, the spec exactly as written."""
    from zoo.spec.profile_grammar import Profile
    from zoo.spec.validation import spec_error
    if path is None:
        return None
    doc = read_profile(path)
    try:
        return ProfileFile(doc, Profile.model_validate(doc.data))
    except ValidationError as e:
        raise spec_error(doc, e, Profile) from None


# ----------------------------------------------------------------------------------------------
# A profile laid over a spec: the corpus's `datasets:` entry, then `scale:`, `set:`, the entry's settings


class Entry(NamedTuple):
    """The `datasets:` entry for the spec's corpus, after `prefer:`: its data settings and their lines, its
    `set:` and where that is written, its `scale:` (None: the profile's applies)."""
    data: dict
    locs: dict
    set: dict
    set_at: tuple
    scale: Scale | None
    scale_at: tuple


def apply_profile(doc: Doc, prof: ProfileFile | None, data_dir: str | Path | None = None,
                  notes: list[str] | None = None) -> Doc:
    """The profile overlaid on a spec. A `datasets:` entry's `prefer:` settings replace the others when
    their corpus's training split is present in `data_dir` (default $ZOO_DATA_DIR); the choice is
    appended to `notes` (the run's profile description records it)."""
    from zoo.spec.profile_grammar import Scale
    if prof is None:
        return doc
    # The corpus first: its `datasets:` entry may carry a `scale:` of its own (a model the corpus supports),
    # which replaces the profile's for that corpus.
    entry = _entry(doc, prof, data_dir, notes)
    if entry is not None and entry.scale is not None:
        scale, scale_at = entry.scale, entry.scale_at
    else:
        scale, scale_at = prof.profile.scale or Scale(), ("scale",)
    out, scaled_train = _scaled(doc, scale, lambda key: prof.doc.where((*scale_at, key)))
    sets = without_empty(prof.doc.data.get("set") or {}, SECTIONS)  # `model:` with only comments under it sets nothing
    out = deep_merge(out, sets, {p[1:]: loc for p, loc in prof.doc.locs.items() if p[0] == "set" and len(p) > 1})
    # `datasets:` maps the spec's corpus to the one this budget uses, with its data settings
    # (e.g. wmt14_en_de -> multi30k), so a translation profile never rewrites a parsing spec; the entry's
    # optional `set:` overrides other sections for that corpus only (a parsing recipe, a budget in epochs)
    if entry is not None:
        out = deep_merge(out, {"data": entry.data}, entry.locs)
        n = len(entry.set_at)
        out = deep_merge(out, entry.set, {p[n:]: loc for p, loc in prof.doc.locs.items() if p[:n] == entry.set_at and len(p) > n})
    return _keep_checkpoint_share(out, scaled_train, TrainSpec())


def _corpus_of(doc: Doc, prof: Doc) -> str | None:
    """The corpus the spec trains on before the `datasets:` map: the profile's own `set: {data: {dataset:}}`,
    else the spec's (a spec without `data:` trains on the default corpus, which the profile maps like any other)."""
    sets = prof.data.get("set") or {}
    if isinstance(sets.get("data"), dict) and "dataset" in sets["data"]:
        return sets["data"]["dataset"]
    data = doc.data.get("data")
    if data is None:
        return DataSpec().dataset
    return data.get("dataset", DataSpec().dataset) if isinstance(data, dict) else None


def _entry(doc: Doc, prof: ProfileFile, data_dir, notes: list[str] | None) -> Entry | None:
    """The profile's `datasets:` entry for the spec's corpus, with `prefer:` decided (None: no entry)."""
    from zoo.spec.profile_grammar import Scale
    name = _corpus_of(doc, prof.doc)
    maps = prof.doc.data.get("datasets") or {}
    if not isinstance(name, str) or name not in maps:
        return None
    at = ("datasets", name)
    entry = dict(maps[name])
    locs = {("data",) + p[2:]: loc for p, loc in prof.doc.locs.items()
            if p[:2] == at and len(p) > 2 and p[2] not in ("set", "scale")}
    set_at = (*at, "set")
    if "prefer" in entry:
        preferred = entry["prefer"]
        entry = _prefer(prof.doc, name, entry, locs, data_dir, notes)
        if "set" in preferred and entry.get("dataset") == preferred["dataset"]:
            set_at = (*at, "prefer", "set")
        locs = {p: loc for p, loc in locs.items() if p[1:2] != ("set",)}
    sets = without_empty(entry.pop("set", None) or {}, SECTIONS)
    own_scale = "scale" in entry  # even empty: it replaces the profile's
    scale = (prof.profile.datasets[name].scale or Scale()) if own_scale else None
    entry.pop("scale", None)
    return Entry(entry, locs, sets, set_at, scale, (*at, "scale"))


def _scaled(doc: Doc, scale: Scale, where) -> tuple[Doc, dict]:
    """The spec's sizes times the profile's factors, and its `train:` as scaled (before any `set:`). A scaled
    value is the profile's doing: an error in it points at the `scale:` entry that made it (`where(key)`)."""
    data = copy.deepcopy(doc.data)
    m, t = data.setdefault("model", {}), data.setdefault("train", {})
    m, t = (x if isinstance(x, dict) else {} for x in (m, t))  # not a mapping: validation says so
    locs = dict(doc.locs)
    at = lambda key, *field: locs.update({field: where(key)})
    _scale_widths(m, scale, at)
    if scale.depth != 1:
        m["N"] = _times(m.get("N", ModelSpec().N), scale.depth)
        at("depth", "model", "N")
    if scale.steps != 1:  # the checkpoint cadence keeps its share of the run, so averaging the last k spans the
        # same late part of training as in the paper (10-minute checkpoints of a 12-hour or 3.5-day run);
        # outside that window a save comes once per train.checkpoint_minutes, so a short cadence is cheap
        t["steps"] = _times(t.get("steps", TrainSpec().steps), scale.steps)
        t["checkpoint_every"] = _times(t.get("checkpoint_every", TrainSpec().checkpoint_every), scale.steps)
        at("steps", "train", "steps")
        at("steps", "train", "checkpoint_every")
    return Doc(data, locs, doc.origin), t


def _scale_widths(m: dict, scale: Scale, at) -> None:
    """Widths scale together so h*d_k = d_model keeps holding where the paper kept it (rows A, C4, C5).
    Without `heads`, h stays (each row's head count is the paper's, each head w times narrower); with
    `heads: r`, h scales by r (at least 1 head) and d_k, d_v by w / r instead, so every row's head size
    is the paper's divided by one factor and a comparison of rows A compares head counts, not head sizes."""
    w, per_head = scale.width, 1.0
    if scale.heads != 1:
        h = m.get("h", ModelSpec().h)
        if isinstance(h, int) and not isinstance(h, bool) and h >= 1:
            m["h"] = max(1, round(h * scale.heads))
            per_head = h / m["h"]
            at("heads", "model", "h")
    for k, even in WIDTHS.items():
        f = w * per_head if k in ("d_k", "d_v") else w
        if f != 1:
            m[k] = _times(m.get(k, getattr(ModelSpec(), k)), f, even)
            at("width" if w != 1 else "heads", "model", k)


def _times(value, f: float, even: bool = False):
    """A size times a factor, at least 1 (`even`: rounded up to even); a value that is no valid size is left
    for validation to report where it was set."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_STEPS:
        return value
    x = max(1, round(value * f))
    return x + (x % 2) if even else x


def check_heads(prof: ProfileFile | None, row: str, doc: Doc, seen: dict) -> None:
    """`scale.heads: r` gives every row a whole number of heads: h x r, or 1 where h x r < 1. A product
    that is not whole is refused (it would be rounded), and so are two rows with different head counts
    that end with the same one: with d_k scaled by h / h', they would be one model run twice. `seen`
    maps a scaled head count to the first (row, heads) that had it."""
    r = prof.profile.scale.heads if prof is not None and prof.profile.scale is not None else 1
    m = doc.data.get("model")
    h = m.get("h", ModelSpec().h) if isinstance(m, dict) else ModelSpec().h
    if r == 1 or not isinstance(h, int) or isinstance(h, bool) or h < 1:
        return  # nothing scaled, or a value validation reports
    raw = h * r
    scaled = max(1, round(raw))
    first = seen.setdefault(scaled, (row, h))
    merged = first[1] != h
    whole = raw < 1 or abs(raw - scaled) < 1e-9 * raw
    if whole and not merged:
        return
    msg = f"{r:g} x {row}'s {h} heads = {raw:g}" + ("" if whole else ", not a whole number")
    if merged:
        msg += (f"; {row} would get {scaled} head{'s' * (scaled > 1)} as {first[0]} ({first[1]} x {r:g}) does, "
                "so the two rows would be one model")
    raise SpecError(prof.doc.where(("scale", "heads")), "scale.heads", f"{msg}; use a factor that gives every row its "
                    "own whole number of heads (at least 1), e.g. 0.5 for rows A's 1, 4, 16 and 32")


def _keep_checkpoint_share(doc: Doc, before: dict, base_t: "TrainSpec") -> Doc:
    """A profile that sets `train.steps` outright (one budget for every row) and not the checkpoint
    cadence: the cadence keeps its share of the run, as `scale.steps` does, so the averaged window
    stays the paper's late part of training (base: last 5 of 10-minute checkpoints in 12 hours). The
    window is saved every checkpoint_every steps; elsewhere once per train.checkpoint_minutes (on that grid)."""
    t = doc.data.get("train")
    if not isinstance(t, dict):
        return doc
    old_steps, old_every = before.get("steps", base_t.steps), before.get("checkpoint_every", base_t.checkpoint_every)
    new_steps, new_every = t.get("steps", base_t.steps), t.get("checkpoint_every", base_t.checkpoint_every)
    ints = all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
               for x in (old_steps, old_every, new_steps, new_every))
    if ints and new_steps != old_steps and new_every == old_every:  # cadence untouched by the profile
        t["checkpoint_every"] = max(1, round(old_every * new_steps / old_steps))
    return doc


def _prefer(prof: Doc, name: str, entry: dict, m_locs: dict, data_dir, notes: list[str] | None) -> dict:
    """`datasets: {X: {prefer: {dataset: P, ...}, dataset: F, ...}}`: P's settings when P's training
    split is in the data directory (`zoo data fetch P` put it there), else F's. Never downloads."""
    from zoo.data import data_dir as resolve_dir, split_present  # no torch there
    pref = entry.pop("prefer")
    root = resolve_dir(data_dir)
    if split_present(pref["dataset"], "train", root):
        pref = dict(pref)
        own_set = pref.pop("set", None)  # the preferred corpus's own recipe replaces the fallback's `set:`
        # the fallback's own recipe (`set:`, `scale:`) is the fallback's only
        chosen = {**{k: v for k, v in entry.items() if k not in ("set", "scale")}, **pref}
        why = f"its training data is present in {root}"
        if own_set is not None:
            chosen["set"] = own_set
        m_locs.update({("data",) + p[3:]: loc for p, loc in prof.locs.items()
                       if p[:3] == ("datasets", name, "prefer") and len(p) > 3})
    else:
        chosen = entry
        why = (f"{pref['dataset']}'s training data is not in {root}; `zoo data fetch {pref['dataset']}` "
               f"builds it there")
        if isinstance(entry.get("scale"), dict):  # a model the fallback supports: say so before anything trains
            why += ("; on it the model is the profile's proxy, scaled by "
                    + ", ".join(f"{k} x {v:g}" for k, v in entry["scale"].items() if isinstance(v, (int, float))))
    if notes is not None:
        notes.append(f"Training data: {chosen.get('dataset', name)} ({why}).")
    return chosen


def profile_description(name: str, spec_path: Path | None = None) -> str:
    return f"{profile_name(name)}: {profile_text(load_profile(find_profile(name, spec_path)))}"


def profile_untestable(profile_path: Path | None) -> str:
    """Why no claim can be tested on a run at this profile (its `untestable:`, through `extends:`), or ""."""
    prof = load_profile(profile_path)
    return "" if prof is None else (prof.profile.untestable or "").strip()


def profile_text(prof: ProfileFile | None) -> str:
    if prof is None:
        return "the spec exactly as written"
    return (prof.profile.description or "").strip()[:10_000]
