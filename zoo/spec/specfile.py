"""A spec file as read: YAML with line numbers (`Doc`), `extends:` chains, `variants:`, built-in specs.

Every user mistake raises SpecError carrying `path:line: field.path: message`. Line numbers come
from the YAML node marks (zoo.spec.yaml12), tracked through every merge so an error points at the line that
set the bad value.
"""
from __future__ import annotations

import copy
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from zoo.spec import yaml12
from zoo.errors import UserError
from zoo.paths import SAFE_NAME, name_problem
from zoo.text import closest, did_you_mean, shorten

__all__ = ["Doc", "FILE_KEYS", "MAX_BYTES", "MAX_EXTENDS", "SECTIONS", "SpecError", "builtin_specs", "deep_merge",
           "load_file", "load_yaml", "read_yaml", "spec_path", "specs_dir", "variant_names"]


SECTIONS = ("model", "data", "train", "eval", "resources")
FILE_KEYS = {"extends", "name", "description", "paper", "claims", "variants", "seeds", "sweep", *SECTIONS}
NULL_IS_EMPTY = (*SECTIONS, "paper", "claims", "sweep", "seeds", "variants", "description")  # `model:` with nothing under it


def without_empty(data: dict, keys=NULL_IS_EMPTY) -> dict:
    """`data` less its `keys` whose lines are all commented out (YAML reads them as null): as if absent,
    at the top level, in a variant, or in a profile's `set:` alike."""
    return {k: v for k, v in data.items() if not (v is None and k in keys)}


# ----------------------------------------------------------------------------------------------
# Errors


class SpecError(UserError):
    """A user mistake in a spec, profile or override. str() is the one-paragraph message."""

    def __init__(self, where: str, field: str, message: str, more: Sequence[SpecError] = ()):
        field = shorten(field, 120)
        self.where, self.field, self.message, self.more = where, field, message, list(more)
        super().__init__("\n".join(self.paragraphs()))

    def paragraphs(self) -> list[str]:
        """One paragraph per mistake: this one, then the others found in the same file."""
        return [f"{self.where}: {self.field + ': ' if self.field else ''}{self.message}",
                *(p for e in self.more for p in e.paragraphs())]

    @classmethod
    def of(cls, errors: Sequence[SpecError], limit: int = 20) -> SpecError:
        """Every mistake of a file as one error: each once (the same line and field said once), in order."""
        seen, out = set(), []
        for e in errors:
            for one in [SpecError(e.where, e.field, e.message), *e.more]:
                if (one.where, one.field) not in seen:
                    seen.add((one.where, one.field))
                    out.append(one)
        def at(e: SpecError) -> tuple:  # by file, then line: the order a reader fixes them in
            path, _, line = e.where.rpartition(":")
            return (path, int(line)) if line.isdigit() else (e.where, 0)
        order = {e.where.rpartition(":")[0] or e.where: i for i, e in reversed(list(enumerate(out)))}
        out.sort(key=lambda e: (order.get(at(e)[0], len(order)), at(e)[1]))
        rest = [] if len(out) <= limit else [SpecError(out[0].where.rsplit(":", 1)[0], "", f"and {len(out) - limit} more")]
        return cls(out[0].where, out[0].field, out[0].message, [*out[1:limit], *rest])


# ----------------------------------------------------------------------------------------------
# YAML with line numbers. `Doc` is the data plus, for every key path, the "file:line" that set it.


class Doc:
    def __init__(self, data: dict, locs: dict[tuple, str], origin: str):
        self.data, self.locs, self.origin = data, locs, origin

    def where(self, path: tuple) -> str:
        # the most specific known location along the path, else the file itself
        for i in range(len(path), 0, -1):
            if path[:i] in self.locs:
                return self.locs[path[:i]]
        return self.origin


# What a spec may hold. YAML can do much more, and each extra is a way for a shared spec to hurt
# whoever validates it: aliases expand without bound ("billion laughs"), merge keys hide where a
# value came from, tags can name Python objects. Specs never need them (`extends:` and variants are
# the spec language's own reuse), so they are refused rather than limited.
MAX_BYTES = 1_000_000  # a spec is a few KB
MAX_EXTENDS = 16  # links in one extends chain


