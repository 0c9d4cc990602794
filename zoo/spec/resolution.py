"""The spec language: YAML files -> validated, fully resolved configs, one per variant (`resolve`).

A spec file holds the sections `model`, `data`, `train`, `eval`, `resources` (field names follow the
paper), may `extends:` another file (relative to it, or absolute; chains allowed) and may list `variants:`
(name -> overrides). Resolution order, later wins:

    extends chain (root first) -> this file -> variant overrides -> profile -> --set overrides

Every user mistake raises SpecError carrying `path:line: field.path: message`. This module imports
neither torch nor ray: `zoo validate` must start fast. It puts together the parts beside it in zoo.spec
(specfile: files, `extends:`, variants; profiles: the budget overlays; sweep_axes: grid, random, ASHA) and
the ground floor's typed config (zoo.config); outsiders reach all of them through the door, zoo.spec.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
from collections.abc import Collection
from pathlib import Path
from typing import get_args, get_origin

from pydantic import BaseModel, ValidationError

from zoo.config import Config, CrossFieldError, dotted
from zoo.paths import name_problem
from zoo.spec.checks import PAPER_ROWS, check_compare_to, check_components, check_corpus, check_spec_claims
from zoo.spec.profiles import profile_text, profile_untestable, apply_profile, check_heads, find_profile, profile_name, read_profile
from zoo.text import did_you_mean, shorten
from zoo.spec.specfile import (SECTIONS, Doc, SpecError, unknown_key, read_variants, deep_merge, load_file,
                          load_yaml, spec_path, specs_dir)
from zoo.spec.sweep_axes import count, read_asha, read_grid, split_scaled, sweep_size

__all__ = ["MAX_SEEDS", "MAX_TRIALS", "parse_set", "resolve", "spec_error", "spec_files", "trial_name"]


MAX_SEEDS = 100
# Trials one spec may make (variants x sweep points x seeds), checked by arithmetic before any is built.
# Every trial is resolved and validated before anything runs (about 1 ms each) and becomes a row in
# Ray Tune's driver and in the store; the paper's Tables 2-4 hold 41 rows, so 2000 is every row x 10
# seeds x a few sweep points. A larger study is several specs (each its own Tune experiment).
MAX_TRIALS = 2000


# ----------------------------------------------------------------------------------------------
# --set a.b=v overrides


def parse_set(items: list[str] | None) -> tuple[dict, dict]:
    data: dict = {}
    locs: dict = {}
    for item in items or []:
        if "=" not in item:
            raise SpecError(f"--set {item}", "", "expected field.path=value, e.g. --set model.dropout=0.2")
        key, val = item.split("=", 1)
        parts = tuple(p for p in key.strip().split("."))
        if not all(parts) or parts[0] not in SECTIONS:
            raise SpecError(f"--set {item}", key, f"must start with a section{did_you_mean(parts[0], SECTIONS)}")
        if any(p.isdigit() for p in parts):
            head = ".".join(parts[: next(i for i, p in enumerate(parts) if p.isdigit())])
            raise SpecError(f"--set {item}", key, f"a list is set whole, not by index: --set '{head}=[...]' "
                            "(e.g. --set 'train.optimizer.betas=[0.9, 0.98]')")
        try:  # the spec rules hold here too: no aliases, tags or deep nesting
            value = load_yaml(val, f"--set {shorten(item)}")[0] if val.strip() else ""
        except SpecError as e:
            if "YAML syntax error" not in e.message:
                raise
            value = val  # not YAML: the plain string
        d = data
        for p in parts[:-1]:
            d = d.setdefault(p, {})
            if not isinstance(d, dict):
                raise SpecError(f"--set {item}", key, f"another --set gave '{p}' a value, so it has no fields")
        if isinstance(d.get(parts[-1]), dict):  # replacing it would silently drop the other --set's fields
            inner = next(loc for p, loc in locs.items() if p[:len(parts)] == parts)
            raise SpecError(f"--set {item}", key, f"replaces what `{inner}` set inside it; set one or the other")
        d[parts[-1]] = value
        locs[parts] = f"--set {item}"
    return data, locs


# ----------------------------------------------------------------------------------------------
# Resolution and validation


def _blame(doc: Doc, fields: tuple[str, ...], late: frozenset = frozenset()) -> str:
    """Of the fields a cross-field rule involves, the one the user set last: a `--set`, then the
    trial's variant or sweep point (`late`: their locations), then the spec file itself, then a profile
    or an extended file; the rule's first field when none was set."""
    origin = doc.origin.rsplit(":", 1)[0]

    def rank(f: str) -> int:
        loc = doc.locs.get(_dotted_loc(f))
        if loc is None:
            return 0
        return 4 if loc.startswith("--set") else 3 if loc in late else 2 if loc.rsplit(":", 1)[0] == origin else 1
    return max(fields, key=rank)  # max keeps the first of equals


