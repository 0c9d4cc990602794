"""Corpora, shared BPE vocabularies and token-budget batches.

Read top to bottom:
1. where the data lives (`data_dir`) and the user-facing `DataError`;
2. the corpus registry (`CORPORA`): files, sha256 checksums, public origins, splits, terms;
3. reading (`load_pairs`), downloading (`fetch`; it also builds WMT14 EN-DE's training split from
   the public archives) and checking (`verify`, `list_corpora`);
4. one shared sentencepiece BPE model per (corpus, vocabulary size) (`bpe_model`, `load_sp`);
5. the encoded training corpus, built once per (corpus, BPE model, max_len, ...) and memory-mapped
   by every trial (`encoded_corpus`, `EncodedCorpus`);
6. batching as in the paper, section 5.1: pairs grouped by approximate length, each batch holding
   about `batch_tokens` source and `batch_tokens` target tokens (`encode_pairs`, `make_batches`,
   `shard`, `collate`), from numpy length arrays.

Checksums are embedded here (copied from the shared data folder's MANIFEST.tsv; the WMT14 training
archives' from TensorFlow Datasets' published table) so that a machine with only this package and
internet access can download and verify every file.
"""
from __future__ import annotations

import difflib
import errno
import fcntl
import functools
import gzip
import hashlib
import io
import itertools
import json
import logging
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from zoo.errors import UserError, disk_full

if TYPE_CHECKING:  # torch is imported where tensors are made: `zoo data list` stays quick
    import torch

log = logging.getLogger(__name__)

PAD, UNK, BOS, EOS = 0, 1, 2, 3


# --------------------------------------------------------------------------- data directory
class DataError(UserError):
    """A user-facing data problem: what is missing, where we looked, how to get it.

    The CLI prints the message and exits 2 (no traceback)."""


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zoo"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data directory: `explicit` (e.g. --data-dir) > $ZOO_DATA_DIR > <user cache>/zoo/data."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("ZOO_DATA_DIR"):
        return Path(os.environ["ZOO_DATA_DIR"]).expanduser()
    return _user_cache() / "data"


def _where(root: str | Path | None) -> str:
    """Where `data_dir(root)` came from, for error messages (callers may pass the resolved path)."""
    p, env = data_dir(root), os.environ.get("ZOO_DATA_DIR")
    if env and p == Path(env).expanduser():
        return "from $ZOO_DATA_DIR"
    if p == _user_cache() / "data":
        return "the default; set $ZOO_DATA_DIR or --data-dir to use another folder"
    return "given with --data-dir"


# --------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class CorpusFile:
    path: str  # relative to the data directory
    sha256: str
    url: str | None  # public origin; None = not downloadable from the origin as such
    member: str | None = None  # extracted from this member of the previous zip file instead
    optional: bool = False  # a convenience copy; its absence is not an error


@dataclass(frozen=True)
class Archive:
    """A public .tgz holding one line-aligned (source, target) pair of members of a built split.
    Its sha256 is looked up by file name in ARCHIVE_SHA256 (one table for every archive)."""
    path: str  # where it is kept in the data directory (a mirror serves it at the same path)
    url: str  # public origin
    members: tuple[str, str]  # (source side, target side) inside the archive


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    src: str
    tgt: str
    files: tuple[CorpusFile, ...]
    # split -> (source files, target files); several files per side are concatenated in order.
    # A path without ".gz" is also looked up with ".gz" appended.
    splits: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    terms: str
    manual: str = ""  # how to obtain split files that are not in `files` (no public mirror)
    split_names: tuple[str, ...] = ()  # for corpora whose pairs come from another module
    # split -> the public archives it is built from by `fetch` (its files in `splits` are the output)
    built: dict[str, tuple["Archive", ...]] = field(default_factory=dict)

    def split_choices(self) -> list[str]:
        return list(self.splits) or list(self.split_names)


_GH = "https://raw.githubusercontent.com"
_M30K = f"{_GH}/multi30k/dataset/master/data/task1/raw"
_OPUS = f"{_GH}/Helsinki-NLP/OPUS-MT-train/master"
_NLTK = f"{_GH}/nltk/nltk_data/gh-pages/packages/corpora"

_M30K_SHA = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2017_flickr.de.gz": "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_mscoco.de.gz": "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338",
    "test_2017_mscoco.en.gz": "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58",
    "test_2018_flickr.de.gz": "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608",
    "test_2018_flickr.en.gz": "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d",
}
# WMT test sets, as mirrored in OPUS-MT-train/testsets/{de-en,fr-en}/ (same file names there).
_WMT_SHA = {
    "newstest2013.de.gz": "5d290a2822862b8cbfca18d396f7b0a37887a7ba0dbb102438336e1c198ea25f",
    "newstest2013.en.gz": "c129e28824bf5d0b3780365fd7b75a8096c736e15ed233e746539d3b0b89f3b3",
    "newstest2013.fr.gz": "74ac10d722c8c308cc175e5bdadda21ac76540eeef3c8ceba73629bbf22ca334",
    "newstest2014-deen.de.gz": "6785c25f553a3f8b27f9ada0f5c9507d7be36b7252edc462c03de9c181e702c6",
    "newstest2014-deen.en.gz": "c6098387dbe611c09cc203893052e153fbfb17abea78fee1796fbb526c46f9e3",
    "newstest2014-fren.en.gz": "d348eacacc8832317ca39f98adf9f2f7268ed05f49fbc30e7674c43962a425c5",
    "newstest2014-fren.fr.gz": "01533aa6919868d027735f1e3ac587876dfae9df116baf7a690fea9535a2f360",
}
_POOL_SHA = {  # (en, de) per year: the other years' EN-DE news test sets
    "news-test2008": ("38d019883bc2c008a1b9c8e194bb1b2d4be529ef00f17fcfa7267bcf2300755c",
                      "21977adc313e0b241cada2958d0e6a45027265a56295be54b97461578006ae7e"),
    "newssyscomb2009": ("283517872000c545404ec1a25aed64cffd34f38c8d73dc436709f2ecc10bdb72",
                        "d64a88346f0f8373bc8ed0ad040c7ef119f3572930e01c41eb89c9d0c7c53772"),
    "newstest2009": ("fc8abdf5e3c025ae23b7155d31b0dca893794334b5bf8e23ae0399f2d45d3c70",
                     "1a8bbd13cd4dead067b99330840a252c167983ce6e9e26ada7cc659ca6c16ed7"),
    "newstest2010": ("8bb3964d92d37725f7a2de76f49bdfb3d751913c97ede62e242e9c9c35045047",
                     "eb876f3d6cb1d33bc0fd2912918a6c0e5285cc4300234a1b190dc9fe0eb87999"),
    "newstest2011": ("d0750d268904f889c9ad761ad95c595eef47fd0fef6128e6ea75aa23a2423c48",
                     "f0ee1c0c527f2b0f407d7a255227fba7cb29d2d5d48a92eb8f258142c3573307"),
    "newstest2012": ("f4509e249a33442ebf44483c0231f7e45e22e4b0a7e0f6b29ff08e586432c687",
                     "edb8bef4ad73872e9d83480a2a3484f66b118a97bd85a748cce634e221458d61"),
    "newstest2015-ende": ("2659f15c826546f1affb23a2b4c255bb74647321d69dfe93a626863b0269602d",
                          "ee760f6d91094e47759477eaa467515479ab7fc08e89cab0642f2036552fc088"),
    "newstest2016-ende": ("0d6b87f623b4f5069680e94e8acd8a0e97781e6b12a241bb76f1f3f054ce55df",
                          "e58183f74afee40352ea81a8af18c978814b869c76f4c803788656b58efb1989"),
    "newstest2017-ende": ("a402f42cadc5b4a28d566baea15580e68b4c2d7b797473a8ea64d4d496709277",
                          "7e792f4b410e8a7f30d62d4462d8c5c884694e7da20b9e382c1800e7ef97d336"),
    "newstest2018-ende": ("525273bc3487fa428184c5850d113452214a4c895128cb60df46349c3385db70",
                          "7215fe4fd7f078e79f3e0f181513933f31627c73744873af293c67bf9d5b25ff"),
    "newstest2019-ende": ("9f4e4782fc03a6740f9e44c2f43dfa918e68a88a40cfb34885d80f47950bc809",
                          "8a0d00ab12b35150a946e21e4da45a602701a5e2bd8f2f12d57dc5b273fa45c4"),
}
_OPUS_LICENSE = CorpusFile(
    "wmt14/LICENSE.OPUS-MT-train",
    "eab19fee2aedea4d47b7047bc9fb20d944f63fe539a97806beca618ab7efa461", f"{_OPUS}/LICENSE")
