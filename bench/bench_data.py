"""The encoded corpus cache at WMT14 EN-DE scale: encode time, bytes on disk, bytes in a trial.

Builds a synthetic training corpus of N pairs (the news-domain EN-DE pool of the data dir, repeated)
laid out as a user-supplied WMT14 EN-DE training split in a temporary data dir, with the paper's
37000-piece BPE trained on the pool. Then, each in a fresh process:
  1. encode it through zoo.data.encoded_corpus (the cache a first trial builds);
  2. a trial-like process: imports torch and zoo, memory-maps the cache, builds the length arrays and
     one epoch of batches, collates a few hundred batches; its RSS growth past the baseline taken after
     the imports, per corpus token (ids of both sides), is the figure on the last line;
  3. the same with the old list-of-lists encoding (Python ints, a tuple of lengths per pair, batches
     as lists) on a small N, for the ratio.
RSS counts the cache pages a process has touched (RssFile): they are the OS page cache, shared by all
trials on the machine. RssAnon is what each trial holds on its own.

    ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_data.py --pairs 4500000
"""
from __future__ import annotations

import argparse
import gc
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = "wmt14_en_de"  # the synthetic corpus stands in for its (user-supplied) training split
MAX_LEN = 256  # base.yaml's data.max_len
BATCH_TOKENS = 25000  # the paper's batch (section 5.1)