def _drop_nulls(body: dict, model=None) -> dict:
    """A section (or sub-section) whose lines are all commented out is YAML null: read it as empty."""
    model = model or Config
    out = {}
    for k, v in body.items():
        sub = model.model_fields[k].annotation if k in model.model_fields else None
        nested = isinstance(sub, type) and issubclass(sub, BaseModel)
        if v is None and nested:
            continue
        out[k] = _drop_nulls(v, sub) if nested and isinstance(v, dict) else v
    return out


def _validate(doc: Doc, header: dict, late: frozenset = frozenset()) -> Config:
    body = {**header, **{k: doc.data[k] for k in (*SECTIONS, "paper", "claims", "description") if k in doc.data}}
    try:
        return Config.model_validate(_drop_nulls(body))
    except ValidationError as e:
        err = spec_error(doc, e, Config, late)
        if header.get("trial") and header["trial"] != header.get("variant"):  # one combination of a grid
            err = SpecError.of([SpecError(x.where, x.field, f"{x.message} (in the trial {header['trial']})")
                                for x in [err, *err.more]])
        raise err from None


def _dotted_loc(field: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in field.split("."))  # list items' lines are keyed by index


def _fields_at(model, loc: tuple) -> Collection[str]:
    """The fields a model allows at `loc` (inside a list: its items' model's)."""
    for part in loc:
        f = getattr(model, "model_fields", {}).get(part)
        if f is not None:
            model = get_args(f.annotation)[0] if get_origin(f.annotation) is list else f.annotation
    return getattr(model, "model_fields", {}).keys()


def spec_error(doc: Doc, e: ValidationError, model: type[BaseModel] = Config, late: frozenset = frozenset()) -> SpecError:
    """A validation error of `doc` read as `model`: a SpecError at the file:line that set the field (for
    a rule between fields, the one set last), naming the field and what it allows; every error of `e`, each
    its own paragraph."""
    return SpecError.of([_one_error(doc, err, model, late) for err in e.errors()])


