"""The encoded corpus cache (zoo.data.encoded.encoded_corpus): built once, memory-mapped after, safe to race."""
from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys

import numpy as np
import pytest

from zoo import data as D
from zoo.data import encoded as E  # the cache's own helpers


@pytest.fixture(scope="module")
def sp_path(data_root):
    return D.bpe_model("multi30k", 1000, data_root)  # the shared cache's, trained once


def test_round_trip_and_drops(sp_path, data_root, tmp_path):
    ec = D.encoded_corpus("multi30k", sp_path, data_root, max_len=30, cache_dir=tmp_path)
    sp = D.load_sp(sp_path)
    pairs = D.load_pairs("multi30k", "train", data_root)
    src = sp.encode([s for s, _ in pairs], out_type=int)
    tgt = sp.encode([t for _, t in pairs], out_type=int)
    kept = [(x, y) for x, y in zip(src, tgt) if len(x) <= 30 and len(y) <= 30]
    assert len(ec) == len(kept) and ec.dropped == len(pairs) - len(kept) > 0
    for i in list(range(0, len(ec), 97)) + [len(ec) - 1]:
        assert ec.src(i).tolist() == kept[i][0] and ec.tgt(i).tolist() == kept[i][1]
    assert ec[-1][0].tolist() == kept[-1][0]
    with pytest.raises(IndexError):
        ec[len(ec)]
    assert ec.src_len.max() <= 31 and ec.tgt_len.max() <= 31  # + eos
    assert (ec.lengths == D.pair_lengths(kept)).all()
    assert ec.src_ids.dtype == ec.tgt_ids.dtype == np.uint16
    assert isinstance(ec.src_ids, np.memmap)
    assert ec.tokens == sum(len(x) + len(y) for x, y in kept)


def test_second_call_maps_without_encoding(sp_path, data_root, tmp_path, monkeypatch):
    first = D.encoded_corpus("multi30k", sp_path, data_root, max_len=64, max_pairs=3000, cache_dir=tmp_path)
    meta = first.path / "meta.json"
    stamp = meta.stat().st_mtime_ns

    def fail(*a, **k):
        raise AssertionError("encoded again")
    monkeypatch.setattr(E, "_encode_into", fail)
    again = D.encoded_corpus("multi30k", sp_path, data_root, max_len=64, max_pairs=3000, cache_dir=tmp_path)
    assert again.path == first.path and meta.stat().st_mtime_ns == stamp
    assert len(again) == len(first) <= 3000 and (again.src_ids == first.src_ids).all()
    # other settings are another cache
    with pytest.raises(AssertionError, match="encoded again"):
        D.encoded_corpus("multi30k", sp_path, data_root, max_len=64, max_pairs=2000, cache_dir=tmp_path)


RACER = """
import sys
from zoo import data as D
from zoo.data import encoded as E
real = E._encode_into
def counted(*a, **k):
    print("ENCODED", flush=True)
    return real(*a, **k)
E._encode_into = counted
print("ready", flush=True)
ec = D.encoded_corpus("multi30k", sys.argv[1], sys.argv[2], max_len=64, max_pairs=4000, cache_dir=sys.argv[3])
print(ec.path, len(ec), int(ec.src_ids.sum()), flush=True)
"""


def test_racing_processes_build_one_cache(sp_path, data_root, tmp_path):
    key = E._encoded_key(D.corpus("multi30k"), data_root, data_root, sp_path, 64, 4000, None)
    with open(tmp_path / f"{key}.lock", "a") as lock:  # hold the lock so that both queue on it
        fcntl.flock(lock, fcntl.LOCK_EX)
        procs = [subprocess.Popen([sys.executable, "-c", RACER, str(sp_path), str(data_root), str(tmp_path)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum(o.count("ENCODED") for o in outs) == 1, outs  # one built it, the other mapped it
    assert len({o.splitlines()[-1] for o in outs}) == 1  # same folder, pairs and ids
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [key]
    assert not list(tmp_path.glob(".*.part"))
    assert len(D.EncodedCorpus.open(tmp_path / key)) > 3000


class WideVocab:
    """A target vocabulary of 70,000 symbols: ids past uint16."""
    def encode(self, text):
        return [66_000 + ord(ch) % 1000 for ch in text]

    def get_piece_size(self):
        return 70_000

    def id_to_piece(self, i):
        return str(i)


def test_id_width(sp_path, data_root, tmp_path):
    assert E._id_dtype(1000) == E._id_dtype(65536) == np.uint16 and E._id_dtype(65537) == np.uint32
    ec = D.encoded_corpus("multi30k", sp_path, data_root, max_len=200, max_pairs=500, tgt_vocab=WideVocab(),
                          cache_dir=tmp_path)
    assert ec.src_ids.dtype == np.uint16 and ec.tgt_ids.dtype == np.uint32
    first = D.load_pairs("multi30k", "train", data_root)[0][1]
    assert ec.tgt(0).tolist() == WideVocab().encode(first)
    assert D.collate(ec, [0]).tgt_out[0, :-1].tolist() == WideVocab().encode(first)


def test_batches_from_arrays(sp_path, data_root, tmp_path):
    ec = D.encoded_corpus("multi30k", sp_path, data_root, max_len=64, cache_dir=tmp_path)
    ids = [(x.tolist(), y.tolist()) for x, y in ec]
    a = D.make_batches(ec.lengths, 2000, seed=5, epoch=1)
    assert [b.tolist() for b in a] == [b.tolist() for b in D.make_batches(ec.lengths, 2000, 5, 1)]
    assert [b.tolist() for b in a] != [b.tolist() for b in D.make_batches(ec.lengths, 2000, 5, 2)]
    assert np.array_equal(np.sort(np.concatenate(a)), np.arange(len(ec)))
    for b in a:
        assert len(b) == 1 or ec.lengths[b].sum(0).max() <= 2000
    for b in a[:20]:  # the cache and the list form collate alike
        x, y = D.collate(ec, b), D.collate(ids, b)
        assert x.src.equal(y.src) and x.tgt_in.equal(y.tgt_in) and x.tgt_out.equal(y.tgt_out)
        assert (x.n_src_tokens, x.n_tgt_tokens, x.padding_fraction) == (y.n_src_tokens, y.n_tgt_tokens, y.padding_fraction)
        parts = D.shard(b, ec.lengths, 3)
        assert np.array_equal(np.concatenate(parts), b)


def test_misaligned_user_files(sp_path, tmp_path):
    (tmp_path / "multi30k").mkdir()
    shutil.copy(D.data_dir() / "multi30k/val.en.gz", tmp_path / "multi30k/train.en.gz")  # 1014 lines
    shutil.copy(D.data_dir() / "multi30k/test_2016_flickr.de.gz", tmp_path / "multi30k/train.de.gz")  # 1000
    with pytest.raises(D.DataError, match="differ in length .* after 1000 lines"):
        D.encoded_corpus("multi30k", sp_path, tmp_path, cache_dir=tmp_path / "cache")
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]  # nothing half-built kept


def test_leftovers_of_a_killed_builder_are_cleared(sp_path, data_root, tmp_path):
    key = E._encoded_key(D.corpus("multi30k"), data_root, data_root, sp_path, 64, 1000, None)
    for junk in (tmp_path / key, tmp_path / f".{key}.x1.part"):  # no meta.json: never finished
        junk.mkdir()
        (junk / "src.ids").write_bytes(b"\0" * 10)
    ec = D.encoded_corpus("multi30k", sp_path, data_root, max_len=64, max_pairs=1000, cache_dir=tmp_path)
    assert ec.path == tmp_path / key and len(ec) > 900
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [key]