def mem() -> dict[str, int]:
    """This process's resident bytes: VmRSS = RssAnon + RssFile (+ RssShmem), VmHWM its peak."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def growth(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in ("VmRSS", "RssAnon", "RssFile")} | {"VmHWM": after["VmHWM"] - before["VmRSS"]}


# -- the child processes ----------------------------------------------------------------------------

def child_encode(a: dict) -> dict:
    from zoo import data as D
    t = time.perf_counter()
    ec = D.encoded_corpus(CORPUS, a["sp"], a["data"], MAX_LEN, cache_dir=a["cache"])
    return {"seconds": time.perf_counter() - t, "path": str(ec.path), "pairs": len(ec), "dropped": ec.dropped,
            "tokens": ec.tokens, "peak_rss": mem()["VmHWM"]}


def child_trial(a: dict) -> dict:
    import torch  # noqa: F401  what a trial has imported before it reads data
    import zoo.train  # noqa: F401
    from zoo import data as D
    gc.collect()
    base = mem()
    t = time.perf_counter()
    ec = D.encoded_corpus(CORPUS, a["sp"], a["data"], MAX_LEN, cache_dir=a["cache"])
    t_open = time.perf_counter() - t
    t = time.perf_counter()
    lengths = D.pair_lengths(ec)
    batches = D.make_batches(lengths, BATCH_TOKENS, seed=1, epoch=0)
    t_batches = time.perf_counter() - t
    t = time.perf_counter()
    for b in batches[:a["collate"]]:
        x = D.collate(ec, b)
        del x
    t_collate = (time.perf_counter() - t) / max(1, min(a["collate"], len(batches)))
    gc.collect()
    return {"tokens": ec.tokens, "pairs": len(ec), "open_s": t_open, "batches": len(batches), "batches_s": t_batches,
            "collate_ms": 1000 * t_collate, **growth(base, mem())}


def child_lists(a: dict) -> dict:
    """The data path before the cache: ids as lists of Python ints, lengths as tuples, batches as lists."""
    import torch  # noqa: F401
    import zoo.train  # noqa: F401
    from zoo import data as D
    from zoo.data import encoded as E
    gc.collect()
    base = mem()
    sp = D.load_sp(a["sp"])
    t = time.perf_counter()
    pairs = list(itertools.islice(E._stream_pairs(CORPUS, "train", a["data"]), a["pairs"]))
    ids = D.encode_pairs(sp, pairs, MAX_LEN)
    seconds = time.perf_counter() - t
    del pairs  # prepare() let go of the text too
    lengths = [(len(s) + 1, len(t) + 1) for s, t in ids]
    batches = [b.tolist() for b in D.make_batches(lengths, BATCH_TOKENS, seed=1, epoch=0)]
    for b in batches[:a["collate"]]:
        x = D.collate(ids, b)
        del x
    gc.collect()
    return {"tokens": sum(len(s) + len(t) for s, t in ids), "pairs": len(ids), "seconds": seconds,
            **growth(base, mem())}


CHILDREN = {"encode": child_encode, "trial": child_trial, "lists": child_lists}


def run_child(role: str, **args) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", role, json.dumps(args)],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{role} process failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the parent ---------------------------------------------------------------------------------

def write_corpus(data: Path, n: int) -> None:
    """n pairs of the news pool, repeated, as wmt14/train/en-de/train.{en,de} under `data`."""
    from zoo import data as D
    pool = D.load_pairs("wmt_news_ende", "train")
    out = data / "wmt14/train/en-de"
    out.mkdir(parents=True)
    with open(out / "train.en", "w", encoding="utf-8") as en, open(out / "train.de", "w", encoding="utf-8") as de:
        for done in range(0, n, len(pool)):
            part = pool[: n - done]
            en.write("".join(s + "\n" for s, _ in part))
            de.write("".join(t + "\n" for _, t in part))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200_000, help="training pairs of the synthetic corpus")
    ap.add_argument("--ref-pairs", type=int, default=100_000, help="pairs for the list-of-lists reference")
    ap.add_argument("--collate", type=int, default=300, help="batches the trial-like process collates")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](json.loads(args.child[1]))))
        return
    from zoo import data as D
    work = Path(tempfile.mkdtemp(prefix="zoo-bench-data-"))
    try:
        sp = D.bpe_model("wmt_news_ende", 37000, cache_dir=work / "bpe")  # about a second
        t = time.perf_counter()
        write_corpus(work / "data", args.pairs)
        common = {"sp": str(sp), "data": str(work / "data"), "cache": str(work / "cache"), "collate": args.collate}
        print(f"synthetic corpus: {args.pairs:,} pairs of the news pool, repeated "
              f"({time.perf_counter() - t:.0f} s to write); BPE 37000; max_len {MAX_LEN}")
        enc = run_child("encode", **common)
        size = sum(p.stat().st_size for p in Path(enc["path"]).iterdir())
        print(f"encode: {enc['seconds']:.1f} s for {enc['pairs']:,} pairs ({enc['dropped']:,} dropped as over "
              f"{MAX_LEN} tokens), {enc['tokens']:,} tokens, {enc['tokens'] / enc['seconds'] / 1e6:.2f} M tokens/s; "
              f"peak RSS of the encoding process {enc['peak_rss'] / 2**20:.0f} MiB")
        print(f"cache: {size / 2**20:.0f} MiB, {size / enc['tokens']:.2f} bytes per token")
        ref = run_child("lists", **common | {"pairs": min(args.ref_pairs, args.pairs)})
        tri = run_child("trial", **common)
        old = ref["VmRSS"] / ref["tokens"]
        print(f"list-of-lists reference on {ref['pairs']:,} pairs: {old:.1f} bytes per token resident; "
              f"read + encode_pairs {ref['tokens'] / ref['seconds'] / 1e6:.2f} M tokens/s (cache build: "
              f"{enc['tokens'] / enc['seconds'] / ref['tokens'] * ref['seconds']:.2f}x that speed)")
        per = {k: tri[k] / tri["tokens"] for k in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}
        print(f"trial-like process: cache mapped in {tri['open_s']:.2f} s; {tri['batches']:,} batches of {BATCH_TOKENS} tokens in {tri['batches_s']:.1f} s, "
              f"{min(args.collate, tri['batches'])} collated ({tri['collate_ms']:.1f} ms each); RSS growth "
              f"{tri['VmRSS'] / 2**20:.0f} MiB = {per['RssAnon']:.2f} private (RssAnon) + {per['RssFile']:.2f} "
              f"shared cache pages (RssFile) bytes per token; peak {per['VmHWM']:.2f}")
        print(f"ratio list-of-lists / cache: {old / per['VmRSS']:.1f}x")
        print(f"resident bytes per token: {per['VmRSS']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
