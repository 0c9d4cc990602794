"""No text sends a reader to a module that is not there (issue 54): the modules that moved into packages
(zoo/spec/, zoo/data/, zoo/model/, zoo/train/, zoo/evidence/) are named by their homes in code, comments, help
texts, messages, docs and specs, and their old names no longer import."""
import importlib.util
import re
import subprocess
from pathlib import Path

import zoo

REPO = Path(__file__).resolve().parents[1]
# a path from the repository root to a Python or shell file (`zoo/evidence/analysis.py`, `runner/cli.py:353`)
PATH = re.compile(r"(?<![\w./-])((?:zoo|runner|reports|scripts|bench|tests|docs)/[\w/.-]*?\w\.(?:py|sh))(?!\w)")
DOTTED = re.compile(r"(?<![\w./-])zoo\.([A-Za-z_]\w*)")  # `zoo.evidence.claims.judge`: its first name after zoo
NOT_MODULES = {  # `zoo.<name>` that names no module, and is right
    "db": "the store's file, runs/zoo.db",
    "components": "the entry-point group of third-party components (the module is zoo.model.components)",
    "nope": "the API test's unknown name",
}
OLD = "analysis batching bpe checkpoints claims compiled_loss components corpora costs decode device encoded " \
      "evalb evalb_params fetch metrics profiles recipe schema sequential specfile stats sweep_axes trees trend yaml12"


def texts(skip_results: bool = False):
    """(path, text) of each tracked text file: git's list, so a fresh clone checks what a reader gets."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in names.split("\0"):
        path = REPO / name
        if not name or (skip_results and name.startswith("results/")) or not path.is_file() \
                or path.stat().st_size > 2_000_000:
            continue
        try:
            yield name, path.read_text()
        except UnicodeDecodeError:  # a store, a figure
            continue


def test_no_text_names_a_missing_file():
    """`zoo/<...>.py`, `runner/<...>.py`, ... in any tracked text (results/ too: a reference README points a reader at
    its code) names a file that exists; a line number after it (`runner/cli.py:353`) is allowed."""
    bad = [f"{name}:{i}: {m.group(1)} does not exist"
           for name, text in texts() for i, line in enumerate(text.splitlines(), 1)
           for m in PATH.finditer(line) if not (REPO / m.group(1)).exists()]
    assert not bad, "\n".join(bad)


def test_no_text_names_a_missing_module():
    """`zoo.<name>...` names a module or package of zoo (zoo.evidence.claims, not the name it had before the move), a
    name of the Python API (zoo.load) or runner/reports/specs as installed. results/ is left out: its reports
    were generated with the names of their day."""
    known = {f.stem for f in (REPO / "zoo").glob("*.py")} | {d.name for d in (REPO / "zoo").iterdir() if d.is_dir()}
    known |= {"runner", "reports", "specs", *zoo.__all__, *NOT_MODULES}
    bad = [f"{name}:{i}: zoo.{m.group(1)} is no module of zoo"
           for name, text in texts(skip_results=True) for i, line in enumerate(text.splitlines(), 1)
           for m in DOTTED.finditer(line) if m.group(1) not in known and not m.group(1).startswith("__")]
    assert not bad, "\n".join(bad)


def test_old_module_names_do_not_import():
    """No import hook serves a moved module under its old name, and no door serves a name that moved out of it
    (zoo.spec's Config, zoo.data's PAD, zoo.train's noam_lr live on the ground floor)."""
    for old in OLD.split():
        if (REPO / "zoo" / f"{old}.py").exists():
            continue
        assert importlib.util.find_spec(f"zoo.{old}") is None, old
        assert old not in dir(zoo) and not hasattr(zoo, old), old
    from zoo import data, spec, train
    for door, name in ((spec, "Config"), (data, "PAD"), (train, "noam_lr")):
        assert name not in dir(door) and not hasattr(door, name), (door.__name__, name)
