"""The results store: one SQLite database (WAL) with one row per trial, the single source reports read.

A trial is keyed by (spec, trial, profile): the trial's name (`A1-seed2`), with the variant it
runs (`A1`) in a column of its own. Reads return zoo.result.Trial and Point records. `config_hash` is the hash of the fully resolved config:
a finished row with the same hash means "already done, skip". Training curves go to `points`
(one row per logged step). Plain sqlite3, no ORM, no Ray: reports import this module too.
A store opened read-only (zoo status, zoo report) is never written, nor is anything beside it.
A compressed store (zoo.db.xz: how results/ commits its reference stores) reads as the store it holds,
streamed within a cap (zoo.runner.storefile.MAX_UNPACKED_MB).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import time
import weakref
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from zoo.config import Config
from zoo.errors import UserError
from zoo.result import Point, Trial, TrialStatus
from zoo.runner.storefile import (STORE_NAME, NotAStore, locate, read_copy, refuse_compressed, refuse_shadowing,
                                 unpacked, wal_header)
from zoo.runner.store_schema import (ADDED, ADDED_POINTS, APPLICATION_ID, JSON_COLS, LEGACY_COLUMNS, META,  # noqa: F401
                                     RESULT_COLUMN, SCHEMA, SCHEMA_VERSION, ZOO_TABLES, DamagedMeta, identify)

STATES = tuple(s.value for s in TrialStatus)


DEFAULT_STORAGE = Path("runs")  # `zoo run`'s --storage, relative to where it runs


def default_path(storage: str | Path | None = None) -> Path:
    """The results store inside a storage folder (default ./runs/zoo.db): its one home."""
    return Path(storage or DEFAULT_STORAGE) / STORE_NAME


class Store:
    """The store, opened for writing (creating the schema, migrating an older one) or, with readonly,
    strictly for reading: a read command never writes, not even a schema into an empty file, and
    leaves no byte beside the store changed (see _read_copy and _rows)."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path, self.readonly = Path(path), readonly
        self._decoded: dict[tuple, Trial] = {}  # read-only: (rowid, updated_at) -> Trial: a row decoded once
        self._keys: dict[str, str] = {}  # table -> its trial column (_key)
        self.damaged: list[str] = []  # read-only: the rows a read skipped, one line each (see _decode_row)
        if not readonly:  # its rows would go to a temp copy, then be lost
            refuse_compressed(self.path)
        plain = unpacked(self.path)
        copy = read_copy(plain)  # a temp copy when a WAL is beside the store (see there)
        if copy:  # removed when this Store goes
            drop = weakref.finalize(self, shutil.rmtree, copy, ignore_errors=True)
        self._file = copy / STORE_NAME if copy else plain  # what read-only connections open
        kind = identify(self._file)  # before any connection: a foreign file is never opened for writing
        if readonly:
            self.empty = kind == "new"  # an empty file: nothing has run yet
            return
        if copy:  # a writer needed it only to identify a store whose schema may still be in its WAL
            drop()
        self.empty = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._conn() as c:
            c.execute("PRAGMA journal_mode=WAL")  # readers (zoo status, reports) never block writers
            if kind != "zoo":  # a new store, or one written before stores said they were zoo's
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            have = {r["name"] for r in c.execute("PRAGMA table_info(trials)")}
            if have:
                for col, typ in ADDED.items():
                    if col not in have:
                        c.execute(f"ALTER TABLE trials ADD COLUMN {col} {typ}")
                if "trial" not in have:
                    _migrate_trial_column(c)
                have_points = {r["name"] for r in c.execute("PRAGMA table_info(points)")}
                for col, typ in ADDED_POINTS.items():
                    if have_points and col not in have_points:
                        c.execute(f"ALTER TABLE points ADD COLUMN {col} {typ}")
            c.executescript(SCHEMA + META + ";")
            c.execute("INSERT OR REPLACE INTO zoo_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    @contextmanager
    def _conn(self):
        if self.readonly:  # immutable: no lock, no -shm, no write; a WAL's rows were copied in (_read_copy)
            c = sqlite3.connect(f"{self._file.resolve().as_uri()}?immutable=1", uri=True)
        else:
            c = sqlite3.connect(self.path, timeout=30)
        c.row_factory = sqlite3.Row
        try:
            with c:  # one transaction: committed on success, rolled back on error
                yield c
        finally:
            c.close()

    # -- writes ---------------------------------------------------------------------------------
    def merge(self, other: "Store") -> tuple[int, int]:
        """Copy another store's trials and their curves into this one (runs on several machines, or
        two `zoo run`s with their own --storage, reported together). Where both hold a trial, the one
        updated last wins, with its curve. Returns (trials copied, trials kept as they were).
        The other store may be older (schema 1): its rows are read as this schema's."""
        with self._conn() as c:
            columns = {r["name"] for r in c.execute("PRAGMA table_info(trials)")}
            mine = {(r[0], r[1], r[2]): r[3] or 0
                    for r in c.execute("SELECT spec, trial, profile, updated_at FROM trials")}
        copied = kept = 0
        pkey = other._key("points")
        for r in other._rows("SELECT * FROM trials"):
            if other._decode_row(dict(r)) is None:  # typed before anything: a damaged row is left out,
                continue                            # named in other.damaged (cmd_merge prints them)
            row = _current(dict(r))  # a schema 1 source is read as it is
            key = row["spec"], row["trial"], row["profile"]
            if key in mine and mine[key] >= (row["updated_at"] or 0):
                kept += 1
                continue
            pts = other._rows(f"SELECT * FROM points WHERE spec=? AND {pkey}=? AND profile=?", key)
            row = {k: v for k, v in row.items() if k in columns}  # copied as stored
            with self._conn() as c:  # one transaction per trial: its row and its curve together
                c.execute("DELETE FROM trials WHERE spec=? AND trial=? AND profile=?", key)
                c.execute("DELETE FROM points WHERE spec=? AND trial=? AND profile=?", key)
                _insert(c, "trials", row)
                for pt in pts:
                    _insert(c, "points", {("trial" if k == pkey else k): pt[k] for k in pt.keys()})
            copied += 1
        return copied, kept

    def upsert(self, spec: str, trial: str, profile: str, *, status: TrialStatus | str | None = None,
               config: Config | dict | None = None, variant: str | None = None, **fields) -> None:
        """Insert or update one trial's row; JSON columns take Python objects or zoo.result models.
        The variant is `variant=` when given, else the config's, else (a new row) the trial's name.
        `result=` is the RunResult (stored in RESULT_COLUMN; `metrics=` names that column directly)."""
        if "result" in fields:
            fields[RESULT_COLUMN] = fields.pop("result")
        if config:
            config = config if isinstance(config, Config) else Config.model_validate(config)
            fields["config"], variant = config, variant or config.variant
        elif config is not None:
            fields["config"] = config  # {}: not known yet
        if variant:
            fields["variant"] = variant
        if status is not None:
            fields["status"] = TrialStatus(status).value  # ValueError for anything else
        fields = {k: (json.dumps(v.model_dump(mode="json") if isinstance(v, BaseModel) else v, default=str)
                      if k in JSON_COLS and v is not None else v)
                  for k, v in fields.items()}
        now = time.time()
        fields["updated_at"] = now
        with self._conn() as c:
            exists = c.execute("SELECT 1 FROM trials WHERE spec=? AND trial=? AND profile=?",
                               (spec, trial, profile)).fetchone()
            if exists:
                sets = ", ".join(f"{k}=?" for k in fields)
                c.execute(f"UPDATE trials SET {sets} WHERE spec=? AND trial=? AND profile=?",
                          (*fields.values(), spec, trial, profile))
            else:
                _insert(c, "trials", {"spec": spec, "trial": trial, "variant": trial, "profile": profile,
                                      "created_at": now, "status": "pending", "config_hash": "",
                                      "config": "{}", **fields})

    def add_points(self, spec: str, trial: str, profile: str, points: list[Point | dict]) -> None:
        cols = [c for c in Point.model_fields if c != "step"]
        with self._conn() as c:
            for pt in map(Point.model_validate, points):
                old = c.execute("SELECT * FROM points WHERE spec=? AND trial=? AND profile=? AND step=?",
                                (spec, trial, profile, pt.step)).fetchone()
                merged = {k: (getattr(pt, k) if getattr(pt, k) is not None else (old[k] if old else None))
                          for k in cols}  # old[k]: a sqlite row, read by column name
                _insert(c, "points", {"spec": spec, "trial": trial, "profile": profile, "step": pt.step, **merged},
                        replace=True)

    def clear_points(self, spec: str, trial: str, profile: str) -> None:
        with self._conn() as c:
            c.execute("DELETE FROM points WHERE spec=? AND trial=? AND profile=?", (spec, trial, profile))

    # -- reads ----------------------------------------------------------------------------------
    def trials(self, spec: str | None = None, profile: str | None = None) -> list[Trial]:
        where = {k: v for k, v in (("spec", spec), ("profile", profile)) if v is not None}
        return self._select(where, " ORDER BY created_at, spec, variant")

    def holds_trials(self) -> bool:
        """Whether trials() would return any: rows decoded only until one is whole (a damaged row is skipped
        as trials() skips it), so asking costs one decode, not the whole store's."""
        if self.empty:
            return False
        for r in self._rows("SELECT rowid AS _rowid, * FROM trials"):
            if _decode_row_quietly(dict(r)) is not None:
                return True
        return False

    def run_dirs(self) -> list[tuple[str, str, str, str]]:
        """(spec, trial, profile, its folder) of every row that names a folder: who holds which folder."""
        key = self._key("trials")
        return [(r["spec"], r["trial"], r["profile"], r["run_dir"]) for r in
                self._rows(f"SELECT spec, {key} AS trial, profile, run_dir FROM trials WHERE run_dir IS NOT NULL")]

    def get(self, spec: str, trial: str, profile: str) -> Trial | None:
        """One trial by its key: one row found through the primary key's index, and only it decoded."""
        return next(iter(self._select({"spec": spec, "trial": trial, "profile": profile})), None)

    def points(self, spec: str, trial: str, profile: str) -> list[Point]:
        if self.empty:
            return []
        rows = self._rows(f"SELECT * FROM points WHERE spec=? AND {self._key('points')}=? AND profile=? "
                          "ORDER BY step", (spec, trial, profile))
        return [Point.model_validate(dict(r)) for r in rows]

    def _select(self, where: dict, order: str = "") -> list[Trial]:
        """The trials rows matching `where` (column: value), decoded. A read-only Store decodes each row
        once, however often a command asks; a writer's rows change with every upsert, and the records
        it hands out are the caller's to change (progress updates a trial's `best` in place)."""
        if self.empty:
            return []
        if "trial" in where:  # a schema 1 store (read-only, not migrated) names the trial `variant`
            where = {(self._key("trials") if k == "trial" else k): v for k, v in where.items()}
        cond = " WHERE " + " AND ".join(f"{k}=?" for k in where) if where else ""
        rows = self._rows(f"SELECT rowid AS _rowid, * FROM trials{cond}{order}", tuple(where.values()))
        if not self.readonly:
            return [self._decode_row(dict(r)) for r in rows]
        keys = [(r["_rowid"], r["updated_at"]) for r in rows]  # a row a writer changed since: decoded anew
        for key, r in zip(keys, rows):
            if key not in self._decoded:
                self._decoded[key] = self._decode_row(dict(r))
        return [t for key in keys if (t := self._decoded[key])]  # None: a damaged row, skipped

    def _decode_row(self, row: dict) -> Trial | None:
        """A row as its record, or None for a damaged one (cut JSON, a config that fails validation, an
        unknown status): read-only, it is skipped and named in self.damaged, so one bad row does not
        hide the rest. A writer (zoo run) stops instead: it would run that trial again over the row."""
        try:
            return _decode(row)
        except (ValueError, TypeError, AttributeError) as e:  # ValidationError, _BadJSON are ValueErrors
            what = _damage(row, e)
        if not self.readonly:
            raise UserError(f"{self.path} holds a damaged row: {what}. zoo stops rather than overwrite it; "
                            "repair or delete that row (sqlite3), or run with another --storage")
        if what not in self.damaged:
            self.damaged.append(what)
        return None

    def _rows(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        """One query's rows. Read-only, the file is read as immutable, without a lock, while a writer
        that started after the store was opened may checkpoint into it (each of its connections does,
        on close, before it deletes its WAL): rows are kept only when no WAL was beside the file before
        and after the read and the file did not change meanwhile; else read again, a moment later."""
        if not self.readonly:
            with self._conn() as c:
                return c.execute(sql, args).fetchall()
        for _ in range(100):
            before = _stamp(self._file)
            try:
                with self._conn() as c:
                    rows, error = c.execute(sql, args).fetchall(), None
            except sqlite3.DatabaseError as e:  # perhaps read half-way through a checkpoint
                rows, error = None, e
            if before[-1] or _stamp(self._file) != before:  # a writer was (or may have been) at work
                time.sleep(0.02)
                continue
            if error:
                raise error
            return rows
        raise UserError(f"{self.path} kept changing while zoo read it (a run is writing it, or one was killed "
                        "while it did): run the same command again")

    def _key(self, table: str) -> str:
        """The trial's column in `table`: `trial`, or `variant` in a schema 1 store (read as it is)."""
        if table not in self._keys:
            cols = {r[1] for r in self._rows(f"PRAGMA table_info({table})")}
            self._keys[table] = "trial" if "trial" in cols else "variant"
        return self._keys[table]


def _insert(c, table: str, row: dict, replace: bool = False) -> None:
    c.execute(f"INSERT {'OR REPLACE ' if replace else ''}INTO {table} ({', '.join(row)}) "
              f"VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def _stamp(path: Path) -> tuple:
    """What a write changes: the file's inode, size and modification time; last, whether a WAL with frames
    is beside it (a writer is at work, and may be checkpointing them into the file)."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, wal_header(path.with_name(path.name + "-wal")) is not None


def _current(row: dict) -> dict:
    """A trials row in this schema: a schema 1 row kept the trial's name in `variant` and the variant
    only inside its config. A damaged config is carried as it is (the migration loses no row), and
    _decode names it."""
    if row.get("trial") is None:  # the columns of a schema 1 row, read by name
        try:
            config = json.loads(row["config"] or "{}")
        except json.JSONDecodeError:
            config = {}
        name = row["variant"]
        row = row | {"trial": name, "variant": (isinstance(config, dict) and config.get("variant")) or name}
    return row


def _migrate_trial_column(c) -> None:
    """Schema 1 -> 2, in the writer's transaction: rebuild trials with the trial column in its key
    (SQLite cannot change a primary key in place) and rename the points' key column."""
    if not c.in_transaction:  # DDL opens none by itself: all of it or nothing
        c.execute("BEGIN IMMEDIATE")
    rows = [_current(dict(r)) for r in c.execute("SELECT * FROM trials")]
    c.execute("DROP TABLE trials")
    c.execute(SCHEMA.split(";")[0])  # the trials table
    for row in rows:
        _insert(c, "trials", row)
    c.execute("ALTER TABLE points RENAME COLUMN variant TO trial")


class _BadJSON(ValueError):
    def __init__(self, column: str, e: json.JSONDecodeError):
        super().__init__(f"column {column}: not valid JSON (cut short?): {e.msg} (character {e.pos})")


def _loads(column: str, text: str):
    """A JSON column's value. pydantic's reader (Rust) first: a result's per-sentence floats parse 1.4-1.8x
    faster, to the same values (every committed store decodes equal); what it refuses (a damaged column, a
    lone surrogate json.loads takes) goes to json.loads, whose answer and error position stand."""
    try:
        return from_json(text)
    except ValueError:
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _BadJSON(column, e) from None


def _decode(row: dict) -> Trial:
    """A stored row as its record (JSON columns parsed; Trial reads RESULT_COLUMN as its `result`)."""
    row.pop("_rowid", None)
    return Trial.model_validate({k: _loads(k, v) if k in JSON_COLS and v else v for k, v in _current(row).items()})


def _decode_row_quietly(row: dict) -> Trial | None:
    try:
        return _decode(row)
    except (ValueError, TypeError, AttributeError):  # damaged: as Store._decode_row, which also names it
        return None


def _damage(row: dict, e: Exception) -> str:
    """One line naming a damaged row (spec, trial, profile), its column and what is wrong there."""
    name = f"{row.get('spec')} {row.get('trial') or row.get('variant')} (profile {row.get('profile')})"
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]] or ["?"]
        column = RESULT_COLUMN if loc[0] == "result" else loc[0]  # Trial's `result` is the metrics column
        where = ".".join(loc[1:])
        value = err.get("input")
        shown = f" (is {value!r})" if isinstance(value, (str, int, float)) else ""  # a dict would be long
        return f"{name}: column {column}: {where + ': ' if where else ''}{err['msg']}{shown}"
    return f"{name}: {e}"  # _BadJSON names its column


def warn_damaged(store: "Store | None", what: str = "skipped") -> None:
    """Print (stderr, one paragraph) the damaged rows a read skipped; the command shows the rest."""
    if store and store.damaged:
        n = len(store.damaged)
        print(f"zoo: warning: {store.path}: {n} damaged row{'s' * (n != 1)} {what}: " + "; ".join(store.damaged)
              + ". The other rows are read as usual; repair the damaged ones (sqlite3), or delete them",
              file=sys.stderr)


def open_store(path: str | Path, write: bool = False) -> Store:
    """Open a store: for reading (nothing is written, the file must exist) or, with write, for a run
    (created when missing). A file that is not a store, or one a run cannot write, is a user error."""
    from zoo.errors import UserError
    path = locate(path)
    if write:  # before anything is created: not into a compressed store, nor a folder that would hide one
        refuse_shadowing(path.parent, "the store's folder")
        refuse_compressed(path)
    if write and not _writable(path):  # opening an existing store writes nothing: the first result would fail
        raise UserError(f"{path} is read-only: `zoo run` records every trial there; make it (and its folder) "
                        "writable or give the run another --storage") from None
    if not write and not path.exists():
        raise UserError(f"no results store at {path}: run `zoo run SPEC` first, or point --runs at the zoo.db "
                        "inside the --storage folder a run used")
    try:
        return Store(path, readonly=not write)
    except DamagedMeta as e:
        raise UserError(f"{path}: {e}. zoo left it untouched. If its trials table has a `trial` column it is "
                        f"schema 2: sqlite3 {path} \"UPDATE zoo_meta SET value='2' WHERE key='schema_version'\" "
                        "repairs it") from None
    except NotAStore as e:
        raise UserError(f"{path} is not a zoo results store: {e}. zoo left it untouched; point --runs (or the "
                        "merge arguments: INTO first, then the stores to copy from) at a zoo.db that `zoo run` "
                        "wrote") from None
    except (sqlite3.DatabaseError, OSError) as e:
        if write and ("disk is full" in str(e) or getattr(e, "errno", None) == 28):  # ENOSPC
            raise UserError(f"no space left on device for the results store {path}: free some space there "
                            "or give the run another --storage") from None
        if write and not _writable(path):
            raise UserError(f"{path} is read-only ({e}): `zoo run` records every trial there; make it "
                            "writable or give the run another --storage") from None
        if isinstance(e, OSError) or "unable to open" in str(e):
            raise UserError(f"cannot open the results store {path} ({e}); check the path and its "
                            "permissions") from None
        raise UserError(f"{path} is not a zoo results store ({e}); point --runs at the runs/zoo.db "
                        "that `zoo run` wrote") from None


def _writable(path: Path) -> bool:
    """Whether this process may write the store (and its WAL files beside it)."""
    folder = path.parent if str(path.parent) else Path(".")
    ok_dir = os.access(folder, os.W_OK | os.X_OK) if folder.exists() else True
    return ok_dir and (not path.exists() or os.access(path, os.W_OK))
