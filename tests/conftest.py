"""Shared test fixtures: real corpora from ../shared/data (or $ZOO_DATA_DIR)."""
import os
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


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not (DATA / "MANIFEST.tsv").exists():
        pytest.fail(f"corpora not found at {DATA}; set ZOO_DATA_DIR")
    return DATA


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The fast lane (`pytest -m "not slow"`, under a minute) leaves out whole modules that start Ray,
# a browser or real training runs; README's test command runs everything. One list, here, rather
# than a marker line in each module.
SLOW_MODULES = {"test_runner", "test_report_browser", "test_train", "test_cluster_netns", "test_faults"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
