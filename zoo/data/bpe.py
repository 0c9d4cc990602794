"""One shared sentencepiece BPE model per (corpus, vocabulary size) (`bpe_model`, `load_sp`), and
the token ids it reserves: pad=0, unk=1, bos=2, eos=3 (their one home).
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import logging
import os
import re
import time
from pathlib import Path
from typing import Iterator

from zoo.tokens import BOS, EOS, PAD, UNK
from zoo.data.corpora import DataError, user_cache, corpus, data_dir
from zoo.data.files import atomic_write_stream, lines
from zoo.data.read import load_pairs, split_files

__all__ = ["bpe_model", "load_sp"]  # what it lends outside its package (the door serves these)


log = logging.getLogger(__name__)



# --------------------------------------------------------------------------- shared BPE
_BPE_VERSION = 1  # bump when the training settings below change: old cache files go stale


def cache_folder(root: Path, explicit: str | Path | None, kind: str = "bpe") -> Path:
    """<data dir>/.zoo-cache/<kind> (BPE models, encoded corpora), or `explicit`."""
    if explicit:
        return Path(explicit).expanduser()
    preferred = root / ".zoo-cache" / kind
    try:  # the data dir may be read-only (a shared folder): fall back to the user cache
        preferred.mkdir(parents=True, exist_ok=True)
        if os.access(preferred, os.W_OK):
            return preferred
    except OSError:
        pass
    return user_cache() / kind


def _train_text(name: str, root: Path, explicit, source_only: bool = False) -> Iterator[str]:
    """Both sides (or the source side) of the training split, streamed (WMT14 EN-FR has 36M pairs)."""
    c = corpus(name)
    if not c.splits:
        for s, t in load_pairs(name, "train", explicit):
            yield s
            if not source_only:
                yield t
        return
    srcs, tgts = split_files(c, "train", root, explicit)
    for p in (*srcs, *(() if source_only else tgts)):
        yield from lines(p)


def bpe_model(name: str, vocab_size: int, root: str | Path | None = None,
              cache_dir: str | Path | None = None, source_only: bool = False) -> Path:
    """Path to a sentencepiece BPE model shared by source and target, trained on both sides of
    the corpus' training split; trained once per (corpus, vocab_size) and cached.

    Ids: pad=0, unk=1, bos=2, eos=3. The vocabulary size is a hard limit: if the data cannot
    support `vocab_size` pieces, DataError says the maximum (we fail rather than silently train a
    smaller vocabulary than the spec asks for). Record `load_sp(path).get_piece_size()` with a run.
    Safe under concurrency: a file lock serialises trainers, the model appears via os.replace.
    source_only: trained on the source side alone (when the target has its own vocabulary)."""
    c = corpus(name)
    base = data_dir(root)
    # Fingerprint the training data so a changed corpus never reuses a stale model.
    fp = hashlib.sha256(repr((_BPE_VERSION, [f.sha256 for f in c.files])).encode())
    if "train" in c.splits:  # user-supplied WMT14 training files have no registered hash
        srcs, tgts = split_files(c, "train", base, root)
        for p in srcs + tgts:
            fp.update(f"{p.name}:{p.stat().st_size}".encode())
    cache = cache_folder(base, cache_dir)
    side = "-src" if source_only else ""
    path = cache / f"{name}{side}-bpe{vocab_size}-{fp.hexdigest()[:10]}.model"
    if path.is_file():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if we crash
        if path.is_file():  # another process trained it while we waited
            return path
        t0 = time.perf_counter()
        model = io.BytesIO()
        import sentencepiece as spm

        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=_train_text(name, base, root, source_only), model_writer=model,
                model_type="bpe", vocab_size=vocab_size, character_coverage=1.0,
                pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
                # Sample at most 2M sentences (uniformly, over the whole stream) on big corpora.
                input_sentence_size=2_000_000, shuffle_input_sentence=True,
                num_threads=os.cpu_count() or 1, minloglevel=2)
        except RuntimeError as e:
            m = re.search(r"value <= (\d+)", str(e))
            if not m:
                raise
            raise DataError(f"vocab_size {vocab_size} is too large for corpus '{name}': its training "
                            f"data supports at most {m.group(1)} BPE pieces. Set the spec's "
                            f"vocabulary size to {m.group(1)} or less.") from None
        atomic_write_stream(path, iter([model.getvalue()]),
                      hashlib.sha256(model.getvalue()).hexdigest(), "sentencepiece")
        log.info("trained BPE %s (%d pieces) in %.1f s", path.name, vocab_size,
                 time.perf_counter() - t0)
    return path


def load_sp(path: str | Path):
    """A SentencePieceProcessor for a model file; `.get_piece_size()` is the actual vocab size."""
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=str(path))

