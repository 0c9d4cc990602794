"""Store.get on a big store: one row read by its key vs decoding every trial of the spec (what get did).

A temp store holds --trials copies of a committed store's first trial (same spec and profile, new
names; default results/table4-cpu2: ~19 KB a row, its RunResult with per-sentence statistics). get is
timed on --gets keys spread over the store, through a store opened for writing and one opened
read-only; the reference, measured in the same run, decodes every row of the spec once, as
`trials(spec, profile)` does. Then a read-only open with a -wal beside the store: the copy that
keeps a read command from writing beside it.

    .venv/bin/python bench/bench_store.py [--trials 2000] [--gets 200] [--source results/X/zoo.db]
"""
import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]


def build(db: Path, source: Path, n: int) -> list[tuple]:
    """n copies of source's first trial under new names, in one transaction; their keys."""
    shutil.copy(source, db)
    Store(db)  # migrated to this schema if older
    c = sqlite3.connect(db)
    with c:
        cols = [r[1] for r in c.execute("PRAGMA table_info(trials)")]
        row = list(c.execute("SELECT * FROM trials ORDER BY rowid LIMIT 1").fetchone())
        c.execute("DELETE FROM trials")
        i = cols.index("trial")
        c.executemany(f"INSERT INTO trials VALUES ({', '.join('?' * len(cols))})",
                      [row[:i] + [f"{row[i]}-{k}"] + row[i + 1:] for k in range(n)])
    c.close()
    return [(row[cols.index("spec")], f"{row[i]}-{k}", row[cols.index("profile")]) for k in range(n)]


def per_get(st: Store, keys: list[tuple]) -> float:
    t0 = time.perf_counter()
    for key in keys:
        assert st.get(*key).trial == key[1]
    return (time.perf_counter() - t0) / len(keys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--gets", type=int, default=200)
    ap.add_argument("--source", type=Path, default=REPO / "results/table4-cpu2/zoo.db")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "zoo.db"
        keys = build(db, a.source, a.trials)
        sample = keys[::max(1, len(keys) // a.gets)][:a.gets]
        print(f"store: {a.trials} trials of one spec, {db.stat().st_size / 1e6:.1f} MB (rows from {a.source})")

        t0 = time.perf_counter()
        everything = Store(db, readonly=True).trials(*keys[0][::2])  # the reference: every row decoded
        ref = time.perf_counter() - t0
        assert len(everything) == a.trials
        print(f"reference, decode every trial of the spec: {ref * 1e3:9.1f} ms")
        for mode, st in (("write", Store(db)), ("read-only", Store(db, readonly=True))):
            t = per_get(st, sample)
            print(f"get, store opened {mode:9s} {t * 1e3:9.2f} ms a call ({len(sample)} calls), "
                  f"{ref / t:,.0f}x faster than the reference")

        keep = sqlite3.connect(db)  # held open: the writer's rows stay in its -wal
        keep.execute("SELECT 1 FROM trials LIMIT 1").fetchall()
        Store(db).upsert(*keys[0], warning="in the WAL")
        wal = db.with_name("zoo.db-wal").stat().st_size
        t0 = time.perf_counter()
        st = Store(db, readonly=True)
        opened = time.perf_counter() - t0
        assert st.get(*keys[0]).warning == "in the WAL"
        keep.close()
        print(f"read-only open with a {wal / 1e3:.0f} kB -wal beside it (copied to a temp folder): "
              f"{opened * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
