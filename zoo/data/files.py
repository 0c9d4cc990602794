"""The data folder's files, with no network: find a file (gzipped or not), read its lines exactly, hash it,
and write one atomically from a stream of chunks (what fetch downloads and bpe trains into)."""
from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from zoo.data.corpora import DataError

__all__ = []  # nothing outside its package: the package's parts import it by module


def find_file(root: Path, rel: str) -> Path | None:
    """The file for `rel` under root; a path without .gz may also exist gzipped."""
    for cand in (rel,) if rel.endswith(".gz") else (rel, rel + ".gz"):
        if (root / cand).is_file():
            return root / cand
    return None


def lines(path: Path) -> Iterator[str]:
    """Lines without their trailing newline. Only "\\n" ends a line: the corpora contain NBSPs,
    thin spaces and a TAB inside sentences, which str.split()/strip() would mangle."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            yield line[:-1] if line.endswith("\n") else line


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def atomic_write_stream(dest: Path, chunks: Iterator[bytes], sha256: str, source: str) -> None:
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


