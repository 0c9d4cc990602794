"""The spec language: YAML files -> validated, fully resolved configs, one per variant (`resolve`).

A spec file holds the sections `model`, `data`, `train`, `eval`, `resources` (field names follow the
paper), may `extends:` another file (relative to it, or absolute; chains allowed) and may list `variants:`
(name -> overrides). Resolution order, later wins:

    extends chain (root first) -> this file -> variant overrides -> profile -> --set overrides

Every user mistake raises SpecError carrying `path:line: field.path: message`. This module imports
neither torch nor ray: `zoo validate` must start fast. It puts together the parts beside it in zoo.spec
(specfile: files, `extends:`, variants; profiles: the budget overlays; sweep_axes: grid, random, ASHA;
seeds: the seeds axis; validation: a Doc read as Config; checks: what a resolved spec must also be) and
the ground floor's typed config (zoo.config); outsiders reach all of them through the door, zoo.spec.
"""
from __future__ import annotations

import hashlib
import itertools
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from zoo.config import Config, dotted
from zoo.paths import name_problem
from zoo.spec.checks import (PAPER_ROWS, check_claims_apart, check_compare_to, check_components, check_corpus,
                             check_grace, check_one_seed, check_packing, check_paper_row, check_same, check_seed_axes,
                             check_size, check_spec_claims, say_once)
from zoo.spec.profiles import (ProfileFile, apply_profile, check_heads, find_profile, load_profile, profile_name,
                               profile_text)
from zoo.spec.seeds import seeds_axis
from zoo.spec.specfile import (SECTIONS, Doc, SpecError, deep_merge, load_file, load_yaml, read_variants, spec_path,
                               specs_dir, variant_names)
from zoo.spec.sweep_axes import read_asha, read_grid, split_scaled, sweep_size
from zoo.spec.validation import validate_config
from zoo.text import did_you_mean, shorten

__all__ = ["parse_set", "resolve", "spec_files", "trial_name", "variants_of"]


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
# Resolution: variants x sweep points x seeds, each laid under its profile and `--set`, validated


@dataclass
class Run:
    """What every trial of one `resolve` shares: the spec, its profile, the `--set` overrides, the seeds
    axis, and what the checks across trials have seen so far (head counts, trial bodies)."""
    path: Path
    doc: Doc
    variants: dict
    profile: str
    prof: ProfileFile | None
    sets: tuple[dict, dict]
    axis: list[int] | None
    data_dir: str | Path | None
    heads: dict = field(default_factory=dict)
    same: dict = field(default_factory=dict)


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
    only = _chosen(variant, variants, path, errors)
    prof = load_profile(find_profile(profile, path))
    set_data, set_locs = parse_set(sets)
    axis, axis_at = seeds_axis(doc, prof.doc if prof is not None else None, seeds)
    check_size(doc, len(only) if only is not None else len(variants), sweep_size(doc), len(axis or [None]))
    check_seed_axes(doc, axis, seeds)
    if axis is not None:  # the axis would overwrite any other seed of a trial: refuse one set elsewhere too
        check_one_seed(doc, variants, set_locs, axis_at)
    grid = read_grid(doc)
    asha = read_asha(doc)  # validated with the rest (the runner reads it with `scheduler`)
    run = Run(path, doc, variants, profile, prof, (set_data, set_locs), axis, data_dir)
    out = []
    for (name, over), (suffix, point, plocs) in itertools.product(variants.items(), grid):
        if only is not None and name not in only:
            continue
        try:  # every variant's mistakes, not only the first one's (each said once)
            out += _trials(run, name, over, suffix, point, plocs)
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
        check_claims_apart(doc, out, profile_name(profile))
    check_grace(doc, asha, out, profile_name(profile))
    return out


