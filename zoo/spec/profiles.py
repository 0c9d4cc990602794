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

from zoo.paths import name_problem
from zoo.config import DataSpec, MAX_STEPS, ModelSpec, TrainSpec
from zoo.text import did_you_mean, shorten
from zoo.spec.specfile import (MAX_EXTENDS, Doc, SECTIONS, SpecError, kind_of, unknown_key, deep_merge, read_yaml,
                          specs_dir, without_empty)

__all__ = ["PROFILE_KEYS", "SCALE_KEYS", "WIDTHS", "apply_profile", "auto_profile", "find_profile",
           "profile_description", "profile_name", "profile_untestable", "profiles_dir", "read_profile"]


PROFILE_KEYS = {"description", "extends", "scale", "set", "datasets", "seeds", "untestable"}
SCALE_KEYS = {"width", "depth", "steps", "heads"}
WIDTHS = {"d_model": True, "d_ff": False, "d_k": False, "d_v": False}  # what `scale.width` scales; True: kept even


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


def apply_profile(doc: Doc, profile_path: Path | None, data_dir: str | Path | None = None,
                  notes: list[str] | None = None) -> Doc:
    """The profile overlaid on a spec. A `datasets:` entry's `prefer:` settings replace the others when
    their corpus's training split is present in `data_dir` (default $ZOO_DATA_DIR); the choice is
    appended to `notes` (the run's profile description records it)."""
    if profile_path is None:
        return doc
    prof = read_profile(profile_path)
    for k in prof.data:
        if k not in PROFILE_KEYS:
            raise SpecError(prof.where((str(k),)), shorten(k), unknown_key("profile key", k, PROFILE_KEYS))
    sets = prof.data.get("set") or {}
    if not isinstance(sets, dict):
        raise SpecError(prof.where(("set",)), "set", "must be a mapping of sections")
    sets = without_empty(sets, SECTIONS)  # `model:` with only comments under it sets nothing
    # The corpus first: its `datasets:` entry may carry a `scale:` of its own (a model the corpus supports),
    # which replaces the profile's for that corpus.
    maps = prof.data.get("datasets") or {}
    if not isinstance(maps, dict) or not all(isinstance(v, dict) for v in maps.values()):
        raise SpecError(prof.where(("datasets",)), "datasets",
                        "must map a corpus name to data settings, e.g. {wmt14_en_de: {dataset: multi30k}}")
    _check_corpora(prof, maps)
    data_sec = doc.data.get("data")
    # a spec without `data:` trains on the default corpus, which the profile maps like any other
    name = data_sec.get("dataset", DataSpec().dataset) if isinstance(data_sec, dict) else \
        DataSpec().dataset if data_sec is None else None
    if isinstance(sets.get("data"), dict) and "dataset" in sets["data"]:
        name = sets["data"]["dataset"]  # the profile's own corpus
    entry = dict(maps[name]) if isinstance(name, str) and name in maps else None
    scale_at = ("scale",)
    if entry is not None:
        m_locs = {("data",) + p[2:]: loc for p, loc in prof.locs.items()
                  if p[:2] == ("datasets", name) and len(p) > 2 and p[2] not in ("set", "scale")}
        set_at = ("datasets", name, "set")
        if "prefer" in entry:
            preferred = isinstance(entry["prefer"], dict) and "set" in entry["prefer"]
            entry = _prefer(prof, name, entry, m_locs, data_dir, notes)
            if preferred and entry.get("dataset") == maps[name]["prefer"].get("dataset"):
                set_at = ("datasets", name, "prefer", "set")
            for p in [p for p in m_locs if len(p) > 1 and p[1] == "set"]:
                del m_locs[p]
        if "scale" in entry:
            scale_at = ("datasets", name, "scale")
    scale = (entry or {}).pop("scale", None) if scale_at != ("scale",) else prof.data.get("scale")
    scale = scale or {}
    where_scale = ".".join(scale_at)
    if not isinstance(scale, dict):
        raise SpecError(prof.where(scale_at), where_scale, "must be a mapping like {width: 0.5, depth: 0.5, steps: 0.01}")
    for k, v in scale.items():
        if k not in SCALE_KEYS:
            raise SpecError(prof.where((*scale_at, str(k))), f"{where_scale}.{shorten(k)}",
                            unknown_key("scale", k, SCALE_KEYS))
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v <= 1000:  # NaN fails too
            raise SpecError(prof.where((*scale_at, k)), f"{where_scale}.{k}",
                            f"must be a number in (0, 1000] (got {shorten(repr(v))})")
    data = copy.deepcopy(doc.data)
    m, t = data.setdefault("model", {}), data.setdefault("train", {})
    m, t = (x if isinstance(x, dict) else {} for x in (m, t))  # not a mapping: validation says so
    base_m, base_t = ModelSpec(), TrainSpec()
    w, d, s = scale.get("width", 1), scale.get("depth", 1), scale.get("steps", 1)

    def sc(value, f, even=False):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_STEPS:
            return value  # not a valid size: left for validation to report where it was set
        x = max(1, round(value * f))
        return x + (x % 2) if even else x

    # Widths scale together so h*d_k = d_model keeps holding where the paper kept it (rows A, C4, C5).
    # Without `heads`, h stays (each row's head count is the paper's, each head w times narrower); with
    # `heads: r`, h scales by r (at least 1 head) and d_k, d_v by w / r instead, so every row's head size
    # is the paper's divided by one factor and a comparison of rows A compares head counts, not head sizes.
    # A scaled value is the profile's doing: an error in it points at the `scale:` entry that made it.
    locs = dict(doc.locs)
    at = lambda key, *field: locs.update({field: prof.where((*scale_at, key))})
    hr, per_head = scale.get("heads", 1), 1.0
    if hr != 1:
        h = m.get("h", base_m.h)
        if isinstance(h, int) and not isinstance(h, bool) and h >= 1:
            m["h"] = max(1, round(h * hr))
            per_head = h / m["h"]
            at("heads", "model", "h")
    for k, even in WIDTHS.items():
        f = w * per_head if k in ("d_k", "d_v") else w
        if f != 1:
            m[k] = sc(m.get(k, getattr(base_m, k)), f, even)
            at("width" if w != 1 else "heads", "model", k)
    if d != 1:
        m["N"] = sc(m.get("N", base_m.N), d)
        at("depth", "model", "N")
    if s != 1:  # the checkpoint cadence keeps its share of the run, so averaging the last k spans the
        # same late part of training as in the paper (10-minute checkpoints of a 12-hour or 3.5-day run);
        # outside that window a save comes once per train.checkpoint_minutes, so a short cadence is cheap
        t["steps"] = sc(t.get("steps", base_t.steps), s)
        t["checkpoint_every"] = sc(t.get("checkpoint_every", base_t.checkpoint_every), s)
        at("steps", "train", "steps")
        at("steps", "train", "checkpoint_every")
    out = Doc(data, locs, doc.origin)
    set_locs = {p[1:]: loc for p, loc in prof.locs.items() if p[0] == "set" and len(p) > 1}
    for k in sets:
        if k not in SECTIONS:
            raise SpecError(prof.where(("set", str(k))), f"set.{shorten(k)}", unknown_key("section", k, SECTIONS))
        if not isinstance(sets[k], dict):
            raise SpecError(prof.where(("set", k)), f"set.{k}", f"must be a mapping of fields, not {kind_of(sets[k])}")
    out = deep_merge(out, sets, set_locs)
    # `datasets:` maps the spec's corpus to the one this budget uses, with its data settings
    # (e.g. wmt14_en_de -> multi30k), so a translation profile never rewrites a parsing spec.
    if entry is not None:
        # an entry's optional `set:` overrides other sections for that corpus only (a parsing recipe, a
        # budget in epochs); with `prefer:`, the preferred corpus may carry its own `set:` instead
        extra = entry.pop("set", None) or {}
        extra = without_empty(extra, SECTIONS) if isinstance(extra, dict) else extra
        if not isinstance(extra, dict) or not set(extra) <= set(SECTIONS):
            raise SpecError(prof.where(set_at), ".".join(set_at),
                            f"must be a mapping of sections ({', '.join(SECTIONS)})")
        out = deep_merge(out, {"data": entry}, m_locs)
        s_locs = {p[len(set_at):]: loc for p, loc in prof.locs.items() if p[:len(set_at)] == set_at and len(p) > len(set_at)}
        out = deep_merge(out, extra, s_locs)
    return _keep_checkpoint_share(out, t, base_t)


