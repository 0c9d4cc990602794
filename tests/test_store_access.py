"""The store's access paths (issue 33, part 3): `get` reads one row by its key, a read-only store decodes
each row once, and the read commands (`zoo status`, `zoo report`) change no byte beside the store, a
-wal included, while showing every trial the WAL holds."""
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest

from zoo.runner import store as store_mod
from zoo.runner.store import Store
from zoo.runner.storefile import unpacked
from helpers import run

REPO = Path(__file__).resolve().parents[1]
COMMITTED = sorted({*REPO.glob("results/*/zoo.db.xz"), *REPO.glob("results/*/*/zoo.db.xz")})  # compressed
SMALL = unpacked(REPO / "results/table4-cpu2/zoo.db.xz")  # 2 finished trials, schema 2: the quickest to copy


def state(folder: Path) -> dict[str, str]:
    """The folder's listing and every file's sha256."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def grow(db: Path, n: int) -> list[tuple]:
    """Copies of the store's first trial under new names, n in all, in one transaction (fast): a big store.
    Returns their keys."""
    c = sqlite3.connect(db)
    with c:
        cols = [r[1] for r in c.execute("PRAGMA table_info(trials)")]
        row = list(c.execute("SELECT * FROM trials ORDER BY rowid LIMIT 1").fetchone())
        spec, name, profile = row[cols.index("spec")], row[cols.index("trial")], row[cols.index("profile")]
        rows = [row[:cols.index("trial")] + [f"{name}-copy{i}"] + row[cols.index("trial") + 1:] for i in range(n)]
        c.executemany(f"INSERT INTO trials VALUES ({', '.join('?' * len(cols))})", rows)
    c.close()
    return [(spec, f"{name}-copy{i}", profile) for i in range(n)]


def wal_store(folder: Path, extra: int = 3, shm: bool = False, fresh: bool = False) -> int:
    """folder/zoo.db with a -wal beside it (and its -shm with shm), as a running or killed `zoo run`
    leaves them: `extra` trials, copies of SMALL's, are in the WAL only. fresh: the store is new, its
    schema in the WAL too. Returns how many trials the store holds."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as w:
        db = Path(w) / "zoo.db"
        if fresh:  # the file as a new store's first transaction finds it: a header in WAL mode, no table
            c = sqlite3.connect(db)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute(f"PRAGMA application_id = {store_mod.APPLICATION_ID}")
            c.close()
        else:
            shutil.copy(SMALL, db)
            Store(db)  # adopted and closed: checkpointed, nothing but zoo.db
        keep = sqlite3.connect(db)  # a second connection: the writer's closes do not checkpoint the WAL
        keep.execute("SELECT 1 FROM sqlite_master").fetchall()
        st = Store(db)
        src = Store(SMALL, readonly=True).trials()[0]
        for i in range(extra):
            st.upsert(src.spec, f"{src.trial}-wal{i}", src.profile, status="finished", config=src.config,
                      result=src.result, paper_table=src.paper_table, paper_group=src.paper_group,
                      paper_row=src.paper_row, created_at=time.time())
        for name in ("zoo.db", "zoo.db-wal") + (("zoo.db-shm",) if shm else ()):
            shutil.copy(Path(w) / name, folder / name)
        keep.close()
    hidden = sqlite3.connect(f"{(folder / 'zoo.db').as_uri()}?immutable=1", uri=True)
    try:  # the fixture is what it says: the file alone shows fewer trials
        seen = hidden.execute("SELECT count(*) FROM trials").fetchone()[0] if not fresh else 0
    except sqlite3.OperationalError:  # fresh: no table in the file yet
        seen = 0
    hidden.close()
    total = extra + (0 if fresh else len(Store(SMALL, readonly=True).trials()))
    assert seen < total and (folder / "zoo.db-wal").stat().st_size > 0
    return total


