"""A corpus split read as (source, target) pairs of raw text (`load_pairs`), fetched on first use when missing.

The downloader (zoo.data.download: urllib, tarfile, zipfile) is imported only when a file is missing: reading a
corpus that is there needs none of it."""
from __future__ import annotations

from pathlib import Path

from zoo.data.corpora import Corpus, DataError, corpus, data_dir
from zoo.data.files import find_file, lines

__all__ = ["load_pairs"]  # what it lends outside its package (the door serves these)


def split_files(c: Corpus, split: str, root: Path, explicit) -> tuple[list[Path], list[Path]]:
    if split not in c.split_choices():
        raise DataError(f"Corpus '{c.name}' has no split '{split}'; choose one of: "
                        f"{', '.join(c.split_choices())}.")
    srcs, tgts = c.splits[split]
    missing = [rel for rel in (*srcs, *tgts) if find_file(root, rel) is None]
    if missing:
        from zoo.data.download import fetch_on_first_use
        fetch_on_first_use(c, root, missing, explicit)
    found = {rel: find_file(root, rel) for rel in (*srcs, *tgts)}
    missing = [rel for rel, p in found.items() if p is None]
    if missing:
        raise _missing(c, split, root, missing, explicit)
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
            from zoo.data.download import fetch_on_first_use
            fetch_on_first_use(c, base, need, root)
            need = [f.path for f in c.files if not f.optional and not (base / f.path).is_file()]
        if need:
            raise _missing(c, split, base, need, root)
        from zoo.data import trees  # lazy: parsing lives in its own module

        return trees.load_pairs(base, split)
    srcs, tgts = split_files(c, split, base, root)
    pairs: list[tuple[str, str]] = []
    for s, t in zip(srcs, tgts):
        a, b = list(lines(s)), list(lines(t))
        if len(a) != len(b):
            raise DataError(f"Corpus '{name}' split '{split}': {s} has {len(a)} lines but {t} has "
                            f"{len(b)}; the two sides must be line-aligned. Run `zoo data verify "
                            f"{name}` or re-fetch the files.")
        pairs.extend(zip(a, b))
    return pairs


# --------------------------------------------------------------------------- fetch and verify


def _missing(c: Corpus, split: str, root: Path, missing: list[str], explicit) -> DataError:
    from zoo.data.download import missing_error
    return missing_error(c, split, root, missing, explicit)
