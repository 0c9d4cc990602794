"""zoo status takes the spec names it prints, and names the store's specs once when one is unknown."""
import pytest

from helpers import ran
from zoo.runner.store import Store


@pytest.fixture
def elsewhere(tmp_path):
    """A store holding a spec whose file is not here and is no built-in spec (a user's modern_c.yaml)."""
    db = tmp_path / "zoo.db"
    st = Store(db)
    st.upsert(str(tmp_path / "mine" / "modern_c.yaml"), "gelu-seed1", "smoke", status="finished", step=5, steps=5)
    st.upsert("specs/base.yaml", "base-seed1", "smoke", status="finished", step=5, steps=5)
    return db


def test_status_takes_the_spec_name_it_prints(elsewhere, capsys):
    listed = ran("status", "--runs", elsewhere, capsys=capsys)
    assert listed.returncode == 0 and "modern_c " in listed.stdout, listed
    r = ran("status", "modern_c", "--runs", elsewhere, capsys=capsys)
    assert r.returncode == 0, r.stderr
    assert "gelu-seed1" in r.stdout and "base-seed1" not in r.stdout and "1 trials" in r.stdout, r.stdout


def test_status_of_a_name_that_is_no_spec_names_the_stores_specs_once(elsewhere, capsys):
    r = ran("status", "modern_x", "--runs", elsewhere, capsys=capsys)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r
    assert "did you mean 'modern_c'? Allowed: base, modern_c" in r.stderr, r.stderr
    assert ran("status", "table3_A", "--runs", elsewhere, capsys=capsys).stdout.startswith("no trials of table3_A")  # not run yet