def _one_error(doc: Doc, err: dict, model: type[BaseModel], late: frozenset) -> SpecError:
    loc = tuple(err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, CrossFieldError):
        # its fields are dotted from the root, except a list item's (a claim's): from the item
        item = ".".join(map(str, loc))
        fields = tuple(f if not loc or f.split(".")[0] == loc[0] else f"{item}.{f}" for f in cause.fields)
        loc = _dotted_loc(_blame(doc, fields, late))
    field = ".".join(map(str, loc))
    if err["type"] == "extra_forbidden":
        msg = unknown_key("field", loc[-1], _fields_at(model, loc[:-1]))
    elif loc[:1] == ("claims",) and loc[-1] == "margin" and err["type"] in ("greater_than", "less_than"):
        written = functools.reduce(lambda d, k: d[k], loc, doc.data)  # "-1%", not the -0.01 it read as
        msg = f"must be above 0 and below 1 (0.015), or a percentage above 0% and below 100% ('1.5%') (got {shorten(repr(written))})"
    else:
        msg = err["msg"].removeprefix("Value error, ")
        if "input" in err and not isinstance(err["input"], dict) and "is not a safe name" not in msg \
                and not isinstance(cause, CrossFieldError):
            msg += f" (got {shorten(repr(err['input']), 80)})"
            if isinstance(err["input"], str) and not err["input"].isascii():
                msg += " (it holds non-ASCII characters: a look-alike letter?)"
            elif isinstance(err["input"], str) and err["type"] in ("bool_type", "bool_parsing") \
                    and err["input"].lower() in ("yes", "no", "on", "off", "y", "n"):
                msg += "; specs read YAML 1.2, where only true and false are booleans"
    return SpecError(_where(doc, loc), field, msg)


def _where(doc: Doc, loc: tuple) -> str:
    """Where the data set the field, or its nearest parent; a list item's field left out: the item's first line."""
    for i in range(len(loc), 0, -1):
        if loc[:i] in doc.locs:
            return doc.locs[loc[:i]]
        lines = [at for p, at in doc.locs.items() if p[:i] == loc[:i]] if isinstance(loc[i - 1], int) else []
        if lines:
            return min(lines, key=lambda at: int(at.rsplit(":", 1)[1]))
    return doc.origin


# The rows a claim may name besides the spec's own variants: its paper table's (zoo.paper)
def _check_claims_apart(doc: Doc, cfgs: list[Config], profile: str) -> None:
    """A claim between two variants the profile makes one model (model.N 2 and 4 both 1 layer at depth 0.1):
    a warning at the claim's line (smoke checks the path; the built-in specs' depth pairs merge there)."""
    first = {c.variant: c for c in reversed(cfgs)}  # each variant's first trial
    body = lambda c: json.dumps(c.model_dump(mode="json", include={"model", "data", "train", "eval"}), sort_keys=True)
    for i, claim in enumerate(cfgs[0].claims):
        a, b = (first.get(r) for r in claim.rows)
        if a is None or b is None or a is b or body(a) != body(b):
            continue
        written = sorted(k for k in {*a.overrides, *b.overrides} if a.overrides.get(k) != b.overrides.get(k))
        differ = "; ".join(f"{k} {shorten(repr(a.overrides.get(k)))} and {shorten(repr(b.overrides.get(k)))}" for k in written)
        _say(f"{doc.where(('claims', i))}: claims.{i}: under profile {profile}, {a.variant} and {b.variant} train "
              f"the same model ({differ or 'nothing differs'} as written, equal once the profile has scaled them), so "
              f"the claim {claim.id} compares a model with itself here and its verdict means nothing; judge it under a "
              "profile that keeps the rows apart (e.g. ablation)")


def _seeds(doc: Doc, prof_path: Path | None, cli: list[int] | None) -> tuple[list[int] | None, str]:
    """The seeds axis, and where it was set: `--seeds` > the profile's `seeds:` > the spec's (inherited
    through extends)."""
    if cli is not None:
        where, value = "--seeds", cli
    else:
        prof = read_profile(prof_path) if prof_path else None
        src = prof if prof is not None and "seeds" in prof.data else doc if "seeds" in doc.data else None
        if src is None:
            return None, ""
        where, value = src.where(("seeds",)), src.data["seeds"]
    ok = (isinstance(value, list) and 1 <= len(value) <= MAX_SEEDS and len(set(map(str, value))) == len(value)
          and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**32 for x in value))
    if not ok:
        raise SpecError(where, "seeds", f"must be a list of 1 to {MAX_SEEDS} different integers in [0, 2^32), "
                        f"e.g. [1, 2, 3] (got {shorten(repr(value))})")
    return value, where


