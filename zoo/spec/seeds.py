"""The seeds axis: `seeds: [1, 2, 3]` runs every variant once per seed (trials VARIANT-seedN). It may be
written in a spec, in a profile or as `--seeds`; the last of those wins (`seeds_axis`). One grammar for all
three: `Seeds` (pydantic, for a profile's model), `seeds_problem` (for the others) and `SEEDS` (the JSON Schema)."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from zoo.spec.specfile import Doc, SpecError
from zoo.spec.validation import mistake
from zoo.text import shorten

__all__ = ["MAX_SEEDS", "SEEDS", "Seeds", "seeds_axis", "seeds_problem"]

MAX_SEEDS = 100
SEEDS = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}, "minItems": 1,
         "maxItems": MAX_SEEDS, "uniqueItems": True,
         "description": "run every variant once per seed, as trials named VARIANT-seedN"}


def seeds_problem(value) -> str | None:
    """What is wrong with `value` as a seeds axis, or None."""
    ok = (isinstance(value, list) and 1 <= len(value) <= MAX_SEEDS and len(set(map(str, value))) == len(value)
          and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**32 for x in value))
    return None if ok else (f"must be a list of 1 to {MAX_SEEDS} different integers in [0, 2^32), e.g. [1, 2, 3] "
                            f"(got {shorten(repr(value))})")


def _seeds(value):
    if (problem := seeds_problem(value)) is not None:
        raise mistake(problem)
    return value


Seeds = Annotated[Any, BeforeValidator(_seeds), WithJsonSchema(SEEDS)]


def seeds_axis(doc: Doc, prof: Doc | None, cli: list[int] | None) -> tuple[list[int] | None, str]:
    """The seeds axis and where it was set: `--seeds` > the profile's `seeds:` > the spec's (inherited
    through extends); (None, "") without one."""
    if cli is not None:
        where, value = "--seeds", cli
    else:
        src = prof if prof is not None and "seeds" in prof.data else doc if "seeds" in doc.data else None
        if src is None:
            return None, ""
        where, value = src.where(("seeds",)), src.data["seeds"]
    if (problem := seeds_problem(value)) is not None:
        raise SpecError(where, "seeds", problem)
    return value, where