# -- get ---------------------------------------------------------------------------------------------
def test_get_decodes_only_the_row_it_returns(tmp_path, monkeypatch):
    db = tmp_path / "zoo.db"
    shutil.copy(SMALL, db)
    keys = grow(db, 40)
    decoded = []
    real = store_mod._decode
    monkeypatch.setattr(store_mod, "_decode", lambda row: decoded.append(row["trial"]) or real(row))
    st = Store(db)
    t = st.get(*keys[17])
    assert t.key == keys[17] and decoded == [keys[17][1]]  # one row read by its key, not the spec's 40
    assert st.get(keys[0][0], "no-such-trial", keys[0][2]) is None and len(decoded) == 1
    # read-only: every row decoded once per Store, however often a command asks
    ro = Store(db, readonly=True)
    decoded.clear()
    first = ro.trials()
    assert len(decoded) == len(first) == 42
    assert ro.trials() == first and ro.trials(profile=keys[0][2]) and ro.get(*keys[3]) is not None
    assert len(decoded) == 42


def test_get_finds_a_trial_of_a_schema_1_store_by_its_name(tmp_path):
    legacy = REPO / "results/quick-cpu2/zoo.db.xz"  # schema 1: the trial's name in `variant`
    st = Store(legacy, readonly=True)
    t = st.trials()[-1]
    assert st.get(*t.key) == t


def test_get_is_quick_on_a_2000_trial_store(tmp_path):
    """A generous bound (the bench measures it: bench/bench_store.py): decoding the spec's 2000 rows,
    as get once did, takes seconds."""
    db = tmp_path / "zoo.db"
    shutil.copy(SMALL, db)
    keys = grow(db, 2000)
    for st in (Store(db), Store(db, readonly=True)):
        t0 = time.perf_counter()
        for key in keys[::100]:
            assert st.get(*key).trial == key[1]
        assert (time.perf_counter() - t0) / len(keys[::100]) < 0.2


def test_result_is_written_through_its_column(tmp_path):
    st = Store(tmp_path / "zoo.db")
    src = Store(SMALL, readonly=True).trials()[0]
    st.upsert("s.yaml", "a", "p", status="finished", result=src.result)
    st.upsert("s.yaml", "b", "p", status="finished", metrics=src.result)  # the column's own name, as before
    assert st.get("s.yaml", "a", "p").result == st.get("s.yaml", "b", "p").result == src.result


# -- read commands write nothing -----------------------------------------------------------------------
@pytest.mark.slow  # reports every committed store (up to 25 MiB of xz each)
@pytest.mark.parametrize("db", COMMITTED, ids=lambda p: str(p.parent.relative_to(REPO / "results")))
def test_status_and_report_change_nothing_beside_a_committed_store(db, tmp_path, capsys):
    folder = tmp_path / "store"
    folder.mkdir()
    shutil.copy(db, folder / db.name)  # zoo.db.xz, read by the zoo.db path beside it
    before = state(folder)
    code, out, err = run("status", "--runs", folder / "zoo.db", "--json", capsys=capsys)
    assert code == 0, err
    assert len(json.loads(out)) == len(Store(db, readonly=True).trials())
    assert '_stats"' not in out  # per-sentence statistics are the bootstrap's (66 MB of trend-cpu2's 67), not for reading
    # one table: every table reads the store through the same open (all trials); the WAL tests build all
    code, _, err = run("report", "--runs", folder / "zoo.db", "--out", tmp_path / "out", "--format", "md",
                       "--table", "2", capsys=capsys)
    assert code == 0, err
    assert state(folder) == before


@pytest.mark.parametrize("shm", [False, True], ids=["wal", "wal+shm"])
def test_status_and_report_read_the_wal_and_change_nothing(tmp_path, capsys, shm):
    folder = tmp_path / "store"
    total = wal_store(folder, shm=shm)
    before = state(folder)
    code, out, err = run("status", "--runs", folder / "zoo.db", "--json", capsys=capsys)
    assert code == 0 and len(json.loads(out)) == total, err  # the WAL's trials too
    assert state(folder) == before  # not checkpointed, no -shm made
    code, _, err = run("report", "--runs", folder, "--out", tmp_path / "out", "--format", "md", capsys=capsys)
    assert code == 0, err
    assert state(folder) == before


