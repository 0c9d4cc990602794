"""A damaged store (issue 38, its store part): one bad row is named (spec, trial, profile, column) and the rest
of the store still reads; `zoo merge` copies the sound rows and names the others; a damaged zoo_meta is a
clear exit 2 with the file untouched; a file is zoo's only when its application_id and its tables agree."""
import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from zoo.runner.storefile import unpacked
from helpers import run

REPO = Path(__file__).resolve().parents[1]
SMALL = unpacked(REPO / "results/table4-cpu2/zoo.db.xz")  # 2 finished trials (wsj_only, wsj_only_pointer), schema 2
LEGACY = unpacked(REPO / "results/quick-cpu2/zoo.db.xz")  # 23 trials, a store from before the application_id
BAD, GOOD = "wsj_only", "wsj_only_pointer"  # the row damaged, the row left sound

# each damage: the SQL that makes it, and a word the row's description must hold (the column)
DAMAGE = {
    "cut-json": (f"UPDATE trials SET metrics = substr(metrics, 1, 100) WHERE trial = '{BAD}'", "metrics"),
    "bad-config": (f"UPDATE trials SET config = json_set(config, '$.model.d_model', 511) WHERE trial = '{BAD}'",
                   "config"),
    "unknown-status": (f"UPDATE trials SET status = 'exploded' WHERE trial = '{BAD}'", "status"),
}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def damaged(tmp_path: Path, kind: str, profile: str | None = None) -> Path:
    """A copy of the small committed store with one row damaged (optionally every row moved to `profile`)."""
    db = tmp_path / "bad" / "zoo.db"
    db.parent.mkdir()
    shutil.copyfile(SMALL, db)
    c = sqlite3.connect(db)
    with c:
        c.execute(DAMAGE[kind][0])
        if profile:
            c.execute("UPDATE trials SET profile = ?", (profile,))
            c.execute("UPDATE points SET profile = ?", (profile,))
    c.close()
    return db


def named(err: str, kind: str) -> bool:
    """The damaged row is named by spec, trial, profile and column, and no traceback is printed."""
    return ("1 damaged row" in err and f"table4_wsj.yaml {BAD} (profile" in err and DAMAGE[kind][1] in err
            and "Traceback" not in err)


@pytest.mark.parametrize("kind", DAMAGE)
def test_status_names_the_damaged_row_and_lists_the_others(tmp_path, capsys, kind):
    db = damaged(tmp_path, kind)
    before = sha(db)
    code, out, err = run("status", "--runs", db, capsys=capsys)
    assert code == 0 and named(err, kind), err
    assert GOOD in out and "1 trials in" in out
    code, out, err = run("status", "--runs", db, "--json", capsys=capsys)
    assert code == 0 and named(err, kind) and f'"trial": "{GOOD}"' in out and f'"trial": "{BAD}"' not in out
    assert sha(db) == before  # a read changes nothing


@pytest.mark.parametrize("kind", DAMAGE)
def test_report_names_the_damaged_row_and_shows_the_others(tmp_path, capsys, kind):
    db = damaged(tmp_path, kind)
    code, out, err = run("report", "--runs", db, "--out", tmp_path / "out", "--format", "md", "--table", "4",
                         capsys=capsys)
    assert code == 0 and named(err, kind), err
    assert "report written" in out and "60.5" in (tmp_path / "out" / "table4.md").read_text()  # GOOD's F1


@pytest.mark.parametrize("kind", DAMAGE)
def test_merge_from_a_damaged_store_copies_the_sound_rows_and_names_the_others(tmp_path, capsys, kind):
    db = damaged(tmp_path, kind)
    new = tmp_path / "new.db"
    code, out, err = run("merge", new, db, capsys=capsys)
    # exit 2: the merged store lacks a trial of the source, which a script must not take for a whole merge
    assert code == 2 and named(err, kind) and "not copied" in err, err
    assert "1 trials copied" in out
    code, out, err = run("status", "--runs", new, "--json", capsys=capsys)
    assert code == 0 and f'"trial": "{GOOD}"' in out and f'"trial": "{BAD}"' not in out and not err


@pytest.mark.parametrize("kind", DAMAGE)
def test_merge_into_a_damaged_store_copies_and_keeps_its_damaged_row(tmp_path, capsys, kind):
    """Merging into a store with a damaged row proceeds (the row is zoo's, its tables agree): the source's
    rows are copied, the damaged row is kept unchanged and named, nothing is lost."""
    db = damaged(tmp_path, kind)
    row = f"SELECT config, metrics, status, updated_at FROM trials WHERE trial = '{BAD}'"
    bad_row = sqlite3.connect(db).execute(row).fetchone()
    code, out, err = run("merge", db, LEGACY, capsys=capsys)
    assert code == 0 and "23 trials copied" in out and named(err, kind) and "kept unchanged" in err, err
    assert sqlite3.connect(db).execute(row).fetchone() == bad_row
    code, out, err = run("status", "--runs", db, capsys=capsys)
    assert code == 0 and "24 trials in" in out and named(err, kind)


