"""What makes a file zoo's store: its schema (tables, columns, the columns added since, the version) and how a
file is known as one before zoo opens it (`identify`: the SQLite application_id, zoo_meta and the tables, read
through an immutable connection that never writes, locks or creates a file)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from zoo.runner.storefile import NotAStore

__all__ = ["ADDED", "ADDED_POINTS", "APPLICATION_ID", "DamagedMeta", "JSON_COLS", "LEGACY_COLUMNS", "META",
           "RESULT_COLUMN", "SCHEMA", "SCHEMA_VERSION", "ZOO_TABLES", "identify"]

# A trial's result (zoo.result.RunResult) is kept in the column `metrics`, its name from before RunResult
# existed; stores already written keep it. This is the one place the two names meet: `upsert(result=...)`
# writes the column, and Trial reads it back as its `result`.
RESULT_COLUMN = "metrics"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS trials (
    spec TEXT NOT NULL,            -- spec path as given (also its stem for display)
    trial TEXT NOT NULL,           -- the trial's name: the variant, plus -seedN on a seeds axis
    variant TEXT NOT NULL,         -- the paper's row name, e.g. A1
    profile TEXT NOT NULL,         -- smoke | cpu | gpu | paper | a profile file
    config_hash TEXT NOT NULL,     -- hash of the fully resolved config
    config TEXT NOT NULL,          -- the resolved config as JSON (zoo.spec.Config)
    paper_table INTEGER, paper_group TEXT, paper_row TEXT,
    status TEXT NOT NULL,          -- pending | running | finished | failed
    step INTEGER DEFAULT 0, steps INTEGER,           -- progress
    {RESULT_COLUMN} TEXT,          -- JSON: the result (zoo.result.RunResult: bleu, dev_ppl, splits, ...)
    best TEXT,                     -- JSON: best values seen (lowest dev_ppl, ...)
    attention TEXT,                -- JSON: one dev sentence's attention weights, each head of one layer
    tokens_seen INTEGER, train_seconds REAL,
    hardware TEXT,                 -- e.g. "cpu x2 threads" or "NVIDIA H100 x1"
    run_dir TEXT, checkpoint TEXT, -- where the trial's files and its last checkpoint are
    error TEXT,                    -- the failure, when status = failed
    experiment TEXT,               -- the Ray Tune experiment folder
    created_at REAL, started_at REAL, finished_at REAL, updated_at REAL,
    placement TEXT, resumed_from INTEGER, warning TEXT,
    analysis TEXT,                 -- the hash of the analysis plan it ran under (zoo.evidence.analysis), NULL: none
    PRIMARY KEY (spec, trial, profile)
);
CREATE TABLE IF NOT EXISTS points (
    spec TEXT NOT NULL, trial TEXT NOT NULL, profile TEXT NOT NULL,
    step INTEGER NOT NULL, loss REAL, lr REAL, tokens_per_s REAL, dev_ppl REAL, elapsed_s REAL, nll REAL,
    PRIMARY KEY (spec, trial, profile, step)
);
"""
# Columns added after the first schema: created on old databases too (before the schema 2 rebuild).
ADDED = {
    "placement": "TEXT",         # JSON: where it ran: node_id, node_ip, hostname, pid, gpu_ids, threads, workers
    "resumed_from": "INTEGER",   # the checkpoint step the latest attempt resumed from (NULL: fresh start)
    "warning": "TEXT",           # something the trial worked around, e.g. an unloadable checkpoint it skipped
    "analysis": "TEXT",          # the analysis plan's hash (zoo run --analysis)
}
ADDED_POINTS = {"nll": "REAL"}  # the unsmoothed training NLL (before it, stores kept only the smoothed loss)
JSON_COLS = ("config", RESULT_COLUMN, "best", "attention", "placement")

# A store says it is zoo's: SQLite's application_id in the file header (offset 68) and a zoo_meta table
# with the schema version, both set on creation. zoo opens a file only after reading them, so another
# tool's database (an argument order swapped, a wrong --runs) is refused byte-for-byte untouched.
APPLICATION_ID = 0x7A6F6F31  # "zoo1"
SCHEMA_VERSION = 2  # 2: the trial's name in its own column, `variant` the variant (1: the name in `variant`)
META = "CREATE TABLE IF NOT EXISTS zoo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
ZOO_TABLES = {"trials", "points", "zoo_meta"}  # a file with zoo's application_id must hold these (or part: new)
# Stores written before the application_id (the committed reference stores among them) are known by
# their tables: zoo's trials columns and a points table.
LEGACY_COLUMNS = {"spec", "variant", "profile", "config_hash", "config", "status", RESULT_COLUMN, "run_dir"}


class DamagedMeta(NotAStore):
    """zoo's store, but its zoo_meta is unreadable: nothing may read or write it on a guess."""


def identify(path: Path) -> str:
    """'new' (absent or empty: a run may create the store), 'zoo' or 'legacy' (a zoo store from before
    the application_id); NotAStore for anything else, DamagedMeta for a zoo_meta that cannot be read. A
    file is zoo's when its application_id and its tables agree: four header bytes are not proof. Reads the header bytes, then at most the schema
    through an immutable connection, which never writes, locks or creates a file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "new"
    if not path.is_file():
        raise NotAStore("it is not a regular file")
    if st.st_size == 0:
        return "new"
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        raise NotAStore("it is not an SQLite database")
    app = int.from_bytes(head[68:72], "big")
    if app not in (0, APPLICATION_ID):
        raise NotAStore(f"its SQLite application_id is 0x{app:08x}, another program's (zoo's is 0x{APPLICATION_ID:08x})")
    try:
        c = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)
        try:
            tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            cols = {r[1] for r in c.execute("PRAGMA table_info(trials)")}
            version = c.execute("SELECT value FROM zoo_meta WHERE key='schema_version'").fetchone() \
                if "zoo_meta" in tables else None
        finally:
            c.close()
    except sqlite3.DatabaseError as e:
        raise NotAStore(f"it cannot be read as SQLite ({e})") from None
    if app == APPLICATION_ID:
        ours = {t for t in tables if not t.startswith("sqlite_")} <= ZOO_TABLES
        if not (ours or {"trials", "points"} <= tables) or (cols and not LEGACY_COLUMNS <= cols):
            raise NotAStore(f"it carries zoo's application_id but not zoo's tables (it holds "
                            f"{', '.join(sorted(tables)[:5])}): another program's file")
        if version and not version[0].strip().isdigit():  # read before anything trusts or rewrites it
            raise DamagedMeta(f"its zoo_meta table is damaged: schema_version is {version[0]!r}, not a whole "
                              "number, so zoo cannot tell which schema it holds")
        if version and int(version[0]) > SCHEMA_VERSION:
            raise NotAStore(f"it has store schema {version[0]}, newer than this zoo's {SCHEMA_VERSION}: upgrade zoo")
        # zoo's tables, or part of them: a store zoo was stopped while creating (no rows yet), read as empty
        return "zoo" if {"trials", "points"} <= tables else "new"
    if not tables:  # an SQLite file with nothing in it, no application_id: someone else's, or nobody's
        raise NotAStore("it is an empty SQLite database that zoo did not create")
    if "points" in tables and LEGACY_COLUMNS <= cols and "zoo_meta" not in tables:
        return "legacy"
    raise NotAStore(f"it holds another program's tables ({', '.join(sorted(tables)[:5])})")