_WMT_TERMS = ("WMT test sets: free for research use; cite the WMT overview paper. "
              "Mirror: Helsinki-NLP/OPUS-MT-train (MIT licence for the repository).")


# The WMT14 EN-DE training corpora of the paper (section 5.1), as the dataset builders of TensorFlow
# Datasets (tensorflow_datasets/translate/wmt.py: europarl_v7, commoncrawl, newscommentary_v9) and
# Hugging Face datasets (wmt14/wmt_utils.py) download them: the statmt.org archives and the EN-DE
# members inside. The sha256s (and sizes) are the ones TensorFlow Datasets publishes for these URLs
# in tensorflow_datasets/url_checksums/wmt14_translate.txt (github.com/tensorflow/datasets, commit
# 333639b37af6c6fedf3610a4a2d42f1c6ef6f7d5; it lists them under http://www.statmt.org/..., the same
# files as https). Europarl v7 657,632,379 bytes, Common Crawl 918,311,367, News Commentary v9 80,418,416.
ARCHIVE_SHA256 = {
    "training-parallel-europarl-v7.tgz": "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7",
    "training-parallel-commoncrawl.tgz": "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5",
    "training-parallel-nc-v9.tgz": "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485",
}
_STATMT = "https://www.statmt.org"
_WMT14_EN_DE_TRAIN = (
    Archive("wmt14/archives/training-parallel-europarl-v7.tgz",
            f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz",
            ("training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de")),
    Archive("wmt14/archives/training-parallel-commoncrawl.tgz",
            f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz",
            ("commoncrawl.de-en.en", "commoncrawl.de-en.de")),
    Archive("wmt14/archives/training-parallel-nc-v9.tgz",
            f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz",
            ("training/news-commentary-v9.de-en.en", "training/news-commentary-v9.de-en.de")),
)


def _wmt(name: str, pair: str) -> CorpusFile:
    return CorpusFile(f"wmt14/{name}", _WMT_SHA[name], f"{_OPUS}/testsets/{pair}/{name}")


def _wmt14_manual(tgt: str, what: str) -> str:
    return (f"The WMT14 EN-{tgt.upper()} training data ({what}) is not in any mirror this project "
            f"downloads from. Get the parallel corpora listed at "
            f"https://www.statmt.org/wmt14/translation-task.html (or the same data from OPUS / the "
            f"Hugging Face 'wmt14' data set), concatenate them line-aligned, and place them in the "
            f"data directory as wmt14/train/en-{tgt}/train.en and train.{tgt} "
            f"(UTF-8, one sentence per line, optionally gzipped as .gz).")