def check_heads(profile_path: Path | None, row: str, doc: Doc, seen: dict) -> None:
    """`scale.heads: r` gives every row a whole number of heads: h x r, or 1 where h x r < 1. A product
    that is not whole is refused (it would be rounded), and so are two rows with different head counts
    that end with the same one: with d_k scaled by h / h', they would be one model run twice. `seen`
    maps a scaled head count to the first (row, heads) that had it."""
    prof = read_profile(profile_path) if profile_path is not None else None
    scale = prof.data.get("scale") if prof is not None else None
    r = scale.get("heads", 1) if isinstance(scale, dict) else 1
    m = doc.data.get("model")
    h = m.get("h", ModelSpec().h) if isinstance(m, dict) else ModelSpec().h
    if r == 1 or not isinstance(r, (int, float)) or not isinstance(h, int) or isinstance(h, bool) or h < 1:
        return  # nothing scaled, or a value apply_profile or validation reports
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
    raise SpecError(prof.where(("scale", "heads")), "scale.heads", f"{msg}; use a factor that gives every row its "
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


def _check_corpora(prof: Doc, maps: dict) -> None:
    """Every corpus a `datasets:` map names (its keys, each entry's `dataset:` and `prefer: {dataset:}`) is
    in the registry: a misspelt key would never match a spec's corpus, so the spec would silently run as
    written, and a misspelt `prefer:` would never be present, so the fallback would always run."""
    from zoo.data import CORPORA  # no torch there
    for name, entry in maps.items():
        pref = entry.get("prefer")
        for at, corpus in ((("datasets", name), name), (("datasets", name, "dataset"), entry.get("dataset")),
                           (("datasets", name, "prefer", "dataset"), pref.get("dataset") if isinstance(pref, dict) else None)):
            if corpus not in CORPORA and (isinstance(corpus, str) or at == ("datasets", name)):  # values: also typed later
                raise SpecError(prof.where(at), ".".join(map(shorten, at)),
                                unknown_key("corpus", corpus, CORPORA) + " (see `zoo data list`)")


def _prefer(prof: Doc, name: str, entry: dict, m_locs: dict, data_dir, notes: list[str] | None) -> dict:
    """`datasets: {X: {prefer: {dataset: P, ...}, dataset: F, ...}}`: P's settings when P's training
    split is in the data directory (`zoo data fetch P` put it there), else F's. Never downloads."""
    from zoo.data import data_dir as resolve_dir, split_present  # no torch there
    pref = entry.pop("prefer")
    if not isinstance(pref, dict) or not isinstance(pref.get("dataset"), str):
        raise SpecError(prof.where(("datasets", name, "prefer")), f"datasets.{shorten(name)}.prefer",
                        "must be data settings naming a corpus, e.g. {dataset: wmt14_en_de, vocab_size: 37000}")
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
    return f"{profile_name(name)}: {profile_text(find_profile(name, spec_path))}"


def profile_untestable(profile_path: Path | None) -> str:
    """Why no claim can be tested on a run at this profile (its `untestable:`, through `extends:`), or ""."""
    if profile_path is None:
        return ""
    prof = read_profile(profile_path)
    why = prof.data.get("untestable")
    if why is not None and not isinstance(why, str) or len(why or "") > 1000:
        raise SpecError(prof.where(("untestable",)), "untestable", "must be a sentence (at most 1,000 characters) "
                        "saying why no claim can be tested at this budget, or empty for a profile that can test them")
    return (why or "").strip()


def profile_text(profile_path: Path | None) -> str:
    if profile_path is None:
        return "the spec exactly as written"
    return str(read_profile(profile_path).data.get("description") or "").strip()[:10_000]


