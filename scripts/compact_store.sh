#!/usr/bin/env bash
# A results store in the form results/ commits it (issue 43): a vacuumed copy (no free pages, no WAL)
# compressed with xz -9. zoo's read commands open it by its own path or by the zoo.db path beside it
# (results/x/zoo.db finds results/x/zoo.db.xz); writing into it is refused. The store itself is unchanged.
#   scripts/compact_store.sh runs/zoo.db results/mine/zoo.db.xz
set -euo pipefail
if [ $# != 2 ] || [[ $2 != *.xz ]] || [ ! -f "$1" ]; then
  echo "usage: $0 STORE DEST.xz (a zoo.db that exists, and where its compressed copy goes)" >&2; exit 2
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sqlite3 "$1" "VACUUM INTO '$tmp/zoo.db'"
xz -9 -T1 "$tmp/zoo.db"  # one thread: the same bytes on every machine
mkdir -p "$(dirname "$2")" && mv "$tmp/zoo.db.xz" "$2"
