"""A store's file on disk, apart from what it holds: where a path's store is (a committed reference is
compressed: results/x/zoo.db finds results/x/zoo.db.xz), and the copies a reader opens instead of the file,
so reading never writes beside it (a WAL store's rows folded into a temp copy; a compressed one decompressed
once per process)."""
from __future__ import annotations

import atexit
import lzma
import shutil
import sqlite3
import tempfile
from pathlib import Path

from zoo.errors import UserError

STORE_NAME = "zoo.db"
COMPRESSED = ".xz"  # zoo.db.xz: xz -9 of a vacuumed store, so results/ travels small (issue 43)


class NotAStore(Exception):
    """The file is not a zoo results store (open_store turns this into the user's error)."""


def read_copy(path: Path) -> Path | None:
    """A temp folder holding a copy of the store with its WAL's rows checkpointed in, or None when no WAL
    with frames is beside the store (the file alone is then the whole store, read as immutable).

    Why a copy: on a WAL database SQLite's read-only mode (mode=ro) still creates and writes a -shm
    beside it, a read-write connection checkpoints the WAL into the store on close (its bytes change),
    and immutable=1 ignores the WAL, hiding the trials written since the last checkpoint. A copy read
    elsewhere changes no byte beside the store and sees every committed row. A writer may be running:
    the pair is kept only when the WAL's header (its salts: which generation of frames) is the same
    before the database is copied and after the WAL is, so the database holds no page the copied WAL
    does not account for; frames half-copied at its end fail their checksums and are ignored."""
    wal = path.with_name(path.name + "-wal")
    for _ in range(10):
        try:
            head = wal_header(wal)
        except OSError as e:
            raise UserError(f"{path}: the trials written since its last checkpoint are in {wal.name} beside it, "
                            f"which this user cannot read ({e.strerror or e}); without it zoo would show fewer "
                            f"trials than the store holds. Make {wal.name} readable, or run this command as the "
                            "user who wrote the store (or on a copy of its folder that user made)") from None
        if head is None:
            return None  # no rows beside the store
        with open(path, "rb") as f:
            if f.read(16) not in (b"", b"SQLite format 3\x00"):  # b"": a new store, all of it in its WAL
                return None  # not a database: identify() refuses it
        tmp = Path(tempfile.mkdtemp(prefix="zoo-store-"))
        copy = tmp / STORE_NAME
        try:
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            if wal_header(copy.with_name(copy.name + "-wal")) == head:
                c = sqlite3.connect(copy)  # the copy's WAL folded into it, so it reads as immutable too
                try:
                    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    c.close()
                return tmp
        except FileNotFoundError:
            pass  # the writer closed and folded its WAL in meanwhile: look again
        except BaseException as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(e, OSError):
                raise UserError(f"cannot copy {path} and its WAL ({wal.name}) to a temporary folder, to read them "
                                f"without writing beside the store ({e.strerror or e}): free space in "
                                f"{tempfile.gettempdir()} or point TMPDIR at a folder with room") from None
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # a checkpoint restarted the WAL meanwhile: copy again
    raise UserError(f"{path} kept changing while zoo copied it to read it (a run is writing it fast): "
                    "run the same command again")


def locate(path: str | Path) -> Path:
    """The store a path names: the file itself, else its compressed form beside it (results/x/zoo.db finds
    results/x/zoo.db.xz), so a command given the usual path reads a committed reference store."""
    path = Path(path)
    packed = path.with_name(path.name + COMPRESSED)
    return packed if not path.exists() and path.suffix != COMPRESSED and packed.exists() else path


_UNPACKED: dict[tuple, Path] = {}  # (compressed store, its stat) -> temp folder: decompressed once per process


def unpacked(path: Path) -> Path:
    """The SQLite file a compressed store holds, decompressed into a temp folder once per process (a report
    opens its store many times) and removed at exit; any other path as it is."""
    if path.suffix != COMPRESSED:
        return path
    st = path.stat()
    key = path.resolve(), st.st_ino, st.st_size, st.st_mtime_ns
    if key not in _UNPACKED:
        tmp = Path(tempfile.mkdtemp(prefix="zoo-store-"))
        try:
            with lzma.open(path) as src, open(tmp / STORE_NAME, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (lzma.LZMAError, EOFError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise NotAStore(f"it cannot be decompressed as xz ({e})") from None
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise UserError(f"cannot decompress {path} into a temporary folder to read it ({e.strerror or e}): "
                            f"free space in {tempfile.gettempdir()} or point TMPDIR at a folder with room") from None
        _UNPACKED[key] = tmp
    return _UNPACKED[key] / STORE_NAME


@atexit.register
def drop_unpacked() -> None:
    """Remove the decompressed copies (at exit; a test may call it sooner)."""
    while _UNPACKED:
        shutil.rmtree(_UNPACKED.popitem()[1], ignore_errors=True)


def wal_header(wal: Path) -> bytes | None:
    """A WAL's 32-byte header (magic, page size, checkpoint count, salts), or None when the WAL is
    missing or shorter: without a whole header it holds no frames."""
    try:
        with open(wal, "rb") as f:
            head = f.read(32)
    except FileNotFoundError:
        return None
    return head if len(head) == 32 else None
