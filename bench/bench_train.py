"""Training throughput and model-FLOPs utilization (MFU) of zoo's Transformer, step by step as zoo.train takes it.

Every model here trains through zoo.train.step.train_step, the loop's own step, with the run's choices from
its config (zoo.train.step.step_setup: autocast precision, train.compile; on a GPU zoo.train.device.train_device
sets TF32 and turns cuDNN attention off, as for a trial). The loss statistics stay on the device and are read
once, after the timed steps (no per-step loss.item()). Before timing, each model trains once on every batch
shape the timed steps will meet (a first step of a shape pays for allocations, kernel choice, a compile).

On the CPU, in one process, on one machine state:
1. the fp32 matmul peak: the best GFLOP/s of a few large square matmuls (measured first and again
   last; the higher figure is the peak, so a slower machine at either end cannot flatter the MFU);
2. the cpu profile's base model (`zoo show base --profile cpu`: d_model 256, 3+3 layers, h 8, 8000
   shared BPE, 4000-token batches of Multi30k) in fp32 against torch.nn.Transformer of the same size, with
   the same shared embedding, loss, optimizer and step; the two alternate step by step on the same batch so
   machine noise hits both alike; and, where the CPU has bf16 instructions, the same model as the cpu profile
   trains it (train.precision bf16: autocast, attention fp32), its MFU against a bf16 matmul peak of the run;
3. the paper's base model (specs/base.yaml: d_model 512, 6+6 layers, 37000-token vocabulary) on
   2000-token batches. WMT14's training set is not in the data folder, so its batches are Multi30k's
   (8000 BPE ids); the softmax over the 37000 rows costs the same whatever ids the targets hold.

Model FLOPs: zoo.model.costs.forward_flops of each batch as trained (its non-pad source and target tokens,
attention over its mean sentence lengths; padding is not counted), training = 3 x forward. MFU =
those FLOPs per second / a matmul peak, given twice, labelled: the peak measured in the same run, and
the spec peak (a GPU's datasheet; a CPU's nominal clock x FLOPs a cycle, bench/roofline.py).
Tokens/s counts non-pad target tokens.

    taskset -c 1 env OMP_NUM_THREADS=1 ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_train.py

`--device cuda` trains the paper's base and big instead (specs as written, `--batch-tokens` per step) and
prints `MFU paper base (cuda bf16): 0.NN of the measured peak, 0.NN of the spec peak (...)` and the same for big.
`--predict` prints the roofline's (bench/roofline.py) step time and MFU of the paper's base and big on an
H100, H200 and A100 from their datasheets and on an H100 calibrated on a measured one (H100_MEASURED), eager and
under train.compile on, each with its best and worst case, on the batches
`--device cuda` trains; first it checks the roofline against this CPU: two shapes' steps measured and
predicted (the CPU's peak, bandwidth, matmul and attention speed at the steps' own shapes and per-op cost
measured in the same run), and prints the error. `--tiny` swaps the paper's models for the smoke
profile's and small batches, and predicts them on this CPU too (scripts/first-gpu-run.sh --cpu: the code
paths, not the figures).
`--compile` measures whether train.compile pays on this CPU, and regional compilation (train.compile on)
against compiling the whole model: warm-up and steady-state tokens/s. `--json PATH` writes the figures.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import time

import torch
from torch import nn

from zoo import data as zdata
from zoo import spec as zspec
from zoo.model import forward_flops
from zoo.model import build_model
from zoo.config import Config, ModelSpec
from zoo.train import (cpu_has_bf16, keep_freed_memory, make_optimizer, smoothed_loss, step_setup, train_device,
                       train_step, whole_model)


class TorchReference(nn.Module):
    """nn.Transformer with the same shared embedding, scaling, positions and tied pre-softmax."""

    def __init__(self, m: ModelSpec, vocab: int, zoo_init: bool = False):
        super().__init__()
        self.d = m.d_model
        self.embed = nn.Embedding(vocab, m.d_model)  # N(0, 1): logits of std ~sqrt(d_model)
        if zoo_init:  # zoo's N(0, d_model^-1/2): logits of unit scale
            nn.init.normal_(self.embed.weight, 0.0, m.d_model ** -0.5)
        pe = build_model(m, 8).pos_embed.embed(0, m.max_len)  # zoo's positions (a component: model.pos_embed)
        self.register_buffer("pe", torch.zeros(m.max_len, m.d_model) if pe is None else pe.detach().clone(),
                             persistent=False)
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


def copy_bandwidth(seconds: float = 0.5, mb: int = 256) -> float:
    """Bytes/s of a large tensor copy (read + write), the memory side of this machine's roofline."""
    a, b = torch.empty(mb * 2**18), torch.empty(mb * 2**18)
    b.copy_(a)
    k, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds or k < 2:
        b.copy_(a)
        k += 1
    return 2 * a.numel() * 4 * k / (time.perf_counter() - t)


