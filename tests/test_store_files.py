"""A compressed store is read within a bound (issue 51): streamed, capped at MAX_UNPACKED_MB, never past the
end its SQLite header declares; a FIFO, device or folder named zoo.db.xz is refused from its stat (no hang);
zoo.db beside zoo.db.xz is named, an empty one refused; a refused write leaves no lock, and an --out or
--storage at a store's path is refused before any folder is made. The bombs are xz streams of many
identical blocks (each block decodes alone), built in milliseconds: 2 GiB of zeros is ~300 KB."""
import json
import lzma
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.runner import storefile
from zoo.runner.store import Store

REPO = Path(__file__).resolve().parents[1]
PACKED = REPO / "results/table4-cpu2/zoo.db.xz"  # 2 finished trials: the smallest reference store
CAP = storefile.MAX_UNPACKED_MB << 20
BLOCK = 16 << 20  # bytes of zeros per xz block


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _block(data: bytes) -> tuple[bytes, int, int]:
    """One xz block holding `data`: (its bytes with padding and check, unpadded size, uncompressed size),
    cut out of a one-block stream through that stream's index."""
    s = lzma.compress(data, format=lzma.FORMAT_XZ, preset=0)
    index_size = (int.from_bytes(s[-8:-4], "little") + 1) * 4
    index = s[-12 - index_size:-12]
    assert index[:2] == b"\x00\x01"  # one record
    pos, fields = 2, []
    for _ in range(2):  # unpadded size, uncompressed size: varints
        n = shift = 0
        while True:
            n, shift, pos = n | (index[pos] & 0x7F) << shift, shift + 7, pos + 1
            if not index[pos - 1] & 0x80:
                break
        fields.append(n)
    return s[12:-12 - index_size], fields[0], fields[1]