def _read_text(path: Path) -> str:
    """The file's text: a regular file of at most MAX_BYTES, UTF-8 (a BOM is fine)."""
    where = f"{path}"
    try:
        mode = os.stat(path).st_mode  # before opening: opening a pipe would wait for a writer
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            raise SpecError(f"{where}:1", "", "is not a regular file (a device, pipe or socket); expected a .yaml file")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(where, "", "no such spec file (the paper's are in specs/, found by name: `zoo run table3_A`)") from None
    except IsADirectoryError:
        raise SpecError(where, "", "is a directory, expected a .yaml file") from None
    except OSError as e:  # permission denied, a symlink loop, a name too long, ...
        raise SpecError(f"{where}:1", "", f"cannot read the file: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError(f"{where}:1", "", f"the file is larger than {MAX_BYTES // 1000} KB; a spec is a few KB of YAML")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}", "", f"not valid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as UTF-8") from None


def load_yaml(text: str, where: str, locs: dict | None = None):
    """(data, line of its top-level node) of one YAML document under the spec rules (zoo.spec.yaml12),
    filling `locs` (key path -> "where:line"); SpecError at `where:line` for anything refused."""
    lines: dict[tuple, int] = {}
    try:
        data, line = yaml12.load(text, lines)
    except yaml12.YamlError as e:
        raise SpecError(f"{where}:{e.line}", e.field, e.message) from None
    if locs is not None:
        locs.update({p: f"{where}:{n}" for p, n in lines.items()})
    return data, line


def read_yaml(path: Path) -> Doc:
    """Parse one spec or profile file (see zoo.spec.yaml12 for what YAML it may hold)."""
    locs: dict[tuple, str] = {}
    data, line = load_yaml(_read_text(path), str(path), locs)
    if data is None:
        raise SpecError(f"{path}:1", "", "file is empty; a spec needs at least one of "
                        f"{', '.join(SECTIONS)} or `extends:`")
    if not isinstance(data, dict):
        raise SpecError(f"{path}:{line}", "",
                        f"the top level must be a mapping of sections, not {kind_of(data)}")
    return Doc(data, locs, f"{path}:1")


def deep_merge(base: Doc, over: dict, over_locs: dict, origin: str | None = None) -> Doc:
    """Return base with `over` merged in (mappings merge key by key, anything else replaces)."""
    data, locs = copy.deepcopy(base.data), dict(base.locs)

    def merge(dst: dict, src: dict, prefix: tuple):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v, prefix + (k,))
            else:
                dst[k] = copy.deepcopy(v)
                for p in [p for p in locs if p[: len(prefix) + 1] == prefix + (k,)]:
                    del locs[p]  # the old value's sub-locations no longer apply
                # what replaced it, even when only its fields have locations (`--set model.h.x=4` on `h: 8`)
                inner = next((loc for p, loc in over_locs.items() if p[: len(prefix) + 1] == prefix + (k,)), None)
                if inner is not None:
                    locs[prefix + (k,)] = inner
            if prefix + (k,) in over_locs:
                locs[prefix + (k,)] = over_locs[prefix + (k,)]
        for p, loc in over_locs.items():
            locs.setdefault(p, loc)

    merge(data, over, ())
    return Doc(data, locs, origin or base.origin)


# ----------------------------------------------------------------------------------------------
# Spec files: extends chains and variants


def _check_mapping(doc: Doc, key: str, value) -> None:
    if not isinstance(value, dict):
        raise SpecError(doc.where((key,)), key, f"must be a mapping of fields, not {kind_of(value)}")


def kind_of(value) -> str:
    return {list: "a list", type(None): "null", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}")


def unknown_key(what: str, key, allowed) -> str:
    odd = "" if str(key).isascii() else " (it holds non-ASCII characters: a look-alike letter?)"
    return f"unknown {what} '{shorten(key)}'{odd}{did_you_mean(str(key), allowed)}"


def load_file(path: Path, _stack: tuple = ()) -> Doc:
    """One spec file with its `extends:` chain merged in. Its variants are its own `variants:` (or the
    one variant its `name:` or file name makes); a file with neither inherits the variants of the
    spec it extends, so `extends: table3_A` plus a changed recipe runs A1-A4 under that recipe.

    `extends:` names another spec file, relative to this file's folder or absolute (a spec shared
    from a group folder), or a built-in spec by name (`extends: base`). It only ever reads, and what it reads must itself be a valid spec, so an
    absolute path gives a spec author no more reach than the user running zoo already has; it must
    be a regular .yaml/.yml file, and a chain holds at most MAX_EXTENDS files and no cycle."""
    path = Path(path)
    key = Path(os.path.realpath(path))  # realpath: never raises, even on a symlink loop
    if key in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, key))
        raise SpecError(f"{path}:1", "extends", f"cycle in extends: {chain}")
    doc = read_yaml(path)
    doc.data = without_empty(doc.data)
    for k in doc.data:
        if k not in FILE_KEYS:
            raise SpecError(doc.where((str(k),)), shorten(k), unknown_key("top-level key", k, FILE_KEYS))
    for k in SECTIONS:
        if k in doc.data:
            _check_mapping(doc, k, doc.data[k])
    parent = doc.data.get("extends")
    own = {k: v for k, v in doc.data.items() if k not in ("extends", "variants", "name")}
    own_locs = {p: l for p, l in doc.locs.items() if p[0] not in ("extends", "variants", "name")}
    base = None
    if parent is None:
        merged = Doc(own, own_locs, doc.origin)
    else:
        where = doc.where(("extends",))
        if not isinstance(parent, str) or not parent.strip():
            raise SpecError(where, "extends", f"must be the path of a .yaml spec file, relative to this "
                            f"file or absolute (got {kind_of(parent)})")
        ppath = key.parent / parent
        if not ppath.exists() and SAFE_NAME.fullmatch(parent) and (specs_dir() / f"{parent}.yaml").is_file():
            ppath = specs_dir() / f"{parent}.yaml"  # `extends: base`: the built-in spec of that name
        if len(_stack) >= MAX_EXTENDS:
            raise SpecError(where, "extends", f"the extends chain is longer than {MAX_EXTENDS} files")
        if ppath.is_dir():
            raise SpecError(where, "extends", f"'{shorten(parent)}' is a directory ({ppath}); name a .yaml spec file in it")
        if not ppath.exists():
            why = "is a broken symlink or a symlink loop" if ppath.is_symlink() else "not found"
            beside = sorted(f.name for f in key.parent.glob("*.y*ml") if f != key)  # a spec next to this one
            hint = (closest(Path(parent).stem, builtin_specs()) if "/" not in parent else "") or \
                (closest(parent, beside) if beside else "") or "."
            raise SpecError(where, "extends", f"file '{shorten(parent)}' {why} (looked for {ppath}){hint} A spec "
                            f"extends a file relative to it, or a built-in spec by name: {', '.join(builtin_specs())}")
        if ppath.suffix not in (".yaml", ".yml") or not ppath.is_file():
            raise SpecError(where, "extends", f"'{shorten(parent)}' is not a .yaml or .yml spec file")
        base = load_file(ppath, _stack + (key,))
        merged = deep_merge(base, own, own_locs, doc.origin)
    merged.raw = doc  # the file itself
    # variants are inherited through extends unless this file names its own (`variants:` or `name:`)
    inherit = base is not None and not {"variants", "name"} & set(doc.data) and "variants" in base.variants_from.data
    merged.variants_from = base.variants_from if inherit else doc
    return merged


