"""A package's door: its public names, resolved lazily (PEP 562) from the parts that define them.

A door is for outsiders (the Python API, runner/, reports/, a user's notebook); a package's own parts
import each other by module, never through their door (tests/test_structure.py checks it). Being lazy,
importing a door costs nothing: `from zoo.data import load_pairs` imports zoo.data.read and what it needs,
not the torch-heavy parts beside it. `moved` lists names that used to be served here and now live on the
ground floor: they still resolve, with a DeprecationWarning naming their home.
"""
from __future__ import annotations

import importlib
import warnings


def door(package: str, parts: dict[str, str], moved: dict[str, str] | None = None):
    """(__getattr__, __dir__) for `package`; parts maps a part module to its public names, space-separated."""
    home = {name: f"{package}.{part}" for part, names in parts.items() for name in names.split()}
    moved = {name: module for module, names in (moved or {}).items() for name in names.split()}

    def __getattr__(name: str):
        if name in home:
            return getattr(importlib.import_module(home[name]), name)
        if name in moved:
            warnings.warn(f"{package}.{name} moved: import it from {moved[name]}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(home) | set(moved))
    return __getattr__, __dir__
