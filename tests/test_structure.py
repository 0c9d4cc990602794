"""The structure stays a straight line (issue 11): spec -> model -> trial -> store -> report.

Read from the source with ast (nothing is imported): no import circle among module-level imports, and
no module imports a later stage, not even lazily inside a function (the CLI modules sit on top)."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"zoo": "zoo", "runner": "zoo.runner", "reports": "zoo.reports"}
# stages in order; a module may import its own stage and earlier ones
STAGES = [
    # the spec, and the corpora it names (validation checks names and splits against zoo.data's catalog)
    {"zoo.errors", "zoo.paths", "zoo.paper", "zoo.result", "zoo.yaml12", "zoo.config", "zoo.specfile",
     "zoo.profiles", "zoo.sweep_axes", "zoo.spec", "zoo.schema", "zoo.corpora", "zoo.fetch",
     "zoo.bpe", "zoo.encoded", "zoo.batching", "zoo.data", "zoo.trees"},
    {"zoo.evalb_params", "zoo.evalb", "zoo.model", "zoo.costs", "zoo.metrics", "zoo.decode", "zoo.stats", "zoo.claims",
     "zoo.recipe", "zoo.compiled_loss", "zoo.checkpoints", "zoo.device"},  # model, scores, the recipe and where it runs
    {"zoo.train"},                                                                        # a trial's work
    {"zoo.runner.store", "zoo.runner.text"},                                              # the store, terminal text
    {"zoo.runner.local", "zoo.runner.trial", "zoo.runner.progress", "zoo.runner.sweep",
     "zoo.runner.plan"},                                                                   # trials on Ray
    {"zoo.reports.peaks", "zoo.reports.runs", "zoo.reports.cells", "zoo.reports.verdicts", "zoo.reports.tables", "zoo.reports.plots",
     "zoo.reports.render", "zoo.reports.sweep", "zoo.reports.power", "zoo.reports.share"},  # the report
]
CLI = {"zoo", "zoo.cli", "zoo.commands", "zoo.runner.cli", "zoo.reports.cli", "zoo.runner", "zoo.reports"}


def modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in FOLDERS.items():
        for f in (REPO / folder).glob("*.py"):
            out[pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"] = f
    return out


def imports(path: Path, name: str, top_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_only else list(ast.walk(tree))
    got = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            got |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            got.add(n.module)
            got |= {f"{n.module}.{a.name}" for a in n.names}  # `from zoo import data`
    return got


def test_every_module_has_a_stage():
    assert set(modules()) - CLI == set().union(*STAGES)


def test_no_import_circle():
    mods = modules()
    graph = {m: {x for x in imports(p, m, top_only=True) if x in mods and x != m} for m, p in mods.items()}
    state: dict[str, int] = {}

    def visit(m, path):
        state[m] = 1
        for x in graph[m]:
            assert state.get(x) != 1, "import circle: " + " -> ".join(path + [x])
            if x not in state:
                visit(x, path + [x])
        state[m] = 2
    for m in graph:
        if m not in state:
            visit(m, [m])


def test_no_module_imports_a_later_stage():
    mods = modules()
    stage = {m: i for i, s in enumerate(STAGES) for m in s}
    bad = [f"{m} (stage {stage[m]}) imports {x} (stage {stage[x]})"
           for m, p in mods.items() if m in stage
           for x in imports(p, m, top_only=False) if x in stage and stage[x] > stage[m]]
    assert not bad, "\n".join(bad)


def test_readme_architecture_lists_every_module():
    """README's Architecture section names each module of zoo/, runner/ and reports/ once, and no other."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Architecture\n", 1)[1].split("\n## ", 1)[0]
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("- `")]
    tree = sorted(f"{folder}/{f.name}" for folder in FOLDERS for f in (REPO / folder).glob("*.py"))
    assert sorted(listed) == tree and len(listed) == len(set(listed))


def test_modules_read_in_one_sitting():
    # one idea per module, each at most 600 lines, in zoo/, runner/ and reports/ alike
    long = {str(f.relative_to(REPO)): n for folder in FOLDERS for f in (REPO / folder).glob("*.py")
            if (n := len(f.read_text().splitlines())) > 600}
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