def resolve(path: str | Path, variant: str | Collection[str] | None = None, profile: str = "paper",
            sets: list[str] | None = None, seeds: list[int] | None = None,
            data_dir: str | Path | None = None) -> list[Config]:
    """All trials of a spec file or built-in spec name (or of one `variant`), resolved and validated:
    one per variant, or, with a seeds axis (`seeds:` in the spec or profile, or `seeds`), one per
    variant and seed, named VARIANT-seedN. Several variants (a collection of names) resolve together: checks
    across rows (two rows that a profile would make one model) compare only the rows that run."""
    path = spec_path(path)
    doc = load_file(path)
    problem = name_problem(path.stem)
    if problem:  # STORAGE/<spec stem>/... is a folder
        raise SpecError(f"{path}:1", "spec", f"the file name {problem}; rename the file")
    errors: list[SpecError] = []  # every mistake of the file, whichever layer finds it, said together
    variants = read_variants(doc, path, errors)  # a variant of the wrong shape is left out, its mistake kept
    only = None if variant is None else {variant} if isinstance(variant, str) else set(variant)
    for v in sorted(only or ()):
        if v not in variants:
            if errors:
                raise SpecError.of(errors)
            raise SpecError(f"{path}", "--variant", f"no variant '{shorten(v)}'{did_you_mean(v, variants)}")
    prof_path = find_profile(profile, path)
    set_data, set_locs = parse_set(sets)
    axis, axis_at = _seeds(doc, prof_path, seeds)
    _check_size(doc, len(only) if only is not None else len(variants), sweep_size(doc), len(axis or [None]))
    _check_seed_axes(doc, axis, seeds)
    if axis is not None:  # the axis would overwrite any other seed of a trial: refuse one set elsewhere too
        _check_one_seed(doc, variants, set_locs, axis_at)
    grid = read_grid(doc)
    asha = read_asha(doc)  # validated with the rest (the runner reads it with `scheduler`)
    prof_text, untestable = profile_text(prof_path), profile_untestable(prof_path)
    out, heads, same = [], {}, {}
    builtin = path.resolve().parent == specs_dir().resolve()
    for (name, over), (suffix, point, plocs) in itertools.product(variants.items(), grid):
        if only is not None and name not in only:
            continue
        try:  # every variant's mistakes, not only the first one's (each said once)
            vlocs = {p[2:]: l for p, l in doc.variants_from.locs.items() if p[:2] == ("variants", name) and len(p) > 2}
            late = frozenset(vlocs.values()) | frozenset(plocs.values())  # what this trial sets over the spec's own
            # variant x sweep point: the sizes a profile scales (widths, layers, steps) go in before it, so it
            # scales them as it scales the spec's own; every other swept value is what the trial runs with
            sized, exact = split_scaled(point)
            d = deep_merge(deep_merge(doc, over, vlocs), sized, plocs)
            stem = trial_name(name, suffix)
            over = {**dotted(over), **dotted(point)}
            if prof_path is not None:  # the spec as written must be valid too, not only what a profile leaves of it
                _validate(d, {"variant": name, "trial": stem, "spec": str(path)}, late)
            notes: list[str] = []
            check_heads(prof_path, stem, d, heads)
            d = apply_profile(d, prof_path, data_dir, notes)
            d = deep_merge(d, exact, plocs)
            d = deep_merge(d, set_data, set_locs)
            if notes:  # which corpus a profile's `prefer:` picked: said once, and kept with each run
                _say(" ".join(notes))
            paper = d.data.get("paper")
            if isinstance(paper, dict) and paper.get("table") and "row" not in paper:
                d.data["paper"] = paper = {**paper, "row": name}
            if isinstance(paper, dict) and paper.get("table"):  # whose row it is: the paper's only from its own specs
                # a built-in spec's row is the paper's, except a Table 3 row the paper's table lacks (zoo's own
                # beyond the paper, e.g. specs/modern.yaml's), which stands where a user's row would
                ours = builtin and (paper.get("table") != 3 or paper.get("row") in PAPER_ROWS[3])
                said = paper.get("paper_row")  # as written: "yes" or 1 is refused by the validator, not read as false
                rows = PAPER_ROWS.get(paper["table"], []) if isinstance(paper["table"], int) else []
                if said is True and not ours and rows and paper.get("row") not in rows:  # only a row the table has
                    raise SpecError(d.where(("paper", "paper_row")), "paper.paper_row", f"true stands the row "
                                    f"'{shorten(str(paper.get('row')))}' in for the paper's own, but the paper's Table "
                                    f"{paper['table']} has no such row ({', '.join(rows)}); remove it (your row is then "
                                    "shown as yours, after the paper's rows of its group) or name one of those rows")
                d.data["paper"] = {**paper, "paper_row": True if ours else False if said is None else said}
            for seed in axis or [None]:
                ds = d if seed is None else deep_merge(d, {"train": {"seed": seed}}, {})
                header = {"variant": name, "trial": trial_name(name, suffix, seed),
                          "overrides": over | ({} if seed is None else {"train.seed": seed}),
                          "spec": str(path), "profile": profile_name(profile),
                          "profile_description": " ".join([prof_text, *notes]).strip(), "untestable": untestable}
                cfg = _validate(ds, header, late)
                check_corpus(ds, cfg)
                check_components(ds, cfg)
                check_compare_to(ds, cfg, variants)
                _check_same(doc, cfg, sized, same)
                out.append(cfg)
        except SpecError as e:
            errors.append(e)
    if errors and out and out[0].claims:  # the claims' mistakes too, with the variants' (rows: every name written)
        try:
            check_spec_claims(doc, [*(doc.variants_from.data.get("variants") or variants)], out)
        except SpecError as e:
            errors.append(e)
    if errors:
        raise SpecError.of(errors)
    if out and out[0].claims:
        check_spec_claims(doc, variants, out)
        _check_claims_apart(doc, out, profile_name(profile))
    if asha is not None and out and asha.grace_steps >= max(c.train.steps for c in out):
        steps = max(c.train.steps for c in out)
        raise SpecError(doc.where(("sweep", "scheduler", "asha", "grace_steps")), "sweep.scheduler.asha.grace_steps",
                        f"{asha.grace_steps} is not below the trials' {steps} steps (profile {profile_name(profile)}), "
                        f"so ASHA would never stop a trial; set it below {steps} (e.g. {max(1, steps // 8)}) or "
                        "remove the scheduler")
    return out