@pytest.mark.parametrize("kind", DAMAGE)
def test_power_plan_from_a_damaged_pilot_names_the_row(tmp_path, capsys, kind):
    db = damaged(tmp_path, kind, profile="smoke")
    code, out, err = run("run", REPO / "specs/table3_A.yaml", "--plan", "--power", "--pilot", db,
                         "--profile", "smoke", "--no-measure", capsys=capsys)
    assert code == 0 and named(err, kind), err
    assert "1 trials of profile smoke" in out


def test_a_non_integer_schema_version_is_a_clear_error_and_the_store_untouched(tmp_path, capsys):
    db = tmp_path / "bad" / "zoo.db"
    db.parent.mkdir()
    shutil.copyfile(SMALL, db)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE zoo_meta SET value = 'two' WHERE key = 'schema_version'")
    before = sha(db)
    commands = [("status", "--runs", db), ("report", "--runs", db, "--out", tmp_path / "out"),
                ("merge", tmp_path / "new.db", db), ("merge", db, LEGACY),
                ("run", REPO / "specs/table3_A.yaml", "--plan", "--power", "--pilot", db, "--profile", "smoke",
                 "--no-measure")]
    for argv in commands:
        code, out, err = run(*argv, capsys=capsys)
        assert code == 2 and "schema_version is 'two'" in err and str(db) in err and "Traceback" not in err, argv
        assert sha(db) == before, argv
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "out").exists()


@pytest.fixture
def foreign(tmp_path) -> Path:
    """Another program's SQLite file that happens to carry zoo's application_id."""
    path = tmp_path / "notes.db"
    c = sqlite3.connect(path)
    c.execute("PRAGMA application_id = 2054123313")  # "zoo1"
    with c:
        c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        c.execute("INSERT INTO notes (body) VALUES ('not a trial')")
    c.close()
    return path


def test_merge_into_a_foreign_file_with_zoos_application_id_is_refused_untouched(foreign, tmp_path, capsys):
    before = foreign.read_bytes()
    code, out, err = run("merge", foreign, SMALL, capsys=capsys)
    assert code == 2 and str(foreign) in err and "not zoo's tables" in err and "Traceback" not in err, err
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]  # no -wal, no -shm beside it


def test_status_and_report_on_a_foreign_file_with_zoos_application_id_say_so(foreign, tmp_path, capsys):
    before = foreign.read_bytes()
    for argv in (("status", "--runs", foreign), ("report", "--runs", foreign, "--out", tmp_path / "out")):
        code, out, err = run(*argv, capsys=capsys)
        assert code == 2 and "not zoo's tables" in err and "no such table" not in err and "Traceback" not in err
    assert foreign.read_bytes() == before and not (tmp_path / "out").exists()


def test_an_empty_file_zoo_made_is_an_empty_store(tmp_path, capsys):
    """zoo stopped between setting the application_id and creating its tables: a store with no trials yet,
    read as empty and completed by the next write."""
    path = tmp_path / "zoo.db"
    c = sqlite3.connect(path)
    c.execute("PRAGMA application_id = 2054123313")
    c.close()
    code, out, err = run("status", "--runs", path, capsys=capsys)
    assert code == 0 and "no trials in" in out, err
    code, out, err = run("merge", path, SMALL, capsys=capsys)
    assert code == 0 and "2 trials copied" in out, err


def test_a_schema_1_store_with_a_cut_config_is_read_and_migrated_without_losing_the_row(tmp_path, capsys):
    db = tmp_path / "zoo.db"
    shutil.copyfile(LEGACY, db)
    with sqlite3.connect(db) as c:  # schema 1 reads the trial's variant out of its config: here cut short
        c.execute("UPDATE trials SET config = substr(config, 1, 50) WHERE variant = 'A1'")
    code, out, err = run("status", "--runs", db, capsys=capsys)
    assert code == 0 and "22 trials in" in out and "table3_A.yaml A1 (profile quick): column config" in err, err
    code, out, err = run("merge", db, SMALL, capsys=capsys)  # migrates it to schema 2: the row goes along
    assert code == 0 and "2 trials copied" in out and "A1 (profile quick): column config" in err, err
    assert sqlite3.connect(db).execute("SELECT count(*) FROM trials WHERE trial = 'A1'").fetchone() == (1,)


def test_a_json_column_reads_as_json_loads_reads_it():
    """The store's fast JSON reader gives json.loads' values (NaN, infinities, a repeated key, a lone surrogate
    it refuses itself) and a cut column's error names the column and where it ends."""
    import json
    from zoo.runner.store import _loads
    for text in ('{"a": [0.1, 2.5e-7, NaN, -Infinity, 1e400, 12345678901234567890123]}', '"\\ud800 x"', '{"a": 1, "a": 2}'):
        assert json.dumps(_loads("metrics", text)) == json.dumps(json.loads(text)), text
    with pytest.raises(ValueError, match=r"^column metrics: not valid JSON \(cut short\?\): .* \(character 8\)$"):
        _loads("metrics", '{"a": [1')
