#!/usr/bin/env bash
# A results store in the form results/ commits it (issue 43): a vacuumed copy (no free pages, no WAL)
# compressed as xz at preset 9. zoo's read commands open it by its own path or by the zoo.db path beside
# it (results/x/zoo.db finds results/x/zoo.db.xz); writing into it is refused. The store itself is unchanged.
# Python's own sqlite3 and lzma do the work, so nothing beyond README's set-up is needed.
#   scripts/compact_store.sh runs/zoo.db results/mine/zoo.db.xz
# DEST is written whole or not at all (a temporary file of its own beside it, then renamed over DEST); a mistake
# (no such store, not a store, DEST a folder or the store itself, a folder it cannot write) is one line, exit 2.
set -euo pipefail
if [ $# != 2 ] || [[ $2 != *.xz ]] || [ ! -f "$1" ]; then
  echo "usage: $0 STORE DEST.xz (a zoo.db that exists, and where its compressed copy goes)" >&2; exit 2
fi
PY=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
"$PY" - "$1" "$2" <<'PYEOF'
import lzma, os, sqlite3, sys, tempfile
from pathlib import Path
src, dest = map(Path, sys.argv[1:])


def refuse(why):
    print(f"compact_store.sh: {why}", file=sys.stderr)
    sys.exit(2)


if dest.is_dir() or dest.is_symlink():
    refuse(f"{dest} is a folder or a link; give the path of the .xz file to write")
if dest.exists() and dest.samefile(src):
    refuse(f"{dest} is the store itself; give another path for its compressed copy")
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "zoo.db")
    try:  # read-only, by a URI that quotes the path (a '?' or '#' in a file name is not a URI's query)
        c = sqlite3.connect(src.resolve().as_uri() + "?mode=ro", uri=True)
        c.execute("VACUUM INTO ?", (copy,))  # the rows a WAL beside it holds too, with no free pages
        c.close()
    except sqlite3.Error as e:
        refuse(f"{src} is not a store sqlite can read ({e})")
    with open(copy, "rb") as f:
        packed = lzma.compress(f.read(), preset=9)  # one thread: the same bytes on every machine
try:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)  # its own name: no one's file is hit
except OSError as e:
    refuse(f"cannot write beside {dest} ({e.strerror or e})")
try:
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(packed)
    os.replace(part, dest)  # atomic: a reader never sees half a file
except BaseException:
    os.unlink(part)
    raise
PYEOF
