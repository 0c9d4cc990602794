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
8. zoo.data.trees: Penn Treebank trees as a sequence-to-sequence parsing corpus (Table 4).
This door serves their public names to outsiders (`from zoo import data`; `data.load_pairs`), lazily: `zoo data
list` imports neither torch nor sentencepiece.
"""
from zoo._door import door

__getattr__, __dir__ = door(__name__, __file__, ["corpora", "download", "read", "bpe", "encoded", "batching", "files", "trees"],
                            moved={"zoo.tokens": "PAD UNK BOS EOS"})