def variant_names(path: Path) -> list[str]:
    doc = load_file(path)
    return list(read_variants(doc, path))


def read_variants(doc: Doc, path: Path, errors: list[SpecError] | None = None) -> dict[str, dict]:
    """The spec's variants: name -> overrides. A variant of the wrong shape raises SpecError, or, given
    `errors`, is left out with its mistake appended there (so the other variants' mistakes are said too)."""
    raw = doc.variants_from
    vs = raw.data.get("variants")
    if vs is None:
        name = raw.data.get("name", Path(path).stem)
        problem = name_problem(name)
        if problem:
            where = raw.where(("name",)) if "name" in raw.data else f"{path}:1"
            raise SpecError(where, "name" if "name" in raw.data else "spec",
                            f"the variant name {problem}" + ("" if "name" in raw.data else
                            "; rename the file or give the variant a `name:`"))
        return {name: {}}
    if not isinstance(vs, dict) or not vs:
        raise SpecError(raw.where(("variants",)), "variants", "must be a non-empty mapping of name -> overrides")
    out = {}
    for name, over in vs.items():
        try:
            out[name] = _variant(raw, name, over)
        except SpecError as e:
            if errors is None:
                raise
            errors.append(e)
    return out


def _variant(raw: Doc, name, over) -> dict:
    """One variant's overrides, checked for shape: sections of fields."""
    where, field = raw.where(("variants", str(name))), f"variants.{shorten(name)}"
    problem = name_problem(name)
    if problem:
        raise SpecError(where, field, f"the variant name {problem}")
    over = {} if over is None else over
    if not isinstance(over, dict):
        raise SpecError(where, field, f"overrides must be a mapping of sections, not {kind_of(over)}")
    over = without_empty(over, (*SECTIONS, "description", "paper"))  # of what a variant may hold
    for k in over:
        if k not in SECTIONS and k not in ("description", "paper"):
            raise SpecError(raw.where(("variants", name, str(k))), f"{field}.{shorten(k)}",
                            unknown_key("section", k, set(SECTIONS) | {"description", "paper"}))
        if k in SECTIONS and not isinstance(over[k], dict):
            raise SpecError(raw.where(("variants", name, k)), f"{field}.{k}",
                            f"must be a mapping of fields, not {kind_of(over[k])}")
    return over


def specs_dir() -> Path:
    """The built-in specs: zoo/specs in an installed package, the repository's specs/ in a checkout."""
    package = Path(__file__).resolve().parents[1]  # zoo/
    return package / "specs" if (package / "specs" / "base.yaml").is_file() else package.parent / "specs"


def builtin_specs() -> list[str]:
    return sorted(p.stem for p in specs_dir().glob("*.yaml"))


def spec_path(arg: str | Path) -> Path:
    """A spec argument as a file: a path as given, or a built-in spec's name (`table3_A`, `big`)."""
    p = Path(arg)
    if p.exists() or p.suffix in (".yaml", ".yml") or len(p.parts) != 1:
        return p
    if SAFE_NAME.fullmatch(str(arg)) and (specs_dir() / f"{arg}.yaml").is_file():
        return specs_dir() / f"{arg}.yaml"
    raise SpecError(str(arg), "", f"no spec file '{shorten(arg)}' here and no built-in spec of that name"
                    f"{did_you_mean(str(arg), builtin_specs())}")  # its "Allowed:" lists the built-in specs, once


