"""A Doc read as a pydantic model, its mistakes said where they were written: `spec_error` turns a
ValidationError into SpecErrors at the file:line that set each field (for a rule between fields, the one
set last), naming the field and what it allows. Spec files (Config), profiles (zoo.spec.profiles.Profile)
and the paper's claims file are all read through it, so a mistake reads alike in each.

A model may say a mistake in its own words: a validator raises `mistake(text)`, said as written (no
"(got ...)" added); a model names its keys with a class attribute KEY ("scale", "section"; default "field").
"""
from __future__ import annotations

import functools
from types import UnionType
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from zoo.config import Config, CrossFieldError
from zoo.spec.specfile import SECTIONS, Doc, SpecError, unknown_key
from zoo.text import shorten

__all__ = ["mistake", "spec_error", "validate_config"]

SAID = "zoo_said"  # the error type of a mistake a validator words itself


def mistake(message: str) -> PydanticCustomError:
    """A validator's mistake in its own words (raise it): said as written, at the field's line."""
    return PydanticCustomError(SAID, message)


def validate_config(doc: Doc, header: dict, late: frozenset = frozenset()) -> Config:
    """One trial's Config: `header` (its names) and the doc's sections, validated; every mistake at its line."""
    body = {**header, **{k: doc.data[k] for k in (*SECTIONS, "paper", "claims", "description") if k in doc.data}}
    try:
        return Config.model_validate(_drop_nulls(body))
    except ValidationError as e:
        err = spec_error(doc, e, Config, late)
        if header.get("trial") and header["trial"] != header.get("variant"):  # one combination of a grid
            err = SpecError.of([SpecError(x.where, x.field, f"{x.message} (in the trial {header['trial']})")
                                for x in [err, *err.more]])
        raise err from None


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


def spec_error(doc: Doc, e: ValidationError, model: type[BaseModel] = Config, late: frozenset = frozenset()) -> SpecError:
    """A validation error of `doc` read as `model`: a SpecError at the file:line that set the field (for
    a rule between fields, the one set last), naming the field and what it allows; every error of `e`, each
    its own paragraph."""
    return SpecError.of([_one_error(doc, err, model, late) for err in e.errors()])


def _one_error(doc: Doc, err: dict, model: type[BaseModel], late: frozenset) -> SpecError:
    loc = tuple(p for p in err["loc"] if p != "[key]")  # a mapping's key: said at the key
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, CrossFieldError):
        # its fields are dotted from the root, except a list item's (a claim's): from the item
        item = ".".join(map(str, loc))
        fields = tuple(f if not loc or f.split(".")[0] == loc[0] else f"{item}.{f}" for f in cause.fields)
        loc = _dotted_loc(_blame(doc, fields, late))
    field = ".".join(map(str, loc))
    if err["type"] == SAID:
        msg = err["msg"]
    elif err["type"] in ("extra_forbidden", "invalid_key"):  # a key the model has no field for
        at = _model_at(model, loc[:-1])
        msg = unknown_key(getattr(at, "KEY", "field"), loc[-1], getattr(at, "model_fields", {}).keys())
    elif loc[:1] == ("claims",) and loc[-1] == "margin" and err["type"] in ("greater_than", "less_than"):
        written = functools.reduce(lambda d, k: d[k], loc, doc.data)  # "-1%", not the -0.01 it read as
        msg = f"must be above 0 and below 1 (0.015), or a percentage above 0% and below 100% ('1.5%') (got {shorten(repr(written))})"
    else:
        msg = _with_input(err, cause)
    return SpecError(_where(doc, loc), field, msg)


def _with_input(err: dict, cause) -> str:
    """pydantic's message, with the value it got (and why a value that looks right is not)."""
    msg = err["msg"].removeprefix("Value error, ")
    if "input" in err and not isinstance(err["input"], dict) and "is not a safe name" not in msg \
            and not isinstance(cause, CrossFieldError):
        msg += f" (got {shorten(repr(err['input']), 80)})"
        if isinstance(err["input"], str) and not err["input"].isascii():
            msg += " (it holds non-ASCII characters: a look-alike letter?)"
        elif isinstance(err["input"], str) and err["type"] in ("bool_type", "bool_parsing") \
                and err["input"].lower() in ("yes", "no", "on", "off", "y", "n"):
            msg += "; specs read YAML 1.2, where only true and false are booleans"
    return msg


def _model_at(model, loc: tuple):
    """The model that reads the value at `loc` (inside a list or a mapping: its items')."""
    for part in loc:
        f = getattr(model, "model_fields", {}).get(part)
        if f is not None:
            model = _inner(f.annotation)
    return model


def _inner(annotation):
    """A field's model: X of `X | None`, `list[X]`, `dict[K, X]` or `Annotated[X, ...]` (as deep as they nest)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, dict, Annotated):
        return _inner(args[-1] if origin is not Annotated else args[0])
    if origin in (Union, UnionType):
        return next((_inner(a) for a in args if a is not type(None)), annotation)
    return annotation


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


def _dotted_loc(field: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in field.split("."))  # list items' lines are keyed by index


def _where(doc: Doc, loc: tuple) -> str:
    """Where the data set the field, or its nearest parent; a list item's field left out: the item's first line."""
    for i in range(len(loc), 0, -1):
        if loc[:i] in doc.locs:
            return doc.locs[loc[:i]]
        lines = [at for p, at in doc.locs.items() if p[:i] == loc[:i]] if isinstance(loc[i - 1], int) else []
        if lines:
            return min(lines, key=lambda at: int(at.rsplit(":", 1)[1]))
    return doc.origin
