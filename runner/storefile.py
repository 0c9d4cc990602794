"""A store's file on disk, apart from what it holds: where a path's store is (a committed reference is
compressed: results/x/zoo.db finds results/x/zoo.db.xz), and the copies a reader opens instead of the file,
so reading never writes beside it (a WAL store's rows folded into a temp copy; a compressed one decompressed
once per process, streamed within MAX_UNPACKED_MB, never past the end its SQLite header declares)."""
from __future__ import annotations

import atexit
import lzma
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path

from zoo.errors import UserError

STORE_NAME = "zoo.db"
COMPRESSED = ".xz"  # zoo.db.xz: xz -9 of a vacuumed store, so results/ travels small (issue 43)
STORE_FILES = (STORE_NAME, STORE_NAME + COMPRESSED)
# The most a compressed store may decompress to: the largest committed reference (results/trend-cpu2)
# holds 25 MiB, so ten times that admits any real one, while a 300 KB xz of 2 GiB of zeros is refused
# after at most this much is written. A plain zoo.db is read in place, uncapped (the fix the refusal names).
MAX_UNPACKED_MB = 256
CHUNK = 1 << 20


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
        if head_bytes(path, 16) not in (b"", b"SQLite format 3\x00"):  # b"": a new store, all in its WAL
            return None  # not a database, or not a regular file: identify() refuses it
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


_NOTED: set[str] = set()  # the stores whose compressed twin was mentioned (once per process)


def locate(path: str | Path) -> Path:
    """The store a path names: the file itself, else its compressed form beside it (results/x/zoo.db finds
    results/x/zoo.db.xz), so a command given the usual path reads a committed reference store. When both
    are there, a non-empty zoo.db is the one (it is what `zoo run` writes, and `xz -dk` makes beside the
    .xz to write into it), said once on stderr; an empty file or a folder there is refused, never read as
    "no trials" nor allowed to hide the .xz."""
    path = Path(path)
    packed = path.with_name(path.name + COMPRESSED)
    if path.suffix == COMPRESSED or not packed.exists():
        return path
    if not os.path.lexists(path):
        return packed
    try:
        st = os.stat(path)
        what = None if stat.S_ISREG(st.st_mode) and st.st_size else \
            "an empty file" if stat.S_ISREG(st.st_mode) else kind(st.st_mode)
    except OSError as e:
        what = f"unreadable ({e.strerror or e})"
    if what:
        raise UserError(f"{path} is {what}, and {packed.name} beside it holds a compressed store: zoo will not "
                        f"guess which one you mean. To read the compressed one, name it ({packed}); if {path.name} "
                        "is nothing of yours, remove it")
    if os.path.abspath(path) not in _NOTED:
        _NOTED.add(os.path.abspath(path))
        print(f"zoo: note: {path.parent} holds both {STORE_NAME} and {packed.name}: using {path} (the "
              f"uncompressed store, the one `zoo run` writes); name {packed} to read the other", file=sys.stderr)
    return path


def refuse_compressed(path: Path) -> None:
    """A user error for a write into a compressed store (its rows would go to a temp copy, then be lost)."""
    if path.suffix == COMPRESSED:
        raise UserError(f"{path} is a compressed results store (xz): zoo reads it but cannot write into it. To "
                        f"run or merge into it, decompress it first (xz -dk {path} writes {path.with_suffix('')} "
                        "beside it, which zoo then opens instead), or give another --storage or merge target")


def refuse_target(store: Path, option: str) -> None:
    """Before a run creates its storage folder or lock: the store it would write is not a compressed one,
    and the folder is not a store's path."""
    refuse_shadowing(store.parent, option)
    refuse_compressed(locate(store))


def kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def shadowing(folder: str | Path) -> Path | None:
    """The part of a folder a command would create or enter that is a store's name (zoo.db, zoo.db.xz), or
    None. Such a folder created beside a compressed store hides it from every later read (zoo.db/ beside
    zoo.db.xz), and one named after an existing store cannot be made: either way, refused before anything."""
    folder = Path(os.path.abspath(Path(folder).expanduser()))
    return next((p for p in (folder, *folder.parents) if p.name in STORE_FILES), None)


def refuse_shadowing(folder: str | Path, option: str) -> None:
    """A user error (one line) when `folder` (an --out or --storage) is, or lies inside, a store's path."""
    if (part := shadowing(folder)) is not None:
        raise UserError(f"{option} {folder}: {part} is a results store's path ({part.name}); a folder made there "
                        f"would hide the store beside it from every later read. Give a folder of another name; "
                        "nothing was created")


_UNPACKED: dict[tuple, Path] = {}  # (compressed store, its stat) -> temp folder: decompressed once per process


