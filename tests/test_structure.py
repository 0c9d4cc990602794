"""The structure stays a straight line (issues 11, 33 and 43): spec -> model -> trial -> store -> report.

Read from the source with ast (nothing is imported): no import circle among module-level imports, no
module imports a later stage (not even lazily inside a function; the CLI modules sit on top), the longest
chain of module-level imports as Python runs them stays short, no file borrows another file's `_private`
name (imported or as an attribute), code outside a package goes through its door (the names its parts'
`__all__` lend), a package's parts never go through their own door (its __init__, which is for outsiders), and
each door names what it serves as its parts' `__all__` say (scripts/doors.py writes it)."""
import ast
import functools
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"zoo": "zoo", "runner": "zoo.runner", "reports": "zoo.reports"}
PACKAGES = {"zoo.spec", "zoo.data", "zoo.train", "zoo.model", "zoo.evidence"}  # a door (__init__) and its parts


def parts(pkg: str) -> set[str]:
    return {f"{pkg}.{f.stem}" for f in (REPO / pkg.replace(".", "/")).glob("*.py") if f.stem != "__init__"}


SPEC, DATA, TRAIN, MODEL, EVIDENCE = ({p} | parts(p) for p in ("zoo.spec", "zoo.data", "zoo.train", "zoo.model",
                                                               "zoo.evidence"))
# stages in order; a module may import its own stage and earlier ones
STAGES = [
    {"zoo.errors", "zoo.paths", "zoo.paper", "zoo.tokens", "zoo.config", "zoo.result", "zoo.text", "zoo.lazy",
     "zoo.model", "zoo.model.components"},  # the components: their names (the spec checks them) and costs, no torch
    SPEC | DATA,  # the spec, and the corpora it names (validation checks names and splits against the catalog)
    (MODEL - {"zoo.model", "zoo.model.components"}) | EVIDENCE,                             # the model and its scores
    TRAIN,                                                                                 # a trial's work
    {"zoo.runner.storefile", "zoo.runner.store_schema", "zoo.runner.store"},                                        # the store
    {"zoo.runner.local", "zoo.runner.trial", "zoo.runner.progress", "zoo.runner.trackers", "zoo.runner.folders",
     "zoo.runner.sweep", "zoo.runner.fits",
     "zoo.runner.plan", "zoo.runner.gpu_plan", "zoo.runner.stacking"},                      # trials on Ray
    {"zoo.reports.peaks", "zoo.reports.runs", "zoo.reports.cells", "zoo.reports.verdicts", "zoo.reports.tables",
     "zoo.reports.plots", "zoo.reports.render", "zoo.reports.latex", "zoo.reports.sweep", "zoo.reports.power", "zoo.reports.share",
     "zoo.reports.trend", "zoo.reports.compare", "zoo.reports.pages", "zoo.reports.frames"},
]
CLI = {"zoo", "zoo.cli", "zoo.commands", "zoo.runner.cli", "zoo.reports.cli", "zoo.runner", "zoo.reports"}
LONGEST_CHAIN = 8  # modules, counted along module-level imports as Python runs them (12 before the packages)
TOP_LEVEL = 14     # zoo/'s own modules beside its packages


def exported(path: Path) -> list[str]:
    """A module's `__all__`, read from its source: a literal list of names."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path.relative_to(REPO)} declares no __all__: a part of a package says what it lends")


@functools.cache
def served(door: str) -> dict[str, str]:
    """What a door serves: name -> the part whose __all__ lends it."""
    return {n: f"{door}.{Path(f).stem}" for f in sorted((REPO / door.replace(".", "/")).glob("*.py"))
            if f.name != "__init__.py" for n in exported(f)}


def type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:`: imports for editors and type checkers that Python never runs."""
    return isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"


def modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in FOLDERS.items():
        for f in (REPO / folder).rglob("*.py"):
            parts = [pkg, *f.relative_to(REPO / folder).with_suffix("").parts]
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _source(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module an ImportFrom names, relative imports resolved."""
    if node.level == 0:
        return node.module
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, name: str, top_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    tree.body = [n for n in tree.body if not type_checking(n)]  # a door's static names import nothing at run time
    nodes = tree.body if top_only else list(ast.walk(tree))
    got = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            got |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            src = _source(name, path, n)
            got.add(src)
            got |= {f"{src}.{a.name}" for a in n.names}  # `from zoo import data`
            if src in PACKAGES:  # the door resolves the name now, importing the part that lends it
                got |= {served(src)[a.name] for a in n.names if a.name in served(src)}
    return got


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: {x for x in imports(p, m, top_only=True) if x in mods and x != m} for m, p in mods.items()}


def test_every_module_has_a_stage():
    assert set(modules()) - CLI == set().union(*STAGES)


def test_no_import_circle():
    g = graph()
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for x in g[m]:
            assert state.get(x) != 1, "import circle: " + " -> ".join(path + [x])
            if x not in state:
                visit(x, path + [x])
        state[m] = 2
    for m in g:
        if m not in state:
            visit(m, [m])


def test_the_longest_import_chain_is_short():
    """A module's import-time world is its chain of module-level imports: five stages should not need twelve
    floors. A door is lazy (PEP 562): `import zoo.spec` imports none of its parts, but `from zoo.spec import
    resolve` imports zoo.spec.resolution at once, so the chain goes on through it."""
    g = graph()

    @functools.cache
    def longest(m: str) -> tuple[str, ...]:
        return max(((m, *longest(x)) for x in g[m]), key=len, default=(m,))
    chain = max((longest(m) for m in g), key=len)
    assert len(chain) <= LONGEST_CHAIN, " -> ".join(chain)


def test_no_module_imports_a_later_stage():
    mods = modules()
    stage = {m: i for i, s in enumerate(STAGES) for m in s}
    bad = [f"{m} (stage {stage[m]}) imports {x} (stage {stage[x]})"
           for m, p in mods.items() if m in stage
           for x in imports(p, m, top_only=False) if x in stage and stage[x] > stage[m]]
    assert not bad, "\n".join(bad)


def test_no_file_borrows_a_private_name():
    """A name another file uses is public; a `_private` one stays in its file (timm's rule: a private module
    may hold public names, a public module lends no private ones)."""
    mods = modules()
    bad = []
    for m, p in mods.items():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and (src := _source(m, p, n)) in mods:
                bad += [f"{m} imports {src}.{a.name}" for a in n.names
                        if a.name.startswith("_") and not a.name.startswith("__") and f"{src}.{a.name}" not in mods]
    assert not bad, "\n".join(bad)


def test_a_part_never_imports_its_own_door():
    """zoo.spec's parts import zoo.spec.specfile, never `from zoo.spec import SpecError`: the door is for outsiders."""
    mods = modules()
    bad = []
    for m, p in mods.items():
        door = next((d for d in PACKAGES if m.startswith(d + ".")), None)
        if door is None:
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom) and _source(m, p, n) == door:
                bad += [f"{m}: from {door} import {a.name}" for a in n.names if f"{door}.{a.name}" not in mods]
            elif isinstance(n, ast.Import):
                bad += [f"{m}: import {a.name}" for a in n.names if a.name == door]
    assert not bad, "\n".join(bad)


def test_docs_architecture_lists_every_module():
    """The manual's Architecture page (docs/architecture.md) names each package folder and each module of zoo/,
    runner/ and reports/ once."""
    section = (REPO / "docs" / "architecture.md").read_text()
    listed = [line.split("`")[1] for line in section.splitlines() if line.lstrip().startswith("- `")]
    files = [f.relative_to(REPO).as_posix() for folder in FOLDERS for f in (REPO / folder).rglob("*.py")]
    folders = [f"{m.replace('.', '/')}/" for m in PACKAGES]
    assert sorted(listed) == sorted(files + folders) and len(listed) == len(set(listed))


def test_modules_read_in_one_sitting():
    # one idea per module, each at most 500 lines, in zoo/, runner/ and reports/ alike
    long = {str(f.relative_to(REPO)): n for folder in FOLDERS for f in (REPO / folder).rglob("*.py")
            if (n := len(f.read_text().splitlines())) > 500}
    assert not long, long