def trial_name(variant: str, suffix: str = "", seed: int | None = None) -> str:
    """A trial's name: the variant, its sweep point and seed (`A1-h=4-seed2`). zoo's own business, so a
    name too long for a folder is shortened with a hash of the whole rather than refused: the user's
    valid 64-character variant name stays valid on a seeds axis."""
    tail = "" if seed is None else f"-seed{seed}"
    full = "-".join(x for x in (variant, suffix) if x) + tail
    if name_problem(full) is None:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: 64 - len(tail) - 9].rstrip('-.')}-{digest}{tail}"


def _check_size(doc: Doc, variants: int, points: int, seeds: int) -> None:
    """Refuse a spec that makes more than MAX_TRIALS trials, from the counts alone (nothing built)."""
    n = variants * points * seeds
    if n <= MAX_TRIALS:
        return
    raw = doc.variants_from
    key = next((k for k in ("sweep", "seeds", "variants") if k in doc.data or k in raw.data), "variants")
    where = doc.where((key,)) if key in doc.data else raw.where((key,))
    many = lambda k, what: f"{count(k)} {what}" + ("" if k == 1 else "s")
    raise SpecError(where, key, f"makes {count(n)} trials ({many(variants, 'variant')} x {many(points, 'sweep point')} "
                    f"x {many(seeds, 'seed')}); at most {MAX_TRIALS:,} per spec: split the study into several specs, or sweep "
                    "fewer values")


