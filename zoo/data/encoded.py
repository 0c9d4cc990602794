"""The encoded training corpus: built once per (corpus, BPE model, max_len, ...) and memory-mapped by
every trial (`encoded_corpus`, `EncodedCorpus`).
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from zoo.errors import disk_full
from zoo.data.corpora import Corpus, DataError, corpus, data_dir
from zoo.data.files import lines, sha256_file
from zoo.data.read import load_pairs, split_files
from zoo.data.bpe import cache_folder, load_sp

__all__ = ["EncodedCorpus", "encoded_corpus"]  # what it lends outside its package (the door serves these)


log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- encoded corpus cache
# A training split is encoded once per (BPE model, corpus files, max_len, max_train_pairs, target
# vocabulary) into flat arrays on disk, and every trial memory-maps them: the ids sit in the OS page
# cache, shared by the trials of a machine, instead of ~34 bytes a token of Python ints in each trial
# (WMT14 EN-DE: 10-13 GB a trial, and minutes of encoding each time). numpy memmap rather than Arrow:
# numpy is here already (torch and pandas need it), and flat id arrays plus offsets are all we read;
# pyarrow would add schemas, record batches and IPC machinery this does not use.
_ENCODED_VERSION = 1  # bump when the layout or the encoding below changes: old caches go stale
_CHUNK = 100_000  # pairs encoded at a time: bounded memory, and work enough for sentencepiece's threads


def _id_dtype(vocab_size: int) -> np.dtype:
    """The narrowest type holding ids 0 .. vocab_size - 1: 2 bytes a token below 65537 pieces."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


@dataclass(frozen=True, eq=False)
class EncodedCorpus:
    """A training split's token ids, memory-mapped: pair i is src_ids[src_off[i]:src_off[i + 1]] and
    likewise on the target side (no bos/eos: `collate` adds them). Only `lengths` lives in the
    process's own memory (8 bytes a pair); the ids are read from the page cache as batches need them."""
    src_ids: np.ndarray  # (source tokens,) uint16 or uint32
    tgt_ids: np.ndarray  # (target tokens,)
    src_off: np.ndarray  # (pairs + 1,) int64
    tgt_off: np.ndarray
    lengths: np.ndarray  # (pairs, 2) int32: source + eos, target + eos, as `pair_lengths`
    path: Path | None = None  # the cache folder it is mapped from
    dropped: int = 0  # pairs left out for more than max_len ids on a side

    @classmethod
    def open(cls, folder: Path) -> "EncodedCorpus":
        meta = json.loads((folder / "meta.json").read_text())

        def mapped(name: str, dtype: str, n: int) -> np.ndarray:  # np.memmap refuses empty files
            return np.memmap(folder / name, dtype=dtype, mode="r", shape=(n,)) if n else np.zeros(0, dtype)

        n = meta["pairs"]
        src_off, tgt_off = mapped("src.off", "int64", n + 1), mapped("tgt.off", "int64", n + 1)
        lengths = np.empty((n, 2), np.int32)
        for side, off in enumerate((src_off, tgt_off)):
            np.subtract(off[1:], off[:-1], out=lengths[:, side], casting="unsafe")
        lengths += 1  # eos on the source; bos (input) or eos (label) on the target
        return cls(mapped("src.ids", meta["src_dtype"], meta["src_tokens"]),
                   mapped("tgt.ids", meta["tgt_dtype"], meta["tgt_tokens"]),
                   src_off, tgt_off, lengths, folder, meta["dropped"])

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        i = range(len(self))[i]  # negative indices and bounds checks, as a list's
        return (self.src_ids[self.src_off[i]:self.src_off[i + 1]],
                self.tgt_ids[self.tgt_off[i]:self.tgt_off[i + 1]])

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        return (self[i] for i in range(len(self)))

    def src(self, i: int) -> np.ndarray:
        return self[i][0]

    def tgt(self, i: int) -> np.ndarray:
        return self[i][1]

    @property
    def src_len(self) -> np.ndarray:
        return self.lengths[:, 0]

    @property
    def tgt_len(self) -> np.ndarray:
        return self.lengths[:, 1]

    @property
    def tokens(self) -> int:
        """Ids stored, both sides (no bos/eos)."""
        return len(self.src_ids) + len(self.tgt_ids)

    def gather(self, indices) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """(ids one pair after another, ids per pair) of each side for the pairs at `indices`."""
        indices = np.asarray(indices, dtype=np.int64)
        return _gather(self.src_ids, self.src_off, indices), _gather(self.tgt_ids, self.tgt_off, indices)