CORPORA: dict[str, Corpus] = {
    "multi30k": Corpus(
        name="multi30k",
        description="Multi30k task 1 EN-DE image captions, raw: train 29,000 pairs, "
                    "dev = val (1,014), test = test_2016_flickr (1,000).",
        src="en", tgt="de",
        files=(CorpusFile("multi30k/README.origin.md",
                          "d85366a011c276342f99bcd1fe32ca126e0295914413f7bf45201972f241818c",
                          f"{_GH}/multi30k/dataset/master/README.md"),)
        + tuple(CorpusFile(f"multi30k/{f}", h, f"{_M30K}/{f}") for f, h in _M30K_SHA.items()),
        splits={
            split: ((f"multi30k/{stem}.en.gz",), (f"multi30k/{stem}.de.gz",))
            for split, stem in [("train", "train"), ("dev", "val"), ("test", "test_2016_flickr"),
                                ("test_2017_flickr", "test_2017_flickr"),
                                ("test_2017_mscoco", "test_2017_mscoco"),
                                ("test_2018_flickr", "test_2018_flickr")]
        },
        terms="Non-commercial research and educational use only (Flickr30K-derived; see the "
              "origin README, github.com/multi30k/dataset).",
    ),
    "wmt14_en_de": Corpus(
        name="wmt14_en_de",
        description="WMT14 EN-DE as in the paper: train = Europarl v7 + Common Crawl + News Commentary "
                    "v9 (about 4.5M pairs, built by `zoo data fetch` from the statmt.org archives, "
                    "about 1.7 GB), dev newstest2013 (3,000), test newstest2014 full (3,003 lines, "
                    "sacreBLEU wmt14/full).",
        src="en", tgt="de",
        files=(_OPUS_LICENSE, _wmt("newstest2013.en.gz", "de-en"), _wmt("newstest2013.de.gz", "de-en"),
               _wmt("newstest2014-deen.en.gz", "de-en"), _wmt("newstest2014-deen.de.gz", "de-en")),
        splits={
            "train": (("wmt14/train/en-de/train.en",), ("wmt14/train/en-de/train.de",)),
            "dev": (("wmt14/newstest2013.en.gz",), ("wmt14/newstest2013.de.gz",)),
            "test": (("wmt14/newstest2014-deen.en.gz",), ("wmt14/newstest2014-deen.de.gz",)),
        },
        terms=_WMT_TERMS + " Training corpora: see https://www.statmt.org/wmt14/translation-task.html "
                           "(Europarl, Common Crawl and News Commentary each have their own terms).",
        built={"train": _WMT14_EN_DE_TRAIN},
    ),
    "wmt14_en_fr": Corpus(
        name="wmt14_en_fr",
        description="WMT14 EN-FR as in the paper: dev newstest2013 (3,000), test newstest2014 "
                    "full (3,003 lines); training data supplied by the user.",
        src="en", tgt="fr",
        files=(_OPUS_LICENSE, _wmt("newstest2013.en.gz", "de-en"), _wmt("newstest2013.fr.gz", "fr-en"),
               _wmt("newstest2014-fren.en.gz", "fr-en"), _wmt("newstest2014-fren.fr.gz", "fr-en")),
        splits={
            "train": (("wmt14/train/en-fr/train.en",), ("wmt14/train/en-fr/train.fr",)),
            "dev": (("wmt14/newstest2013.en.gz",), ("wmt14/newstest2013.fr.gz",)),
            "test": (("wmt14/newstest2014-fren.en.gz",), ("wmt14/newstest2014-fren.fr.gz",)),
        },
        terms=_WMT_TERMS,
        manual=_wmt14_manual("fr", "Europarl v7, Common Crawl, UN, News Commentary v9, 10^9 "
                                   "French-English: about 36M pairs"),
    ),
    "wmt_news_ende": Corpus(
        name="wmt_news_ende",
        description="Small in-domain EN-DE news corpus: train = the WMT news test sets of 2008-2012 "
                    "and 2015-2019 (26,740 pairs), dev newstest2013, test newstest2014 (full).",
        src="en", tgt="de",
        files=(_OPUS_LICENSE,)
        + tuple(CorpusFile(f"wmt-news-ende-pool/{stem}.{lang}.gz", h,
                           f"{_OPUS}/testsets/de-en/{stem}.{lang}.gz")
                for stem, hashes in _POOL_SHA.items() for lang, h in zip(("en", "de"), hashes))
        + (_wmt("newstest2013.en.gz", "de-en"), _wmt("newstest2013.de.gz", "de-en"),
           _wmt("newstest2014-deen.en.gz", "de-en"), _wmt("newstest2014-deen.de.gz", "de-en")),
        splits={
            "train": (tuple(f"wmt-news-ende-pool/{s}.en.gz" for s in _POOL_SHA),
                      tuple(f"wmt-news-ende-pool/{s}.de.gz" for s in _POOL_SHA)),
            "dev": (("wmt14/newstest2013.en.gz",), ("wmt14/newstest2013.de.gz",)),
            "test": (("wmt14/newstest2014-deen.en.gz",), ("wmt14/newstest2014-deen.de.gz",)),
        },
        terms=_WMT_TERMS,
    ),
    "wsj_semi": Corpus(
        name="wsj_semi",
        description="Table 4's semi-supervised setting: WSJ plus the high-confidence and "
                    "BerkeleyParser corpora of Vinyals & Kaiser et al. (2014), about 17M sentences. "
                    "Not public; supplied by the user as linearized parses.",
        src="en", tgt="tree",
        files=(),
        splits={
            "train": (("wsj_semi/train.words",), ("wsj_semi/train.tree",)),
            "dev": (("wsj_semi/dev.words",), ("wsj_semi/dev.tree",)),
            "test": (("wsj_semi/test.words",), ("wsj_semi/test.tree",)),
        },
        terms="Penn Treebank (LDC99T42, licensed) and corpora parsed by the authors of [37]; "
              "none of it may be redistributed.",
        manual="The semi-supervised corpora (about 17M parsed sentences from the high-confidence "
               "corpus and the BerkeleyParser corpus, [37]) and the full WSJ treebank are licensed "
               "or unpublished, so zoo cannot download them. To run this row, write the sentences "
               "as wsj_semi/{train,dev,test}.words (space-separated words, one sentence per line) "
               "and their trees linearized with zoo.trees.linearize as wsj_semi/{train,dev,test}.tree "
               "in the data directory (dev = WSJ section 22, test = section 23).",
    ),
    "wsj_sample": Corpus(
        name="wsj_sample",
        description="NLTK's 10% sample of the Penn Treebank WSJ (3,914 trees, sections 00-01; "
                    "split by file number). NON-COMMERCIAL USE ONLY; never redistribute it.",
        src="en", tgt="tree",
        files=(
            CorpusFile("ptb-wsj-sample/treebank.zip",
                       "9da92d76c3666cfb6cddeaed0f7e86b344cce0f0928a286d439e555f19c37399",
                       f"{_NLTK}/treebank.zip"),
            CorpusFile("ptb-wsj-sample/README.combined",
                       "ccab31244c75326129853f423ad6492672615913c63128c458ff9d7d92bc3bf2",
                       None, member="treebank/combined/README"),
            CorpusFile("ptb-wsj-sample/treebank.xml",
                       "fbf2dfa29b823e7fba3cd1312f7bd518dbd65002e5324bb69743b19b835f87ba",
                       f"{_NLTK}/treebank.xml"),
            # A repackaging of treebank.zip's combined/*.mrg that cannot be rebuilt byte for byte;
            # only a mirror of the shared folder (fetch with base_url) has it.
            CorpusFile("ptb-wsj-sample/treebank_combined_mrg.tar.gz",
                       "ea754544459d864bc6cb235b6a712a27f4fe38abf79d0f68fc20ee234fae63dd",
                       None, optional=True),
        ),
        splits={},
        split_names=("train", "dev", "test"),
        terms="(C) LDC 1995, made available by NLTK under fair use: non-commercial use only. "
              "The project must not redistribute it; it is read from the data directory or "
              "downloaded from github.com/nltk/nltk_data.",
    ),
}


