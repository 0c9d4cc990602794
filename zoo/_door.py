"""A package's door: its parts' public names (each part's `__all__`), resolved lazily (PEP 562).

A door is for outsiders (the Python API, runner/, reports/, a user's notebook): code outside a package
imports the names its door serves, never the package's parts; the parts import each other by module,
never through their door (tests/test_structure.py checks both). Each part says what it lends in its own
`__all__`, the one list of its public names; the door reads those lists from the parts' source (ast, no
import), so importing a door costs nothing: `from zoo.data import load_pairs` imports zoo.data.read and
what it needs, not the torch-heavy parts beside it. `moved` lists names that used to be served here and
now live elsewhere: they still resolve, with a DeprecationWarning naming their home.
"""
from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path


def exported(path: Path) -> list[str]:
    """A module's `__all__`, read from its source: a literal list of names."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise ImportError(f"{path} declares no __all__: a part of a package says what it lends")


def door(package: str, init_file: str, parts: list[str], moved: dict[str, str] | None = None):
    """(__getattr__, __dir__) for `package`, serving every name in the `__all__` of each part (a module of it)."""
    home: dict[str, str] = {}
    for part in parts:
        for name in exported(Path(init_file).with_name(f"{part}.py")):
            if name in home:  # a flat door: one name, one home
                raise ImportError(f"{package}: {name} is in the __all__ of both {home[name]} and {part}")
            home[name] = f"{package}.{part}"
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