def xz(*parts: tuple[bytes, int]) -> bytes:
    """One xz stream of (data, times) blocks: xz -d and Python's lzma decode it whole."""
    head = lzma.compress(b"", format=lzma.FORMAT_XZ)[:12]  # stream header: magic, flags (CRC64), their CRC32
    blocks, index = b"", b"\x00" + _varint(sum(k for _, k in parts))
    for data, times in parts:
        block, unpadded, size = _block(data)
        blocks += block * times
        index += (_varint(unpadded) + _varint(size)) * times
    index += b"\x00" * (-len(index) % 4)
    index += zlib.crc32(index).to_bytes(4, "little")
    back = (len(index) // 4 - 1).to_bytes(4, "little") + head[6:8]
    return head + blocks + index + zlib.crc32(back).to_bytes(4, "little") + back + b"YZ"


def real_store() -> bytes:
    return lzma.decompress(PACKED.read_bytes())


def zoo(capsys, *args: str) -> tuple[int, str]:
    """A zoo command (exit code, stderr) unable to write a file over the cap (plus a little): a reader that
    unpacked past the cap fails (EFBIG: Python ignores SIGXFSZ) instead of filling the disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (CAP + (1 << 20), hard))
    try:
        code = main(list(args))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    return code, capsys.readouterr().err


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """This test's own temp dir (for in-process commands too), and a cache of decompressed copies of its own."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(storefile, "_UNPACKED", {})
    monkeypatch.setattr(storefile, "_NOTED", set())
    return tmp


def packed_at(folder: Path, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "zoo.db.xz").write_bytes(data)
    return folder / "zoo.db.xz"


def test_an_xz_bomb_of_zeros_is_refused_at_once(tmp_path, tmp, capsys):
    bomb = packed_at(tmp_path / "bomb", xz((bytes(BLOCK), 128)))  # 2 GiB of zeros
    assert bomb.stat().st_size < 1 << 20
    code, err = zoo(capsys, "status", "--runs", str(bomb.parent))
    assert code == 2 and "does not hold an SQLite database" in err and str(bomb) in err, err
    assert os.listdir(tmp) == []


def test_a_store_larger_than_the_cap_is_refused_within_it(tmp_path, tmp, capsys):
    """A header that does not vouch for its size (change counter != version-valid-for: SQLite goes by the file's
    size) followed by zeros: only the cap bounds it, checked as the stream is written."""
    db = bytearray(real_store())
    db[92:96] = (int.from_bytes(db[24:28], "big") + 1).to_bytes(4, "big")
    bomb = packed_at(tmp_path / "big", xz((bytes(db), 1), (bytes(BLOCK), CAP // BLOCK + 1)))
    code, err = zoo(capsys, "status", "--runs", str(bomb))
    assert code == 2 and f"{storefile.MAX_UNPACKED_MB} MiB" in err and f"xz -dk {bomb}" in err, err
    assert len(err.strip().splitlines()) == 1 and os.listdir(tmp) == []
    # a header that declares more than the cap: refused from its first 100 bytes
    db[92:96] = db[24:28]
    db[28:32] = (CAP // 4096 + 1).to_bytes(4, "big")
    packed_at(tmp_path / "big", xz((bytes(db), 1)))
    code, err = zoo(capsys, "status", "--runs", str(bomb))
    assert code == 2 and f"{storefile.MAX_UNPACKED_MB} MiB" in err and os.listdir(tmp) == [], err


@pytest.mark.parametrize("zeros", [1 << 20, 128 * BLOCK])
def test_a_real_store_followed_by_zeros_is_refused(tmp_path, tmp, capsys, zeros):
    db = real_store()
    bomb = packed_at(tmp_path / "tail", xz((db, 1), (bytes(min(zeros, BLOCK)), zeros // min(zeros, BLOCK))))
    code, err = zoo(capsys, "status", "--runs", str(bomb))
    assert code == 2 and "something was appended" in err and os.listdir(tmp) == [], err
    packed_at(tmp_path / "tail", lzma.compress(db) + bytes(1 << 10))  # after the xz stream, in the file itself
    code, err = zoo(capsys, "status", "--runs", str(bomb))
    assert code == 2 and "goes on after its xz stream" in err and os.listdir(tmp) == [], err


@pytest.mark.parametrize("what", ["fifo", "device", "folder"])
def test_a_non_regular_file_is_refused_without_a_hang(tmp_path, tmp, what):
    """In a process of its own, so that a read that waits for a FIFO's writer fails the test, not hangs it."""
    target = tmp_path / what / "zoo.db.xz"
    target.parent.mkdir()
    {"fifo": os.mkfifo, "device": lambda p: os.symlink("/dev/zero", p), "folder": os.mkdir}[what](target)
    for runs in (target, target.parent)[what == "folder":]:  # a folder named as --runs is a --storage folder
        try:
            done = subprocess.run([sys.executable, "-c", "import sys; from zoo.cli import main; "
                                   "sys.exit(main(sys.argv[1:]))", "status", "--runs", str(runs)],
                                  env=dict(os.environ, TMPDIR=str(tmp)), capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"zoo status hung on a {what} named zoo.db.xz")
        kind = {"fifo": "a FIFO", "device": "a device", "folder": "a folder"}[what]
        assert done.returncode == 2 and f"{target} is not a zoo results store: it is {kind}" in done.stderr, \
            done.stderr
        assert os.listdir(tmp) == []


def _folder_with_both(tmp_path) -> Path:
    folder = tmp_path / "both"
    folder.mkdir()
    shutil.copy(PACKED, folder / "zoo.db.xz")
    Store(folder / "zoo.db").upsert("mine.yaml", "A1", "smoke", status="finished")  # 1 trial; the .xz holds 2
    return folder


def test_a_folder_holding_both_says_which_it_reads(tmp_path, tmp, capsys):
    folder = _folder_with_both(tmp_path)
    assert main(["status", "--json", "--runs", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 1
    assert f"using {folder / 'zoo.db'}" in err and str(folder / "zoo.db.xz") in err
    assert main(["status", "--json", "--runs", str(folder / "zoo.db.xz")]) == 0  # the other, named
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 2 and "using" not in err


def test_an_empty_zoo_db_beside_the_xz_is_refused(tmp_path, tmp, capsys):
    folder = _folder_with_both(tmp_path)
    (folder / "zoo.db").write_bytes(b"")
    for runs in (folder, folder / "zoo.db"):
        assert main(["status", "--runs", str(runs)]) == 2
        err = capsys.readouterr().err
        assert "is an empty file" in err and "zoo.db.xz" in err and "no trials" not in err
    assert main(["report", "--runs", str(folder), "--out", str(tmp_path / "report")]) == 2
    assert "is an empty file" in capsys.readouterr().err and not (tmp_path / "report").exists()


def test_a_refused_run_into_a_compressed_store_leaves_nothing(tmp_path, tmp, capsys, data_root):
    folder = tmp_path / "ref"
    packed_at(folder, PACKED.read_bytes())
    for storage in (folder, folder / "zoo.db", folder / "zoo.db.xz"):
        assert main(["run", str(REPO / "specs/table3_A.yaml"), "--profile", "smoke", "--variant", "A1",
                     "--storage", str(storage)]) == 2
        assert "compressed results store" in capsys.readouterr().err or storage != folder
        assert sorted(os.listdir(folder)) == ["zoo.db.xz"]  # no .zoo-run.lock, no zoo.db/ folder


def test_an_out_at_a_stores_path_is_refused_before_anything(tmp_path, tmp, capsys):
    folder = tmp_path / "ref"
    packed_at(folder, PACKED.read_bytes())
    for out in (folder / "zoo.db", folder / "zoo.db" / "pages", folder / "zoo.db.xz"):
        assert main(["report", "--runs", str(folder / "zoo.db"), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "a results store's path" in err and "untouched" not in err
        assert sorted(os.listdir(folder)) == ["zoo.db.xz"]
    assert main(["status", "--json", "--runs", str(folder / "zoo.db")]) == 0  # the reference still reads
    assert len(json.loads(capsys.readouterr().out)) == 2
    # refused after --out was checked (a spec the store does not hold): the folders it made are gone
    assert main(["report", "--runs", str(folder), "--spec", "nosuch", "--out", str(tmp_path / "new" / "deep")]) == 2
    assert "nosuch" in capsys.readouterr().err and not (tmp_path / "new").exists()


def _popen(tmp: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import sys; from zoo.cli import main; sys.exit(main(sys.argv[1:]))",
                             *args], env=dict(os.environ, TMPDIR=str(tmp)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_ctrl_c_while_decompressing_leaves_no_temp_folder(tmp_path, tmp):
    db = bytearray(real_store())
    db[92:96] = (int.from_bytes(db[24:28], "big") + 1).to_bytes(4, "big")  # only the cap bounds it (see above)
    bomb = packed_at(tmp_path / "big", xz((bytes(db), 1), (bytes(BLOCK), CAP // BLOCK + 1)))
    proc = _popen(tmp, "status", "--runs", str(bomb))
    try:
        deadline = time.monotonic() + 60
        while not any(f.stat().st_size for f in tmp.glob("zoo-store-*/zoo.db")):  # caught half-way
            assert proc.poll() is None and time.monotonic() < deadline, "it ended before it could be interrupted"
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert os.listdir(tmp) == []


def test_a_fifo_beside_a_plain_store_is_not_waited_on(tmp_path, tmp):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "zoo.db").write_bytes(real_store())
    os.mkfifo(folder / "zoo.db-wal")  # a WAL that is a FIFO: no frames, and opening it must not wait
    proc = _popen(tmp, "status", "--json", "--runs", str(folder))
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("zoo status hung on a FIFO named zoo.db-wal")
    finally:
        proc.kill()
    assert proc.returncode == 0 and len(json.loads(out)) == 2, err


def test_the_docs_state_the_cap():
    assert f"cap of **{storefile.MAX_UNPACKED_MB} MiB**" in (REPO / "docs/references.md").read_text()
