"""A reference store committed compressed (issue 43): zoo.db.xz reads as the store it holds, found from the
zoo.db path beside it, decompressed once per process into a temp folder that goes at exit; a write into it
is refused (exit 2, one paragraph)."""
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.errors import UserError
from zoo.runner import storefile as store_mod
from zoo.runner.store import Store, open_store

REPO = Path(__file__).resolve().parents[1]
PACKED = REPO / "results/table4-cpu2/zoo.db.xz"  # 2 finished trials: the smallest reference store


@pytest.fixture
def pair(tmp_path, monkeypatch):
    """A plain store and its compressed twin (each in a folder of its own), and the temp dir, a folder of
    this test's own, with a cache of decompressed copies of its own too."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(store_mod, "_UNPACKED", {})  # other tests' copies are left alone
    plain, packed = tmp_path / "plain" / "zoo.db", tmp_path / "packed" / "zoo.db.xz"
    plain.parent.mkdir()
    packed.parent.mkdir()
    with lzma.open(PACKED) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copy(PACKED, packed)
    return plain, packed, tmp


def test_a_compressed_store_reads_the_same_trials_and_curves(pair):
    plain, packed, _ = pair
    a, b = Store(plain, readonly=True), Store(packed, readonly=True)
    trials = a.trials()
    assert len(trials) == 2 and b.trials() == trials
    assert all(b.points(*t.key) == a.points(*t.key) for t in trials)


def test_the_zoo_db_path_finds_the_xz_beside_it_and_it_is_decompressed_once(pair, capsys):
    plain, packed, tmp = pair
    store = open_store(packed.with_name("zoo.db"))
    assert store.path == packed and len(store.trials()) == 2
    assert open_store(packed).trials() == store.trials()  # the .xz named directly, from the same copy
    assert len(os.listdir(tmp)) == 1
    for _ in range(2):
        assert main(["status", "--json", "--runs", str(packed.with_name("zoo.db"))]) == 0
        assert len(json.loads(capsys.readouterr().out)) == 2
    assert main(["status", "--json", "--runs", str(packed.parent)]) == 0  # the --storage folder too
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert len(os.listdir(tmp)) == 1
    assert sorted(os.listdir(packed.parent)) == ["zoo.db.xz"]  # nothing written beside it


def test_a_write_into_a_compressed_store_is_refused(pair, capsys):
    plain, packed, _ = pair
    before = packed.read_bytes()
    for target in (packed, packed.with_name("zoo.db")):  # the zoo.db path too: it would hide the .xz
        with pytest.raises(UserError, match="compressed results store"):
            open_store(target, write=True)
        assert main(["merge", str(target), str(plain)]) == 2
        err = capsys.readouterr().err
        assert "compressed results store" in err and "xz -dk" in err and "Traceback" not in err
    assert packed.read_bytes() == before and sorted(os.listdir(packed.parent)) == ["zoo.db.xz"]
    assert main(["merge", str(plain.with_name("merged.db")), str(packed.with_name("zoo.db"))]) == 0  # a source
    capsys.readouterr()
    assert len(Store(plain.with_name("merged.db"), readonly=True).trials()) == 2


def test_not_xz_is_a_user_error(pair, capsys):
    _, packed, tmp = pair
    packed.write_bytes(b"not xz at all")
    assert main(["status", "--runs", str(packed)]) == 2
    assert "is not a zoo results store" in capsys.readouterr().err
    assert os.listdir(tmp) == []


def test_nothing_is_left_in_the_temp_dir(pair):
    _, packed, tmp = pair
    Store(packed, readonly=True).trials()
    assert len(os.listdir(tmp)) == 1
    store_mod.drop_unpacked()
    assert os.listdir(tmp) == []
    # and at a process's exit: a report reads the store many times, then leaves nothing behind
    env = dict(os.environ, TMPDIR=str(tmp))
    done = subprocess.run([sys.executable, "-c", "import sys; from zoo.cli import main; sys.exit(main(sys.argv[1:]))",
                           "status", "--json", "--runs", str(packed.with_name("zoo.db"))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 2, done.stderr
    assert os.listdir(tmp) == []
