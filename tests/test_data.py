"""zoo.data on the real corpora: registry, loopback download + sha256, shared BPE, token batches."""
from __future__ import annotations

import dataclasses
import functools
import json
import http.server
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zoo import data as D


# --------------------------------------------------------------------------- helpers
@pytest.fixture
def serve():
    """Serve a folder on 127.0.0.1 (a free port) in a thread; yields a function folder -> URL."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(Quiet, directory=str(folder))
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def m30k(data_root):
    """Multi30k train encoded with a shared 8k BPE: the data dir's cached one, trained once for every session
    (as tests/test_data_cache.py's; the tests of training a BPE model train their own in a tmp dir)."""
    path = D.bpe_model("multi30k", 8000, data_root)
    sp = D.load_sp(path)
    ids = D.encode_pairs(sp, D.load_pairs("multi30k", "train", data_root))
    return sp, ids, D.pair_lengths(ids)


def padding(ids, batches) -> float:
    pad = total = 0
    for b in batches:
        c = D.collate(ids, b)
        n = c.src.numel() + c.tgt_in.numel()
        total, pad = total + n, pad + n - c.n_src_tokens - c.n_tgt_tokens
    return pad / total


# --------------------------------------------------------------------------- data dir, registry
def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "env"))
    assert D.data_dir(tmp_path / "x") == tmp_path / "x"
    assert D.data_dir() == tmp_path / "env"
    monkeypatch.delenv("ZOO_DATA_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert D.data_dir() == tmp_path / "cache" / "zoo" / "data"


def test_unknown_corpus_and_split():
    with pytest.raises(D.DataError, match="Did you mean 'multi30k'"):
        D.corpus("multi3k")
    with pytest.raises(D.DataError, match="choose one of: train, dev, test, test_2017_flickr"):
        D.load_pairs("multi30k", "valid")


def test_registry_matches_manifest(data_root):
    """The embedded sha256s are the MANIFEST's (the module itself never reads the MANIFEST)."""
    manifest = dict(line.split("\t")[::2] for line in
                    (data_root / "MANIFEST.tsv").read_text().splitlines())
    for c in D.CORPORA.values():
        for f in c.files:
            assert manifest[f.path] == f.sha256, f.path
            assert f.url is None or f.url.startswith("https://raw.githubusercontent.com/")


@pytest.mark.parametrize("name,split,n", [
    ("multi30k", "train", 29000), ("multi30k", "dev", 1014), ("multi30k", "test", 1000),
    ("multi30k", "test_2017_mscoco", 461), ("multi30k", "test_2018_flickr", 1071),
    ("wmt14_en_de", "dev", 3000), ("wmt14_en_de", "test", 3003), ("wmt14_en_fr", "test", 3003),
    ("wmt_news_ende", "train", 26740), ("wmt_news_ende", "test", 3003)])
def test_load_pairs_counts(data_root, name, split, n):
    pairs = D.load_pairs(name, split, data_root)
    assert len(pairs) == n
    assert all(s and t and not s.endswith("\n") and not t.endswith("\n") for s, t in pairs[:100])


def test_load_pairs_keeps_inner_whitespace(data_root):
    # train.de line 7366 holds a literal TAB: only the trailing newline may be removed
    assert "\t" in D.load_pairs("multi30k", "train", data_root)[7365][1]


def test_wmt14_training_data_missing_says_how_to_get_it(data_root):
    with pytest.raises(D.DataError) as e:
        D.load_pairs("wmt14_en_de", "train", data_root)
    msg = str(e.value)
    assert "wmt14/train/en-de/train.en" in msg and "statmt.org" in msg and str(data_root) in msg


def test_user_supplied_wmt14_training_files(data_root, tmp_path):
    """WMT14 training text is placed by the user, plain or gzipped (real news text stands in)."""
    import gzip

    train = tmp_path / "wmt14" / "train" / "en-de"
    train.mkdir(parents=True)
    shutil.copy(data_root / "wmt-news-ende-pool/newstest2012.en.gz", train / "train.en.gz")
    with gzip.open(data_root / "wmt-news-ende-pool/newstest2012.de.gz") as f:
        (train / "train.de").write_bytes(f.read())
    pairs = D.load_pairs("wmt14_en_de", "train", tmp_path)
    assert len(pairs) == 3003
    assert pairs == D.load_pairs("wmt_news_ende", "train", data_root)[-(2169 + 2999 + 3004 + 2998
                                                                        + 1997 + 3003):][:3003]
    assert D.verify("wmt14_en_de", tmp_path)[-1] == ("wmt14/train/en-de/train.de", True,
                                                     "present (user-supplied, no checksum)")


def test_missing_data_dir_says_how_to_fetch(tmp_path):
    with pytest.raises(D.DataError) as e:
        D.load_pairs("multi30k", "train", tmp_path / "nowhere")
    msg = str(e.value)
    assert "zoo data fetch multi30k" in msg and "ZOO_DATA_DIR" in msg
    assert str(tmp_path / "nowhere") in msg and "multi30k/train.en.gz" in msg


def test_missing_corpus_is_fetched_on_first_use_from_the_mirror(data_root, tmp_path, serve, monkeypatch):
    monkeypatch.setenv("ZOO_DOWNLOAD", "1")
    monkeypatch.setenv("ZOO_DATA_MIRROR", serve(data_root))
    root = tmp_path / "fresh"  # nothing there yet, not even the folder
    assert D.load_pairs("multi30k", "dev", root) == D.load_pairs("multi30k", "dev", data_root)
    assert all(ok for rel, ok, _ in D.verify("multi30k", root))  # every registered file, sha256 checked
    before = {p: p.stat().st_mtime_ns for p in (root / "multi30k").iterdir()}
    D.load_pairs("multi30k", "test", root)  # present now: nothing downloaded again
    assert before == {p: p.stat().st_mtime_ns for p in (root / "multi30k").iterdir()}
    assert D.load_pairs("wsj_sample", "dev", root)  # the parsing corpus too


def test_downloads_forbidden_leave_the_missing_error(data_root, tmp_path, serve, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_MIRROR", serve(data_root))  # reachable, but the user said no
    with pytest.raises(D.DataError, match="ZOO_DOWNLOAD=0") as e:
        D.load_pairs("multi30k", "dev", tmp_path / "empty")
    assert "zoo data fetch multi30k" in str(e.value) and not (tmp_path / "empty" / "multi30k").exists()


@pytest.mark.slow
def test_zoo_train_fetches_on_first_use_and_no_download_refuses(data_root, tmp_path, serve, repo):
    env = {**os.environ, "ZOO_DOWNLOAD": "1", "ZOO_DATA_MIRROR": serve(data_root)}
    cmd = [sys.executable, "-m", "zoo.cli", "train", str(repo / "specs/table3_A.yaml"), "--variant", "A1",
           "--profile", "smoke", "--set", "train.steps=2", "--set", "eval.max_sentences=2",
           "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "run")]
    r = subprocess.run([*cmd, "--no-download"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and "ZOO_DOWNLOAD=0" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "fetching it on first use" in r.stderr and (tmp_path / "run" / "summary.json").exists()
    assert all(ok for rel, ok, _ in D.verify("multi30k", tmp_path / "data"))


def test_unequal_sides_rejected(tmp_path, data_root):
    (tmp_path / "multi30k").mkdir()
    for f in ("val.en.gz", "val.de.gz"):
        shutil.copy(data_root / "multi30k" / f, tmp_path / "multi30k" / f)
    shutil.copy(data_root / "multi30k/test_2016_flickr.de.gz", tmp_path / "multi30k/val.de.gz")
    with pytest.raises(D.DataError, match="1014 lines but .* has 1000"):
        D.load_pairs("multi30k", "dev", tmp_path)


def test_list_corpora(data_root, tmp_path):
    rows = {r["name"]: r for r in D.list_corpora(data_root)}
    assert set(rows) == set(D.CORPORA)
    assert rows["multi30k"]["status"] == "present" and rows["wsj_sample"]["status"] == "present"
    assert rows["wmt14_en_de"]["status"] == "partial"  # test sets yes, training data no
    assert "non-commercial" in rows["wsj_sample"]["description"].lower()
    assert all(r["status"] == "missing" for r in D.list_corpora(tmp_path))


# --------------------------------------------------------------------------- fetch, verify
def test_fetch_from_loopback_mirror_then_verify(data_root, tmp_path, serve):
    url = serve(data_root)
    for name in ("multi30k", "wmt14_en_de", "wsj_sample"):  # WMT14's training archives: see the end
        got = D.fetch(name, tmp_path, base_url=url, build=False)
        assert len(got) == len(D.corpus(name).files)
        registered = {f.path for f in D.corpus(name).files}
        assert all(ok for rel, ok, _ in D.verify(name, tmp_path) if rel in registered)
    assert D.load_pairs("wmt14_en_de", "test", tmp_path) == D.load_pairs("wmt14_en_de", "test", data_root)
    assert D.load_pairs("multi30k", "dev", tmp_path) == D.load_pairs("multi30k", "dev", data_root)
    assert not list(tmp_path.rglob("*.part"))
    # a second fetch skips the files already present with the right hash
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "multi30k").iterdir()}
    D.fetch("multi30k", tmp_path, base_url=url)
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "multi30k").iterdir()} == before


def test_fetch_rejects_corrupt_file(data_root, tmp_path, serve):
    mirror = tmp_path / "mirror"
    shutil.copytree(data_root / "multi30k", mirror / "multi30k")
    bad = mirror / "multi30k" / "val.de.gz"
    bad.write_bytes(bad.read_bytes()[:-10] + b"corrupted!")
    dest = tmp_path / "data"
    with pytest.raises(D.DataError, match="Checksum mismatch for val.de.gz"):
        D.fetch("multi30k", dest, base_url=serve(mirror))
    assert not (dest / "multi30k" / "val.de.gz").exists()
    assert not list(dest.rglob("*.part"))


def test_fetch_network_error_is_data_error(tmp_path, serve):
    url = serve(tmp_path / "empty")  # serves nothing: 404 for every file
    (tmp_path / "empty").mkdir()
    with pytest.raises(D.DataError, match="Could not fetch multi30k/README.origin.md"):
        D.fetch("multi30k", tmp_path / "data", base_url=url)


def test_fetch_from_origin_urls_extracts_zip_member(data_root, tmp_path, serve, monkeypatch):
    """The origin path (per-file URLs, README extracted from the zip, mirror-only copy skipped),
    with the origin URLs pointed at the loopback server."""
    url = serve(data_root)
    c = D.corpus("wsj_sample")
    files = tuple(dataclasses.replace(f, url=f"{url}/{f.path}") if f.url else f for f in c.files)
    monkeypatch.setitem(D.CORPORA, "wsj_sample", dataclasses.replace(c, files=files))
    got = D.fetch("wsj_sample", tmp_path)
    assert {p.name for p in got} == {"treebank.zip", "README.combined", "treebank.xml"}
    result = {rel: ok for rel, ok, _ in D.verify("wsj_sample", tmp_path)}
    assert all(result.values())  # the optional tar.gz is absent but not an error


def test_verify_flags_corrupt_local_file(data_root, tmp_path):
    shutil.copytree(data_root / "multi30k", tmp_path / "multi30k")
    (tmp_path / "multi30k" / "val.en.gz").write_bytes(b"oops")
    bad = [(rel, why) for rel, ok, why in D.verify("multi30k", tmp_path) if not ok]
    assert len(bad) == 1 and bad[0][0] == "multi30k/val.en.gz" and "mismatch" in bad[0][1]


# --------------------------------------------------------------------------- BPE
def test_bpe_special_ids_and_cache(data_root, tmp_path):
    t0 = time.perf_counter()
    path = D.bpe_model("multi30k", 2000, data_root, cache_dir=tmp_path)
    first = time.perf_counter() - t0
    sp = D.load_sp(path)
    assert sp.get_piece_size() == 2000
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (0, 1, 2, 3)
    mtime = path.stat().st_mtime_ns
    t0 = time.perf_counter()
    assert D.bpe_model("multi30k", 2000, data_root, cache_dir=tmp_path) == path
    assert path.stat().st_mtime_ns == mtime
    assert time.perf_counter() - t0 < max(0.05, first / 5)
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".model"] == [path.name]


