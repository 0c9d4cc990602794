"""Training throughput and model-FLOPs utilization (MFU) of zoo's compiled Transformer on this CPU.

In one process, on one machine state:
1. the fp32 matmul peak: the best GFLOP/s of a few large square matmuls (measured first and again
   last; the higher figure is the peak, so a slower machine at either end cannot flatter the MFU);
2. the cpu profile's base model (`zoo show base --profile cpu`: d_model 256, 3+3 layers, h 8, 8000
   shared BPE, 4000-token batches of Multi30k) against torch.nn.Transformer of the same size, with
   the same shared embedding, loss, optimizer and loop; the two alternate in rounds so machine noise
   hits both alike;
   and, where the CPU has bf16 instructions, the same model under the cpu profile's
   train.precision bf16 (autocast, attention fp32), its MFU against a bf16 matmul peak of the same run;
3. the paper's base model (specs/base.yaml: d_model 512, 6+6 layers, 37000-token vocabulary) on
   2000-token batches. WMT14's training set is not in the data folder, so its batches are Multi30k's
   (8000 BPE ids); the softmax over the 37000 rows costs the same whatever ids the targets hold.

Model FLOPs: zoo.costs.forward_flops of each batch as trained (its non-pad source and target tokens,
attention over its mean sentence lengths; padding is not counted), training = 3 x forward. MFU =
those FLOPs per second / the matmul peak. Tokens/s counts non-pad target tokens.

    taskset -c 1 env OMP_NUM_THREADS=1 ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_train.py

On a GPU, `--device cuda` trains the paper's base and big instead (specs as written, bf16 autocast,
TF32, fused Adam, `--batch-tokens` per step) and prints `MFU paper base (cuda bf16): 0.NN` and the
same for big against a bf16 matmul peak measured in the same run. (Not yet run: no GPU so far.)

`--predict` prints the roofline model's (bench/roofline.py) step time and MFU of the paper's base and
big on an H100 and an A100, before (eager, one fp32 loss over all the logits) and after (compiled:
pointwise chains fused; the loss in chunks), then checks the same model against this CPU: the
cpu-profile base's predicted fp32 step (this CPU's matmul peak and copy bandwidth, measured in the
same run) beside its measured one. `--compile` measures whether train.compile pays on this CPU.
"""
from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

from zoo import data as zdata
from zoo import spec as zspec
from zoo.costs import forward_flops
from zoo.model import build_model
from zoo.config import ModelSpec
from zoo.train import autocast, autocast_dtype, cpu_has_bf16, keep_freed_memory, make_optimizer, smoothed_loss