def batch_flops(m: ModelSpec, vocab: int, b: zdata.Batch) -> float:
    """Training FLOPs (3 x forward) of one batch's non-pad tokens."""
    B = b.src.size(0)
    return 3.0 * forward_flops(m, vocab, b.n_src_tokens, b.n_tgt_tokens, round(b.n_src_tokens / B),
                               round(b.n_tgt_tokens / B))


class Trainer:
    """One model trained by zoo.train.step.train_step with `cfg`'s choices (the loop's step); the timed steps' tallies."""

    def __init__(self, model: nn.Module, cfg: Config, device="cpu", whole: bool | None = None):
        self.device, self.cfg = torch.device(device), cfg
        self.m, self.vocab = cfg.model, cfg.data.vocab_size
        self.model = model.to(self.device)
        self.fwd, self.amp = step_setup(cfg, self.model, self.device, whole)
        self.whole = whole_model(cfg, self.device) if whole is None else whole  # compiled: the model or its layers
        self.opt = make_optimizer(self.model, lr=1e-4)
        self.stats = torch.zeros(2, dtype=torch.float64, device=self.device)  # read once, after timing
        self.shapes: set = set()
        self.tokens = self.steps = 0
        self.flops = self.seconds = 0.0

    def _step(self, b) -> None:
        train_step(self.cfg, self.fwd, self.opt, self.device, [(b, 1.0)], b.n_tgt_tokens, self.stats, self.amp)

    def warm_up(self, batches) -> None:
        """One untimed step of each shape among `batches`: a timed step then never meets a new shape. Keeps the
        warm-up's seconds, the first step's, and the graphs dynamo had compiled after the first step and after
        all (train.compile on: equal when no later shape recompiles)."""
        from torch._dynamo.utils import counters
        self.model.train()
        t = time.perf_counter()
        for b in batches:
            if (key := (tuple(b.src.shape), tuple(b.tgt_in.shape))) not in self.shapes:
                self.shapes.add(key)
                self._step(b)
                if len(self.shapes) == 1:
                    _sync(self.device)
                    self.first_step_s = time.perf_counter() - t
                    self.graphs_first = counters["stats"]["unique_graphs"]
        _sync(self.device)
        self.warmup_s, self.graphs = time.perf_counter() - t, counters["stats"]["unique_graphs"]

    def run(self, batches) -> None:
        self.model.train()
        t = time.perf_counter()
        for b in batches:
            self._step(b)
        _sync(self.device)
        self.seconds += time.perf_counter() - t
        self.steps += len(batches)
        self.tokens += sum(b.n_tgt_tokens for b in batches)
        self.flops += sum(batch_flops(self.m, self.vocab, b) for b in batches)
        if not math.isfinite(self.stats[0].item()):  # the one read, after the clock stopped
            raise RuntimeError("non-finite loss in the benchmark's steps")

    @property
    def tps(self) -> float:
        return self.tokens / self.seconds

    def mfu(self, peak_gflops: float) -> float:
        return self.flops / self.seconds / (peak_gflops * 1e9)


TINY_PAIRS = 2000  # --tiny: batches cut from a corpus's first pairs only (the code path; encoding all takes a minute)
FIRST_PAIRS: int | None = None  # main sets TINY_PAIRS under --tiny


@functools.lru_cache(maxsize=None)  # a corpus encoded once a process, however many models train on it
def _pairs(dataset: str, vocab: int, first: int | None):
    root = zdata.data_dir()
    sp = zdata.load_sp(zdata.bpe_model(dataset, vocab, root))
    return zdata.encode_pairs(sp, zdata.load_pairs(dataset, "train", root)[:first], 128)


def load_batches(dataset: str, vocab: int, batch_tokens: int, count: int, device="cpu"):
    pairs = _pairs(dataset, vocab, FIRST_PAIRS)
    order = zdata.make_batches(zdata.pair_lengths(pairs), batch_tokens, 1, 0)
    batches = [zdata.collate(pairs, order[i]) for i in range(min(count, len(order)))]
    # pinned, as the loop's loader hands them over on a GPU (the copy then does not wait for the host)
    return [b.pinned() for b in batches] if torch.device(device).type == "cuda" else batches