def unpacked(path: Path) -> Path:
    """The SQLite file a compressed store holds, decompressed into a temp folder once per process (a report
    opens its store many times) and removed at exit; any other path as it is. A FIFO, device or folder is
    refused from its stat alone (opening a FIFO would wait for a writer); the temp folder goes on any
    refusal or interrupt."""
    if path.suffix != COMPRESSED:
        return path
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotAStore(f"it is {kind(st.st_mode)}, not a regular file")
    key = path.resolve(), st.st_ino, st.st_size, st.st_mtime_ns
    if key not in _UNPACKED:
        tmp = Path(tempfile.mkdtemp(prefix="zoo-store-"))
        try:
            decompress(path, tmp / STORE_NAME)
        except BaseException as e:  # a refusal, a full disk, Ctrl-C: the temp folder goes with it
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(e, OSError):
                raise UserError(f"cannot decompress {path} into a temporary folder to read it ({e.strerror or e}): "
                                f"free space in {tempfile.gettempdir()} or point TMPDIR at a folder with "
                                "room") from None
            raise
        _UNPACKED[key] = tmp
    return _UNPACKED[key] / STORE_NAME


def decompress(path: Path, dest: Path) -> None:
    """Stream the one xz stream of `path` into `dest`, refusing as soon as it is not a store: not SQLite in
    its first bytes, more than MAX_UNPACKED_MB, or longer than its header's database size (a store with
    something appended: refused rather than read to that end, since stopping there would skip the xz
    check at the stream's end, and a file that is more than a store is not one zoo wrote). Bytes after
    the xz stream are refused too: compact_store.sh writes exactly one."""
    cap, end, head, written = MAX_UNPACKED_MB << 20, None, b"", 0
    unpack = lzma.LZMADecompressor(lzma.FORMAT_XZ)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never waits, were it swapped for a FIFO since its stat
    with os.fdopen(fd, "rb") as src, open(dest, "wb") as out:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotAStore("it is not a regular file")
        while not unpack.eof:
            data = src.read(CHUNK) if unpack.needs_input else b""
            if unpack.needs_input and not data:
                raise NotAStore("it is cut short: its xz stream does not end")
            try:
                piece = unpack.decompress(data, max_length=CHUNK)
            except lzma.LZMAError as e:
                raise NotAStore(f"it cannot be decompressed as xz ({e})") from None
            if len(head) < 100:
                head += piece[:100 - len(head)]
                end = declared_size(head, path, cap) if len(head) == 100 else None
            written += len(piece)
            if end is not None and written > end:
                raise NotAStore(f"it holds more than the database its SQLite header declares ({end} bytes): "
                                "something was appended to a store")
            if written > cap:
                raise too_big(path, cap)
            out.write(piece)
        if unpack.unused_data or src.read(1):
            raise NotAStore("the file goes on after its xz stream ends (a compressed store is one xz stream)")
    if 0 < written < 100 or end is not None and written != end:
        raise NotAStore(f"it holds {written} bytes, not the SQLite database its header declares "
                        f"({end} bytes)" if end else "it is not an SQLite database")


def declared_size(head: bytes, path: Path, cap: int) -> int | None:
    """The database size an SQLite header declares (page size x page count), None when the header says it
    may be stale (an old writer: SQLite then goes by the file's size, and only the cap bounds it)."""
    if not head.startswith(b"SQLite format 3\x00"):
        raise NotAStore("it does not hold an SQLite database")
    page = int.from_bytes(head[16:18], "big")
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] != head[92:96] or not pages:  # change counter != version-valid-for: the count may be stale
        return None
    size = (65536 if page == 1 else page) * pages
    if size > cap:
        raise too_big(path, cap)
    return size


def too_big(path: Path, cap: int) -> UserError:
    return UserError(f"{path}: this compressed store decompresses to more than {cap >> 20} MiB, zoo's cap for a "
                     "compressed store (the largest committed reference holds 25 MiB), so zoo stopped reading it "
                     f"and left nothing behind. If you trust it, decompress it yourself (xz -dk {path}) and name the "
                     f"{STORE_NAME} it writes: zoo reads an uncompressed store in place, uncapped")


@atexit.register
def drop_unpacked() -> None:
    """Remove the decompressed copies (at exit; a test may call it sooner)."""
    while _UNPACKED:
        shutil.rmtree(_UNPACKED.popitem()[1], ignore_errors=True)


def wal_header(wal: Path) -> bytes | None:
    """A WAL's 32-byte header (magic, page size, checkpoint count, salts), or None when the WAL is
    missing or shorter: without a whole header it holds no frames."""
    try:
        head = head_bytes(wal, 32)
    except FileNotFoundError:
        return None
    return head if head and len(head) == 32 else None  # a FIFO or folder there holds no frames


def head_bytes(path: Path, n: int) -> bytes | None:
    """The first n bytes of a regular file; None for a FIFO, device or folder, opened without waiting
    (a FIFO's plain open waits for a writer) and never read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.pread(fd, n, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)