class TorchReference(nn.Module):
    """nn.Transformer with the same shared embedding, scaling, positions and tied pre-softmax."""

    def __init__(self, m: ModelSpec, vocab: int, zoo_init: bool = False):
        super().__init__()
        self.d = m.d_model
        self.embed = nn.Embedding(vocab, m.d_model)  # N(0, 1): logits of std ~sqrt(d_model)
        if zoo_init:  # zoo's N(0, d_model^-1/2): logits of unit scale
            nn.init.normal_(self.embed.weight, 0.0, m.d_model ** -0.5)
        self.register_buffer("pe", build_model(m, 8).pe.clone(), persistent=False)
        self.drop = nn.Dropout(m.dropout)
        self.core = nn.Transformer(m.d_model, m.h, m.N, m.N, m.d_ff, m.dropout, batch_first=True)

    def forward(self, src, tgt):
        e = lambda x: self.drop(self.embed(x) * math.sqrt(self.d) + self.pe[: x.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        y = self.core(e(src), e(tgt), tgt_mask=causal, src_key_padding_mask=src == 0,
                      memory_key_padding_mask=src == 0, tgt_is_causal=True)
        return y @ self.embed.weight.t()


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(seconds: float = 1.0, sizes=(1024, 2048, 3072), device="cpu", dtype=torch.float32) -> float:
    """Best GFLOP/s of square matmuls into a preallocated output (fp32 on the CPU, bf16 on a GPU)."""
    best = 0.0
    for n in sizes:
        a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
        c = torch.empty(n, n, device=device, dtype=dtype)
        torch.mm(a, b, out=c)
        _sync(device)
        k, t = 0, time.perf_counter()
        while (el := time.perf_counter() - t) < seconds or k < 2:
            torch.mm(a, b, out=c)
            k += 1
            if k % 16 == 0:
                _sync(device)
        _sync(device)
        el = time.perf_counter() - t
        best = max(best, 2 * n ** 3 * k / el / 1e9)
    return best


def batch_flops(m: ModelSpec, vocab: int, b: zdata.Batch) -> float:
    """Training FLOPs (3 x forward) of one batch's non-pad tokens."""
    B = b.src.size(0)
    return 3.0 * forward_flops(m, vocab, b.n_src_tokens, b.n_tgt_tokens, round(b.n_src_tokens / B),
                               round(b.n_tgt_tokens / B))


class Trainer:
    """One model, its optimizer and its tallies; `run` trains steps the way zoo.train._step does."""

    def __init__(self, model: nn.Module, m: ModelSpec, vocab: int, eps: float, device="cpu", precision="auto"):
        self.device = torch.device(device)
        self.amp = autocast_dtype(precision, self.device)  # as zoo.train: bf16 on a GPU, fp32 on a CPU unless asked
        self.model, self.m, self.vocab, self.eps = model.to(self.device), m, vocab, eps
        self.opt = make_optimizer(model, lr=1e-4)
        self.tokens = 0
        self.flops = self.seconds = 0.0

    def run(self, batches, count: bool = True):
        self.model.train()
        n = f = 0
        t = time.perf_counter()
        for b in batches:
            b = b.to(self.device)
            self.opt.zero_grad(set_to_none=True)
            with autocast(self.device, self.amp):  # as zoo.train
                logits = self.model(b.src, b.tgt_in)
            loss, _ = smoothed_loss(logits, b.tgt_out, self.eps)
            (loss / b.n_tgt_tokens).backward()
            loss.item()
            self.opt.step()
            n += b.n_tgt_tokens
            f += batch_flops(self.m, self.vocab, b)
        _sync(self.device)
        if count:
            self.seconds += time.perf_counter() - t
            self.tokens += n
            self.flops += f

    @property
    def tps(self) -> float:
        return self.tokens / self.seconds

    def mfu(self, peak_gflops: float) -> float:
        return self.flops / self.seconds / (peak_gflops * 1e9)


def load_batches(dataset: str, vocab: int, batch_tokens: int, count: int):
    root = zdata.data_dir()
    sp = zdata.load_sp(zdata.bpe_model(dataset, vocab, root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs(dataset, "train", root), 128)
    order = zdata.make_batches(zdata.pair_lengths(pairs), batch_tokens, 1, 0)
    return [zdata.collate(pairs, order[i]) for i in range(min(count, len(order)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="counted rounds (after one warm-up round)")
    ap.add_argument("--steps", type=int, default=3, help="steps per model per round, cpu-profile size; "
                    "the models alternate step by step on the same batch")
    ap.add_argument("--base-steps", type=int, default=8, help="counted steps of the paper's base model (after 1 warm-up)")
    ap.add_argument("--no-bf16", action="store_true", help="skip the cpu-profile base under bf16 autocast "
                    "(train.precision bf16; measured only where the CPU has bf16 instructions)")
    ap.add_argument("--no-base", action="store_true", help="skip the paper's base model")
    ap.add_argument("--no-reference", action="store_true", help="skip nn.Transformer")
    ap.add_argument("--peak-seconds", type=float, default=1.0)
    ap.add_argument("--reference-init", choices=["torch", "zoo"], default="torch",
                    help="nn.Transformer's embedding: nn.Embedding's N(0, 1) (torch) or zoo's N(0, d_model^-1/2)")
    ap.add_argument("--malloc-default", action="store_true",
                    help="leave glibc's malloc as it is (zoo training sets zoo.train.keep_freed_memory)")
    ap.add_argument("--device", default="cpu", help="cuda: the paper's base and big on this GPU under bf16 "
                    "autocast (TF32 on), MFU against a bf16 matmul peak measured in the same run")
    ap.add_argument("--batch-tokens", type=int, default=12500, help="target tokens per batch on a GPU")
    ap.add_argument("--predict", action="store_true", help="the roofline prediction (GPUs and this CPU); no full bench")
    ap.add_argument("--compile", action="store_true", help="eager vs train.compile on for the cpu-profile base")
    args = ap.parse_args()
    if args.predict:
        return predict(args)
    if args.compile:
        return compile_pays(args)
    if torch.device(args.device).type == "cuda":
        return gpu(args)
    kept = False if args.malloc_default else keep_freed_memory()

    peak0 = matmul_peak(args.peak_seconds)
    cpu = zspec.resolve("base", profile="cpu")[0]
    m, V, eps = cpu.model, cpu.data.vocab_size, cpu.train.label_smoothing
    batches = load_batches(cpu.data.dataset, V, cpu.train.batch_tokens, (args.rounds + 1) * args.steps)
    torch.manual_seed(0)
    runs = {"zoo": Trainer(build_model(m, V), m, V, eps)}
    if not args.no_reference:
        runs["nn.Transformer"] = Trainer(TorchReference(m, V, args.reference_init == "zoo"), m, V, eps)
    bf16 = not args.no_bf16 and cpu_has_bf16()
    if bf16:  # the same weights under the cpu profile's train.precision bf16
        torch.manual_seed(0)
        runs["zoo bf16"] = Trainer(build_model(m, V), m, V, eps, precision="bf16")
    for i, b in enumerate(batches):  # step by step on the same batch, in alternating order; round 0 warms up
        for tr in (list(runs.values()) if i % 2 else list(runs.values())[::-1]):
            tr.run([b], count=i >= args.steps)

    base = None
    if not args.no_base:
        paper = zspec.resolve("base", profile="paper")[0]
        bm, bV = paper.model, paper.data.vocab_size
        bb = load_batches(cpu.data.dataset, V, 2000, args.base_steps + 1)
        torch.manual_seed(0)
        base = Trainer(build_model(bm, bV), bm, bV, paper.train.label_smoothing)
        base.run(bb[:1], count=False)
        base.run(bb[1:])
    peak = max(peak0, matmul_peak(args.peak_seconds))
    peak_bf16 = matmul_peak(args.peak_seconds, dtype=torch.bfloat16) if bf16 else None

    print(f"threads {torch.get_num_threads()}; fp32 matmul peak {peak:.1f} GFLOP/s (first {peak0:.1f}); "
          f"training FLOPs = 3 x zoo.costs.forward_flops of each batch's non-pad tokens; "
          f"malloc keeps freed memory: {kept}")
    print(f"cpu-profile base: d_model {m.d_model}, {m.N}+{m.N} layers, h {m.h}, vocab {V}, "
          f"{cpu.train.batch_tokens}-token batches of {cpu.data.dataset}, {args.rounds} rounds x {args.steps} steps")
    for k, tr in runs.items():
        of = f"MFU {tr.mfu(peak_bf16):.2f} of the bf16 peak" if tr.amp else f"MFU {tr.mfu(peak):.2f}"
        print(f"  {k:<15} {tr.tps:8.0f} target tokens/s  {tr.flops / tr.seconds / 1e9:6.1f} GFLOP/s  {of}")
    if base is not None:
        print(f"paper base: d_model {bm.d_model}, {bm.N}+{bm.N} layers, h {bm.h}, vocab {bV}, 2000-token batches "
              f"({cpu.data.dataset} ids), {args.base_steps} steps")
        print(f"  {'zoo':<15} {base.tps:8.0f} target tokens/s  {base.flops / base.seconds / 1e9:6.1f} GFLOP/s  "
              f"MFU {base.mfu(peak):.2f}")
    if bf16:
        print(f"bf16 matmul peak {peak_bf16:.1f} GFLOP/s ({peak_bf16 / peak:.1f}x fp32); cpu-profile base under "
              f"bf16 autocast (attention fp32): {runs['zoo bf16'].tps / runs['zoo'].tps:.2f}x the fp32 tokens/s")
        print(f"MFU cpu-profile base (bf16, of the bf16 peak): {runs['zoo bf16'].mfu(peak_bf16):.2f}")
    print(f"MFU cpu-profile base: {runs['zoo'].mfu(peak):.2f}")
    if base is not None:
        print(f"MFU paper base: {base.mfu(peak):.2f}")
    if "nn.Transformer" in runs:
        print(f"ratio zoo / nn.Transformer: {runs['zoo'].tps / runs['nn.Transformer'].tps:.2f}")


def gpu(args) -> None:
    """The paper's base and big (specs as written) on one GPU, bf16 autocast as zoo.train runs them."""
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    peak0 = matmul_peak(args.peak_seconds, (4096, 8192), dev, torch.bfloat16)
    results = {}
    for name in ("base", "big"):
        cfg = zspec.resolve(name, profile="paper")[0]
        m, V = cfg.model, cfg.data.vocab_size
        # Multi30k's 8000-BPE ids stand in for WMT14's: the 37000-row softmax costs the same
        batches = load_batches("multi30k", 8000, args.batch_tokens, args.base_steps + 1)
        torch.manual_seed(0)
        tr = Trainer(build_model(m, V), m, V, cfg.train.label_smoothing, dev)
        tr.run(batches[:1], count=False)
        tr.run(batches[1:])
        results[name] = tr
        print(f"{name}: d_model {m.d_model}, {m.N}+{m.N} layers, vocab {V}, {args.batch_tokens}-token batches, "
              f"{tr.tps:9.0f} target tokens/s, peak memory {torch.cuda.max_memory_allocated(dev) / 2**30:.1f} GiB")
    peak = max(peak0, matmul_peak(args.peak_seconds, (4096, 8192), dev, torch.bfloat16))
    print(f"{torch.cuda.get_device_name(dev)}; bf16 matmul peak {peak:.0f} GFLOP/s (first {peak0:.0f})")
    for name, tr in results.items():
        print(f"MFU paper {name} (cuda bf16): {tr.mfu(peak):.2f}")


def copy_bandwidth(seconds: float = 0.5, mb: int = 256) -> float:
    """Bytes/s of a large tensor copy (read + write), the memory side of this machine's roofline."""
    a, b = torch.empty(mb * 2**18), torch.empty(mb * 2**18)
    b.copy_(a)
    k, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds or k < 2:
        b.copy_(a)
        k += 1
    return 2 * a.numel() * 4 * k / (time.perf_counter() - t)


def _meta_model(m: ModelSpec, vocab: int, dtype=torch.float32):
    with torch.device("meta"):
        return build_model(m, vocab).to(dtype).train()


def _meta_batch(B: int, S: int, T: int):
    ids = lambda n: torch.ones(B, n, dtype=torch.long, device="meta")
    return ids(S), ids(T), ids(T)


def predict(args) -> None:
    import roofline
    from zoo.train import loop as ztrain, recipe as zrecipe
    print("roofline: matmul FLOPs at the bf16 peak, every other op's bytes at the memory bandwidth (per op, "
          "the slower of the two), fused Adam; source of the peaks: bench/roofline.py")
    L = 32  # WMT14's BPE sentences average ~27 tokens; padded batches of length-sorted pairs
    for name in ("base", "big"):
        cfg = zspec.resolve(name, profile="paper")[0]
        m, V = cfg.model, cfg.data.vocab_size
        B = args.batch_tokens // L
        src, tgt_in, tgt_out = _meta_batch(B, L, L)
        model_flops = 3 * forward_flops(m, V, B * L, B * L, L, L)
        n = sum(p.numel() for p in _meta_model(m, V).parameters())
        for gpu, (peak, bw) in roofline.GPUS.items():
            row = []
            for label, fused, chunk in (("before", False, 2 ** 62), ("after", True, 2 ** 24)):
                zrecipe.LOSS_CHUNK = chunk
                loss = lambda lg, t: ztrain.smoothed_loss(lg, t, cfg.train.label_smoothing)[0]
                tr = roofline.step(_meta_model(m, V, torch.bfloat16), src, tgt_in, tgt_out, loss, peak, bw, fused, n,
                                   compiled_loss=fused)  # after: train.compile on compiles the loss's chunks too
                row.append(f"{label} {tr.seconds * 1e3:6.1f} ms, MFU {model_flops / tr.seconds / peak:.2f} "
                           f"({tr.ops} kernels, {tr.bytes / 2**30:.1f} GiB)")
            print(f"predicted {gpu} paper {name} ({args.batch_tokens}-token batches, {B} x {L}, bf16): "
                  + "; ".join(row))
        zrecipe.LOSS_CHUNK = 2 ** 24

    # the same model against this CPU: its peaks measured now, then the cpu-profile base's fp32 steps
    kept = keep_freed_memory()
    peak, bw = matmul_peak(args.peak_seconds) * 1e9, copy_bandwidth()
    cpu = zspec.resolve("base", profile="cpu")[0]
    m, V, eps = cpu.model, cpu.data.vocab_size, cpu.train.label_smoothing
    batches = load_batches(cpu.data.dataset, V, cpu.train.batch_tokens, args.base_steps + 1)
    torch.manual_seed(0)
    tr = Trainer(build_model(m, V), m, V, eps)
    tr.run(batches[:1], count=False)
    tr.run(batches[1:])
    n = sum(p.numel() for p in tr.model.parameters())
    loss = lambda lg, t: ztrain.smoothed_loss(lg, t, eps)[0]
    predicted = sum(roofline.step(_meta_model(m, V), *_meta_batch(*b.src.shape, b.tgt_in.size(1)), loss,
                                  peak, bw, False, n).seconds for b in batches[1:])
    print(f"this CPU ({torch.get_num_threads()} threads; fp32 matmul peak {peak / 1e9:.1f} GFLOP/s, copy "
          f"{bw / 1e9:.1f} GB/s; malloc keeps freed memory: {kept}): cpu-profile base, {len(batches) - 1} "
          f"fp32 steps of {cpu.train.batch_tokens}-token batches: predicted {predicted:.2f} s, measured "
          f"{tr.seconds:.2f} s ({predicted / tr.seconds - 1:+.0%})")


def compile_pays(args) -> None:
    """The cpu-profile base, eager and under train.compile on (inductor, dynamic shapes), same batches."""
    from zoo import train as ztrain
    keep_freed_memory()
    cpu = zspec.resolve("base", profile="cpu", sets=["train.compile=on"])[0]
    m, V, eps = cpu.model, cpu.data.vocab_size, cpu.train.label_smoothing
    batches = load_batches(cpu.data.dataset, V, cpu.train.batch_tokens, args.base_steps + 2)
    out = {}
    for label in ("eager", "compiled"):
        torch.manual_seed(0)
        model = build_model(m, V)
        tr = Trainer(model, m, V, eps)
        if label == "compiled":
            tr.model = ztrain.compiled(model, cpu)
        t = time.perf_counter()
        tr.run(batches[:2], count=False)  # the compiled one compiles here (and once more for a new shape class)
        warm = time.perf_counter() - t
        tr.run(batches[2:])
        out[label] = tr
        print(f"{label:<9} first 2 steps {warm:6.1f} s; then {tr.tps:6.0f} target tokens/s")
    gain = out["compiled"].tps / out["eager"].tps
    print(f"compile on this CPU: {gain:.2f}x the eager tokens/s in the steady state; "
          f"{'pays' if gain > 1.05 else 'does not pay'} here")


if __name__ == "__main__":
    main()
