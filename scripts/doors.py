"""Write each package door's list of names from its parts' `__all__`: `python scripts/doors.py`.

A door (zoo/spec/__init__.py, ...) names what it serves twice, both written here: `from .part import a, b`
under `if TYPE_CHECKING:` (what an editor, a type checker and a code walker follow) and `_PART`, name -> part,
which its `__getattr__` imports on first use (so importing a door imports none of its parts: no torch).
Each part's `__all__` is the one list; tests/test_structure.py checks the doors against them. This rewrites the
block between the door's two marker lines and leaves the rest of the file alone.
"""
from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOORS = ["zoo/data", "zoo/model", "zoo/train", "zoo/spec", "zoo/evidence"]
BEGIN = "# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it)."
END = "# End of the door."


def exported(path: Path) -> list[str]:
    """A module's `__all__`, read from its source: a literal list of names."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit(f"{path.relative_to(REPO)} declares no __all__: a part of a package says what it lends")


def served(folder: Path) -> dict[str, str]:
    """name -> the part (module stem) whose __all__ lends it, parts in file-name order."""
    home: dict[str, str] = {}
    for f in sorted(folder.glob("*.py")):
        if f.name == "__init__.py":
            continue
        for name in exported(f):
            if name in home:  # a flat door: one name, one home
                raise SystemExit(f"{folder.relative_to(REPO)}: {name} is in the __all__ of {home[name]} and {f.stem}")
            home[name] = f.stem
    return home


def block(folder: Path) -> str:
    home = served(folder)
    parts = sorted(set(home.values()))
    wrap = lambda text, indent: textwrap.fill(text, 116, initial_indent=indent, subsequent_indent=indent + "    ",
                                              break_on_hyphens=False)
    names = {p: ", ".join(n for n in home if home[n] == p) for p in parts}
    imports = [f"    from .{p} import {names[p]}" if len(f"    from .{p} import {names[p]}") <= 116
               else wrap(f"from .{p} import ({names[p]})", "    ") for p in parts]
    pairs = [""]  # the dict's lines, whole entries each, up to 116 columns
    for entry in (f'"{n}": "{p}",' for n, p in home.items()):
        if pairs[-1] and len(f"    {pairs[-1]} {entry}") > 116:
            pairs.append("")
        pairs[-1] = f"{pairs[-1]} {entry}".strip()
    return "\n".join([BEGIN, "if TYPE_CHECKING:", *imports, "", "_PART = {  # name -> the part that lends it",
                      *(f"    {line}" for line in pairs), "}", END])


def main() -> int:
    for door in DOORS:
        init = REPO / door / "__init__.py"
        text = init.read_text()
        head, sep, rest = text.partition(BEGIN + "\n")
        _, sep2, tail = rest.partition(END + "\n")
        if not (sep and sep2):
            raise SystemExit(f"{door}/__init__.py: no lines {BEGIN!r} ... {END!r} to write the door between")
        new = head + block(REPO / door) + "\n" + tail
        if new != text:
            tmp = init.with_suffix(".py.tmp")  # atomic: a reader sees the old door or the new one
            tmp.write_text(new)
            tmp.replace(init)
            print(f"wrote {door}/__init__.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
