"""One list per fact, one direction per arrow (issue 54, item 3), read from the source with ast (fast, nothing
trained): the runs are data (no page, cell or render in reports/runs.py, not even inside a function), the config
reaches the model only for its hash, zoo's built-in components are listed once (zoo.model.components.BUILT_IN,
nothing re-lists their classes), and the report's CLI names no page (the registry, reports/pages.py, does)."""
import ast
from pathlib import Path

from zoo.model import components
from zoo.reports import pages

REPO = Path(__file__).resolve().parents[1]


def imported(path: Path) -> dict[str, set[str]]:
    """Every module a file imports, anywhere in it (functions too) -> the functions that import it ("" top)."""
    tree = ast.parse(path.read_text())
    out: dict[str, set[str]] = {}

    def visit(node, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for a in child.names:
                    out.setdefault(a.name, set()).add(where)
            elif isinstance(child, ast.ImportFrom) and child.module:
                for a in child.names:
                    out.setdefault(child.module, set()).add(where)
                    out.setdefault(f"{child.module}.{a.name}", set()).add(where)
            visit(child, child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where)
    visit(tree, "")
    return out


def test_the_runs_are_data_they_import_no_page_cell_or_render():
    got = imported(REPO / "reports/runs.py")
    assert not {m for m in got if m.startswith(("zoo.reports.pages", "zoo.reports.cells", "zoo.reports.render"))}
    assert not {m for m in got if m in ("zoo.reports", "zoo.reports.frames")}


def test_the_config_reaches_the_model_only_for_its_hash():
    got = imported(REPO / "zoo/config.py")
    up = {m: where for m, where in got.items() if m == "zoo.model" or m.startswith("zoo.model.")}
    # the JSON Schema's component names are the schema's (zoo.spec.schema); the hash's third-party package
    # versions are the one arrow left
    assert set().union(*up.values()) <= {"config_hash"}, up


def _builtin_classes() -> dict[str, str]:
    """BUILT_IN's classes: class name -> the module that defines it."""
    return {ref.partition(":")[2]: ref.partition(":")[0] for names in components.BUILT_IN.values()
            for ref, _ in names.values()}


def test_each_built_in_component_is_listed_once():
    classes = _builtin_classes()
    assert len(classes) == 12 and {"FeedForward", "SwiGLU", "RotaryPositions", "MultiHeadAttention"} <= set(classes)
    # nothing outside a definition names them at module level: no second list handing them to the registry
    for path in (REPO / "zoo").rglob("*.py"):
        for stmt in ast.parse(path.read_text()).body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.Import, ast.ImportFrom)):
                continue
            named = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} | \
                    {n.attr for n in ast.walk(stmt) if isinstance(n, ast.Attribute)}
            assert not named & set(classes), (path.relative_to(REPO), stmt.lineno, named & set(classes))
    assert not hasattr(components, "provide")
    # each entry says where its class is defined, and that is where it is (zoo's in zoo.model.transformer)
    transformer = ast.parse((REPO / "zoo/model/transformer.py").read_text())
    defined = {n.name for n in transformer.body if isinstance(n, ast.ClassDef)}
    assert {c for c, m in classes.items() if m == "zoo.model.transformer"} <= defined
    assert {m for c, m in classes.items() if c not in defined} == {"torch.nn"}  # LayerNorm, RMSNorm


def test_the_report_cli_names_no_page():
    names = {p.name for p in pages.PAGES} | {f"table{n}" for n in pages.paper_tables()}
    tree = ast.parse((REPO / "reports/cli.py").read_text())
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & names
    assert [p.name for p in pages.PAGES if p.on_index] == ["table3"]  # the index's figure: the registry says whose


def test_the_runs_columns_are_spelt_once():
    """The run's column group (state, profile, data, ...) is reports/cells.py's RUN_COLUMNS; a row type takes
    its columns from there, so no other file declares a column of the group "run"."""
    spelt = []
    for path in (REPO / "reports").glob("*.py"):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("col", "text_col", "Column") and \
                    any(isinstance(a, ast.Constant) and a.value == "run" for a in n.args):
                spelt.append(f"{path.name}:{n.lineno}")
    assert spelt and {s.partition(":")[0] for s in spelt} == {"cells.py"}, spelt
