"""Corpora, shared BPE vocabularies and token-budget batches: the data side of a run, one import away.

The parts, each its own module, read in this order:
1. zoo.corpora: where the data lives (`data_dir`), the user-facing `DataError`, and the corpus registry
   (`CORPORA`): files, sha256 checksums, public origins, splits, terms;
2. zoo.fetch: reading (`load_pairs`), downloading (`fetch`; it also builds WMT14 EN-DE's training split
   from the public archives) and checking (`verify`, `list_corpora`);
3. zoo.bpe: one shared sentencepiece BPE model per (corpus, vocabulary size) (`bpe_model`, `load_sp`),
   and the token ids it reserves (`PAD`, `UNK`, `BOS`, `EOS`);
4. zoo.encoded: the encoded training corpus, built once per (corpus, BPE model, max_len, ...) and
   memory-mapped by every trial (`encoded_corpus`, `EncodedCorpus`);
5. zoo.batching: batching as in the paper, section 5.1: pairs grouped by approximate length, each batch
   holding about `batch_tokens` source and `batch_tokens` target tokens (`encode_pairs`, `make_batches`,
   `shard`, `collate`), from numpy length arrays.

This module only re-exports their public names (`from zoo import data`; `zoo.data.load_pairs`), so
callers need not know which part holds what. It imports no torch: `zoo data list` stays quick.
"""
from zoo.batching import Batch, PairsIds, collate, encode_pairs, make_batches, pair_lengths, shard  # noqa: F401
from zoo.bpe import BOS, EOS, PAD, UNK, bpe_model, load_sp  # noqa: F401
from zoo.corpora import ARCHIVE_SHA256, CORPORA, Archive, Corpus, CorpusFile, DataError, corpus, data_dir  # noqa: F401
from zoo.encoded import EncodedCorpus, encoded_corpus  # noqa: F401
from zoo.fetch import (BUILD_STAMP, DOWNLOAD_ENV, MIRROR_ENV, WORD_PIECES_PER_WORD, downloads_allowed,  # noqa: F401
                       fetch, fetch_on_first_use, list_corpora, load_pairs, split_present, train_size, verify)
