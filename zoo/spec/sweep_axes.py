"""The `sweep:` block of a spec: its `grid:` and `random:` axes, and ASHA's early stopping.

A spec's sweep points multiply its variants; each point is a set of dotted field overrides with a
path-safe name suffix (`A1-h=4`). Random draws are a function of the `random:` block, so a rerun makes
the same trials (and skips the finished ones).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from zoo.paths import name_problem
from zoo.text import shorten
from zoo.config import MAX_STEPS, Strict
from zoo.spec.specfile import Doc, SECTIONS, SpecError, load_file, spec_path
from zoo.spec.profiles import WIDTHS

__all__ = ["Asha", "MAX_GRID", "SPACES", "scheduler", "sweep_size"]


MAX_GRID = 1000  # points one sweep may make (grid x random samples, before variants and seeds)


SPACES = {"uniform": 2, "loguniform": 2, "randint": 2, "choice": None}  # as Ray Tune's search spaces


def read_grid(doc: Doc) -> list[tuple[str, dict, dict]]:
    """The points of `sweep:`, per point (a path-safe name suffix, the nested overrides, their
    locations for errors): every combination of `grid:` x `random:`'s `samples` draws; one empty
    point without a sweep. Random draws are a function of the `random:` block, so a rerun makes the
    same trials (and skips the finished ones)."""
    sw = doc.data.get("sweep")
    if sw is None:
        return [("", {}, {})]
    if not isinstance(sw, dict) or not set(map(str, sw)) & {"grid", "random"} \
            or not set(map(str, sw)) <= {"grid", "random", "scheduler"}:
        other = next((k for k in sw if k not in ("grid", "random", "scheduler")), None) if isinstance(sw, dict) else None
        raise SpecError(doc.where(("sweep",) + ((other,) if other is not None else ())),
                        f"sweep.{shorten(other)}" if other is not None else "sweep", "takes `grid:` (every "
                        "combination of dotted spec fields, e.g. {grid: {model.h: [1, 4, 16]}}) and `random:` "
                        "(samples: N and a search space per field), and optionally `scheduler: {asha: {...}}`")
    n = sweep_size(doc)  # by arithmetic, before any point is built
    if n > MAX_GRID:
        raise SpecError(doc.where(("sweep",)), "sweep", f"makes {count(n)} combinations (grid x random samples); "
                        f"at most {MAX_GRID}: sweep fewer values, or split the study into several specs")
    axes: list[tuple[list, list]] = []  # per axis: (its points as (suffix, {dotted: value})), ...)
    if "grid" in sw:
        axes.append(_grid_points(doc, sw["grid"]))
    if "random" in sw:
        axes.append(_random_points(doc, sw["random"]))
    out = []
    for i, combo in enumerate(itertools.product(*axes)):
        suffix = "-".join(x for x, _ in combo if x)
        values = {k: v for _, d in combo for k, v in d.items()}
        nested, locs = {}, {}
        for k, v in values.items():
            *head, last = k.split(".")
            node = nested
            for h in head:
                node = node.setdefault(h, {})
            node[last] = v
            for sec in ("grid", "random"):
                if (loc := doc.locs.get(("sweep", sec, k))) is not None:
                    locs[tuple(k.split("."))] = loc
        if name_problem(f"x-{suffix}"):  # a value a folder name cannot carry: number the point instead
            suffix = f"g{i + 1}"
        out.append((suffix, nested, locs))
    return out


def sweep_size(doc: Doc) -> int:
    """How many points `sweep:` makes (1 without one), from the lengths alone. A malformed sweep counts
    as 1 here: read_grid reports it. A `samples:` count out of range is refused here, at its own line,
    before it is multiplied into a number too long to print."""
    sw = doc.data.get("sweep")
    if not isinstance(sw, dict):
        return 1
    n = 1
    grid, rnd = sw.get("grid"), sw.get("random")
    if isinstance(grid, dict):
        for vals in grid.values():
            n *= len(vals) if isinstance(vals, list) and vals else 1
    if isinstance(rnd, dict) and "samples" in rnd:
        n *= _samples(doc, rnd["samples"])
    return n


def _samples(doc: Doc, n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_GRID:
        raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                        f"must be a whole number from 1 to {MAX_GRID} (got {shorten(repr(n))})")
    return n


def count(n: int) -> str:
    """A count for a message: 1,234, or 10^4515 for one too long to print (Python refuses to turn an int
    of more than 4300 digits into text)."""
    if n < 10**18:
        return f"{n:,}"
    digits = int(n.bit_length() * math.log10(2))  # the exponent, give or take one
    return f"about 10^{digits}"


class Asha(Strict):
    """`sweep.scheduler.asha`: Ray Tune's ASHA stops trials whose metric trails the others' at the
    same step (rungs at grace_steps x reduction_factor^k, up to the longest trial's steps)."""
    metric: Literal["dev_ppl"] = "dev_ppl"
    mode: Literal["min"] = "min"
    grace_steps: int = Field(..., ge=1, le=MAX_STEPS, description="steps every trial runs before it may be stopped")
    reduction_factor: int = Field(2, ge=2, le=100)


def scheduler(path: str | Path) -> Asha | None:
    """The spec's early-stopping scheduler (`sweep: {scheduler: {asha: {...}}}`), or None."""
    return read_asha(load_file(spec_path(path)))


def read_asha(doc: Doc) -> Asha | None:
    sw = doc.data.get("sweep")
    sch = sw.get("scheduler") if isinstance(sw, dict) else None
    if sch is None:
        return None
    where = doc.where(("sweep", "scheduler"))
    if not isinstance(sch, dict) or set(map(str, sch)) != {"asha"} or not isinstance(sch["asha"], dict):
        raise SpecError(where, "sweep.scheduler", "takes {asha: {grace_steps: N, metric: dev_ppl, mode: min, "
                        "reduction_factor: 2}}")
    try:
        return Asha.model_validate(sch["asha"])
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise SpecError(doc.where(("sweep", "scheduler", "asha") + tuple(map(str, err["loc"]))),
                        f"sweep.scheduler.asha.{field}", err["msg"]) from None


SCALED = {*(("model", k) for k in WIDTHS), ("model", "N"), ("model", "h"), ("train", "steps"),
          ("train", "checkpoint_every")}  # what a profile's `scale:` changes (apply_profile)


def split_scaled(point: dict) -> tuple[dict, dict]:
    """A sweep point's nested overrides: (the fields a profile scales, the rest)."""
    sized, exact = {}, {}
    for sec, fields in point.items():
        for k, v in fields.items():
            (sized if (sec, k) in SCALED else exact).setdefault(sec, {})[k] = v
    return sized, exact


def _field_key(doc: Doc, sec: str, k) -> str:
    parts = str(k).split(".")
    if len(parts) < 2 or parts[0] not in SECTIONS or not all(parts):
        raise SpecError(doc.where(("sweep", sec, k)), f"sweep.{sec}.{shorten(k)}", f"keys are dotted spec fields, "
                        f"a section ({', '.join(SECTIONS)}) and a field, e.g. model.h or train.schedule.lr_scale")
    return str(k)


def _grid_points(doc: Doc, grid) -> list[tuple[str, dict]]:
    if not isinstance(grid, dict) or not grid:
        raise SpecError(doc.where(("sweep", "grid")), "sweep.grid", "must map dotted spec fields to lists of values, "
                        "e.g. {model.h: [1, 4, 16], model.dropout: [0.0, 0.1]}")
    keys = []
    for k, vals in grid.items():
        keys.append(_field_key(doc, "grid", k))
        if not isinstance(vals, list) or not vals or any(isinstance(v, (dict, list)) for v in vals) \
                or len({repr(v) for v in vals}) != len(vals):
            raise SpecError(doc.where(("sweep", "grid", k)), f"sweep.grid.{shorten(k)}",
                            f"must be a non-empty list of different plain values (got {shorten(repr(vals))})")
    return [("-".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, combo)), dict(zip(keys, combo)))
            for combo in itertools.product(*grid.values())]