def corpus(name: str) -> Corpus:
    """The registered corpus `name`; DataError with a suggestion for unknown names."""
    try:
        return CORPORA[name]
    except KeyError:
        close = difflib.get_close_matches(name, CORPORA, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise DataError(f"Unknown corpus '{name}'.{hint} Known corpora: "
                        f"{', '.join(CORPORA)} (see `zoo data list`).") from None


# --------------------------------------------------------------------------- reading
# A public corpus missing from the data directory is fetched the first time a run needs it (as
# torchvision's download=True), with the sha256 checks of `zoo data fetch`, unless the user
# forbids downloads. A mirror of the data folder (an intranet copy; the tests' loopback server)
# replaces the public origins.
DOWNLOAD_ENV = "ZOO_DOWNLOAD"   # "0" (or no/false/off): never download; a missing corpus is an error
MIRROR_ENV = "ZOO_DATA_MIRROR"  # base URL of a mirror of the data folder, as `zoo data fetch --base-url`


def downloads_allowed() -> bool:
    return os.environ.get(DOWNLOAD_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


def fetch_on_first_use(c: Corpus, base: Path, missing: list[str], explicit) -> None:
    """Fetch corpus `c` into `base` when a file a run needs is missing and the registry can fetch it.
    Several trials may ask at once: a lock per corpus lets one download while the others wait."""
    built = _built_paths(c)
    registered = {f.path for f in c.files if f.url or f.member or os.environ.get(MIRROR_ENV)} | built
    if not downloads_allowed() or not any(m in registered or m.removesuffix(".gz") in registered
                                          or m + ".gz" in registered for m in missing):
        return
    try:
        base.mkdir(parents=True, exist_ok=True)
        lock_path = base / f".zoo-fetch-{c.name}.lock"
        lock = open(lock_path, "a")
    except OSError as e:
        raise DataError(f"Corpus '{c.name}' is missing {', '.join(missing)} in the data directory {base} "
                        f"({_where(explicit)}), and it cannot be fetched there: {e}. Point $ZOO_DATA_DIR / "
                        f"--data-dir at a writable folder, or at one that already holds the corpus.") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if we crash
        log.warning("corpus %s is not in %s: fetching it on first use (set %s=0 to forbid downloads)",
                    c.name, base, DOWNLOAD_ENV)
        fetch(c.name, base, base_url=os.environ.get(MIRROR_ENV) or None,
              build=any(m in built for m in missing))  # the GB archives only when a run needs them


def split_present(name: str, split: str, root: str | Path | None = None) -> bool:
    """Whether a split's files are all in the data directory (nothing downloaded, no hash checked)."""
    c = CORPORA.get(name)
    if c is None or split not in c.splits:
        return False
    return all(_find(data_dir(root), rel) for rel in (*c.splits[split][0], *c.splits[split][1]))


WORD_PIECES_PER_WORD = 1.3  # what a 16k-37k shared BPE makes of news/caption text (the cache's exact counts differ by a few %)


@functools.lru_cache(maxsize=None)
def train_size(name: str, root: str | Path | None = None) -> tuple[int, int] | None:
    """(pairs, about how many source + target word-pieces one pass holds) of a corpus's training split
    in the data directory, counted from its words (None when absent or not a text corpus). What a
    profile's budget is in epochs (`zoo show`)."""
    c = CORPORA.get(name)
    if c is None or "train" not in c.splits or not split_present(name, "train", root):
        return None
    base = data_dir(root)
    pairs = words = 0
    for rel in c.splits["train"][0] + c.splits["train"][1]:
        for line in _lines(_find(base, rel)):
            words += len(line.split())
            pairs += 1
    pairs //= 2
    return pairs, round(words * WORD_PIECES_PER_WORD) + 2 * pairs  # each side gets an eos


def _find(root: Path, rel: str) -> Path | None:
    """The file for `rel` under root; a path without .gz may also exist gzipped."""
    for cand in (rel,) if rel.endswith(".gz") else (rel, rel + ".gz"):
        if (root / cand).is_file():
            return root / cand
    return None


def _lines(path: Path) -> Iterator[str]:
    """Lines without their trailing newline. Only "\\n" ends a line: the corpora contain NBSPs,
    thin spaces and a TAB inside sentences, which str.split()/strip() would mangle."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            yield line[:-1] if line.endswith("\n") else line


def _missing_error(c: Corpus, split: str, root: Path, missing: list[str], explicit) -> DataError:
    manual = [m for m in missing if m not in {f.path for f in c.files} | _built_paths(c)]
    origin = ("from its public origin, checking sha256" if not c.built.get(split) else
              "it downloads the training archives from " + ", ".join(a.url for a in c.built[split])
              + ", checks their published sha256 and builds the split from them")
    how = (c.manual if manual else
           f"Download it with `zoo data fetch {c.name}` ({origin}), "
           f"or point $ZOO_DATA_DIR / --data-dir at a folder that already holds it."
           + ("" if downloads_allowed() else f" (It was not fetched on first use: {DOWNLOAD_ENV}=0.)"))
    return DataError(f"Corpus '{c.name}' split '{split}' is not available: missing "
                     f"{', '.join(missing)} in the data directory {root} ({_where(explicit)}). {how}")


def _split_files(c: Corpus, split: str, root: Path, explicit) -> tuple[list[Path], list[Path]]:
    if split not in c.split_choices():
        raise DataError(f"Corpus '{c.name}' has no split '{split}'; choose one of: "
                        f"{', '.join(c.split_choices())}.")
    srcs, tgts = c.splits[split]
    missing = [rel for rel in (*srcs, *tgts) if _find(root, rel) is None]
    if missing:
        fetch_on_first_use(c, root, missing, explicit)
    found = {rel: _find(root, rel) for rel in (*srcs, *tgts)}
    missing = [rel for rel, p in found.items() if p is None]
    if missing:
        raise _missing_error(c, split, root, missing, explicit)
    return [found[r] for r in srcs], [found[r] for r in tgts]


def load_pairs(name: str, split: str, root: str | Path | None = None) -> list[tuple[str, str]]:
    """(source, target) sentence pairs of one split, raw text, in file order."""
    c = corpus(name)
    base = data_dir(root)
    if name == "wsj_sample":
        if split not in c.split_choices():
            raise DataError(f"Corpus 'wsj_sample' has no split '{split}'; choose one of: "
                            f"{', '.join(c.split_choices())}.")
        need = [f.path for f in c.files if not f.optional and not (base / f.path).is_file()]
        if need:
            fetch_on_first_use(c, base, need, root)
            need = [f.path for f in c.files if not f.optional and not (base / f.path).is_file()]
        if need:
            raise _missing_error(c, split, base, need, root)
        from zoo import trees  # lazy: parsing lives in its own module

        return trees.load_pairs(base, split)
    srcs, tgts = _split_files(c, split, base, root)
    pairs: list[tuple[str, str]] = []
    for s, t in zip(srcs, tgts):
        a, b = list(_lines(s)), list(_lines(t))
        if len(a) != len(b):
            raise DataError(f"Corpus '{name}' split '{split}': {s} has {len(a)} lines but {t} has "
                            f"{len(b)}; the two sides must be line-aligned. Run `zoo data verify "
                            f"{name}` or re-fetch the files.")
        pairs.extend(zip(a, b))
    return pairs


# --------------------------------------------------------------------------- fetch and verify
def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(dest: Path, chunks: Iterator[bytes], sha256: str, source: str) -> None:
    """Write to a temp file next to dest, check the hash, then os.replace: readers (and other
    processes) never see a partial or corrupt file under the final name."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != sha256:
            raise DataError(f"Checksum mismatch for {dest.name} from {source}: expected sha256 "
                            f"{sha256}, got {h.hexdigest()}. The file was not kept; the source may "
                            f"have changed or the download was corrupted; try again or use another "
                            f"mirror (--base-url).")
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _http_chunks(url: str) -> Iterator[bytes]:
    with urllib.request.urlopen(url, timeout=60) as r:
        total, done, shown = int(r.headers.get("Content-Length") or 0), 0, -1
        name = url.rsplit("/", 1)[-1]
        while chunk := r.read(1 << 20):
            done += len(chunk)
            shown = _progress(name, done, total, shown)
            yield chunk
        if shown >= 0 and sys.stderr.isatty():
            sys.stderr.write("\n")


def _progress(name: str, done: int, total: int, shown: int) -> int:
    """A progress bar on a terminal (redrawn in place), a log line per quarter otherwise (Ray logs)."""
    pct = int(100 * done / total) if total else -1
    if sys.stderr.isatty():
        bar = "#" * (pct // 5) if pct >= 0 else ""
        sys.stderr.write(f"\r  {name}: [{bar:<20}] {done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else
                         f"\r  {name}: {done / 1e6:.1f} MB")
        sys.stderr.flush()
        return max(pct, 0)
    if total and pct // 25 > shown // 25 and pct // 25 > 0:
        log.info("%s: %d%% of %.1f MB", name, pct, total / 1e6)
        return pct
    return shown


def _zip_member(path: Path, member: str) -> Iterator[bytes]:
    with zipfile.ZipFile(path) as z:
        yield z.read(member)


# Built splits (the WMT14 EN-DE training data): the archives are downloaded and sha256-checked like
# any file, then their members are streamed, line-aligned, into the split's files (never a whole
# corpus in memory). Overlap rule: a training pair is dropped when its source side equals a source
# sentence, or its target side a target sentence, of the corpus's dev or test split (newstest2013,
# newstest2014), compared after collapsing whitespace: no test or dev sentence is ever trained on.
# Pairs with an empty side are dropped too (Europarl has blank lines for untranslated turns).
BUILD_STAMP = "build.json"  # next to a built split's files: archive hashes, counts, output sha256s


def _built_paths(c: Corpus) -> set[str]:
    return {rel for split in c.built for rel in (*c.splits[split][0], *c.splits[split][1])}


def _norm(line: str) -> str:
    return " ".join(line.split())


def _download_archive(a: Archive, base: Path, base_url: str | None, name: str, explicit) -> Path:
    dest, sha = base / a.path, ARCHIVE_SHA256[Path(a.path).name]
    if dest.is_file() and _sha256(dest) == sha:
        log.info("%s: present, sha256 ok", a.path)
        return dest
    src = base_url.rstrip("/") + "/" + urllib.parse.quote(a.path) if base_url else a.url
    log.warning("%s: downloading %s (checked against its published sha256)", a.path, src)
    try:
        _atomic_write(dest, _http_chunks(src), sha, src)
    except OSError as e:
        raise DataError(f"Could not fetch {a.path} of corpus '{name}' from {src} into {base} "
                        f"({_where(explicit)}): {e}. Check the network, or fetch from a mirror with "
                        f"--base-url, or set $ZOO_DATA_DIR / --data-dir to a writable folder.") from None
    return dest


def _extract_members(path: Path, members: tuple[str, str], into: Path) -> list[Path]:
    """Copy the two members out of a .tgz in one streaming pass (reading two members of a gzip
    stream side by side would decompress it again and again)."""
    out = [into / "src", into / "tgt"]
    found = [False, False]
    with tarfile.open(path, "r|gz") as tar:
        for m in tar:
            name = m.name.removeprefix("./")
            if name in members and m.isfile():
                i = members.index(name)
                with tar.extractfile(m) as f, open(out[i], "wb") as o:
                    while chunk := f.read(1 << 20):
                        o.write(chunk)
                found[i] = True
    if not all(found):
        raise DataError(f"The archive {path} has no member {members[found.index(False)]}; it may be a "
                        f"different release than the registry expects. Delete it and run the fetch again.")
    return out


def _archive_pairs(path: Path, members: tuple[str, str], into: Path) -> Iterator[tuple[str, str]]:
    src, tgt = _extract_members(path, members, into)
    opened = [open(p, encoding="utf-8", errors="replace", newline="\n") for p in (src, tgt)]
    try:
        for n, (s, t) in enumerate(itertools.zip_longest(*opened), 1):
            if s is None or t is None:
                raise DataError(f"The archive {path}: {members[0]} and {members[1]} differ in length "
                                f"(one ends at line {n}); they must be line-aligned.")
            yield s.removesuffix("\n"), t.removesuffix("\n")
    finally:
        for f in opened:
            f.close()
        src.unlink(missing_ok=True)
        tgt.unlink(missing_ok=True)


def _build_split(c: Corpus, split: str, base: Path, base_url: str | None, explicit) -> list[Path]:
    """Build one split from its archives (skipped when its files are present). Returns its files."""
    (src_rel,), (tgt_rel,) = c.splits[split]
    if _find(base, src_rel) and _find(base, tgt_rel):
        log.info("%s %s: present", c.name, split)
        return [_find(base, src_rel), _find(base, tgt_rel)]
    archives = [_download_archive(a, base, base_url, c.name, explicit) for a in c.built[split]]
    held_out: tuple[set[str], set[str]] = (set(), set())  # dev and test sentences, per side
    for other in ("dev", "test"):  # fetched above with the corpus's files
        for side, rels in zip(held_out, c.splits[other]):
            for rel in rels:
                if (p := _find(base, rel)) is None:
                    raise DataError(f"Cannot build {c.name} {split} without {rel} (its overlap is removed): "
                                    f"it is missing from {base} ({_where(explicit)}).")
                side.update(_norm(line) for line in _lines(p))
    dest_src, dest_tgt = base / src_rel, base / tgt_rel
    dest_src.parent.mkdir(parents=True, exist_ok=True)
    stamp = {"rule": "dropped: a side equal (whitespace collapsed) to a dev/test sentence of that "
                     "side, or an empty side", "archives": []}
    with tempfile.TemporaryDirectory(dir=dest_src.parent, prefix=".build-") as tmp:
        out_paths = [Path(tmp) / "out.src", Path(tmp) / "out.tgt"]
        with open(out_paths[0], "w", encoding="utf-8", newline="\n") as out_s, \
                open(out_paths[1], "w", encoding="utf-8", newline="\n") as out_t:
            for a, path in zip(c.built[split], archives):
                n = {"pairs": 0, "kept": 0, "overlap": 0, "empty": 0}
                for s, t in _archive_pairs(path, a.members, Path(tmp)):
                    n["pairs"] += 1
                    if not s.strip() or not t.strip():
                        n["empty"] += 1
                    elif _norm(s) in held_out[0] or _norm(t) in held_out[1]:
                        n["overlap"] += 1
                    else:
                        out_s.write(s + "\n")
                        out_t.write(t + "\n")
                        n["kept"] += 1
                log.warning("%s %s: %s: %d pairs, kept %d (%d overlap dev/test, %d empty)", c.name,
                            split, Path(a.path).name, n["pairs"], n["kept"], n["overlap"], n["empty"])
                stamp["archives"].append({"path": a.path, "sha256": ARCHIVE_SHA256[Path(a.path).name],
                                          "members": list(a.members), **n})
        stamp["files"] = {rel: _sha256(p) for rel, p in zip((src_rel, tgt_rel), out_paths)}
        # the stamp first, the source side last: a split counts as present only with both sides
        stamp_path = dest_src.parent / BUILD_STAMP
        _atomic_write(stamp_path, iter([json.dumps(stamp, indent=1).encode()]),
                      hashlib.sha256(json.dumps(stamp, indent=1).encode()).hexdigest(), "build")
        os.replace(out_paths[1], dest_tgt)
        os.replace(out_paths[0], dest_src)
    return [dest_src, dest_tgt]


def fetch(name: str, root: str | Path | None = None, base_url: str | None = None,
          build: bool = True) -> list[Path]:
    """Download the corpus files into the data directory and verify their sha256; with `build`,
    also build the splits made from public archives (the WMT14 EN-DE training data: GBs).

    From each file's public origin, or from `base_url` + relative path (a mirror of the data
    folder). Files already present with the right hash are skipped. Returns the files present."""
    c = corpus(name)
    base = data_dir(root)
    done: list[Path] = []
    last_zip: Path | None = None
    for f in c.files:
        dest = base / f.path
        if dest.is_file() and _sha256(dest) == f.sha256:
            log.info("%s: present, sha256 ok", f.path)
        else:
            if base_url:
                src = base_url.rstrip("/") + "/" + urllib.parse.quote(f.path)
                chunks = _http_chunks(src)
            elif f.url:
                src, chunks = f.url, _http_chunks(f.url)
            elif f.member and last_zip:
                src = f"{last_zip.name}:{f.member}"
                chunks = _zip_member(last_zip, f.member)
            else:
                log.warning("%s: not available from the origin (optional mirror-only copy)", f.path)
                continue
            log.info("%s: downloading %s", f.path, src)
            try:
                _atomic_write(dest, chunks, f.sha256, src)
            except (OSError, zipfile.BadZipFile, KeyError) as e:  # network, HTTP, disk errors
                if f.optional:
                    log.warning("%s: optional copy not fetched from %s: %s", f.path, src, e)
                    continue
                raise DataError(f"Could not fetch {f.path} of corpus '{name}' from {src} into "
                                f"{base} ({_where(root)}): {e}. Check the network, or fetch "
                                f"from a mirror with --base-url, or set $ZOO_DATA_DIR / "
                                f"--data-dir to a writable folder.") from None
        if dest.suffix == ".zip":
            last_zip = dest
        done.append(dest)
    if build:
        for split in c.built:
            done += _build_split(c, split, base, base_url, root)
    missing_manual = [r for s in c.splits.values() for r in (*s[0], *s[1])
                      if r not in {f.path for f in c.files} | _built_paths(c) and _find(base, r) is None]
    if missing_manual:
        log.warning("%s: %s", name, c.manual)
    return done


def verify(name: str, root: str | Path | None = None) -> list[tuple[str, bool, str]]:
    """(relative path, ok, message) for every file of the corpus; user-supplied training files
    have no checksum and are only checked for presence."""
    c = corpus(name)
    base = data_dir(root)
    out: list[tuple[str, bool, str]] = []
    for f in c.files:
        p = base / f.path
        if not p.is_file():
            out.append((f.path, f.optional, "absent (optional mirror-only copy)" if f.optional
                        else f"missing: run `zoo data fetch {name}`"))
        elif (got := _sha256(p)) != f.sha256:
            out.append((f.path, False, f"sha256 mismatch: expected {f.sha256}, got {got}"))
        else:
            out.append((f.path, True, "ok"))
    for a in (a for archives in c.built.values() for a in archives if (base / a.path).is_file()):
        sha = ARCHIVE_SHA256[Path(a.path).name]  # kept after a build; only needed to rebuild
        got = _sha256(base / a.path)
        out.append((a.path, got == sha, "ok" if got == sha else f"sha256 mismatch: expected {sha}, got {got}"))
    told = False
    built = _built_paths(c)
    for rel in dict.fromkeys(r for s in c.splits.values() for r in (*s[0], *s[1])):
        if rel not in {f.path for f in c.files}:
            p = _find(base, rel)
            stamp = base / Path(rel).parent / BUILD_STAMP
            recorded = json.loads(stamp.read_text())["files"].get(rel) if p and stamp.is_file() else None
            if recorded:  # built by fetch: the output's hash was recorded then
                got = _sha256(p)
                out.append((rel, got == recorded, f"ok (built by `zoo data fetch {name}`, see {stamp.name})"
                            if got == recorded else f"sha256 mismatch with {stamp.name}: expected "
                            f"{recorded}, got {got}; delete it and run `zoo data fetch {name}`"))
                continue
            why = ("present (user-supplied, no checksum)" if p else
                   f"missing: run `zoo data fetch {name}`" if rel in built else
                   "missing (user-supplied; see above)" if told else "missing: " + c.manual)
            told = told or (p is None and rel not in built)
            out.append((rel, p is not None, why))
    return out


def list_corpora(root: str | Path | None = None) -> list[dict]:
    """One dict per corpus: name, languages, splits, status (present/partial/missing), path,
    missing files, description, terms. Checks presence only; `verify` checks hashes."""
    base = data_dir(root)
    rows = []
    for c in CORPORA.values():
        needed = [f.path for f in c.files if not f.optional]
        needed += [r for s in c.splits.values() for r in (*s[0], *s[1]) if r not in needed]
        missing = [r for r in dict.fromkeys(needed) if _find(base, r) is None]
        status = "present" if not missing else "missing" if len(missing) == len(set(needed)) \
            else "partial"
        rows.append({"name": c.name, "languages": f"{c.src}-{c.tgt}", "splits": c.split_choices(),
                     "status": status, "path": str(base), "missing": missing,
                     "description": c.description, "terms": c.terms})
    return rows


# --------------------------------------------------------------------------- shared BPE
_BPE_VERSION = 1  # bump when the training settings below change: old cache files go stale


def _cache_dir(root: Path, explicit: str | Path | None, kind: str = "bpe") -> Path:
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
    return _user_cache() / kind


def _train_text(name: str, root: Path, explicit, source_only: bool = False) -> Iterator[str]:
    """Both sides (or the source side) of the training split, streamed (WMT14 EN-FR has 36M pairs)."""
    c = corpus(name)
    if not c.splits:
        for s, t in load_pairs(name, "train", explicit):
            yield s
            if not source_only:
                yield t
        return
    srcs, tgts = _split_files(c, "train", root, explicit)
    for p in (*srcs, *(() if source_only else tgts)):
        yield from _lines(p)


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
        srcs, tgts = _split_files(c, "train", base, root)
        for p in srcs + tgts:
            fp.update(f"{p.name}:{p.stat().st_size}".encode())
    cache = _cache_dir(base, cache_dir)
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
        _atomic_write(path, iter([model.getvalue()]),
                      hashlib.sha256(model.getvalue()).hexdigest(), "sentencepiece")
        log.info("trained BPE %s (%d pieces) in %.1f s", path.name, vocab_size,
                 time.perf_counter() - t0)
    return path


def load_sp(path: str | Path):
    """A SentencePieceProcessor for a model file; `.get_piece_size()` is the actual vocab size."""
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=str(path))


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
    srcs, tgts = _split_files(c, split, data_dir(root), root)
    for s, t in zip(srcs, tgts):
        for n, (a, b) in enumerate(itertools.zip_longest(_lines(s), _lines(t))):
            if a is None or b is None:
                raise DataError(f"Corpus '{name}' split '{split}': {s} and {t} differ in length (one ends "
                                f"after {n} lines); the two sides must be line-aligned. Run `zoo data "
                                f"verify {name}` or re-fetch the files.")
            yield a, b


def _encoded_key(c: Corpus, base: Path, root, sp_path: Path, max_len: int | None,
                 max_pairs: int | None, tgt_vocab) -> str:
    """Names the cache: any change to the BPE model, the training files or the settings misses it."""
    fp = hashlib.sha256(repr((_ENCODED_VERSION, _sha256(sp_path), [f.sha256 for f in c.files],
                              max_len, max_pairs)).encode())
    if "train" in c.splits:  # user-supplied training files have no registered hash
        srcs, tgts = _split_files(c, "train", base, root)
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
    cache = _cache_dir(base, cache_dir, "encoded")
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


# --------------------------------------------------------------------------- batching
def encode_pairs(sp, pairs: list[tuple[str, str]], max_len: int | None = None, tgt_vocab=None
                 ) -> list[tuple[list[int], list[int]]]:
    """Token ids of each pair, as lists (the small dev split; the training split is an
    `EncodedCorpus`). No bos/eos: `collate` adds them. Pairs with more than `max_len` ids on either
    side are dropped and the count logged (len(pairs) - len(result) is the count).
    tgt_vocab: the target side's own vocabulary (`encode(text) -> ids`), else sp encodes both."""
    threads = os.cpu_count() or 1
    src = sp.encode([s for s, _ in pairs], out_type=int, num_threads=threads)
    tgt = [tgt_vocab.encode(t) for _, t in pairs] if tgt_vocab is not None else \
        sp.encode([t for _, t in pairs], out_type=int, num_threads=threads)
    out = [(x, y) for x, y in zip(src, tgt)
           if max_len is None or (len(x) <= max_len and len(y) <= max_len)]
    if len(out) < len(pairs):
        log.info("dropped %d of %d pairs longer than %s tokens", len(pairs) - len(out),
                 len(pairs), max_len)
    return out


PairsIds = EncodedCorpus | Sequence[tuple[Sequence[int], Sequence[int]]]


def pair_lengths(pairs_ids: PairsIds) -> np.ndarray:
    """(pairs, 2) int32: the tokens each pair occupies in a batch, source + eos and target + eos
    (= loss positions). An EncodedCorpus holds them already; lists of ids are counted."""
    if isinstance(pairs_ids, EncodedCorpus):
        return pairs_ids.lengths
    return np.array([(len(x) + 1, len(y) + 1) for x, y in pairs_ids], np.int32).reshape(-1, 2)


def make_batches(lengths: np.ndarray, batch_tokens: int, seed: int, epoch: int,
                 pool_batches: int = 100) -> list[np.ndarray]:
    """Indices grouped into batches of about `batch_tokens` source and `batch_tokens` target tokens.

    Pairs are shuffled, cut into pools of about `pool_batches` batches, sorted by length inside a
    pool (so pairs of similar length share a batch and padding stays low) and cut greedily: a batch
    closes when the next pair would push either side past the budget; a pair longer than the
    budget forms a batch of its own. Batch order is shuffled; all of it is a function of
    (seed, epoch) only. `lengths` is `pair_lengths`'s (pairs, 2) array (a list of pairs works too).
    Each batch is an int64 array, a view into one array of the epoch's order: 8 bytes a pair."""
    lengths = np.asarray(lengths).reshape(-1, 2)
    rng = np.random.default_rng([seed, epoch])  # a stable function of (seed, epoch), in any process
    order = rng.permutation(len(lengths))
    mean = float(lengths.max(1).mean()) if len(lengths) else 1.0
    pool = max(1, int(pool_batches * batch_tokens / max(mean, 1)))
    batches: list[np.ndarray] = []
    for start in range(0, len(order), pool):
        part = order[start:start + pool]  # a view: sorted in place
        s, t = lengths[part, 0].astype(np.int64), lengths[part, 1].astype(np.int64)
        # Sorting by the longer side (then the sum) keeps both sides' padding low; on Multi30k at
        # 25k tokens it pads about half as much as sorting by target length alone. lexsort is
        # stable (ties keep the shuffled order) and its last key sorts first.
        by = np.lexsort((s + t, np.maximum(s, t)))
        part[:] = part[by]
        batches += _cut(part, s[by], t[by], batch_tokens)
    return [batches[i] for i in rng.permutation(len(batches))]


def _cut(part: np.ndarray, s: np.ndarray, t: np.ndarray, budget: int) -> list[np.ndarray]:
    """The greedy cut of a sorted pool, a batch at a time: each batch runs from its first pair as far
    as both sides' running sums stay within the budget (binary search), and holds at least one pair."""
    cs, ct = np.concatenate(([0], np.cumsum(s))), np.concatenate(([0], np.cumsum(t)))
    out, k = [], 0
    while k < len(part):
        end = min(np.searchsorted(cs, cs[k] + budget, "right"), np.searchsorted(ct, ct[k] + budget, "right"))
        end = max(int(end) - 1, k + 1)
        out.append(part[k:end])
        k = end
    return out


def shard(batch: np.ndarray, lengths: np.ndarray, n: int) -> list[np.ndarray]:
    """Split one optimizer-step batch into n contiguous parts of nearly equal target tokens
    (for gradient accumulation or data-parallel workers). Contiguous parts of a length-sorted
    batch keep padding low. Always n parts; some are empty only when len(batch) < n."""
    batch = np.asarray(batch, dtype=np.int64)
    t = np.asarray(lengths)[batch, 1].tolist() if len(batch) else []
    total = sum(t)
    sizes = [0] * n
    k, cum = 0, 0
    for pos, x in enumerate(t):
        if sizes[k] and k < n - 1:
            target = total * (k + 1) / n
            # move on when this pair fits the next part better, or later parts would go empty
            if abs(cum + x - target) > abs(cum - target) or len(t) - pos <= n - 1 - k:
                k += 1
        sizes[k] += 1
        cum += x
    cuts = np.cumsum([0] + sizes)
    return [batch[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) source ids + eos, padded
    tgt_in: torch.Tensor  # (B, T) bos + target ids, padded (decoder input)
    tgt_out: torch.Tensor  # (B, T) target ids + eos, padded (labels)
    n_src_tokens: int  # non-pad source positions
    n_tgt_tokens: int  # non-pad target positions = tokens the loss is summed over
    padding_fraction: float  # pad / all positions, source and target together
    indices: list[int] = field(default_factory=list)

    def to(self, device) -> "Batch":
        """On device; to a GPU from pinned memory (see pinned), so the copy does not wait for the host."""
        import torch
        cuda = torch.device(device).type == "cuda"
        move = (lambda t: t.pin_memory().to(device, non_blocking=True)) if cuda else (lambda t: t.to(device))
        return self._map(move)

    def pinned(self) -> "Batch":
        """In page-locked host memory, ready for an asynchronous copy to a GPU (training pins batches
        ahead on its loader thread, so `to` has nothing left to pin)."""
        return self._map(lambda t: t.pin_memory())

    def _map(self, f) -> "Batch":
        return Batch(f(self.src), f(self.tgt_in), f(self.tgt_out),
                     self.n_src_tokens, self.n_tgt_tokens, self.padding_fraction, self.indices)


def _flat(seqs: list) -> tuple[np.ndarray, np.ndarray]:
    """(ids one sequence after another, ids per sequence) of a list of id lists."""
    lens = np.fromiter(map(len, seqs), np.int64, len(seqs))
    return np.fromiter(itertools.chain.from_iterable(seqs), np.int64, int(lens.sum())), lens


def _padded(flat: np.ndarray, lens: np.ndarray, width: int, first: int, pad: int) -> np.ndarray:
    """A (rows, width) array of pad with row r's ids at columns first .. first + lens[r] - 1."""
    out = np.full((len(lens), width), pad, np.int64)
    cols = np.arange(width)
    out[(cols >= first) & (cols < first + lens[:, None])] = flat  # row-major: the ids' own order
    return out


def collate(pairs_ids: PairsIds, indices, pad: int = PAD, bos: int = BOS, eos: int = EOS) -> Batch:
    """Padded tensors for the pairs at `indices`, from an EncodedCorpus or a list of id pairs."""
    import torch

    indices = np.asarray(indices, dtype=np.int64)
    if isinstance(pairs_ids, EncodedCorpus):
        (xs, xl), (ys, yl) = pairs_ids.gather(indices)
    else:
        rows = [pairs_ids[i] for i in indices.tolist()]
        (xs, xl), (ys, yl) = _flat([x for x, _ in rows]), _flat([y for _, y in rows])
    b, r = len(indices), np.arange(len(indices))
    s_len = int(xl.max()) + 1 if b else 0  # + eos
    t_len = int(yl.max()) + 1 if b else 0  # + bos (input) or eos (labels)
    src = _padded(xs, xl, s_len, 0, pad)
    src[r, xl] = eos
    tgt_in = _padded(ys, yl, t_len, 1, pad)
    tgt_in[:, :1] = bos
    tgt_out = _padded(ys, yl, t_len, 0, pad)
    tgt_out[r, yl] = eos
    n_src, n_tgt = int(xl.sum()) + b, int(yl.sum()) + b
    positions = b * (s_len + t_len)
    return Batch(torch.from_numpy(src), torch.from_numpy(tgt_in), torch.from_numpy(tgt_out), n_src, n_tgt,
                 1 - (n_src + n_tgt) / positions if positions else 0.0, indices.tolist())
