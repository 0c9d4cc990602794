"""A corpus's files downloaded (`fetch`, also on first use; it builds WMT14
EN-DE's training split from the public archives) and checked (`verify`, `list_corpora`).
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import itertools
import json
import logging
import os
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Iterator

from zoo.data.corpora import ARCHIVE_SHA256, Archive, CORPORA, Corpus, DataError, corpus, data_dir, where
from zoo.data.files import atomic_write_stream, find_file, lines, sha256_file

__all__ = ["BUILD_STAMP", "DOWNLOAD_ENV", "MIRROR_ENV", "WORD_PIECES_PER_WORD", "downloads_allowed", "fetch",
           "fetch_on_first_use", "list_corpora", "split_present", "train_size", "verify"]


log = logging.getLogger(__name__)


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
    built = built_paths(c)
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
                        f"({where(explicit)}), and it cannot be fetched there: {e}. Point $ZOO_DATA_DIR / "
                        f"--data-dir at a writable folder, or at one that already holds the corpus.") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if we crash
        log.warning("corpus %s is not in %s: fetching it on first use (set %s=0 to forbid downloads)",
                    c.name, base, DOWNLOAD_ENV)
        fetch(c.name, base, base_url=os.environ.get(MIRROR_ENV) or None,
              build=any(m in built for m in missing))  # the GB archives only when a run needs them


def missing_error(c: Corpus, split: str, root: Path, missing: list[str], explicit) -> DataError:
    manual = [m for m in missing if m not in {f.path for f in c.files} | built_paths(c)]
    origin = ("from its public origin, checking sha256" if not c.built.get(split) else
              "it downloads the training archives from " + ", ".join(a.url for a in c.built[split])
              + ", checks their published sha256 and builds the split from them")
    how = (c.manual if manual else
           f"Download it with `zoo data fetch {c.name}` ({origin}), "
           f"or point $ZOO_DATA_DIR / --data-dir at a folder that already holds it."
           + ("" if downloads_allowed() else f" (It was not fetched on first use: {DOWNLOAD_ENV}=0.)"))
    return DataError(f"Corpus '{c.name}' split '{split}' is not available: missing "
                     f"{', '.join(missing)} in the data directory {root} ({where(explicit)}). {how}")


def split_present(name: str, split: str, root: str | Path | None = None) -> bool:
    """Whether a split's files are all in the data directory (nothing downloaded, no hash checked)."""
    c = CORPORA.get(name)
    if c is None or split not in c.splits:
        return False
    return all(find_file(data_dir(root), rel) for rel in (*c.splits[split][0], *c.splits[split][1]))


WORD_PIECES_PER_WORD = 1.3  # what a 16k-37k shared BPE makes of news/caption text (the cache's exact counts differ by a few %)


@functools.lru_cache(maxsize=None)
def train_size(name: str, root: str | Path | None = None) -> tuple[int, int] | None:
    """(pairs, about how many word-pieces one pass holds on its longer side) of a corpus's training
    split in the data directory, counted from its words (None when absent or not a text corpus). A
    batch holds about `batch_tokens` on each side, so the longer side is what a pass spends: what a
    profile's budget is in epochs (`zoo show`)."""
    c = CORPORA.get(name)
    if c is None or "train" not in c.splits or not split_present(name, "train", root):
        return None
    base = data_dir(root)
    pairs, side_words = 0, []
    for files in c.splits["train"][:2]:  # source files, then target files
        words = 0
        for rel in files:
            for line in lines(find_file(base, rel)):
                words += len(line.split())
                pairs += 1
        side_words.append(words)
    pairs //= 2
    return pairs, round(max(side_words) * WORD_PIECES_PER_WORD) + pairs  # + eos

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


def built_paths(c: Corpus) -> set[str]:
    return {rel for split in c.built for rel in (*c.splits[split][0], *c.splits[split][1])}


def _norm(line: str) -> str:
    return " ".join(line.split())