def variants_of(specs: list[str], variants: Collection[str] | None) -> dict[str, list[str] | None]:
    """Each spec (a path) with the --variant names it runs (None: all its variants). One spec: every name must be
    one of its variants (`resolve` says which is not). Several: each spec runs the names it has, a spec with
    none of them is left out, and a name no spec has is the mistake (`zoo run recipe.yaml mine.yaml --variant A1
    --variant mine`: recipe.yaml's A1, mine.yaml's mine)."""
    if not variants or len(specs) == 1:
        return {s: list(variants) if variants else None for s in specs}
    has = {s: variant_names(Path(s)) for s in specs}
    known = {v for names in has.values() for v in names}
    if unknown := sorted(set(variants) - known):
        raise SpecError("--variant", "", f"no spec of this run ({', '.join(map(str, specs))}) has a variant "
                        f"'{shorten(unknown[0])}'{did_you_mean(unknown[0], known)}")
    return {s: [v for v in variants if v in names] for s, names in has.items() if set(variants) & set(names)}


def _chosen(variant: str | Collection[str] | None, variants: dict, path: Path, errors: list) -> set[str] | None:
    """The variants asked for (None: all), each one the spec has."""
    only = None if variant is None else {variant} if isinstance(variant, str) else set(variant)
    for v in sorted(only or ()):
        if v not in variants:
            if errors:
                raise SpecError.of(errors)
            raise SpecError(f"{path}", "--variant", f"no variant '{shorten(v)}'{did_you_mean(v, variants)}")
    return only


def _trials(run: Run, name: str, over: dict, suffix: str, point: dict, plocs: dict) -> list[Config]:
    """One variant at one sweep point: its trial, or one per seed of the axis, validated and checked."""
    doc = run.doc
    vlocs = {p[2:]: l for p, l in doc.variants_from.locs.items() if p[:2] == ("variants", name) and len(p) > 2}
    late = frozenset(vlocs.values()) | frozenset(plocs.values())  # what this trial sets over the spec's own
    # variant x sweep point: the sizes a profile scales (widths, layers, steps) go in before it, so it
    # scales them as it scales the spec's own; every other swept value is what the trial runs with
    sized, exact = split_scaled(point)
    d = deep_merge(deep_merge(doc, over, vlocs), sized, plocs)
    stem = trial_name(name, suffix)
    over = {**dotted(over), **dotted(point)}
    if run.prof is not None:  # the spec as written must be valid too, not only what a profile leaves of it
        validate_config(d, {"variant": name, "trial": stem, "spec": str(run.path)}, late)
    notes: list[str] = []
    check_heads(run.prof, stem, d, run.heads)
    d = apply_profile(d, run.prof, run.data_dir, notes)
    d = deep_merge(d, exact, plocs)
    d = deep_merge(d, *run.sets)
    if notes:  # which corpus a profile's `prefer:` picked: said once, and kept with each run
        say_once(" ".join(notes))
    _own_row(d, name, run.path.resolve().parent == specs_dir().resolve())
    out = []
    for seed in run.axis or [None]:
        ds = d if seed is None else deep_merge(d, {"train": {"seed": seed}}, {})
        header = {"variant": name, "trial": trial_name(name, suffix, seed),
                  "overrides": over | ({} if seed is None else {"train.seed": seed}),
                  "spec": str(run.path), "profile": profile_name(run.profile),
                  "profile_description": " ".join([profile_text(run.prof), *notes]).strip(),
                  "untestable": (run.prof.profile.untestable or "").strip() if run.prof is not None else ""}
        cfg = validate_config(ds, header, late)
        check_corpus(ds, cfg)
        check_components(ds, cfg)
        check_packing(ds, cfg)
        check_compare_to(ds, cfg, run.variants)
        check_same(doc, cfg, sized, run.same)
        out.append(cfg)
    return out


def _own_row(d: Doc, name: str, builtin: bool) -> None:
    """A row of a paper table is the variant's name unless written, and the paper's own (`paper_row`) only
    from zoo's own specs: a built-in spec's row is the paper's, except a Table 3 row the paper's table lacks
    (zoo's own beyond the paper, e.g. specs/modern.yaml's), which stands where a user's row would."""
    paper = d.data.get("paper")
    if not isinstance(paper, dict) or not paper.get("table"):
        return
    if "row" not in paper:
        paper = {**paper, "row": name}
    ours = builtin and (paper.get("table") != 3 or paper.get("row") in PAPER_ROWS[3])
    said = paper.get("paper_row")  # as written: "yes" or 1 is refused by the validator, not read as false
    check_paper_row(d, paper, ours)
    d.data["paper"] = {**paper, "paper_row": True if ours else False if said is None else said}


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
