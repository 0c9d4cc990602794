"""The corpora: where the data lives (`data_dir`), the user-facing `DataError`, and the registry
(`CORPORA`): each corpus's files, sha256 checksums, public origins, splits and terms.

Checksums are embedded here (copied from the shared data folder's MANIFEST.tsv; the WMT14 training
archives' from TensorFlow Datasets' published table) so that a machine with only this package and
internet access can download and verify every file.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError

__all__ = ["ARCHIVE_SHA256", "Archive", "CORPORA", "Corpus", "CorpusFile", "DataError", "corpus", "data_dir", "user_cache"]


# --------------------------------------------------------------------------- data directory
class DataError(UserError):
    """A user-facing data problem: what is missing, where we looked, how to get it.

    The CLI prints the message and exits 2 (no traceback)."""


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zoo"


def data_dir(explicit: str | Path | None = None) -> Path:
    """The data directory: `explicit` (e.g. --data-dir) > $ZOO_DATA_DIR > <user cache>/zoo/data."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("ZOO_DATA_DIR"):
        return Path(os.environ["ZOO_DATA_DIR"]).expanduser()
    return user_cache() / "data"


def where(root: str | Path | None) -> str:
    """Where `data_dir(root)` came from, for error messages (callers may pass the resolved path)."""
    p, env = data_dir(root), os.environ.get("ZOO_DATA_DIR")
    if env and p == Path(env).expanduser():
        return "from $ZOO_DATA_DIR"
    if p == user_cache() / "data":
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
               "and their trees linearized with zoo.data.trees.linearize as wsj_semi/{train,dev,test}.tree "
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