def _check_seed_axes(doc: Doc, axis: list[int] | None, cli: list[int] | None) -> None:
    """`train.seed` swept in `sweep:` and a seeds axis as well: the axis would overwrite every swept seed."""
    sw = doc.data.get("sweep")
    if axis is None or not isinstance(sw, dict):
        return
    for sec in ("grid", "random"):
        if isinstance(sw.get(sec), dict) and "train.seed" in sw[sec]:
            other = "--seeds" if cli is not None else "`seeds:`"
            raise SpecError(doc.where(("sweep", sec, "train.seed")), f"sweep.{sec}.train.seed",
                            f"the seed is swept here and also by {other}, which would overwrite every "
                            "swept value; keep one of the two")


def _check_one_seed(doc: Doc, variants: dict, set_locs: dict, axis_at: str) -> None:
    """A variant's own `train.seed`, or `--set train.seed`, beside a seeds axis: the axis would overwrite it."""
    axis = "--seeds" if axis_at == "--seeds" else f"`seeds:` ({axis_at})"
    if ("train", "seed") in set_locs:
        raise SpecError(set_locs[("train", "seed")], "train.seed", f"the seed is set here and also by {axis}, "
                        "which would overwrite it; keep one of the two")
    for name, over in variants.items():
        if isinstance(over.get("train"), dict) and "seed" in over["train"]:
            raise SpecError(doc.variants_from.where(("variants", name, "train", "seed")), f"variants.{name}.train.seed",
                            f"the seed is set here and also by {axis}, which would overwrite it; keep one of the two")


def _check_same(doc: Doc, cfg: Config, sized: dict, seen: dict) -> None:
    """Two trials of one variant and seed that train the same model: sweep values that differ as written
    but read the same (0, 0.0 and -0.0, or 1 and 1.0, in a float field). Compared as the fields read
    them, with -0.0 as 0.0 (equal, though it prints and hashes apart). Sizes a profile scales to one
    value (model.N 2 and 4 at depth 0.1) stay apart: the spec's own sweep, shrunk to a budget."""
    def plain(x):
        return {k: plain(v) for k, v in x.items()} if isinstance(x, dict) else [plain(v) for v in x] \
            if isinstance(x, list) else x + 0.0 if isinstance(x, float) else x  # -0.0 + 0.0 is 0.0
    body = cfg.model_dump(mode="json", include={"model", "data", "train", "eval", "resources"})
    first = seen.setdefault((cfg.variant, json.dumps([plain(body), plain(sized)], sort_keys=True)), cfg)
    if first is cfg:
        return
    field = next((k for k in cfg.overrides if repr(cfg.overrides[k]) != repr(first.overrides.get(k))), "sweep")
    value = functools.reduce(lambda o, p: getattr(o, p, None), field.split("."), cfg)
    at = next((("sweep", sec, field) for sec in ("grid", "random") if ("sweep", sec, field) in doc.locs), ("sweep",))
    raise SpecError(doc.where(at), ".".join(at), f"the trials {first.trial} and {cfg.trial} would train the same model: "
                    f"{shorten(repr(first.overrides.get(field)))} and {shorten(repr(cfg.overrides.get(field)))} "
                    f"both read as {shorten(repr(value))} in {field}; list each value once")


@functools.lru_cache(maxsize=None)
def _say(note: str) -> None:
    logging.getLogger(__name__).warning("profile: %s", note)


def spec_files(paths: list[str | Path]) -> list[Path]:
    """Expand folders into their spec files (profiles and claims folders excluded: they are not specs)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*.y*ml") if not {"profiles", "claims"} & set(f.relative_to(p).parts))
        else:
            try:
                files.append(spec_path(p))
            except SpecError:
                files.append(p)  # validate reports it as a missing file
    return files
