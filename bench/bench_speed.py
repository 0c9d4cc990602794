"""Issue 53's two CPU-provable changes, measured here and predicted for an H100 by bench/roofline.py:

1. train.fused_loss on (zoo.train.fused_loss): the pre-softmax map inside the label-smoothed loss, chunk by
   chunk. `--part loss`: the loss and its backward alone at the paper's vocabulary (37,000 x d_model 512) on N
   target tokens, today's (the logits made, recipe.smoothed_loss) against the fused one: peak memory above the
   inputs (each variant in a fresh process: its ru_maxrss) and time. `--part step`: the paper's base model's
   whole training step (zoo.train.step.train_step) fused off against on, alternating step by step on the same
   Multi30k batches, and each one's peak memory in a process of its own.
2. Packed batches (zoo.data.packing): `--part pack`: the cpu profile's base step on Multi30k batches as
   make_batches cuts them against the same batches packed into 64-token rows, alternating step by step.
`--part graph`: train.cuda_graph on (zoo.train.graphed), predicted the same way: bucket-padded batches, no host
time between the kernels, eager and compiled.
`--part predict`: the calibrated H100 roofline (bench/roofline.py CALIBRATED) of the paper's base and big
on the gpu profile's 25,000-token batches (Multi30k's, and the news pool's when present), eager: today,
fused loss, packed, both. `--part all` runs them in turn.

    taskset -c 1 env OMP_NUM_THREADS=1 ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_speed.py
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from bench_train import Trainer, gpu_profile_batch_tokens, load_batches, resolve
from zoo import data as zdata
from zoo.data.packing import pack
from zoo.model import build_model
from zoo.train import keep_freed_memory, smoothed_loss
from zoo.train import fused_loss

V_PAPER, D_PAPER = 37000, 512


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _loss_child(kind: str, n: int) -> dict:
    """One loss forward and backward of `kind` (recipe or fused) in this process: seconds and peak MB above
    the inputs (h, W, their gradients' first allocation excluded: the same in both)."""
    torch.manual_seed(0)
    h = torch.randn(n, D_PAPER, requires_grad=True)
    W = (torch.randn(V_PAPER, D_PAPER) * D_PAPER ** -0.5).requires_grad_()
    t = torch.randint(4, V_PAPER, (n,))
    h.grad, W.grad = torch.zeros_like(h), torch.zeros_like(W)
    base = _rss_mb()
    start = time.perf_counter()
    if kind == "recipe":
        loss = smoothed_loss(h @ W.t(), t, 0.1)[0]
    else:
        loss = fused_loss.smoothed_loss(h, W, t, 0.1)[0]
    loss.backward()
    return {"seconds": time.perf_counter() - start, "peak_mb": _rss_mb() - base, "loss": loss.item()}


def _step_child(fused: str, steps: int) -> dict:
    """The paper base's training step with train.fused_loss `fused` in this process: peak MB above the model,
    its optimizer state and the batches."""
    cfg = resolve("base", "paper", ["train.precision=fp32", f"train.fused_loss={fused}"])
    batches = load_batches("multi30k", 8000, 2000, steps)
    torch.manual_seed(0)
    tr = Trainer(build_model(cfg.model, cfg.data.vocab_size), cfg)
    tr._step(batches[0])  # Adam's state and the gradients exist after one step: the base line
    base = _rss_mb()
    tr.run(batches)
    return {"peak_mb": _rss_mb() - base, "step_s": tr.seconds / tr.steps}


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def part_loss(n: int) -> dict:
    rows = {kind: _child(["loss", kind, str(n)]) for kind in ("recipe", "fused")}
    r, f = rows["recipe"], rows["fused"]
    print(f"loss + backward alone, {n} target tokens x {V_PAPER} vocabulary, d_model {D_PAPER}, fp32, "
          f"{torch.get_num_threads()} threads: peak above the inputs {r['peak_mb']:.0f} MB today, {f['peak_mb']:.0f} MB "
          f"fused ({f['peak_mb'] / r['peak_mb']:.2f}x); {r['seconds'] * 1e3:.0f} / {f['seconds'] * 1e3:.0f} ms "
          f"({f['seconds'] / r['seconds']:.2f}x time); loss {r['loss']:.4f} / {f['loss']:.4f}")
    return rows


def _alternate(trainers: dict, batches) -> None:
    for tr in trainers.values():
        tr.warm_up(batches)
    for i, b in enumerate(batches):
        for tr in (list(trainers.values()) if i % 2 else list(trainers.values())[::-1]):
            tr.run([b])


def part_step(steps: int) -> dict:
    batches = load_batches("multi30k", 8000, 2000, steps)
    trainers = {}
    for fused in ("off", "on"):
        cfg = resolve("base", "paper", ["train.precision=fp32", f"train.fused_loss={fused}"])
        torch.manual_seed(0)
        trainers[fused] = Trainer(build_model(cfg.model, cfg.data.vocab_size), cfg)
    _alternate(trainers, batches)
    mem = {fused: _child(["step", fused, str(steps)]) for fused in ("off", "on")}
    off, on = trainers["off"], trainers["on"]
    print(f"paper base step (fp32, 2000-token Multi30k batches, {steps} steps alternating, "
          f"{torch.get_num_threads()} threads): {1e3 * off.seconds / off.steps:.0f} ms today, "
          f"{1e3 * on.seconds / on.steps:.0f} ms fused ({off.seconds / on.seconds:.2f}x speed); peak memory above "
          f"the model and Adam {mem['off']['peak_mb']:.0f} / {mem['on']['peak_mb']:.0f} MB "
          f"({mem['on']['peak_mb'] / max(mem['off']['peak_mb'], 1):.2f}x)")
    return {"step_ms": {k: 1e3 * t.seconds / t.steps for k, t in trainers.items()}, "memory": mem}



def part_pack(steps: int, row: int) -> dict:
    cfg = resolve("base", "cpu", ["train.precision=fp32"])
    V = cfg.data.vocab_size
    root = zdata.data_dir()
    sp = zdata.load_sp(zdata.bpe_model(cfg.data.dataset, V, root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs(cfg.data.dataset, "train", root), 128)
    order = zdata.make_batches(zdata.pair_lengths(pairs), cfg.train.batch_tokens, 1, 0)[:steps]
    flat = [zdata.collate(pairs, o) for o in order]
    packed = [pack(pairs, o, row) for o in order]
    trainers = {}
    for name in ("unpacked", "packed"):
        torch.manual_seed(0)
        trainers[name] = Trainer(build_model(cfg.model, V), cfg)
    for name, tr in trainers.items():
        tr.warm_up(flat if name == "unpacked" else packed)
    for i in range(steps):
        for name in (("unpacked", "packed") if i % 2 else ("packed", "unpacked")):
            trainers[name].run([flat[i] if name == "unpacked" else packed[i]])
    u, p = trainers["unpacked"], trainers["packed"]
    rows_u = sum(b.src.size(0) for b in flat) / steps
    rows_p = sum(b.src.size(0) for b in packed) / steps
    pad_u = sum(b.padding_fraction for b in flat) / steps
    pad_p = sum(b.padding_fraction for b in packed) / steps
    print(f"cpu-profile base step (d_model {cfg.model.d_model}, {cfg.model.N}+{cfg.model.N} layers, fp32, "
          f"{cfg.train.batch_tokens}-token Multi30k batches, {steps} steps alternating, {torch.get_num_threads()} "
          f"threads): {1e3 * u.seconds / steps:.0f} ms unpacked ({rows_u:.0f} rows, {pad_u:.0%} padding), "
          f"{1e3 * p.seconds / steps:.0f} ms packed into {row}-token rows ({rows_p:.0f} rows, {pad_p:.0%} padding): "
          f"{u.seconds / p.seconds:.2f}x speed")
    return {"step_ms": {"unpacked": 1e3 * u.seconds / steps, "packed": 1e3 * p.seconds / steps},
            "rows": [rows_u, rows_p], "padding": [pad_u, pad_p]}


def _meta(t: torch.Tensor) -> torch.Tensor:
    return torch.ones(t.shape, dtype=torch.long, device="meta")


def part_predict(steps: int, row: int, chunk: int, models=("base", "big")) -> dict:
    """The calibrated H100's eager step (bf16) of the paper's base and big: today, fused loss, packed, both."""
    import roofline
    dev = roofline.CALIBRATED["H100 SXM"]
    tokens = gpu_profile_batch_tokens()
    out = {}
    pools = [("multi30k", "multi30k")]
    if (zdata.data_dir() / "wmt-news-ende-pool").exists():
        pools.append(("news pool", "wmt_news_ende"))
    for name in models:
        cfg = resolve(name, "paper")
        eps = cfg.train.label_smoothing
        with torch.device("meta"):
            model = build_model(cfg.model, cfg.data.vocab_size).train()
        W = lambda: model.output_weight().to(torch.bfloat16)  # autocast's one cast of the weight a forward
        recipe = lambda lg, t: smoothed_loss(lg, t, eps)[0]
        fused = lambda h, t: fused_loss.smoothed_loss(h.to(torch.bfloat16), W(), t, eps, chunk)[0]
        for label, dataset in pools:
            try:
                batches = load_batches(dataset, 8000, tokens, steps)
            except Exception as e:  # a pool without its BPE model here: said, not fatal
                print(f"  ({label}: not predicted: {type(e).__name__}: {e})")
                continue
            root = zdata.data_dir()
            variants = {}
            for packed_on in (False, True):
                for fuse in (False, True):
                    ms, pad = [], []
                    for b in batches:
                        if packed_on:
                            b = _repack(b, row)
                        seg = {"src_seg": _meta(b.src), "tgt_seg": _meta(b.tgt_in)} if packed_on else None
                        t, _ = roofline.step(model, _meta(b.src), _meta(b.tgt_in), _meta(b.tgt_out),
                                             fused if fuse else recipe, amp=True, states=fuse, segments=seg)
                        ms.append(1e3 * t.seconds(dev))
                        pad.append(b.padding_fraction)
                        kinds = {k: 1e3 * sum(w for w, kk in zip(_work(t, dev), t.kernels) if kk.kind == k)
                                 for k in ("matmul", "attention", "memory", "exp")}
                        kinds["kernels"] = len(t.kernels)
                    variants[("packed " if packed_on else "") + ("fused loss" if fuse else "today")] = {
                        "ms": sum(ms) / len(ms), "last_batch_kernel_ms": kinds,
                        "padding": sum(pad) / len(pad)}
            base_ms = variants["today"]["ms"]
            out[f"{name} {label}"] = variants
            print(f"predicted calibrated H100, paper {name}, {tokens}-token batches of {label}, bf16 eager: " + "; ".join(
                f"{k} {v['ms']:.1f} ms ({base_ms / v['ms']:.2f}x; {v['padding']:.0%} padding; kernels' own ms: "
                + ", ".join(f"{c} {x:.1f}" for c, x in v["last_batch_kernel_ms"].items() if c != "kernels")
                + f"; {v['last_batch_kernel_ms']['kernels']} kernels)" for k, v in variants.items()))
    print(f"  (chunk {chunk} logits, packed rows of {row} tokens; the step is the host queue's and the kernels' "
          "pipeline, bench/roofline.py, so it can exceed the kernels' own sum)")
    return out


def _work(t, dev) -> list[float]:
    """Each kernel's own device seconds under the calibrated model (no host queue)."""
    import roofline
    return [roofline.Trace([k]).seconds(dev.__class__(**{**dev.__dict__, "host": (0.0, 0.0)})) for k in t.kernels]


def _repack(b: zdata.Batch, row: int) -> zdata.Batch:
    """b's pairs packed into rows (from its own padded tensors: the ids are beside the point on meta)."""
    pairs = [((s[s != 0][:-1]).tolist(), (t[t != 0][:-1]).tolist()) for s, t in zip(b.src, b.tgt_out)]
    return pack(pairs, range(len(pairs)), row)


def part_graph(steps: int, models=("base", "big")) -> dict:
    """train.cuda_graph on (zoo.train.graphed), predicted by the calibrated H100 roofline: each batch padded up to its
    bucket, its kernels replayed with no host time between them (a graph launch), eager and compiled, against
    today's (each kernel queued by the host, 28 us apiece); and the buckets' padding, measured on the batches."""
    import roofline
    from bench_train import _meta_batch, news_dataset
    from zoo.data import Batch
    from zoo.train import graphed
    dev = roofline.CALIBRATED["H100 SXM"]
    replayed = dev.__class__(**{**dev.__dict__, "name": dev.name + ", replayed", "host": (0.0, 0.0)})
    tokens = gpu_profile_batch_tokens()
    out = {}
    for name in models:
        cfg = resolve(name, "paper")
        eps = cfg.train.label_smoothing
        with torch.device("meta"):
            model = build_model(cfg.model, cfg.data.vocab_size).train()
        recipe = lambda lg, t: smoothed_loss(lg, t, eps)[0]
        for label, dataset in (news_dataset(), ("Multi30k", "multi30k")):
            batches = load_batches(dataset, 8000, tokens, steps)
            g = graphed.GraphedStep.__new__(graphed.GraphedStep)
            g.cfg = cfg  # shape() reads the model's longest position only
            rows = {}
            for compiled in (False, True):
                for graph in (False, True):
                    ms, cells, real = [], 0, 0
                    for b in batches:
                        R, S, T = g.shape(b) if graph else (b.src.size(0), b.src.size(1), b.tgt_in.size(1))
                        z = lambda n: torch.zeros(R, n, dtype=torch.long)
                        t, _ = roofline.step(model, *_meta_batch(Batch(z(S), z(T), z(T), 0, 0, 0.0)), recipe,
                                             fused=compiled, amp=True, compiled_loss=compiled)
                        ms.append(1e3 * t.seconds(replayed if graph else dev))
                        cells += R * (S + T)
                        real += b.n_src_tokens + b.n_tgt_tokens
                    rows[f"{'compiled' if compiled else 'eager'}{' graphed' if graph else ''}"] = {
                        "ms": sum(ms) / len(ms), "padding": 1 - real / cells}
            out[f"{name} {label}"] = rows
            e, c = rows["eager"]["ms"], rows["compiled"]["ms"]
            print(f"predicted calibrated H100, paper {name}, {tokens}-token batches of {label}, bf16: " + "; ".join(
                f"{k} {v['ms']:.1f} ms ({(e if k.startswith('eager') else c) / v['ms']:.2f}x, {v['padding']:.0%} "
                f"padding)" for k, v in rows.items()))
    print(f"  (graphed: each batch padded to its bucket, no host time between kernels; {steps} batches each)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["loss", "step", "pack", "predict", "graph", "all"], default="all")
    ap.add_argument("--tokens", type=int, default=4000, help="--part loss: target tokens")
    ap.add_argument("--steps", type=int, default=6, help="timed steps of --part step / pack; batches predicted")
    ap.add_argument("--row", type=int, default=64, help="tokens a side of a packed row")
    ap.add_argument("--chunk", type=int, default=fused_loss.CHUNK["cuda"],
                    help="--part predict: logits a chunk of the fused loss (a GPU's)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--models", default="base,big", help="--part predict: the paper's models to predict")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    keep_freed_memory()
    if args.child:
        kind, *rest = args.child
        print(json.dumps(_loss_child(rest[0], int(rest[1])) if kind == "loss" else _step_child(rest[0], int(rest[1]))))
        return
    figures = {}
    if args.part in ("loss", "all"):
        figures["loss"] = part_loss(args.tokens)
    if args.part in ("step", "all"):
        figures["step"] = part_step(args.steps)
    if args.part in ("pack", "all"):
        figures["pack"] = part_pack(args.steps, args.row)
    if args.part in ("predict", "all"):
        figures["predict"] = part_predict(min(args.steps, 3), args.row, args.chunk, args.models.split(","))
    if args.part in ("graph", "all"):
        figures["graph"] = part_graph(min(args.steps, 3), args.models.split(","))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
