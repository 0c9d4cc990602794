#!/usr/bin/env bash
# A results store in the form results/ commits it (issue 43): a vacuumed copy (no free pages, no WAL)
# compressed as xz at preset 9. zoo's read commands open it by its own path or by the zoo.db path beside
# it (results/x/zoo.db finds results/x/zoo.db.xz); writing into it is refused. The store itself is unchanged.
# Python's own sqlite3 and lzma do the work, so nothing beyond README's set-up is needed.
#   scripts/compact_store.sh runs/zoo.db results/mine/zoo.db.xz
set -euo pipefail
if [ $# != 2 ] || [[ $2 != *.xz ]] || [ ! -f "$1" ]; then
  echo "usage: $0 STORE DEST.xz (a zoo.db that exists, and where its compressed copy goes)" >&2; exit 2
fi
PY=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
"$PY" - "$1" "$2" <<'PYEOF'
import lzma, os, sqlite3, sys, tempfile
src, dest = sys.argv[1:]
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "zoo.db")
    c = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    c.execute("VACUUM INTO ?", (copy,))  # the rows a WAL beside it holds too, with no free pages
    c.close()
    with open(copy, "rb") as f:
        packed = lzma.compress(f.read(), preset=9)  # one thread: the same bytes on every machine
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    with open(dest + ".part", "wb") as f:
        f.write(packed)
    os.replace(dest + ".part", dest)  # atomic: a reader never sees half a file
PYEOF
