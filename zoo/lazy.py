"""A package door's lazy half (PEP 562), one home for the five doors (zoo.data, zoo.model, zoo.train, zoo.spec,
zoo.evidence): a name imports the part that lends it on first use, so importing a door imports none of its parts
(no torch for a spec's costs). What a door serves is written out statically beside it (scripts/doors.py)."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["door"]


def door(package: str, parts: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's (__getattr__, __dir__) from `parts`: name -> the part (module stem) that lends it."""
    def __getattr__(name: str) -> Any:
        if name not in parts:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{parts[name]}"), name)

    def __dir__() -> list[str]:
        return list(parts)
    return __getattr__, __dir__