def _gather(ids: np.ndarray, off: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    start = off[indices]
    lens = off[indices + 1] - start
    first = np.cumsum(lens) - lens  # where each pair begins in the result
    return np.asarray(ids[np.repeat(start - first, lens) + np.arange(lens.sum())]), lens


def _stream_pairs(name: str, split: str, root: str | Path | None = None) -> Iterator[tuple[str, str]]:
    """The pairs of `load_pairs`, streamed from the files (WMT14 EN-FR's training split has 36M)."""
    c = corpus(name)
    if not c.splits:  # parsed from a treebank: small, read whole
        yield from load_pairs(name, split, root)
        return
    srcs, tgts = split_files(c, split, data_dir(root), root)
    for s, t in zip(srcs, tgts):
        for n, (a, b) in enumerate(itertools.zip_longest(lines(s), lines(t))):
            if a is None or b is None:
                raise DataError(f"Corpus '{name}' split '{split}': {s} and {t} differ in length (one ends "
                                f"after {n} lines); the two sides must be line-aligned. Run `zoo data "
                                f"verify {name}` or re-fetch the files.")
            yield a, b


def _encoded_key(c: Corpus, base: Path, root, sp_path: Path, max_len: int | None,
                 max_pairs: int | None, tgt_vocab) -> str:
    """Names the cache: any change to the BPE model, the training files or the settings misses it."""
    fp = hashlib.sha256(repr((_ENCODED_VERSION, sha256_file(sp_path), [f.sha256 for f in c.files],
                              max_len, max_pairs)).encode())
    if "train" in c.splits:  # user-supplied training files have no registered hash
        srcs, tgts = split_files(c, "train", base, root)
        for p in srcs + tgts:
            st = p.stat()
            fp.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    if tgt_vocab is not None:  # the target side's own vocabulary: its pieces in id order
        fp.update("\n".join(map(tgt_vocab.id_to_piece, range(tgt_vocab.get_piece_size()))).encode())
    return f"{c.name}-{fp.hexdigest()[:16]}"


def encoded_corpus(name: str, sp_path: str | Path, root: str | Path | None = None,
                   max_len: int | None = None, max_pairs: int | None = None, tgt_vocab=None,
                   cache_dir: str | Path | None = None) -> EncodedCorpus:
    """The training split of corpus `name` encoded with the BPE model at `sp_path` (the target side
    with `tgt_vocab` when given): its first `max_pairs` pairs, less those with more than `max_len`
    ids on either side (the count is logged and kept as `.dropped`).

    Encoded once, in chunks, into <data dir>/.zoo-cache/encoded/ (or `cache_dir`); every later call,
    in any process, memory-maps what is there. Safe under concurrency as `bpe_model`: a file lock
    serialises builders, and the finished folder appears under its name via os.replace."""
    c = corpus(name)
    base = data_dir(root)
    key = _encoded_key(c, base, root, Path(sp_path), max_len, max_pairs, tgt_vocab)
    cache = cache_folder(base, cache_dir, "encoded")
    path = cache / key
    if (path / "meta.json").is_file():
        return EncodedCorpus.open(path)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if we crash
        if not (path / "meta.json").is_file():  # else another process built it while we waited
            # Only the lock holder writes here: a folder without meta.json, or a .part folder, was left
            # by a builder that was killed (GBs for WMT14 EN-FR); clear it before building again.
            for stale in [path, *cache.glob(f".{key}.*.part")]:
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{key}.", suffix=".part"))
            try:
                pairs = itertools.islice(_stream_pairs(name, "train", root), max_pairs)
                _encode_into(tmp, pairs, load_sp(sp_path), max_len, tgt_vocab)
                os.replace(tmp, path)
            except BaseException as e:
                shutil.rmtree(tmp, ignore_errors=True)
                if isinstance(e, OSError) and e.errno == errno.ENOSPC:
                    raise disk_full(cache, e) from None
                raise
    return EncodedCorpus.open(path)


def _encode_into(folder: Path, pairs: Iterator[tuple[str, str]], sp, max_len: int | None, tgt_vocab) -> None:
    """Write src.ids / tgt.ids (the ids, pair after pair), src.off / tgt.off (int64 offsets, pairs + 1)
    and, last, meta.json into `folder`, `_CHUNK` pairs at a time: never the whole corpus in memory."""
    t0 = time.perf_counter()
    threads = os.cpu_count() or 1
    dtypes = _id_dtype(sp.get_piece_size()), _id_dtype((tgt_vocab or sp).get_piece_size())
    ends, seen, kept = [0, 0], 0, 0
    with open(folder / "src.ids", "wb") as s_ids, open(folder / "tgt.ids", "wb") as t_ids, \
            open(folder / "src.off", "wb") as s_off, open(folder / "tgt.off", "wb") as t_off:
        sides = ((s_ids, s_off), (t_ids, t_off))
        for _, f_off in sides:
            np.zeros(1, np.int64).tofile(f_off)
        while chunk := list(itertools.islice(pairs, _CHUNK)):
            xs = sp.encode([s for s, _ in chunk], out_type=int, num_threads=threads)
            ys = ([tgt_vocab.encode(t) for _, t in chunk] if tgt_vocab is not None else
                  sp.encode([t for _, t in chunk], out_type=int, num_threads=threads))
            seen += len(chunk)
            if max_len is not None:
                keep = [len(x) <= max_len and len(y) <= max_len for x, y in zip(xs, ys)]
                xs, ys = list(itertools.compress(xs, keep)), list(itertools.compress(ys, keep))
            kept += len(xs)
            for k, (seqs, (f_ids, f_off)) in enumerate(zip((xs, ys), sides)):
                lens = np.fromiter(map(len, seqs), np.int64, len(seqs))
                np.fromiter(itertools.chain.from_iterable(seqs), dtypes[k], int(lens.sum())).tofile(f_ids)
                (ends[k] + np.cumsum(lens)).tofile(f_off)
                ends[k] += int(lens.sum())
            del chunk, xs, ys  # before the next chunk is read: one chunk in memory at a time
    seconds = time.perf_counter() - t0
    meta = {"version": _ENCODED_VERSION, "pairs": kept, "dropped": seen - kept, "max_len": max_len,
            "src_dtype": dtypes[0].name, "tgt_dtype": dtypes[1].name, "src_tokens": ends[0],
            "tgt_tokens": ends[1], "encode_seconds": round(seconds, 2)}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if seen > kept:
        log.info("dropped %d of %d pairs longer than %s tokens", seen - kept, seen, max_len)
    log.info("encoded %d pairs (%d + %d tokens) in %.1f s", kept, ends[0], ends[1], seconds)

