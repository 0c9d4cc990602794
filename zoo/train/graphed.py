"""train.cuda_graph on: the whole training step (forward, backward, Adam) as one CUDA graph per bucket of shapes.

Why: eager, the paper's base step launches ~750 kernels at ~28 us of host time each (bench/roofline.py), and
`torch.compile(mode="reduce-overhead")` records a new graph for every new batch shape (PyTorch #188150), which
token-budget batches never stop making. Here a batch is padded up to a *bucket*: its sentence count R and its
source and target lengths S, T each rounded up a ladder of ratio 2^(1/8) (rows in multiples of 8), so a run meets
a few dozen shapes, each recorded once:

1. the first batch of a bucket runs the step eagerly on the bucket's static buffers (the step itself: Adam's
   state, kernel choice and any compile happen here), then the same step is recorded (recording runs nothing);
2. every later batch of the bucket is copied into those buffers and the graph replayed: one launch a step.

What a graph reads changes only in place: the batch buffers, the learning rate and the loss scale (0-dim
tensors: Adam runs fused and capturable with its lr a tensor), the counter-based dropout key
(zoo.model.dropout). The gradients are allocated once, before any recording, and zeroed inside the step, so
every bucket's graph writes the same tensors. All graphs share one memory pool, so it holds one step's
intermediates (the largest bucket's), not one per bucket; at most MAX_GRAPHS are recorded, after which a batch
of a new bucket runs in the smallest recorded bucket that holds it, or eagerly.

Padding is exact: pad positions are masked keys and carry no loss; a padding row (beyond the batch's sentences)
holds one end-of-sentence source token and one begin-of-sentence target token, so its attention has a key, and
no target. The loss and gradients equal the unpadded step's to float rounding (tests/test_graphed.py).

On a CPU the same bucketed, static-buffer step runs without a graph (the code path; no speed is claimed).
Accumulated micro-batches or several ranks take the eager step (train_step returns None); a packed batch
(train.pack) is bucketed with its sentence ids.
GraphedStack does the same for K seeds stacked side by side (zoo.train.stacked): their batches padded to one
bucket, each seed's dropout key, normaliser and learning rate in place, one graph for the K of them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from zoo.config import Config
from zoo.data import Batch, to_device
from zoo.model import active_draws, drawing
from zoo.tokens import BOS, EOS, PAD
from zoo.train.device import rank_and_world
from zoo.train.step import batch_loss

__all__ = []  # nothing outside its package: zoo.train.step takes its step (train.cuda_graph on)

# each bucket at most ~9% past the batch in each of R, S and T. Measured on the news pool's 25,000-token batches
# (bench_speed.py --part graph): 19% padding against the batches' own 10% (2^(1/4) and lengths in multiples of 8:
# 28%, most of it the rounding of ~30-piece lengths to 8); about 30 buckets over its 40 batches
RATIO = 2 ** 0.125
MAX_GRAPHS = 64


def bucket(n: int, floor: int = 8, multiple: int = 8) -> int:
    """The smallest rung of the ladder floor * RATIO^k, rounded up to a multiple of `multiple`, that holds n."""
    k = max(0, math.ceil(math.log(max(n, 1) / floor, RATIO) - 1e-9))
    while (rung := multiple * math.ceil(floor * RATIO ** k / multiple)) < n:
        k += 1
    return rung


def bucket_shape(cfg: Config, rows: int, S: int, T: int) -> tuple[int, int, int]:
    """(R, S, T) of a batch's bucket: rows in 8s, lengths up the ladder, never past the longest position the model
    embeds."""
    top = lambda n: min(bucket(n, 8, 1), max(n, cfg.model.max_len))
    return bucket(rows), top(S), top(T)


@functools.cache
def _side_stream(device: torch.device) -> "torch.cuda.Stream":
    """One side stream per device for every warm-up: a new stream per bucket would cycle torch's pool of streams, each
    with a cuBLAS workspace of its own."""
    return torch.cuda.Stream(device)


def record(body, device: torch.device, pool) -> "torch.cuda.CUDAGraph":
    """A bucket's first step: `body` run eagerly on a side stream (its warm-up: the step itself, Adam's state, kernel
    choice), then recorded without running."""
    side = _side_stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        body()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    # thread_local: the loop's loader thread pins the next batches meanwhile (cudaHostAlloc), which a global capture
    # would refuse
    with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
        body()
    return graph


@dataclass
class _Bucket:
    """One static shape: its buffers (the graph's inputs) and, on a GPU, its recorded graph."""
    batch: Batch
    graph: object = None
    steps: int = 0


class GraphedStep:
    """The step of one (model, optimizer) pair, bucketed; on a GPU each bucket's step recorded once and replayed."""

    def __init__(self, cfg: Config, fwd: torch.nn.Module, opt: torch.optim.Optimizer, device: torch.device,
                 amp: torch.dtype | None):
        self.cfg, self.fwd, self.opt, self.device, self.amp = cfg, fwd, opt, device, amp
        self.cuda = device.type == "cuda"
        self.params = [p for g in opt.param_groups for p in g["params"] if p.requires_grad]
        for p in self.params:  # one set of gradients for every graph, made before any recording
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        self.grads = [p.grad for p in self.params]
        lr = opt.param_groups[0]["lr"]
        self.lr = torch.tensor(float(lr), dtype=torch.float32, device=device)
        self.scale = torch.zeros((), dtype=torch.float32, device=device)  # 1 / the step's target tokens
        self.key = torch.zeros((), dtype=torch.int32, device=device)  # the step's dropout key, when drawn
        self.out = torch.zeros(2, dtype=torch.float64, device=device)  # the step's (loss, NLL)
        self.buckets: dict[tuple, _Bucket] = {}
        self.eager_steps = 0  # steps taken eagerly: a batch no bucket holds (MAX_GRAPHS recorded), packed, ...
        if self.cuda:
            for g in opt.param_groups:
                g["capturable"] = True  # Adam's step count and update stay on the device: no host read
            self.pool = torch.cuda.graph_pool_handle()  # shared by all buckets' graphs

    def fits(self, parts: list) -> bool:
        return len(parts) == 1 and parts[0][1] == 1.0 and rank_and_world()[1] == 1

    def shape(self, b: Batch) -> tuple[int, int, int]:
        return bucket_shape(self.cfg, b.src.size(0), b.src.size(1), b.tgt_in.size(1))

    def _find(self, b: Batch) -> _Bucket | None:
        key = self.shape(b)
        if key in self.buckets or len(self.buckets) < MAX_GRAPHS:
            if key not in self.buckets:
                R, S, T = key
                z = lambda n: torch.zeros(R, n, dtype=b.src.dtype, device=self.device)
                seg = [] if b.src_seg is None else [z(S), z(T)]  # a packed run's sentence ids (train.pack)
                self.buckets[key] = _Bucket(Batch(z(S), z(T), z(T), 0, 0, 0.0, [], *seg))
            return self.buckets[key]
        held = [k for k in self.buckets if all(x >= y for x, y in zip(k, key))]  # full: the smallest that holds it
        return self.buckets[min(held, key=lambda k: k[0] * (k[1] + k[2]))] if held else None

    def _load(self, s: Batch, b: Batch) -> None:
        """b into the bucket's buffers: padded with PAD, padding rows one EOS source and one BOS target token; a
        packed batch's sentence ids padded with 0 (a padding query may attend anywhere: zoo.model.packing)."""
        B, S, T = b.src.size(0), b.src.size(1), b.tgt_in.size(1)
        pairs = [(s.src, b.src), (s.tgt_in, b.tgt_in), (s.tgt_out, b.tgt_out)]
        for buf, x in pairs + ([] if b.src_seg is None else [(s.src_seg, b.src_seg), (s.tgt_seg, b.tgt_seg)]):
            buf.fill_(PAD)  # PAD is 0, segment 0 too
            buf[:B, :x.size(1)].copy_(x, non_blocking=True)
        s.src[B:, 0], s.tgt_in[B:, 0] = EOS, BOS

    def _body(self, s: Batch, keyed: bool) -> None:
        """The step on the bucket's buffers: what is recorded."""
        torch._foreach_zero_(self.grads)
        with drawing(self.key if keyed else None):
            loss, nll = batch_loss(self.cfg, self.fwd, s, self.device, self.amp)
        (loss * self.scale).backward()
        self.opt.step()
        self.out.copy_(torch.stack([loss.detach(), nll]).double())

    def step(self, parts: list, n_tgt: int, stats: torch.Tensor, lr: float | None = None) -> float | None:
        """One optimizer step on parts' one batch (None: the caller takes the eager step instead)."""
        if not self.fits(parts) or (bk := self._find(b := parts[0][0])) is None:
            self.eager_steps += 1
            return None
        for p, g in zip(self.params, self.grads):  # an eager step (this one's fallback, another optimizer's on the
            if p.grad is not g:                      # same model) sets them to None: every graph writes these
                p.grad = g
        for g in self.opt.param_groups:  # a recording reads the lr tensor, never a number it would bake in
            g["lr"] = self.lr if self.cuda else (float(lr) if lr is not None else g["lr"])
        if lr is not None:
            self.lr.fill_(lr)
        self.scale.fill_(1.0 / n_tgt)
        draws = active_draws()
        if draws is not None:
            self.key.copy_(draws.k)
        self._load(bk.batch, b.to(self.device))
        keyed = draws is not None
        if not self.cuda:
            self._body(bk.batch, keyed)
        elif bk.graph is None:
            bk.graph = record(lambda: self._body(bk.batch, keyed), self.device, self.pool)
        else:
            bk.graph.replay()
        bk.steps += 1
        stats += self.out
        return b.padding_fraction


def train_step(cfg: Config, fwd: torch.nn.Module, opt: torch.optim.Optimizer, device: torch.device, parts: list,
               n_tgt: int, stats: torch.Tensor, amp: torch.dtype | None = None, lr: float | None = None) -> float | None:
    """zoo.train.step.train_step's step, graphed: the optimizer's own GraphedStep (made at its first step)."""
    g = opt.__dict__.get("graphed_step")
    if g is None:
        g = opt.__dict__["graphed_step"] = GraphedStep(cfg, fwd, opt, device, amp)
    return g.step(parts, n_tgt, stats, lr)


class GraphedStack:
    """A zoo.train.stacked.Stack's step as one CUDA graph per bucket: the K seeds' batches padded to one bucket
    (bucket_shape of the largest), the graph's inputs in place (the batches, each seed's dropout key, target-token
    normaliser and learning rate: Adam fused and capturable, its lr a view of one (K,) tensor), every other tensor
    the stack's own (weights, gradients, statistics: the graph adds to them where the eager step does). The stack's
    arithmetic is the eager step's; only the padding is the bucket's (exact: padding carries no loss). On a CPU the
    bucketed step runs without a graph. A stack that shrinks is a new Stack, recorded anew."""

    def __init__(self, stack):
        self.stack, self.device = stack, stack.device
        self.cuda = self.device.type == "cuda"
        K = len(stack.seats)
        self.keys = torch.zeros(K, dtype=torch.int32, device=self.device)
        self.inv_tokens = torch.zeros(K, dtype=torch.float32, device=self.device)
        self.lrs = torch.zeros(K, dtype=torch.float32, device=self.device)
        self.buckets: dict[tuple, tuple] = {}  # (R, S, T) -> ((src, tgt_in, tgt_out, src_seg, tgt_seg), graph)
        self.eager_steps = 0
        if self.cuda:
            for s in stack.seats:
                for g in s.opt.param_groups:
                    g["capturable"] = True  # Adam's step count and update stay on the device: no host read
            self.pool = torch.cuda.graph_pool_handle()

    def _find(self, key: tuple) -> tuple | None:
        if key not in self.buckets and len(self.buckets) < MAX_GRAPHS:
            K, (R, S, T) = len(self.stack.seats), key
            z = lambda n: torch.zeros(K, R, n, dtype=torch.int64, device=self.device)
            seg = (z(S), z(T)) if self.stack.seats[0].cfg.train.pack == "on" else (None, None)  # sentence ids
            self.buckets[key] = ((z(S), z(T), z(T), *seg), None)
        if key in self.buckets:
            return key
        held = [k for k in self.buckets if all(x >= y for x, y in zip(k, key))]  # full: the smallest that holds it
        return min(held, key=lambda k: k[0] * (k[1] + k[2])) if held else None

    def bucket_for(self, batches: list[Batch]) -> tuple | None:
        """The bucket (R, S, T) these batches (each seed's one) are padded to; None: the caller takes the eager step."""
        key = self._find(bucket_shape(self.stack.seats[0].cfg, max(b.src.size(0) for b in batches),
                                      max(b.src.size(1) for b in batches), max(b.tgt_in.size(1) for b in batches)))
        self.eager_steps += key is None
        return key

    def step(self, key: tuple, padded: tuple, keys: torch.Tensor, inv_tokens: torch.Tensor, lrs: list[float]) -> None:
        """The stack's step on its batches `padded` to bucket `key` (zoo.train.stacked.pad_batches): into the bucket's
        buffers, then its graph replayed (recorded at its first batch; on a CPU the step runs on the buffers)."""
        bufs, graph = self.buckets[key]
        for buf, x in zip(bufs, padded):  # pinned, without blocking: the host goes on while the last replay runs
            if buf is not None:
                to_device(x, self.device, into=buf)
        to_device(keys, self.device, into=self.keys)
        to_device(inv_tokens, self.device, into=self.inv_tokens)
        if self.cuda:
            to_device(torch.tensor(lrs), self.device, into=self.lrs)
        for k, (s, lr) in enumerate(zip(self.stack.seats, lrs)):  # an eager step (a batch no bucket holds) set numbers
            for g in s.opt.param_groups:
                g["lr"] = self.lrs[k] if self.cuda else lr
        body = lambda: self.stack.body(*bufs, self.keys, self.inv_tokens)
        if not self.cuda:
            body()
        elif graph is None:
            self.buckets[key] = (bufs, record(body, self.device, self.pool))
        else:
            graph.replay()