def _out_of_range(kind: str, args: list) -> str | None:
    """What numpy's draw would overflow on: randint's bounds past int64, a float space's bounds (or its
    width hi - lo) past the largest float, infinities included."""
    if kind == "randint":
        if not all(-2**63 <= a < 2**63 for a in args):
            return "randint's bounds must fit in int64, from -2^63 to 2^63 - 1"
    elif kind in ("uniform", "loguniform"):
        big = sys.float_info.max  # an int is compared exactly: float() of a 400-digit int would overflow
        if not all(-big <= a <= big for a in args) or not math.isfinite(float(args[1]) - float(args[0])):
            return f"{kind}'s bounds must be finite floats, and hi - lo too (at most {big:.4g})"
    return None


def _random_points(doc: Doc, rnd) -> list[tuple[str, dict]]:
    """`samples` different points drawn from the search spaces: a draw that repeats an earlier point
    is drawn again (a repeat would be the same trial twice), and a space with fewer points than
    `samples` is an error (a grid is the way to take all of them)."""
    where = doc.where(("sweep", "random"))
    if not isinstance(rnd, dict) or len(rnd) < 2 or "samples" not in rnd:
        raise SpecError(where, "sweep.random", f"needs `samples: N` (1 to {MAX_GRID}) and at least one field with "
                        "a search space, e.g. {samples: 8, train.schedule.lr_scale: {loguniform: [0.25, 4.0]}}")
    n = _samples(doc, rnd["samples"])
    spaces, size = {}, 1  # size: the number of distinct points, when every space is discrete
    for k, sp in rnd.items():
        if k == "samples":
            continue
        key = _field_key(doc, "random", k)
        kind = next(iter(sp)) if isinstance(sp, dict) and len(sp) == 1 else None
        args = sp[kind] if kind else None
        number = (int,) if kind == "randint" else (int, float)
        ok = kind in SPACES and isinstance(args, list) and args and (
            SPACES[kind] is None and all(not isinstance(a, (dict, list)) for a in args)
            or SPACES[kind] == len(args) and all(isinstance(a, number) and not isinstance(a, bool) for a in args)
            and args[0] < args[1] and (kind != "loguniform" or args[0] > 0))
        if not ok:
            hint = " (randint takes whole-number bounds)" if kind == "randint" else ""
            raise SpecError(doc.where(("sweep", "random", k)), f"sweep.random.{shorten(k)}", "must be one search "
                            "space: {uniform: [lo, hi]}, {loguniform: [lo, hi]} (lo > 0), {randint: [lo, hi]} "
                            f"(whole numbers, hi excluded) or {{choice: [a, b, ...]}}{hint} (got {shorten(repr(sp))})")
        if (problem := _out_of_range(kind, args)) is not None:
            raise SpecError(doc.where(("sweep", "random", k)), f"sweep.random.{shorten(k)}",
                            f"{problem} (got {shorten(repr(sp))})")
        if kind == "choice" and len({repr(a) for a in args}) != len(args):
            raise SpecError(doc.where(("sweep", "random", k)), f"sweep.random.{shorten(k)}",
                            f"choice lists a value twice (got {shorten(repr(args))}); each value once")
        spaces[key] = (kind, args)
        size = size * (len(args) if kind == "choice" else args[1] - args[0] if kind == "randint" else math.inf)
    if n > size:
        raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                        f"{n} draws from a space of only {size} different points would repeat trials; "
                        f"use samples: {size} or fewer, or a `grid:` to run every point")
    seed = int(hashlib.sha256(json.dumps(rnd, sort_keys=True, default=str).encode()).hexdigest()[:8], 16)
    out = _draw(spaces, n, seed)
    if len(out) == n:
        return out
    raise SpecError(doc.where(("sweep", "random", "samples")), "sweep.random.samples",
                    f"only {len(out)} different points found in {100 * n} draws (values are rounded to 4 "
                    "significant digits); widen the ranges or lower samples")


def _draw(spaces: dict, n: int, seed: int) -> list[tuple[str, dict]]:
    """Up to `n` different points drawn from `spaces` (100 draws per point: a repeat is drawn again), each
    value rounded to 4 significant digits; a seeded generator, so a spec draws the same points every time."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    for _ in range(100 * n):  # enough for any space with >= n points (a repeat is drawn again)
        d = {}
        for key, (kind, (*args,)) in spaces.items():
            if kind == "uniform":
                d[key] = float(f"{rng.uniform(args[0], args[1]):.4g}")
            elif kind == "loguniform":
                d[key] = float(f"{math.exp(rng.uniform(math.log(args[0]), math.log(args[1]))):.4g}")
            elif kind == "randint":
                d[key] = int(rng.integers(args[0], args[1]))
            else:
                d[key] = args[int(rng.integers(len(args)))]
        point = json.dumps(d, sort_keys=True, default=str)
        if point not in seen:
            seen.add(point)
            out.append((f"r{len(out) + 1}-" + "-".join(f"{k.split('.')[-1]}={v}" for k, v in d.items()), d))
            if len(out) == n:
                break
    return out
