"""A file that is not a zoo store (another program's SQLite, /dev/null, a missing store) is never written, and
stores say they are zoo's while older ones still load."""
import hashlib
import sqlite3
from pathlib import Path

import pytest

from helpers import REPO, run


REFERENCE = REPO / "results" / "ablation-cpu2" / "zoo.db"


def _foreign(tmp_path) -> Path:
    f = tmp_path / "other.db"
    c = sqlite3.connect(f)
    c.execute("CREATE TABLE trials (id INTEGER, name TEXT)")  # its own `trials`, not zoo's
    c.execute("INSERT INTO trials VALUES (1, 'x')")
    c.commit()
    c.close()
    return f


@pytest.mark.parametrize("argv", [
    ("status", "--runs", "{f}"), ("status", "--runs", "{f}", "--json"), ("report", "--runs", "{f}", "--out", "{o}"),
    ("merge", "{f}", "{zoo}"), ("merge", "{zoo}", "{f}"), ("merge", "{f}", "{f2}")])
def test_a_foreign_sqlite_file_is_never_written(tmp_path, capsys, argv):
    f, zoo_db = _foreign(tmp_path), tmp_path / "mine.db"
    f2 = tmp_path / "f2.db"
    f2.write_bytes(f.read_bytes())
    from zoo.runner.store import Store
    Store(zoo_db).upsert("s.yaml", "v", "smoke", status="finished")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (f, f2)}
    args = [a.format(f=f, f2=f2, zoo=zoo_db, o=tmp_path / "o") for a in argv]
    code, out, err = run(*args, capsys=capsys)
    assert code == 2 and "is not a zoo results store" in err and "Traceback" not in out + err, (out, err)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (f, f2)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f2.db", "mine.db", "other.db"]  # no -wal, -shm, report


def test_stores_say_they_are_zoos_and_older_ones_still_load(tmp_path, capsys):
    from zoo.runner.store import APPLICATION_ID, Store
    Store(tmp_path / "new.db")
    assert int.from_bytes((tmp_path / "new.db").read_bytes()[68:72], "big") == APPLICATION_ID
    legacy = tmp_path / "legacy.db"
    from zoo.runner.storefile import unpacked
    legacy.write_bytes(unpacked(REFERENCE.with_name("zoo.db.xz")).read_bytes())  # from before the application_id
    digest = hashlib.sha256(legacy.read_bytes()).hexdigest()
    code, out, _ = run("status", "--runs", legacy, capsys=capsys)
    assert code == 0 and "62 trials" in out and hashlib.sha256(legacy.read_bytes()).hexdigest() == digest
    assert run("merge", tmp_path / "new.db", legacy, capsys=capsys)[0] == 0  # read as a source, adopted as INTO
    assert len(Store(tmp_path / "new.db", readonly=True).trials()) == 62


def test_merge_into_a_new_store_from_a_missing_one_creates_nothing(tmp_path, capsys):
    code, _, err = run("merge", tmp_path / "new.db", tmp_path / "missing.db", capsys=capsys)
    assert code == 2 and "no results store there" in err and not (tmp_path / "new.db").exists()


def test_report_on_dev_null_is_an_error(tmp_path, capsys):
    code, _, err = run("report", "--runs", "/dev/null", "--out", tmp_path / "o", capsys=capsys)
    assert code == 2 and "not a regular file" in err
