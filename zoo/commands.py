"""Commands that train, fetch data, run sweeps and write reports. Their modules import torch/ray,
so each handler imports what it needs when it runs, never at `zoo --help`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from zoo.errors import UserError


def cmd_data(args) -> int:
    from zoo import data
    root = data.data_dir(args.data_dir)
    if args.action == "list":
        rows = data.list_corpora(root)
        if args.json:
            print(json.dumps(rows, indent=2, default=str))
        else:
            print(f"data directory: {root}")
            for r in rows:
                print(f"  {r['name']:<15} {r['status']:<8} splits: {', '.join(r['splits'])}")
        return 0
    if not args.name:
        raise UserError(f"zoo data {args.action} needs a corpus name; see `zoo data list`")
    if args.action == "fetch":
        paths = data.fetch(args.name, root, base_url=args.base_url)
        print(f"{args.name}: {len(paths)} files verified in {root}")
        return 0
    results = data.verify(args.name, root)
    bad = [r for r in results if not r[1]]
    for rel, ok, why in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {rel}  {why}")
    return 2 if bad else 0


def cmd_evalb(args) -> int:
    from zoo.evalb import evalb_main
    print(evalb_main(args.gold, args.test, args.params), end="")
    return 0


def register(sub) -> None:
    s = sub.add_parser("data", help="corpora: list, fetch from origin, verify sha256",
                       description="Corpora: where they are, download from their public origin, check sha256.")
    s.add_argument("action", choices=["list", "fetch", "verify"])
    s.add_argument("name", nargs="?", help="corpus name (see `zoo data list`)")
    s.add_argument("--data-dir", help="data directory (default $ZOO_DATA_DIR or the user cache)")
    s.add_argument("--base-url", help="fetch from this mirror instead of the public origin")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_data)

    s = sub.add_parser("evalb", help="EVALB-exact bracket scoring of two tree files",
                       description="Score TEST trees against GOLD trees exactly as EVALB does.")
    s.add_argument("gold")
    s.add_argument("test")
    s.add_argument("--params", help="EVALB parameter file (default: COLLINS.prm rules)")
    s.set_defaults(fn=cmd_evalb)