def test_a_new_store_whose_schema_is_still_in_its_wal_is_read(tmp_path, capsys):
    folder = tmp_path / "store"
    total = wal_store(folder, fresh=True)
    before = state(folder)
    code, out, err = run("status", "--runs", folder, "--json", capsys=capsys)
    assert code == 0 and len(json.loads(out)) == total, err
    assert state(folder) == before


def test_an_empty_wal_left_beside_a_store_is_no_rows(tmp_path, capsys):
    folder = tmp_path / "store"
    folder.mkdir()
    shutil.copy(SMALL, folder / "zoo.db")
    (folder / "zoo.db-wal").touch()  # a writer killed before its first frame
    before = state(folder)
    code, out, err = run("status", "--runs", folder, "--json", capsys=capsys)
    assert code == 0 and len(json.loads(out)) == 2, err
    assert state(folder) == before


def test_a_read_that_overlaps_a_writers_checkpoint_is_read_again(tmp_path, monkeypatch):
    """Read-only, the store is read without a lock: a file that changed during a read is read again."""
    db = tmp_path / "zoo.db"
    shutil.copy(SMALL, db)
    st = Store(db, readonly=True)
    stamps = iter([(0,), (1,)])  # the first read: the file changed under it
    real = store_mod._stamp
    monkeypatch.setattr(store_mod, "_stamp", lambda p: next(stamps, None) or real(p))
    assert len(st.trials()) == 2 and next(stamps, "used") == "used"


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root")
@pytest.mark.parametrize("wal_readable", [True, False], ids=["wal", "unreadable-wal"])
def test_a_wal_store_in_a_read_only_folder_shows_every_trial_or_says_why_not(wal_readable, as_nobody):
    root = Path(tempfile.mkdtemp(prefix="zoo-ro-"))  # not under pytest's root-only folder
    folder = root / "store"
    try:
        root.chmod(0o755)
        total = wal_store(folder)
        before = state(folder)
        for p in folder.iterdir():
            p.chmod(0o444 if wal_readable or not p.name.endswith("-wal") else 0o000)
        folder.chmod(0o555)
        code, out, err = as_nobody("status", "--runs", folder / "zoo.db", "--json")
        if code == 0:  # never fewer trials than the store holds
            assert wal_readable and len(json.loads(out)) == total, err
        else:  # or exit 2, saying why
            assert not wal_readable and code == 2 and "cannot read" in err and "Traceback" not in err, err
        folder.chmod(0o755)
        for p in folder.iterdir():
            p.chmod(0o644)
        assert state(folder) == before
    finally:
        folder.chmod(0o755)
        shutil.rmtree(root)


def test_points_keep_the_unsmoothed_training_nll_and_old_stores_gain_the_column(tmp_path):
    """Issue 34: a curve point stores the training NLL beside the label-smoothed loss; a store written before
    the column existed gains it when opened for writing, and its old points read back with nll None."""
    old = tmp_path / "old.db"
    shutil.copy(SMALL, old)
    before = {r[1] for r in sqlite3.connect(old).execute("PRAGMA table_info(points)")}
    assert "nll" not in before  # the committed store predates the column
    st = Store(old)
    spec, trial, profile = next((t.spec, t.trial, t.profile) for t in st.trials())
    old_points = st.points(spec, trial, profile)
    assert old_points and all(p.nll is None for p in old_points)
    st.add_points(spec, trial, profile, [{"step": 10**6, "loss": 3.1, "nll": 2.7}])
    got = {p.step: p for p in Store(old).points(spec, trial, profile)}
    assert got[10**6].nll == 2.7 and got[10**6].loss == 3.1
