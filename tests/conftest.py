"""Shared test fixtures: real corpora from ../shared/data (or $ZOO_DATA_DIR)."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ZOO_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
os.environ.setdefault("ZOO_DATA_DIR", str(DATA))


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not (DATA / "MANIFEST.tsv").exists():
        pytest.fail(f"corpora not found at {DATA}; set ZOO_DATA_DIR")
    return DATA


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