def _download_archive(a: Archive, base: Path, base_url: str | None, name: str, explicit) -> Path:
    dest, sha = base / a.path, ARCHIVE_SHA256[Path(a.path).name]
    if dest.is_file() and sha256_file(dest) == sha:
        log.info("%s: present, sha256 ok", a.path)
        return dest
    src = base_url.rstrip("/") + "/" + urllib.parse.quote(a.path) if base_url else a.url
    log.warning("%s: downloading %s (checked against its published sha256)", a.path, src)
    try:
        atomic_write_stream(dest, _http_chunks(src), sha, src)
    except OSError as e:
        raise DataError(f"Could not fetch {a.path} of corpus '{name}' from {src} into {base} "
                        f"({where(explicit)}): {e}. Check the network, or fetch from a mirror with "
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
    if find_file(base, src_rel) and find_file(base, tgt_rel):
        log.info("%s %s: present", c.name, split)
        return [find_file(base, src_rel), find_file(base, tgt_rel)]
    archives = [_download_archive(a, base, base_url, c.name, explicit) for a in c.built[split]]
    held_out: tuple[set[str], set[str]] = (set(), set())  # dev and test sentences, per side
    for other in ("dev", "test"):  # fetched above with the corpus's files
        for side, rels in zip(held_out, c.splits[other]):
            for rel in rels:
                if (p := find_file(base, rel)) is None:
                    raise DataError(f"Cannot build {c.name} {split} without {rel} (its overlap is removed): "
                                    f"it is missing from {base} ({where(explicit)}).")
                side.update(_norm(line) for line in lines(p))
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
        stamp["files"] = {rel: sha256_file(p) for rel, p in zip((src_rel, tgt_rel), out_paths)}
        # the stamp first, the source side last: a split counts as present only with both sides
        stamp_path = dest_src.parent / BUILD_STAMP
        atomic_write_stream(stamp_path, iter([json.dumps(stamp, indent=1).encode()]),
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
        if dest.is_file() and sha256_file(dest) == f.sha256:
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
                atomic_write_stream(dest, chunks, f.sha256, src)
            except (OSError, zipfile.BadZipFile, KeyError) as e:  # network, HTTP, disk errors
                if f.optional:
                    log.warning("%s: optional copy not fetched from %s: %s", f.path, src, e)
                    continue
                raise DataError(f"Could not fetch {f.path} of corpus '{name}' from {src} into "
                                f"{base} ({where(root)}): {e}. Check the network, or fetch "
                                f"from a mirror with --base-url, or set $ZOO_DATA_DIR / "
                                f"--data-dir to a writable folder.") from None
        if dest.suffix == ".zip":
            last_zip = dest
        done.append(dest)
    if build:
        for split in c.built:
            done += _build_split(c, split, base, base_url, root)
    missing_manual = [r for s in c.splits.values() for r in (*s[0], *s[1])
                      if r not in {f.path for f in c.files} | built_paths(c) and find_file(base, r) is None]
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
        elif (got := sha256_file(p)) != f.sha256:
            out.append((f.path, False, f"sha256 mismatch: expected {f.sha256}, got {got}"))
        else:
            out.append((f.path, True, "ok"))
    for a in (a for archives in c.built.values() for a in archives if (base / a.path).is_file()):
        sha = ARCHIVE_SHA256[Path(a.path).name]  # kept after a build; only needed to rebuild
        got = sha256_file(base / a.path)
        out.append((a.path, got == sha, "ok" if got == sha else f"sha256 mismatch: expected {sha}, got {got}"))
    told = False
    built = built_paths(c)
    for rel in dict.fromkeys(r for s in c.splits.values() for r in (*s[0], *s[1])):
        if rel not in {f.path for f in c.files}:
            p = find_file(base, rel)
            stamp = base / Path(rel).parent / BUILD_STAMP
            recorded = json.loads(stamp.read_text())["files"].get(rel) if p and stamp.is_file() else None
            if recorded:  # built by fetch: the output's hash was recorded then
                got = sha256_file(p)
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
        missing = [r for r in dict.fromkeys(needed) if find_file(base, r) is None]
        status = "present" if not missing else "missing" if len(missing) == len(set(needed)) \
            else "partial"
        rows.append({"name": c.name, "languages": f"{c.src}-{c.tgt}", "splits": c.split_choices(),
                     "status": status, "path": str(base), "missing": missing,
                     "description": c.description, "terms": c.terms})
    return rows