def test_bpe_vocab_too_large_names_the_maximum(data_root, tmp_path):
    with pytest.raises(D.DataError, match=r"at most 83510 BPE pieces"):
        D.bpe_model("multi30k", 100_000, data_root, cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.model"))


def test_bpe_two_processes_at_once(data_root, tmp_path):
    code = ("import logging, sys; logging.basicConfig(level=logging.INFO, stream=sys.stderr); "
            "from zoo import data; "
            f"print(data.bpe_model('multi30k', 1000, {str(data_root)!r}, cache_dir={str(tmp_path)!r}))")
    env = {**os.environ, "PYTHONPATH": str(Path(D.__file__).parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    paths = {o.strip() for o, _ in outs}
    assert len(paths) == 1
    assert sum("trained BPE" in e for _, e in outs) == 1  # the other process waited and reused it
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".model"] == [Path(paths.pop()).name]
    assert not list(tmp_path.glob("*.part"))
    assert D.load_sp(next(tmp_path.glob("*.model"))).get_piece_size() == 1000


# --------------------------------------------------------------------------- batching
def test_encode_pairs_drops_long_pairs(m30k, data_root):
    sp, ids, _ = m30k
    pairs = D.load_pairs("multi30k", "dev", data_root)
    kept = D.encode_pairs(sp, pairs, max_len=20)
    assert 0 < len(kept) < len(pairs)
    assert all(len(x) <= 20 and len(y) <= 20 for x, y in kept)
    assert sp.decode(ids[0][0]) == D.load_pairs("multi30k", "train", data_root)[0][0]


@pytest.mark.parametrize("budget", [2000, 25000])
def test_batches_respect_token_budget(m30k, budget):
    _, _, lengths = m30k
    batches = D.make_batches(lengths, budget, seed=1, epoch=0)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        s, t = sum(lengths[i][0] for i in b), sum(lengths[i][1] for i in b)
        assert len(b) == 1 or (s <= budget and t <= budget)
    mean_t = sum(sum(lengths[i][1] for i in b) for b in batches) / len(batches)
    mean_s = sum(sum(lengths[i][0] for i in b) for b in batches) / len(batches)
    assert max(mean_s, mean_t) > 0.85 * budget


def test_single_overlong_pair_is_its_own_batch():
    lengths = [(5, 5), (50, 3), (4, 6), (5, 4)]
    batches = [b.tolist() for b in D.make_batches(lengths, 12, seed=0, epoch=0)]
    assert [1] in batches
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3]


def test_batches_deterministic_per_seed_and_epoch(m30k):
    _, _, lengths = m30k
    def batches(seed, epoch):
        return [b.tolist() for b in D.make_batches(lengths, 4000, seed=seed, epoch=epoch)]
    a = batches(3, 2)
    assert a == batches(3, 2)
    assert a != batches(3, 3)
    assert a != batches(4, 2)


def test_shards_cover_batch_and_balance(m30k):
    _, _, lengths = m30k
    for b in D.make_batches(lengths, 25000, seed=0, epoch=0)[:5]:
        for n in (2, 3, 8):
            parts = [p.tolist() for p in D.shard(b, lengths, n)]
            assert len(parts) == n and sorted(sum(parts, [])) == sorted(b.tolist())
            tok = [sum(lengths[i][1] for i in p) for p in parts]
            longest = max(lengths[i][1] for i in b)
            assert max(tok) - min(tok) <= 2 * longest, tok
    assert [p.tolist() for p in D.shard([4, 5], [(1, 1)] * 6, 3)] == [[4], [5], []]
    assert [p.tolist() for p in D.shard([0, 1, 2], [(1, 9), (1, 1), (1, 1)], 3)] == [[0], [1], [2]]


def test_collate_shapes_and_counts():
    ids = [([5, 6, 7], [8, 9]), ([5], [8, 9, 10, 11])]
    b = D.collate(ids, [0, 1])
    assert b.src.tolist() == [[5, 6, 7, 3], [5, 3, 0, 0]]
    assert b.tgt_in.tolist() == [[2, 8, 9, 0, 0], [2, 8, 9, 10, 11]]
    assert b.tgt_out.tolist() == [[8, 9, 3, 0, 0], [8, 9, 10, 11, 3]]
    assert (b.n_src_tokens, b.n_tgt_tokens) == (6, 8)
    assert b.padding_fraction == pytest.approx(4 / 18)
    assert b.n_tgt_tokens == int((b.tgt_out != 0).sum())


def test_length_grouping_cuts_padding(m30k):
    _, ids, lengths = m30k
    grouped = D.make_batches(lengths, 4000, seed=0, epoch=0)
    order = list(range(len(lengths)))
    random.Random(0).shuffle(order)
    random_batches, cur, ns, nt = [], [], 0, 0  # same budget rule, no length grouping
    for i in order:
        s, t = lengths[i]
        if cur and (ns + s > 4000 or nt + t > 4000):
            random_batches.append(cur)
            cur, ns, nt = [], 0, 0
        cur.append(i)
        ns, nt = ns + s, nt + t
    random_batches.append(cur)
    pg, pr = padding(ids, grouped), padding(ids, random_batches)
    print(f"padding fraction at 4000 tokens: length-grouped {pg:.3f}, random {pr:.3f}")
    assert pg < 0.2 and pr > 0.4 and pg < pr / 3


# --------------------------------------------------------------------------- WMT14 EN-DE training data
def _tgz(path: Path, members: dict[str, bytes]) -> str:
    """A small .tgz with the given members (in this order); returns its sha256."""
    import hashlib
    import io
    import tarfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def wmt14_mirror(data_root, tmp_path):
    """A mirror of the data folder: the real newstest2013/2014 files and tiny archives with the real
    archives' names and member paths (other language pairs beside EN-DE, as in the originals).
    Returns (mirror folder, {archive name: sha256}, the expected training pairs)."""
    mirror = tmp_path / "mirror"
    shutil.copytree(data_root / "wmt14", mirror / "wmt14")
    test_en = D.load_pairs("wmt14_en_de", "test", data_root)[17][0]  # a newstest2014 source sentence
    dev_de = D.load_pairs("wmt14_en_de", "dev", data_root)[5][1]  # a newstest2013 target sentence
    sides = {  # archive -> (EN lines, DE lines) of its EN-DE members
        "training-parallel-europarl-v7.tgz": (
            ["Resumption of the session", "", "  " + test_en.replace(" ", "  ") + " ", "(Applause)"],
            ["Wiederaufnahme der Sitzungsperiode", "", "Testsatz", "(Beifall)"]),
        "training-parallel-commoncrawl.tgz": (
            ["a\ttab and a\u00a0no-break space", "carriage\rreturn inside", "overlap on the German side"],
            ["ein\tTab und ein\u00a0Leerzeichen", "Wagen\rrücklauf", dev_de]),
        "training-parallel-nc-v9.tgz": (["Prices rise.", "Bad byte"], ["Preise steigen.", "Schlechtes Byte"]),
    }
    members = {  # same member paths as statmt.org's archives (TFDS wmt.py's europarl_v7, commoncrawl, nc_v9)
        "training-parallel-europarl-v7.tgz": ("training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
        "training-parallel-commoncrawl.tgz": ("commoncrawl.de-en.en", "commoncrawl.de-en.de"),
        "training-parallel-nc-v9.tgz": ("training/news-commentary-v9.de-en.en",
                                        "training/news-commentary-v9.de-en.de"),
    }
    sha = {}
    for name, (en, de) in sides.items():
        m_en, m_de = members[name]
        body = {m_en.replace("de-en.en", "fr-en.fr"): b"Reprise de la session\n",  # not EN-DE: ignored
                m_de: "\n".join(de).encode() + b"\n", m_en: "\n".join(en).encode() + b"\n"}
        if name == "training-parallel-nc-v9.tgz":  # invalid UTF-8 is replaced, never a crash
            body[m_de] = body[m_de].replace(b"Byte", b"Byte \xff")
        sha[name] = _tgz(mirror / "wmt14" / "archives" / name, body)
    expected = [("Resumption of the session", "Wiederaufnahme der Sitzungsperiode"),
                ("(Applause)", "(Beifall)"),
                ("a\ttab and a\u00a0no-break space", "ein\tTab und ein\u00a0Leerzeichen"),
                ("carriage\rreturn inside", "Wagen\rrücklauf"),
                ("Prices rise.", "Preise steigen."), ("Bad byte", "Schlechtes Byte \ufffd")]
    return mirror, sha, expected


def test_wmt14_archives_have_published_checksums_and_statmt_origins():
    archives = D.corpus("wmt14_en_de").built["train"]
    assert [Path(a.path).name for a in archives] == list(D.ARCHIVE_SHA256)
    assert all(a.url.startswith("https://www.statmt.org/wmt1") for a in archives)
    assert all(len(h) == 64 and int(h, 16) for h in D.ARCHIVE_SHA256.values())


def test_wmt14_fetch_refuses_archives_that_differ_from_the_published_checksums(wmt14_mirror, serve, tmp_path):
    """The shipped table, unpatched, in a fresh process: the tiny archives are not the real ones."""
    mirror, _, _ = wmt14_mirror
    dest = tmp_path / "data"
    r = subprocess.run([sys.executable, "-m", "zoo.cli", "data", "fetch", "wmt14_en_de", "--base-url",
                        serve(mirror), "--data-dir", str(dest)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "Checksum mismatch for training-parallel-europarl-v7.tgz" in r.stderr
    assert D.ARCHIVE_SHA256["training-parallel-europarl-v7.tgz"] in r.stderr
    assert (dest / "wmt14/newstest2014-deen.de.gz").is_file()  # the test sets came first
    assert not (dest / "wmt14/archives/training-parallel-europarl-v7.tgz").exists()
    assert not (dest / "wmt14/train").exists() and not list(dest.rglob("*.part"))


def test_wmt14_fetch_builds_training_data_from_the_mirror(wmt14_mirror, serve, tmp_path, monkeypatch, capsys):
    """`zoo data fetch wmt14_en_de --base-url` end to end, with the checksum table pointed at the
    tiny archives' digests: download, sha256, members streamed, concatenated in order, dev/test
    overlap and empty sides dropped; a second fetch downloads nothing; a corrupt archive is refused."""
    from zoo.cli import main

    mirror, sha, expected = wmt14_mirror
    for name, h in sha.items():
        monkeypatch.setitem(D.ARCHIVE_SHA256, name, h)
    url, dest = serve(mirror), tmp_path / "data"
    assert main(["data", "fetch", "wmt14_en_de", "--base-url", url, "--data-dir", str(dest)]) == 0
    assert D.load_pairs("wmt14_en_de", "train", dest) == expected
    train = dest / "wmt14/train/en-de"
    assert sorted(p.name for p in train.iterdir()) == ["build.json", "train.de", "train.en"]  # no leftovers
    stamp = json.loads((train / "build.json").read_text())
    assert [(a["pairs"], a["kept"], a["overlap"], a["empty"]) for a in stamp["archives"]] == \
        [(4, 2, 1, 1), (3, 2, 1, 0), (2, 2, 0, 0)]
    assert all(ok for _, ok, _ in D.verify("wmt14_en_de", dest)), D.verify("wmt14_en_de", dest)
    assert main(["data", "verify", "wmt14_en_de", "--data-dir", str(dest)]) == 0
    assert "built by `zoo data fetch wmt14_en_de`" in capsys.readouterr().out
    # present now: a second fetch neither downloads nor rebuilds
    before = {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()}
    assert main(["data", "fetch", "wmt14_en_de", "--base-url", url, "--data-dir", str(dest)]) == 0
    assert {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()} == before
    # a built file changed afterwards is flagged
    with open(train / "train.de", "a") as f:
        f.write("extra\n")
    assert [rel for rel, ok, _ in D.verify("wmt14_en_de", dest) if not ok] == ["wmt14/train/en-de/train.de"]
    # an archive that differs from its (test) checksum is refused and leaves nothing behind
    nc = mirror / "wmt14/archives/training-parallel-nc-v9.tgz"
    nc.write_bytes(nc.read_bytes()[:-8] + b"garbage!")
    fresh = tmp_path / "fresh"
    with pytest.raises(D.DataError, match="Checksum mismatch for training-parallel-nc-v9.tgz"):
        D.fetch("wmt14_en_de", fresh, base_url=url)
    assert not (fresh / "wmt14/train").exists() and not list(fresh.rglob("*.part"))


def test_wmt14_training_data_fetched_on_first_use(wmt14_mirror, serve, tmp_path, monkeypatch):
    mirror, sha, expected = wmt14_mirror
    for name, h in sha.items():
        monkeypatch.setitem(D.ARCHIVE_SHA256, name, h)
    monkeypatch.setenv("ZOO_DOWNLOAD", "1")
    monkeypatch.setenv("ZOO_DATA_MIRROR", serve(mirror))
    assert D.load_pairs("wmt14_en_de", "test", tmp_path / "a")  # the test set alone: no archive fetched
    assert not (tmp_path / "a/wmt14/archives").exists()
    assert D.load_pairs("wmt14_en_de", "train", tmp_path / "a") == expected


def test_wmt14_mismatched_member_lengths_are_an_error(wmt14_mirror, serve, tmp_path, monkeypatch):
    mirror, sha, _ = wmt14_mirror
    name = "training-parallel-commoncrawl.tgz"
    sha[name] = _tgz(mirror / "wmt14/archives" / name, {"commoncrawl.de-en.en": b"one\ntwo\n",
                                                         "commoncrawl.de-en.de": b"eins\n"})
    for n, h in sha.items():
        monkeypatch.setitem(D.ARCHIVE_SHA256, n, h)
    with pytest.raises(D.DataError, match="differ in length .* line 2"):
        D.fetch("wmt14_en_de", tmp_path / "d", base_url=serve(mirror))
    assert not (tmp_path / "d/wmt14/train/en-de/train.en").exists()


def test_gpu_profile_prefers_the_wmt14_training_data_when_present(wmt14_mirror, serve, tmp_path, monkeypatch, repo):
    """specs/profiles/gpu.yaml maps the paper's EN-DE specs to the cpu profile's Multi30k run unless `zoo data
    fetch wmt14_en_de` has built the real training data (the news pool supports no model: BLEU 0.0005 on an
    H100); each run's profile description says which."""
    from zoo.spec import resolve

    spec = repo / "specs/table2_en_de_base.yaml"
    (before,) = resolve(spec, profile="gpu", data_dir=tmp_path / "data")
    assert (before.data.dataset, before.data.vocab_size, before.data.max_len) == ("multi30k", 8000, 128)
    assert "Training data: multi30k" in before.profile_description
    assert "zoo data fetch wmt14_en_de" in before.profile_description
    mirror, sha, _ = wmt14_mirror
    for name, h in sha.items():
        monkeypatch.setitem(D.ARCHIVE_SHA256, name, h)
    D.fetch("wmt14_en_de", tmp_path / "data", base_url=serve(mirror))
    (after,) = resolve(spec, profile="gpu", data_dir=tmp_path / "data")
    assert (after.data.dataset, after.data.vocab_size) == ("wmt14_en_de", 37000)
    assert f"Training data: wmt14_en_de (its training data is present in {tmp_path / 'data'})" \
        in after.profile_description
    # the paper's model on WMT14; without it the cpu profile's proxy and budget on Multi30k (said before
    # anything trains): ~18 passes over Multi30k, 40% of the paper's steps on WMT14; the kept checkpoints span the spec's share of the run either way (the paper's last 5 ten-minute
    # checkpoints of 12 hours: 7.5% here), not 31-42%
    assert (after.model.N, after.model.d_model, after.model.h) == (6, 512, 8)
    assert (before.model.N, before.model.d_model, before.model.h) == (3, 256, 8)
    assert "on it the model is the profile's proxy, scaled by width x 0.5, depth x 0.5" in before.profile_description
    assert (before.train.steps, before.train.schedule.warmup_steps, before.train.schedule.lr_scale) == (2200, 250, 0.4)
    assert (after.train.steps, after.train.checkpoint_every, after.train.schedule.warmup_steps) == (40000, 600, 4000)
    assert (before.train.batch_tokens, after.train.batch_tokens) == (4000, 25000)
    for c in (before, after):
        assert c.train.keep_checkpoints * c.train.checkpoint_every / c.train.steps == pytest.approx(0.075, abs=0.005)
    from zoo.cli import budget
    assert "epochs of multi30k" in budget(before.model_copy(update={"data": before.data}))
    # every model at the paper's depth, post-LN, that the gpu profile trains on either corpus stays within
    # 2x the paper's learning rate at every step (the old schedule reached 68x at step 240: BLEU 0.00)
    from zoo.config import MAX_TIMES_PAPER
    seen = 0
    for data in (tmp_path / "data", tmp_path / "empty"):
        for f in sorted((repo / "specs").glob("*.yaml")):  # the paper's specs (a pilot sweeps its own rates)
            for c in resolve(f, profile="gpu", data_dir=data):
                if c.model.N >= 6 and c.model.norm_position == "post":
                    seen += 1
                    assert c.train.schedule.times_paper(c.model.d_model, c.train.steps) <= MAX_TIMES_PAPER, c.variant
    assert seen >= 10
    (fr,) = resolve(repo / "specs/table2_en_fr_base.yaml", profile="gpu", data_dir=tmp_path / "data")
    assert fr.data.dataset == "wmt14_en_fr" and "Training data" not in fr.profile_description
