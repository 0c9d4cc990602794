"""Shared test fixtures: real corpora from ../shared/data (or $ZOO_DATA_DIR), and `zoo` run as user nobody."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ZOO_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
# Absolute for everything the tests start: README's `ZOO_DATA_DIR=../shared/data` is relative to the
# checkout, and a `zoo` or a Ray worker started in a temporary folder would otherwise look elsewhere.
os.environ["ZOO_DATA_DIR"] = str(DATA)
# Tests never reach the internet: a corpus missing from a test's data dir is an error, unless the test
# turns fetching on against its loopback mirror (ZOO_DOWNLOAD=1, ZOO_DATA_MIRROR=http://127.0.0.1:...).
os.environ["ZOO_DOWNLOAD"] = "0"
# One torch thread in this process and every process it starts (zoo train, bench, a Ray trial sets its own): on a
# busy 2-core machine a second thread made a tiny model's step about 12x slower (other processes hold the cores
# it spins for), and one thread gives the same sums however busy the machine is.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not (DATA / "MANIFEST.tsv").exists():
        pytest.fail(f"corpora not found at {DATA}; set ZOO_DATA_DIR")
    return DATA


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The fast lane is `pytest -m "not slow"`: a test (or a module, with `pytestmark = pytest.mark.slow`) that
# starts Ray, a browser or a real training run says so with the marker (registered in pyproject.toml).


# -- zoo as an unprivileged user (tests/test_faults.py, tests/test_store_access.py) ------------------
DROP = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


def readable_zoo(tmp_root: Path) -> Path:
    """A copy of the zoo package as this process imports it (zoo/, and zoo.runner, zoo.reports, zoo.specs
    wherever they live: an editable install maps them to runner/, reports/, specs/) in a folder anyone may
    read: the checkout may sit in a private folder (mode 0700: `mktemp -d`, root's home) nobody cannot enter."""
    import importlib
    import shutil
    import zoo
    keep = shutil.ignore_patterns("__pycache__", "*.pyc")
    dst = tmp_root / "zoo"
    shutil.copytree(Path(zoo.__file__).parent, dst, ignore=keep)
    from zoo.spec import specs_dir
    for sub in ("runner", "reports", "specs"):
        if not (dst / sub).exists():
            src = specs_dir() if sub == "specs" else Path(importlib.import_module(f"zoo.{sub}").__path__[0])
            shutil.copytree(src, dst / sub, ignore=keep)
    for p in [tmp_root, *tmp_root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return tmp_root


@pytest.fixture(scope="session")
def as_nobody():
    """`zoo ARGS` as an unprivileged user (root may write any file, read-only or not), importing a readable
    copy of the package from a readable folder. Skipped, saying why, when that user cannot run this Python
    with its packages at all (a virtualenv inside a private folder)."""
    import shutil
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="zoo-nobody-"))
    try:
        root.chmod(0o755)
        readable_zoo(root / "src")
        env = os.environ | {"PYTHONPATH": str(root / "src"), "PYTHONDONTWRITEBYTECODE": "1"}

        def run(*args, timeout=600, extra_env=None):
            r = subprocess.run([*DROP, sys.executable, "-m", "zoo.cli", *map(str, args)], cwd=root,
                               env=env | (extra_env or {}), capture_output=True, text=True, timeout=timeout)
            return r.returncode, r.stdout, r.stderr

        probe = subprocess.run([*DROP, sys.executable, "-c", "import torch, zoo.cli, zoo.runner.store; "
                                "import zoo; print(zoo.__file__)"], cwd=root, env=env, capture_output=True,
                               text=True, timeout=600)
        if probe.returncode != 0 or not probe.stdout.strip().startswith(str(root)):
            pytest.skip(f"user nobody cannot run {sys.executable} with its packages from here (its virtualenv "
                        f"is in a folder that user cannot enter?): {(probe.stderr or probe.stdout).strip()[-300:]}")
        yield run
    finally:
        shutil.rmtree(root, ignore_errors=True)
