"""Corpora, shared BPE vocabularies and token-budget batches: the data side of a run.

The parts, each its own module, read in this order:
1. zoo.data.corpora: where the data lives (`data_dir`), the user-facing `DataError`, and the corpus registry
   (`CORPORA`): files, sha256 checksums, public origins, splits, terms;
2. zoo.data.files: the data folder's files with no network (found, read line by line, hashed, written atomically);
3. zoo.data.download: downloading (`fetch`; it also builds WMT14 EN-DE's training split from the public
   archives, and fetches on first use) and checking (`verify`, `list_corpora`);
4. zoo.data.read: a split as (source, target) pairs (`load_pairs`);
5. zoo.data.bpe: one shared sentencepiece BPE model per (corpus, vocabulary size) (`bpe_model`, `load_sp`),
   trained with the token ids of zoo.tokens;
6. zoo.data.encoded: the encoded training corpus, built once and memory-mapped by every trial;
7. zoo.data.batching: batching as in the paper, section 5.1, from numpy length arrays;
8. zoo.data.trees: Penn Treebank trees as a sequence-to-sequence parsing corpus (Table 4);
9. zoo.data.packing: several short pairs a row, first fit (`pack`).
This door serves their public names to outsiders (`from zoo import data`; `data.load_pairs`), lazily: `zoo data
list` imports neither torch nor sentencepiece.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zoo.lazy import door

# The door, written by scripts/doors.py from the parts' __all__ (tests/test_structure.py checks it).
if TYPE_CHECKING:
    from .batching import (Batch, BatchOrder, PairsIds, collate, encode_pairs, make_batches, pair_lengths, shard,
        to_device)
    from .bpe import bpe_model, load_sp
    from .corpora import (ARCHIVE_SHA256, Archive, CORPORA, Corpus, CorpusFile, DataError, corpus, data_dir,
        user_cache)
    from .download import (BUILD_STAMP, DOWNLOAD_ENV, MIRROR_ENV, WORD_PIECES_PER_WORD, downloads_allowed, fetch,
        fetch_on_first_use, list_corpora, split_present, train_size, verify)
    from .encoded import EncodedCorpus, encoded_corpus
    from .packing import ROW, pack, rows_of
    from .read import load_pairs
    from .trees import (SymbolVocab, Tree, delinearize, flat_tree, malformed, right_branching, to_bracketed,
        word_pointer_tables)

_PART = {  # name -> the part that lends it
    "Batch": "batching", "BatchOrder": "batching", "PairsIds": "batching", "collate": "batching",
    "encode_pairs": "batching", "make_batches": "batching", "pair_lengths": "batching", "shard": "batching",
    "to_device": "batching", "bpe_model": "bpe", "load_sp": "bpe", "ARCHIVE_SHA256": "corpora",
    "Archive": "corpora", "CORPORA": "corpora", "Corpus": "corpora", "CorpusFile": "corpora",
    "DataError": "corpora", "corpus": "corpora", "data_dir": "corpora", "user_cache": "corpora",
    "BUILD_STAMP": "download", "DOWNLOAD_ENV": "download", "MIRROR_ENV": "download",
    "WORD_PIECES_PER_WORD": "download", "downloads_allowed": "download", "fetch": "download",
    "fetch_on_first_use": "download", "list_corpora": "download", "split_present": "download",
    "train_size": "download", "verify": "download", "EncodedCorpus": "encoded", "encoded_corpus": "encoded",
    "ROW": "packing", "pack": "packing", "rows_of": "packing", "load_pairs": "read", "SymbolVocab": "trees",
    "Tree": "trees", "delinearize": "trees", "flat_tree": "trees", "malformed": "trees", "right_branching": "trees",
    "to_bracketed": "trees", "word_pointer_tables": "trees",
}
# End of the door.
__all__ = list(_PART)
__getattr__, __dir__ = door(__name__, _PART)