def gpu_profile_batch_tokens() -> int:
    """The batch the gpu profile trains the paper's models on (specs/profiles/gpu.yaml `set:`; its news-pool
    proxies take a batch of their own): what `--device cuda` and `--predict` time by default."""
    return int(zspec.read_profile(zspec.find_profile("gpu")).data["set"]["train"]["batch_tokens"])


def resolve(name: str, profile: str, sets=()) -> Config:
    return zspec.resolve(name, profile=profile, sets=list(sets))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds, after the warm-up")
    ap.add_argument("--steps", type=int, default=3, help="steps per model per round, cpu-profile size; "
                    "the models alternate step by step on the same batch")
    ap.add_argument("--base-steps", type=int, default=None, help="timed steps of the paper's base (and big) "
                    "model, after the warm-up (default 8; --tiny: 2)")
    ap.add_argument("--no-bf16", action="store_true", help="skip the cpu-profile base under bf16 autocast "
                    "(train.precision bf16; measured only where the CPU has bf16 instructions)")
    ap.add_argument("--no-base", action="store_true", help="skip the paper's base model")
    ap.add_argument("--no-reference", action="store_true", help="skip nn.Transformer")
    ap.add_argument("--peak-seconds", type=float, default=None, help="seconds per matmul size of the peak (default 1)")
    ap.add_argument("--reference-init", choices=["torch", "zoo"], default="torch",
                    help="nn.Transformer's embedding: nn.Embedding's N(0, 1) (torch) or zoo's N(0, d_model^-1/2)")
    ap.add_argument("--malloc-default", action="store_true",
                    help="leave glibc's malloc as it is (zoo training sets zoo.train.keep_freed_memory)")
    ap.add_argument("--device", default="cpu", help="cuda: the paper's base and big on this GPU, as a trial "
                    "trains them (bf16 autocast, TF32, cuDNN attention off)")
    ap.add_argument("--batch-tokens", type=int, default=None,
                    help="source and target tokens per batch of the paper's models (default: the gpu profile's "
                    "train.batch_tokens, 25000; --tiny: 600)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a spec field for the paper's models (train.compile=on); --compile: for the cpu-profile base "
                    "(model.N=6: the paper's depth)")
    ap.add_argument("--predict", action="store_true", help="the roofline prediction (GPUs and this CPU); no full bench")
    ap.add_argument("--check-steps", type=int, default=3, help="--predict: timed steps of each self-check shape")
    ap.add_argument("--tiny", action="store_true", help="the smoke profile's base and big, small batches: "
                    "every code path in seconds, on any device (figures that mean nothing)")
    ap.add_argument("--compile", action="store_true", help="eager vs train.compile on for the cpu-profile base")
    ap.add_argument("--profile", default="cpu", help="the profile whose base the CPU run compares with "
                    "nn.Transformer (and --compile times); smoke: tiny shapes, with its big as the second model "
                    "(tests/test_bench.py: every code path, figures that mean nothing)")
    ap.add_argument("--graph", action="store_true", help="--device cuda / --tiny: each zoo model again with "
                    "train.cuda_graph on (zoo.train.graphed), in the same process")
    ap.add_argument("--stream", action="store_true", help="--device cuda / --tiny: each zoo model again with "
                    "model.residual_stream bf16 (the same weights), in the same process; under bf16 autocast only")
    ap.add_argument("--one-corpus", action="store_true", help="--device cuda / --tiny: news-length batches only "
                    "(default: Multi30k's beside them)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures to PATH")
    args = ap.parse_args()
    args.base_steps = args.base_steps or (2 if args.tiny else 8)
    args.batch_tokens = args.batch_tokens or (600 if args.tiny else gpu_profile_batch_tokens())
    args.peak_seconds = args.peak_seconds or (0.1 if args.tiny else 1.0)
    if args.tiny:
        global FIRST_PAIRS
        FIRST_PAIRS = TINY_PAIRS
    if args.predict:
        figures = predict(args)
    elif args.compile:
        figures = compile_pays(args)
    elif torch.device(args.device).type == "cuda" or args.tiny:
        figures = paper_models(args)
    else:
        figures = cpu_bench(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


def cpu_bench(args) -> dict:
    kept = False if args.malloc_default else keep_freed_memory()
    peak0 = matmul_peak(args.peak_seconds)
    cpu = resolve("base", args.profile, ["train.precision=fp32"])
    m, V = cpu.model, cpu.data.vocab_size
    batches = load_batches(cpu.data.dataset, V, cpu.train.batch_tokens, args.rounds * args.steps)
    torch.manual_seed(0)
    runs = {"zoo": Trainer(build_model(m, V), cpu)}
    if not args.no_reference:
        runs["nn.Transformer"] = Trainer(TorchReference(m, V, args.reference_init == "zoo"), cpu)
    bf16 = not args.no_bf16 and cpu_has_bf16()
    if bf16:  # the same weights as the cpu profile trains them: train.precision bf16
        torch.manual_seed(0)
        runs["zoo bf16"] = Trainer(build_model(m, V), resolve("base", args.profile, ["train.precision=bf16"]))
    for tr in runs.values():
        tr.warm_up(batches)
    for i, b in enumerate(batches):  # step by step on the same batch, in alternating order
        for tr in (list(runs.values()) if i % 2 else list(runs.values())[::-1]):
            tr.run([b])

    base = None
    if not args.no_base:
        paper = resolve("base", "paper") if args.profile == "cpu" else resolve("big", args.profile)
        bm, bV = paper.model, paper.data.vocab_size
        base_tokens = 2000 if args.profile == "cpu" else 600
        bb = load_batches(cpu.data.dataset, min(V, bV), base_tokens, args.base_steps)
        torch.manual_seed(0)
        base = Trainer(build_model(bm, bV), paper)
        base.warm_up(bb)
        base.run(bb)
    peak = max(peak0, matmul_peak(args.peak_seconds))
    peak_bf16 = matmul_peak(args.peak_seconds, dtype=torch.bfloat16) if bf16 else None
    import roofline
    threads = torch.get_num_threads()
    spec, spec_label = roofline.cpu_spec_peak(threads, False)
    spec16, spec16_label = roofline.cpu_spec_peak(threads, True)

    def mfu(tr) -> str:
        measured, nominal = (peak_bf16, spec16) if tr.amp else (peak, spec)
        return (f"MFU {tr.mfu(measured):.2f} of the measured {'bf16' if tr.amp else 'fp32'} peak, "
                f"{tr.mfu(nominal / 1e9):.2f} of the nominal")

    print(f"threads {threads}; fp32 matmul peak {peak:.1f} GFLOP/s measured (first {peak0:.1f}), "
          f"{spec / 1e9:.0f} {spec_label}; training FLOPs = 3 x zoo.model.costs.forward_flops of each batch's non-pad "
          f"tokens; malloc keeps freed memory: {kept}")
    print(f"cpu-profile base: d_model {m.d_model}, {m.N}+{m.N} layers, h {m.h}, vocab {V}, "
          f"{cpu.train.batch_tokens}-token batches of {cpu.data.dataset}, {args.rounds} rounds x {args.steps} steps")
    for k, tr in runs.items():
        print(f"  {k:<15} {tr.tps:8.0f} target tokens/s  {tr.flops / tr.seconds / 1e9:6.1f} GFLOP/s  {mfu(tr)}")
    if base is not None:
        print(f"paper base: d_model {bm.d_model}, {bm.N}+{bm.N} layers, h {bm.h}, vocab {bV}, {base_tokens}-token batches "
              f"({cpu.data.dataset} ids), {args.base_steps} steps")
        print(f"  {'zoo':<15} {base.tps:8.0f} target tokens/s  {base.flops / base.seconds / 1e9:6.1f} GFLOP/s  {mfu(base)}")
    if bf16:
        print(f"bf16 matmul peak {peak_bf16:.1f} GFLOP/s measured ({peak_bf16 / peak:.1f}x fp32), {spec16 / 1e9:.0f} "
              f"{spec16_label}; cpu-profile base under bf16 autocast (attention fp32): "
              f"{runs['zoo bf16'].tps / runs['zoo'].tps:.2f}x the fp32 tokens/s")
        print(f"MFU cpu-profile base (bf16, of the measured bf16 peak): {runs['zoo bf16'].mfu(peak_bf16):.2f}")
    print(f"MFU cpu-profile base (of the measured fp32 peak): {runs['zoo'].mfu(peak):.2f}")
    if base is not None:
        print(f"MFU paper base (of the measured fp32 peak): {base.mfu(peak):.2f}")
    if "nn.Transformer" in runs:
        print(f"ratio zoo / nn.Transformer: {runs['zoo'].tps / runs['nn.Transformer'].tps:.2f}")
    rows = {k: _row(tr, peak_bf16 if tr.amp else peak, (spec16 if tr.amp else spec) / 1e9)
            for k, tr in {**runs, **({"paper base": base} if base else {})}.items()}
    return {"device": "cpu", "threads": threads, "peak_gflops": peak, "peak_bf16_gflops": peak_bf16,
            "spec_peak_gflops": spec / 1e9, "spec_peak": spec_label, "models": rows}


def _row(tr: Trainer, peak: float, spec: float) -> dict:
    return {"tokens_per_s": tr.tps, "step_ms": 1e3 * tr.seconds / tr.steps, "steps": tr.steps,
            "mfu_measured_peak": tr.mfu(peak), "mfu_spec_peak": tr.mfu(spec),
            "compute_dtype": "bf16" if tr.amp else "fp32", "compile": tr.cfg.train.compile,
            "cuda_graph": tr.cfg.train.cuda_graph,
            "compiled": "off" if tr.cfg.train.compile != "on" else "whole" if tr.whole else "regional",
            "warmup_s": tr.warmup_s, "first_step_s": tr.first_step_s, "warmup_shapes": len(tr.shapes),
            "graphs_after_first_step": tr.graphs_first, "graphs_after_warmup": tr.graphs}


def news_dataset() -> tuple[str, str]:
    """(label, corpus) of the news-length batches: WMT14's training set when present, else the news pool."""
    return ("WMT14", "wmt14_en_de") if zdata.split_present("wmt14_en_de", "train") else ("news pool", "wmt_news_ende")


def paper_models(args) -> dict:
    """The paper's base and big (specs as written; --tiny: the smoke profile's) as a trial trains them here, on
    news-length batches and on Multi30k's, each beside torch.nn.Transformer of the same size (eager, the same loss,
    optimizer and batches, alternating step by step); --graph: each zoo model again with train.cuda_graph on, in
    the same process (a compiled model's graphs reused); --stream: each again with model.residual_stream bf16."""
    import roofline
    gpu = torch.device(args.device).type == "cuda"
    profile = "smoke" if args.tiny else "paper"
    results, dev, runs = {}, None, {}
    for corpus_label, dataset in [news_dataset(), ("Multi30k", "multi30k")][: 1 if args.one_corpus else 2]:
        for name in ("base", "big"):
            cfg = resolve(name, profile, [*args.set, f"resources.gpus={1 if gpu else 0}"])
            dev = train_device(cfg)  # TF32 and cuDNN attention off on a GPU, as for a trial
            if dev.type == "cpu":
                keep_freed_memory()
            m, V = cfg.model, cfg.data.vocab_size
            # the corpus's ids (8000 BPE) stand in for the 37000-piece vocabulary: the softmax costs the same
            batches = load_batches(dataset, min(V, 8000), args.batch_tokens, args.base_steps, dev)
            if name not in runs:  # one model per size across corpora: a compiled one compiles once
                torch.manual_seed(0)
                runs[name] = build_model(m, V)
            trainers = {"zoo": Trainer(runs[name], cfg, dev)}
            if args.graph:
                trainers["zoo graphed"] = Trainer(runs[name], resolve(name, profile, [
                    *args.set, f"resources.gpus={1 if gpu else 0}", "train.cuda_graph=on"]), dev)
            if args.stream:  # the same weights, the residual stream in bf16 (model.residual_stream)
                ms = m.model_copy(update={"residual_stream": "bf16"})
                stream_model = build_model(ms, V)
                stream_model.load_state_dict(runs[name].state_dict())
                trainers["zoo bf16 stream"] = Trainer(stream_model, cfg.model_copy(update={"model": ms}), dev)
            if not args.no_reference:  # eager: compiling nn.Transformer whole had not warmed up in 90 s on an H100
                torch.manual_seed(0)
                trainers["nn.Transformer"] = Trainer(TorchReference(m, V), resolve(name, profile, [
                    f"resources.gpus={1 if gpu else 0}", f"train.precision={cfg.train.precision}"]), dev)
            for tr in trainers.values():
                tr.warm_up(batches)
            for i, b in enumerate(batches):  # step by step on the same batch, in alternating order
                for tr in (list(trainers.values()) if i % 2 else list(trainers.values())[::-1]):
                    tr.run([b])
            pad = sum(b.padding_fraction for b in batches) / len(batches)
            mean = sum(b.n_tgt_tokens for b in batches) / sum(b.src.size(0) for b in batches)
            mem = f", peak memory {torch.cuda.max_memory_allocated(dev) / 2**30:.1f} GiB" if gpu else ""
            print(f"{name} on {corpus_label} batches: d_model {m.d_model}, {m.N}+{m.N} layers, vocab {V}, "
                  f"{args.batch_tokens}-token batches (mean {mean:.0f} target pieces a sentence, {pad:.0%} padding), "
                  f"{len(batches)} steps{mem}")
            for k, tr in trainers.items():
                results[f"{name} {corpus_label} {k}"] = tr
                how = "" if k == "nn.Transformer" else (
                    f"; warm-up {tr.warmup_s:.1f} s over {len(tr.shapes)} shapes (first step {tr.first_step_s:.1f} s), "
                    f"graphs {tr.graphs_first} after the first step, {tr.graphs} after the warm-up")
                print(f"  {k:<15} {tr.tps:9.0f} target tokens/s, {1e3 * tr.seconds / tr.steps:6.1f} ms a step{how}")
            if "nn.Transformer" in trainers:
                print(f"  ratio zoo / nn.Transformer ({name}, {corpus_label}): "
                      f"{trainers['zoo'].tps / trainers['nn.Transformer'].tps:.2f}")
            if "zoo bf16 stream" in trainers:
                print(f"  bf16 stream / zoo ({name}, {corpus_label}): "
                      f"{trainers['zoo bf16 stream'].tps / trainers['zoo'].tps:.2f}x the tokens/s"
                      f"{'' if trainers['zoo'].amp == torch.bfloat16 else ' (no bf16 autocast here: the same arithmetic)'}")
            if "zoo graphed" in trainers:
                g = trainers["zoo graphed"].opt.__dict__.get("graphed_step")
                print(f"  graphed / zoo ({name}, {corpus_label}): {trainers['zoo graphed'].tps / trainers['zoo'].tps:.2f}x"
                      f" the tokens/s; {len(g.buckets) if g else 0} buckets, {g.eager_steps if g else 0} eager steps")
    tr = results[next(iter(results))]
    dtype = torch.bfloat16 if tr.amp else torch.float32
    sizes = (4096, 8192) if gpu else (256, 512)
    peak = max(matmul_peak(args.peak_seconds, sizes, dev, dtype) for _ in range(2))
    if gpu:
        label = torch.cuda.get_device_name(dev)
        spec = roofline.gpu_spec(label)
        spec_flops, spec_label = (spec.peak, f"{spec.name} datasheet") if spec else (float("nan"), "no datasheet entry")
    else:
        label = "cpu"
        spec_flops, spec_label = roofline.cpu_spec_peak(torch.get_num_threads(), tr.amp is not None)
    kind = f"{dev.type} {'bf16' if tr.amp else 'fp32'}"
    print(f"{label}; {'bf16' if tr.amp else 'fp32'} matmul peak {peak:.0f} GFLOP/s measured; "
          f"{spec_flops / 1e9:.0f} GFLOP/s {spec_label}")
    for key, tr in results.items():
        name, rest = key.split(" ", 1)
        print(f"MFU paper {name} ({kind}, {rest}): {tr.mfu(peak):.2f} of the measured peak, "
              f"{tr.mfu(spec_flops / 1e9):.2f} of the spec peak ({spec_label})")
    runs = {k: _row(tr, peak, spec_flops / 1e9) for k, tr in results.items()}
    first = news_dataset()[0]  # "models": the news-length zoo rows, the ones the check's report reads
    return {"device": label, "profile": profile, "batch_tokens": args.batch_tokens, "peak_gflops": peak,
            "spec_peak_gflops": spec_flops / 1e9, "spec_peak": spec_label, "corpora": [first, "Multi30k"],
            "models": {name: runs[f"{name} {first} zoo"] for name in ("base", "big")}, "runs": runs}


def _meta_model(m: ModelSpec, vocab: int):
    with torch.device("meta"):
        return build_model(m, vocab).train()


def _meta_batch(b: zdata.Batch):
    ids = lambda t: torch.ones(t.shape, dtype=torch.long, device="meta")
    return ids(b.src), ids(b.tgt_in), ids(b.tgt_out)


def _trace(cfg: Config, batches, amp: bool, compiled: bool = False, attention_fp32: bool = False) -> list:
    """The roofline's traces of one step per batch: (kernels, attention calls)."""
    import roofline
    eps = cfg.train.label_smoothing
    loss = lambda lg, t: smoothed_loss(lg, t, eps)[0]
    model = _meta_model(cfg.model, cfg.data.vocab_size)
    return [roofline.step(model, *_meta_batch(b), loss, fused=compiled, amp=amp, compiled_loss=compiled,
                          attention_fp32=attention_fp32) for b in batches]


def cpu_check(args) -> tuple[list, dict]:
    """The roofline against this CPU: two shapes, each trained as its run trains it (a few timed steps after
    the warm-up) and predicted from this CPU's calibration on its own traced shapes; their error."""
    import roofline
    keep_freed_memory()
    p = "smoke" if args.tiny else None
    shapes = [(resolve("base", p or "cpu"), 300 if p else None),   # the cpu profile's base, as it trains
              (resolve("big" if p else "base", p or "paper", ["train.precision=fp32"]), 600 if p else 2000)]
    sizes = (256, 512) if args.tiny else (1024, 2048, 3072)  # --tiny: the code path in seconds
    peaks = {False: max(matmul_peak(args.peak_seconds, sizes) for _ in range(2)) * 1e9}
    if cpu_has_bf16():
        peaks[True] = matmul_peak(args.peak_seconds, sizes, dtype=torch.bfloat16) * 1e9
    bw = max(copy_bandwidth(*((0.2, 32) if args.tiny else (0.5,))) for _ in range(3))  # the best of three, as the peak
    rows, devices = [], {}
    for cfg, tokens in shapes:
        m, V = cfg.model, cfg.data.vocab_size
        batches = load_batches("multi30k", min(V, 8000), tokens or cfg.train.batch_tokens, args.check_steps)
        torch.manual_seed(0)
        tr = Trainer(build_model(m, V), cfg)
        tr.warm_up(batches)
        tr.run(batches)
        amp = tr.amp is not None
        traces = _trace(cfg, batches, amp, attention_fp32=amp)  # zoo.model keeps a CPU's attention fp32
        dev = devices[amp] = roofline.calibrate_cpu(traces, peaks[amp], bw, f"this CPU ({'bf16' if amp else 'fp32'})",
                                                    probe=(400, 8000) if args.tiny else (4000, 8000))
        predicted = sum(t.seconds(dev) for t, _ in traces)
        rows.append({"model": f"{cfg.variant} ({cfg.profile} profile)", "d_model": m.d_model, "layers": m.N, "vocab": V,
                     "batch_tokens": tokens or cfg.train.batch_tokens, "compute_dtype": "bf16" if amp else "fp32",
                     "steps": tr.steps, "measured_s": tr.seconds, "predicted_s": predicted,
                     "error": predicted / tr.seconds - 1, "matmul_fraction": dev.matmul[0],
                     "attention_fraction": dev.attention[0], "per_op_us": dev.host[0] * 1e6, "rng_per_s": dev.rng_per_s,
                     "peak_gflops": dev.peak / 1e9, "copy_gbs": bw / 1e9})
    return rows, devices


def predict(args) -> dict:
    import roofline
    threads = torch.get_num_threads()
    # --check-steps 0: no self-check (on a GPU machine the host CPU's is beside the point, and costs a minute)
    rows, cpus = cpu_check(args) if args.check_steps else ([], {})
    if rows:
        print(f"roofline self-check on this CPU ({threads} threads; copy {rows[0]['copy_gbs']:.1f} GB/s; each step "
              f"predicted from this CPU's own measured matmul and attention speed at its shapes, bandwidth and "
              f"per-op cost):")
        for r in rows:
            print(f"  {r['model']}: d_model {r['d_model']}, {r['layers']}+{r['layers']} layers, vocab {r['vocab']}, "
                  f"{r['batch_tokens']}-token batches, {r['compute_dtype']}: {r['steps']} steps predicted "
                  f"{r['predicted_s']:.2f} s, measured {r['measured_s']:.2f} s, error {r['error']:+.0%} (matmuls at "
                  f"{r['matmul_fraction']:.2f} of the {r['peak_gflops']:.0f} GFLOP/s peak, attention "
                  f"{r['attention_fraction']:.2f}, {r['per_op_us']:.0f} us an op, dropout's draws at "
                  f"{r['rng_per_s'] / 1e6:.0f} M/s)")
        errors = ", ".join(f"{r['model']} {r['error']:+.0%}" for r in rows)
        print(f"roofline self-check error: {errors}")

    profile = "smoke" if args.tiny else "paper"
    out = {"threads": threads, "cpu_check": rows, "profile": profile, "batch_tokens": args.batch_tokens, "models": {}}
    for name in ("base", "big"):
        cfg = resolve(name, profile)
        m, V = cfg.model, cfg.data.vocab_size
        batches = load_batches("multi30k", min(V, 8000), args.batch_tokens, args.base_steps)  # those --device cuda times
        flops = sum(batch_flops(m, V, b) for b in batches) / len(batches)
        pad = sum(b.padding_fraction for b in batches) / len(batches)
        traces = {"eager": _trace(cfg, batches, True), "compiled": _trace(cfg, batches, True, compiled=True)}
        devices = [(d, traces) for d in [*roofline.GPUS.values(), *roofline.CALIBRATED.values()]]
        if args.tiny:  # the CPU rehearsal (scripts/first-gpu-run.sh --cpu) compares with this CPU, calibrated here
            amp = cpu_has_bf16() and cfg.train.precision == "bf16"
            cpu_traces = {label: _trace(cfg, batches, amp, compiled=label == "compiled", attention_fp32=True)
                          for label in ("eager", "compiled")}
            dev = roofline.calibrate_cpu(cpu_traces["eager"], cpus[amp].peak, cpus[amp].bandwidth, cpus[amp].name,
                                         probe=(400, 8000))
            devices.append((dev, cpu_traces))
        model = out["models"][name] = {"flops_per_step": flops, "padding": pad, "steps": len(batches),
                                       "tokens_per_step": sum(b.n_tgt_tokens for b in batches) / len(batches)}
        for dev, tr in devices:
            model[dev.name] = {}
            for label, ts in tr.items():
                ms = [1e3 * sum(t.seconds(dev, c) for t, _ in ts) / len(ts) for c in ("best", "mid", "worst")]
                model[dev.name][label] = {"ms": ms, "mfu": [flops / (x / 1e3) / dev.peak for x in ms],
                                          "kernels": len(ts[0][0].kernels), "gib": ts[0][0].bytes / 2**30}
            if dev.source != "measured":  # the datasheets' and the calibrated H100 (bench/roofline.py H100_MEASURED)
                e, c = model[dev.name]["eager"], model[dev.name]["compiled"]
                print(f"predicted {dev.name} paper {name} ({profile} profile, {args.batch_tokens}-token batches of "
                      f"multi30k, {pad:.0%} padding, bf16): eager {_range(e['ms'], 'ms')}, MFU {_range(e['mfu'])} "
                      f"({e['kernels']} kernels, {e['gib']:.1f} GiB); compiled {_range(c['ms'], 'ms')}, MFU "
                      f"{_range(c['mfu'])} ({c['kernels']} kernels, {c['gib']:.1f} GiB); compiled / eager speed "
                      f"{e['ms'][1] / c['ms'][1]:.2f}x")
    return out


def _range(x: list, unit: str = "") -> str:
    lo, hi = sorted((x[0], x[2]))
    f = (lambda v: f"{v:.1f}") if unit else (lambda v: f"{v:.2f}")
    return f"{f(x[1])}{' ' + unit if unit else ''} ({f(lo)}-{f(hi)})"


def compile_pays(args) -> dict:
    """The cpu-profile base eager, under train.compile on (regional: one compiled encoder layer and one decoder
    layer, zoo.train.step.compiled), and compiled whole (the reference regional compilation replaced), on the
    same batches: each one's warm-up (its compile) and steady-state tokens/s."""
    keep_freed_memory()
    import torch._inductor.config as inductor_config
    inductor_config.force_disable_caches = True  # cold compiles, as on a fresh machine: no kernel from disk
    out = {}
    for label, sets in (("eager", []), ("regional", ["train.compile=on"]), ("whole", ["train.compile=on"])):
        cpu = resolve("base", args.profile, ["train.precision=fp32", *args.set, *sets])
        m, V = cpu.model, cpu.data.vocab_size
        batches = load_batches(cpu.data.dataset, V, cpu.train.batch_tokens, args.base_steps)
        torch._dynamo.reset()  # each compiles from nothing: no graph or kernel of the one before
        torch.manual_seed(0)
        tr = Trainer(build_model(m, V), cpu, whole=label == "whole")
        tr.warm_up(batches)  # a compiled one compiles here (and again for a new shape class)
        tr.run(batches)
        out[label] = tr
        print(f"{label:<9} warm-up ({len(tr.shapes)} shapes) {tr.warmup_s:6.1f} s; then {tr.tps:6.0f} target tokens/s")
    gain = out["regional"].tps / out["eager"].tps
    print(f"compile on this CPU: {gain:.2f}x the eager tokens/s in the steady state; "
          f"{'pays' if gain > 1.05 else 'does not pay'} here")
    # compiling's own time: a warm-up's seconds beyond the eager model's over the same batches (one step a shape)
    cost = {k: out[k].warmup_s - out["eager"].warmup_s for k in ("regional", "whole")}
    print(f"compiling: regional {cost['regional']:.1f} s, whole {cost['whole']:.1f} s "
          f"({cost['regional'] / cost['whole']:.2f}x; warm-up beyond eager's); steady-state tokens/s regional / whole "
          f"{out['regional'].tps / out['whole'].tps:.2f}x ({m.N} + {m.N} layers)")
    return {"gain": gain, "compile_s": cost, "compile_regional_over_whole": cost["regional"] / cost["whole"],
            "tps_regional_over_whole": out["regional"].tps / out["whole"].tps,
            **{k: {"tokens_per_s": tr.tps, "warmup_s": tr.warmup_s} for k, tr in out.items()}}


if __name__ == "__main__":
    main()