def test_plain_checkout_says_install_in_one_line(tmp_path):
    """Without `pip install -e .`, runner/ and reports/ are not zoo.runner and zoo.reports: `zoo` says so in
    one line and exits 2. -S leaves site-packages out, where the editable install would map them."""
    import shutil
    import subprocess
    import sys
    shutil.copytree(REPO / "zoo", tmp_path / "zoo", ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "-S", "-m", "zoo.cli", "--help"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "zoo is not installed: run `pip install -e .`" in r.stderr, r.stderr


def test_outsiders_go_through_the_door():
    """Code outside a package imports what its door serves (the names of its parts' `__all__`), never a part
    itself: a part's other names are its package's business. Tests may reach in; zoo/, runner/, reports/ may not."""
    mods = modules()
    bad = []
    for m, p in mods.items():
        mine = next((d for d in PACKAGES if m == d or m.startswith(d + ".")), None)
        for n in ast.walk(ast.parse(p.read_text())):
            names = []
            if isinstance(n, ast.ImportFrom):
                src = _source(m, p, n)
                names = [f"{src}.{a.name}" for a in n.names] if src in PACKAGES | {"zoo"} else [src]
                if src in PACKAGES and src != mine:
                    bad += [f"{m}: {src} serves no {a.name}" for a in n.names
                            if a.name not in served(src) and f"{src}.{a.name}" not in mods]
            elif isinstance(n, ast.Import):
                names = [a.name for a in n.names]
            for x in names:
                door = next((d for d in PACKAGES if x.startswith(d + ".")), None)
                if door and door != mine and x in mods:
                    bad.append(f"{m} reaches past the door into {x}")
    assert not bad, "\n".join(bad)


def test_each_door_serves_its_parts_all():
    """A door is built from its parts' `__all__` (one list per part): every name listed exists in its part."""
    bad = []
    for door in PACKAGES:
        for name, part in served(door).items():
            tree = ast.parse(modules()[part].read_text())
            defined = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                       for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
            defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            defined |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
            if name not in defined:
                bad.append(f"{part}.__all__ names {name}, which it does not define")
    assert not bad, "\n".join(bad)


def test_no_private_attribute_crosses_files():
    """`x._name` where _name is defined only in another of the project's files borrows a private name as surely
    as importing it (`local._alive` once did)."""
    mods = modules()
    defined: dict[str, set[str]] = {}
    for m, p in mods.items():
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.setdefault(n.name, set()).add(m)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                defined.setdefault(n.id, set()).add(m)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                defined.setdefault(n.attr, set()).add(m)
            elif isinstance(n, ast.arg):
                defined.setdefault(n.arg, set()).add(m)
    bad = []
    for m, p in mods.items():
        for n in ast.walk(ast.parse(p.read_text())):
            if (isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                    and n.attr in defined and m not in defined[n.attr]):
                bad.append(f"{m}: .{n.attr} (defined in {', '.join(sorted(defined[n.attr]))})")
    assert not bad, "\n".join(bad)


def test_zoo_top_level_is_small():
    """zoo/ holds the ground floor, the CLI and its packages; the model and the evidence are packages too."""
    flat = sorted(f.name for f in (REPO / "zoo").glob("*.py"))
    assert len(flat) <= TOP_LEVEL, flat


def test_no_import_through_a_string():
    """The project imports its own code by import statements (which this file can follow), never by a string
    such as "zoo.model:MultiHeadAttention" resolved at run time."""
    import re
    bad = [f"{m}: {x}" for m, p in modules().items()
           for x in re.findall(r"[\"']zoo(?:\.\w+)+:\w+[\"']", p.read_text())]
    assert not bad, "\n".join(bad)


def door_names(init: Path) -> tuple[dict[str, str], dict[str, str]]:
    """What a door names: (name -> part) from its `if TYPE_CHECKING:` imports, and from its `_PART` dict."""
    tree = ast.parse(init.read_text())
    static = {(a.asname or a.name): n.module for b in tree.body if type_checking(b)
              for n in b.body if isinstance(n, ast.ImportFrom) and n.level == 1 for a in n.names}
    lazy = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", None) == "_PART"), {})
    return static, lazy


def test_each_door_names_its_parts_all():
    """A door names every name its parts' `__all__` lend, each twice: `from .part import name` under
    `if TYPE_CHECKING:` (what editors, type checkers and code walkers follow) and `"name": "part"` in `_PART`
    (what its __getattr__ imports on first use), and nothing else. `python scripts/doors.py` writes both."""
    bad = []
    for door in sorted(PACKAGES):
        init = (REPO / door.replace(".", "/") / "__init__.py")
        where = init.relative_to(REPO)
        want = {name: part.rsplit(".", 1)[1] for name, part in served(door).items()}
        static, lazy = door_names(init)
        for name, part in want.items():
            if static.get(name) != part:
                bad.append(f"{where}: add {name} to `from .{part} import ...` under `if TYPE_CHECKING:`")
            if lazy.get(name) != part:
                bad.append(f'{where}: add `"{name}": "{part}",` to _PART')
        bad += [f"{where}: `from .{static[n]} import {n}` names what no part's __all__ lends: remove it"
                for n in static if n not in want]
        bad += [f'{where}: _PART\'s "{n}" is what no part\'s __all__ lends: remove it' for n in lazy if n not in want]
    assert not bad, "\n".join(bad + ["(or run `python scripts/doors.py`, which writes every door from the __all__s)"])


def test_zoo_names_its_api_statically():
    """zoo/__init__.py's `_API` (what `zoo.load` and the like import on first use) and its imports under
    `if TYPE_CHECKING:` (what an editor follows) name the same homes."""
    tree = ast.parse((REPO / "zoo" / "__init__.py").read_text())
    static = {(a.asname or a.name): (n.module, a.name) for b in tree.body if type_checking(b)
              for n in b.body if isinstance(n, ast.ImportFrom) for a in n.names}
    api = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", None) == "_API")
    assert static == {k: tuple(v) for k, v in api.items()}

