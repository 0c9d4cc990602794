"""Seeds side by side: K runs that differ only in values that keep the shapes (the seed, label smoothing, the
learning rate schedule) trained as one stacked model in one process, each exactly as it would train alone.

How: each seed is its own solo run in every respect but the forward pass. Its model is built as the solo run
builds it (torch.manual_seed(seed), then zoo.train.prepared.build), with its own Adam, lr schedule, data order
(make_batches of its seed), loss statistics, log, checkpoints (the solo checkpoint's form, so a solo run can
resume a stacked seed and back) and resume. The K models' weights live in one (K, ...) tensor per parameter,
each model's parameters and gradients views of its row (Stack), and one vmapped forward and backward serves
all K: one kernel per op for the K of them. The K batches of a step are padded to one shape: padding rows hold
one source token (an all-pad row would make attention NaN) and no target, so they add nothing to any loss or
gradient, and extra columns are padding, masked in the encoder and after every real target in the causal
decoder. Dropout is zoo.model.dropout's counter-based masks, keyed by (seed, step): a seed draws at its real
positions what it draws alone, whatever the padding and the other seeds. The loss is each seed's own (its label
smoothing), normalised by its own target tokens, all K in one pass.

A seed whose loss goes non-finite, or that the learning guard stops, ends alone (its error is its result)
while the others go on; the stack shrinks. Attention inside the vmapped forward is SDPA's math backend on every
device (ATTENTION: why), batched like the other ops; alone, a seed takes the fused kernel, which moves its sums by
float rounding, not more (tests/test_stacked.py).
"""
from __future__ import annotations

import copy
import json
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch.func import functional_call, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from zoo.config import Config
from zoo.data import Batch, BatchOrder, pair_lengths, to_device
from zoo.errors import UserError
from zoo.model import drawing, dropout_key
from zoo.paths import atomic_write_text
from zoo.result import Done, Event, Hardware, LogPoint, Resumed, RunResult, wire
from zoo.tokens import EOS, PAD
from zoo.train.checkpointing import (Checkpoint, State, averaged_from, clear_unfinished, config_changes, finished,
                                     ready_folder, refuse_other_model, resume, write_checkpoint)
from zoo.train.device import autocast, autocast_dtype, train_device
from zoo.train.evaluation import dev_perplexity, score
from zoo.train.learning import check_from, levels, stop
from zoo.train.prepared import Prepared, build, prepare, training_batch
from zoo.train.recipe import make_optimizer, smoothed_rows

__all__ = ["Seat", "Stack", "pad_batches", "stack_problem", "stack_size", "stacked_step", "train_stacked"]

# what seeds of one stack may differ in: values that keep every tensor's shape, and labels that train nothing (the
# trial's name, its row of the paper, the record of the --set and seeds-axis values: what those set is compared)
FREE = ("train.seed", "train.label_smoothing", "train.schedule.", "model.dropout", "trial", "variant", "name", "seeds", "overrides.",
        "paper.", "description")

# Attention inside the vmapped forward: the math backend, batched like any other op. The fused CUDA kernels' batch
# rules do not serve a vmapped training step: SDPA asks the memory-efficient kernel for the logsumexp its backward
# needs only when the query requires grad, which a vmapped query never does (a BatchedTensor), so the backward
# fails (pytorch#176482; reading of torch 2.13's attention.cpp and a meta-device probe, not a GPU run)
ATTENTION = [SDPBackend.MATH]

Report = Callable[[int, Event | Exception], None]  # a seat's event; or the error that ended it alone, when it did


def stack_problem(cfgs: list[Config]) -> str | None:
    """Why these configs cannot train as one stack, or None."""
    from zoo.config import dotted
    first = dotted(cfgs[0].model_dump(mode="json"))
    for c in cfgs[1:]:
        d = dotted(c.model_dump(mode="json"))
        differ = [k for k in first.keys() | d.keys() if first.get(k) != d.get(k) and not k.startswith(FREE)]
        if differ:
            return f"they differ in {', '.join(sorted(differ)[:4])} (a stack may differ only in {', '.join(FREE[:4])})"
    c = cfgs[0]
    if c.train.compile == "on":
        return "train.compile is on (a stack runs eagerly)"
    if c.model.attention_dropout:
        return "model.attention_dropout draws inside the fused attention kernel (no counter-based masks there)"
    if c.resources.workers > 1:
        return "resources.workers > 1 (a stack is one process)"
    if c.train.max_tokens_per_device and c.train.max_tokens_per_device < c.train.batch_tokens:
        return "train.max_tokens_per_device splits a step into micro-batches (a stack takes whole steps)"
    return None


def stack_size(cfg: Config, seeds: int, have: int) -> int:
    """K: how many of `seeds` runs of `cfg` one device of `have` bytes trains stacked. Each seed holds its own
    weights, gradients, Adam moments and activations (zoo.model.train_memory's estimate); the process's runtime
    is paid once."""
    from zoo.model import train_memory
    est = train_memory(cfg)
    one = est["total"] - est["runtime"]
    return max(1, min(seeds, (have - est["runtime"]) // max(one, 1)))


@dataclass
class Seat:
    """One seed's run inside the stack: what its solo run would keep."""
    cfg: Config
    out: Path
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    st: State
    batches: BatchOrder  # its solo run's order (zoo.data), one whole batch a step
    pairs: object  # the training pairs its batches index
    stats: torch.Tensor  # summed loss and NLL since the last log, on the device
    log_tokens: int = 0
    last_log: float = field(default_factory=time.time)
    saved_at: float = 0.0
    elapsed0: float = 0.0  # training seconds before this process
    padding: float = 0.0  # its last batch's padding fraction (of its own batch, as solo)
    dev_ppl: float | None = None
    error: Exception | None = None  # why it ended alone (non-finite loss, not learning)
    result: RunResult | None = None

    @property
    def running(self) -> bool:
        return self.error is None and self.result is None and self.st.step < self.cfg.train.steps


def pad_batches(batches: list[Batch], shape: tuple[int, int, int] | None = None) -> tuple:
    """The K batches of a step as (K, B, S) source, (K, B, T) decoder input and labels on the host, padded to one
    shape: the batches' largest, or `shape` (B, S, T) when given (zoo.train.graphed's bucket); packed batches
    (train.pack) also their (K, B, S) and (K, B, T) sentence ids (0 on padding, which may attend anywhere)."""
    K = len(batches)
    B, S, T = shape or (max(b.src.size(0) for b in batches), max(b.src.size(1) for b in batches),
                        max(b.tgt_in.size(1) for b in batches))
    src = torch.full((K, B, S), PAD, dtype=torch.int64)
    src[:, :, 0] = EOS  # a padding row's one source token: attention over no key at all is NaN
    tgt_in, tgt_out = torch.full((K, B, T), PAD, dtype=torch.int64), torch.full((K, B, T), PAD, dtype=torch.int64)
    packed = batches[0].src_seg is not None
    src_seg, tgt_seg = (torch.zeros(K, B, n, dtype=torch.int64) for n in (S, T)) if packed else (None, None)
    for k, b in enumerate(batches):
        n, s, t = b.src.size(0), b.src.size(1), b.tgt_in.size(1)
        src[k, :n, :s], tgt_in[k, :n, :t], tgt_out[k, :n, :t] = b.src, b.tgt_in, b.tgt_out
        src[k, :n, s:] = PAD
        if packed:
            src_seg[k, :n, :s], tgt_seg[k, :n, :t] = b.src_seg, b.tgt_seg
    return src, tgt_in, tgt_out, src_seg, tgt_seg


def _forward(skeleton: torch.nn.Module, params: dict, src, tgt_in, key, p_drop=None, src_seg=None,
             tgt_seg=None) -> torch.Tensor:
    """One seed's logits, inside vmap: the skeleton's forward over this seed's weights, dropout key, (where the
    stack's rows differ in it) P_drop and (packed batches) sentence ids."""
    with drawing(key, p_drop):
        return functional_call(skeleton, params, (src, tgt_in), {} if src_seg is None else
                               {"src_seg": src_seg, "tgt_seg": tgt_seg})


class Stack:
    """The live seats' weights as one (K, ...) tensor per parameter, each seat's parameters and gradients views of
    its row k (their storage): the forward reads the K models without a copy, the backward writes all K gradients
    in one pass, and each seat's own Adam updates its row in place, its state and checkpoints its solo run's. Before
    (a torch.stack of every parameter each step, its backward a select per seed and parameter, a loss per seed) the
    step dispatched ~250 more ops for each seed; now one op serves all K wherever the K seeds' arithmetic is one
    (tests/test_stacked.py counts them). Made again when the stack shrinks (a seed ends alone). With
    train.cuda_graph on, its step is zoo.train.graphed's: one CUDA graph per bucket of padded shapes."""

    def __init__(self, seats: list[Seat], skeleton: torch.nn.Module, device=None, amp: torch.dtype | None = None):
        self.seats, self.skeleton, self.amp = list(seats), skeleton, amp
        self.device = torch.device(device or "cpu")
        named = [dict(s.model.named_parameters()) for s in self.seats]
        self.weights: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for n in named[0]:
                w = torch.stack([m[n] for m in named]).requires_grad_()
                w.grad = torch.zeros_like(w)  # made once; the backward adds into it, each step zeroes it
                for k, m in enumerate(named):
                    m[n].data, m[n].grad = w.detach()[k], w.grad[k]
                self.weights[n] = w
            self.grads = [w.grad for w in self.weights.values()]
            self.stats = torch.stack([x.stats for x in self.seats])  # (K, 2): each seat's running (loss, NLL) sums
            for k, x in enumerate(self.seats):
                x.stats = self.stats[k]
        # one P_drop: the modules' own, as each seed's solo step; rows that differ in it (Table 3 row D): each seed's
        # own, a tensor under vmap. Label smoothing likewise: one number, or each seed's
        rates, eps = [x.cfg.model.dropout for x in self.seats], [x.cfg.train.label_smoothing for x in self.seats]
        self.p_drop = None if len(set(rates)) == 1 else torch.tensor(rates, device=self.device)
        self.eps = eps[0] if len(set(eps)) == 1 else torch.tensor(eps, device=self.device)
        self.graphed = None
        if self.seats[0].cfg.train.cuda_graph == "on":
            from zoo.train.graphed import GraphedStack
            self.graphed = GraphedStack(self)

    def body(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor, src_seg: torch.Tensor | None,
             tgt_seg: torch.Tensor | None, keys: torch.Tensor, inv_tokens: torch.Tensor) -> None:
        """The device's part of a step (what a CUDA graph records): one vmapped forward and backward of the K seeds
        on their padded batches, every seed's loss in one pass (its own label smoothing, over its own targets,
        normalised by its own target tokens `inv_tokens`, as its solo step's), its statistics, then each seed's
        Adam update at the learning rate its param groups hold."""
        torch._foreach_zero_(self.grads)
        with warnings.catch_warnings():  # an op without a vmap rule loops over the seeds: slower, still exact
            warnings.filterwarnings("ignore", message=".*batching rule.*")
            with autocast(self.device, self.amp), sdpa_kernel(ATTENTION):
                seg = None if src_seg is None else 0
                logits = vmap(lambda p, a, b, k, q, c, d: _forward(self.skeleton, p, a, b, k, q, c, d),
                              in_dims=(0, 0, 0, 0, None if self.p_drop is None else 0, seg, seg))(
                    self.weights, src, tgt_in, keys, self.p_drop, src_seg, tgt_seg)
        K, V, rows = logits.size(0), logits.size(-1), tgt_out[0].numel()
        eps = self.eps if isinstance(self.eps, float) else self.eps.repeat_interleave(rows)
        loss, nll = smoothed_rows(logits.reshape(-1, V), tgt_out.reshape(-1), eps)
        keep = (tgt_out != PAD).reshape(K, rows)
        loss, nll = torch.where(keep, loss.view(K, rows), 0.0).sum(1), torch.where(keep, nll.view(K, rows), 0.0).sum(1)
        (loss * inv_tokens).sum().backward()
        self.stats += torch.stack([loss.detach(), nll], 1).double()
        for s in self.seats:
            s.opt.step()


def state_dict(model: torch.nn.Module) -> dict:
    """A seat's model weights as its own tensors: its parameters are views of the stack's, which torch.save and
    deepcopy would write whole (every seed's weights in each checkpoint)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def stacked_step(stack: Stack) -> None:
    """One optimizer step of every seat of `stack`: the host's part (each seed's next batch, step, learning rate,
    dropout key), then the stack's body, eagerly or as its bucket's CUDA graph."""
    seats = stack.seats
    batches = [training_batch(s.cfg, s.pairs, s.batches.next()) for s in seats]
    for s in seats:
        s.st.step += 1
    lrs = [_lr(s.cfg, s.st.step) for s in seats]
    keys = dropout_key([s.cfg.train.seed for s in seats], [s.st.step for s in seats])
    inv_tokens = torch.tensor([1.0 / b.n_tgt_tokens for b in batches])
    if stack.graphed is not None and (bucket := stack.graphed.bucket_for(batches)) is not None:
        stack.graphed.step(bucket, pad_batches(batches, bucket), keys, inv_tokens, lrs)
    else:
        for s, lr in zip(seats, lrs):
            for g in s.opt.param_groups:
                g["lr"] = lr
        dev = stack.device  # pinned, without blocking: the host prepares the next step while the device works
        stack.body(*(x if x is None else to_device(x, dev) for x in pad_batches(batches)), to_device(keys, dev),
                   to_device(inv_tokens, dev))
    for s, b in zip(seats, batches):
        s.st.epoch, s.st.cursor = s.batches.epoch, s.batches.cursor
        s.st.tokens_seen += b.n_tgt_tokens
        s.log_tokens += b.n_tgt_tokens
        s.padding = b.padding_fraction


def _lr(cfg: Config, step: int) -> float:
    return cfg.train.schedule.lr(step, cfg.model.d_model, cfg.train.steps)


def train_stacked(cfgs: list[Config], outs: list[Path], data_root: Path | None = None,
                  report: Report | None = None) -> list[RunResult | Exception]:
    """Train (or resume) the runs of `cfgs` into `outs` side by side, then score each; per run its result, or
    the error that ended it alone (as its solo run would have raised it)."""
    if len(cfgs) != len(outs) or not cfgs:
        raise ValueError("one out folder per config")
    if problem := stack_problem(cfgs):
        raise UserError(f"these {len(cfgs)} runs cannot train side by side: {problem}; run them one by one")
    report = report or (lambda k, e: None)
    cfg0, device = cfgs[0], train_device(cfgs[0])
    amp = autocast_dtype(cfg0.train.precision, device, cfg0.model.d_model)
    p = prepare(cfg0, data_root)
    lengths = pair_lengths(p.train)
    seats = [_seat(cfg, Path(out), p, lengths, device, lambda e, k=k: report(k, e)) for k, (cfg, out) in
             enumerate(zip(cfgs, outs))]
    skeleton = copy.deepcopy(seats[0].model).train()  # the forward's code; its own weights are never used
    judge_from = check_from(cfg0)
    lv = levels(p.train, p.tgt_vocab_size or p.vocab_size) if judge_from else None
    t0 = time.time()
    for s in seats:
        s.model.train()
        s.saved_at = s.elapsed0 = s.st.elapsed
    stack = None
    while live := [s for s in seats if s.running]:
        if stack is None or len(stack.seats) != len(live):  # a seed ended alone: the stack shrinks
            stack = Stack(live, skeleton, device, amp)
        stacked_step(stack)
        for s in live:
            k = seats.index(s)
            try:
                _after_step(s, p, device, lv, judge_from, t0, lambda e, k=k: report(k, e))
            except UserError as e:  # NonFiniteLoss, NotLearningError  # this seed ends alone; the others go on
                s.error = e
                report(k, e)  # said now: its row shows its end while the others train on
    results: list[RunResult | Exception] = []
    for k, s in enumerate(seats):
        if s.error is None and s.result is None:
            s.result = _finish(s, p, device, amp, lambda e, k=k: report(k, e))
        results.append(s.error or s.result)
    return results


def _seat(cfg: Config, out: Path, p: Prepared, lengths, device, report) -> Seat:
    """One seed's run made ready as zoo.train.loop.train makes it: its model from its seed, its folder, its resume."""
    refuse_other_model(out, cfg)
    changes = config_changes(out, cfg)
    ready_folder(out)
    atomic_write_text(out / "config.json", json.dumps(cfg.model_dump(mode="json"), indent=2))
    clear_unfinished(out)
    done = finished(out, cfg)
    torch.manual_seed(cfg.train.seed)
    model = build(cfg, p.sp, p.tgt_vocab).to(device)
    opt = make_optimizer(model, 0.0, tuple(cfg.train.optimizer.betas), cfg.train.optimizer.eps)
    ck = resume(out, model, opt, device, report, changes)
    st = ck.state if ck else State()
    if ck:
        report(Resumed(step=st.step))
    seat = Seat(cfg, out, model, opt, st, BatchOrder(lengths, cfg.train.batch_tokens, cfg.train.seed, st.epoch, st.cursor), p.train,
                torch.zeros(2, dtype=torch.float64, device=device))
    if done:
        seat.result = done  # finished before: nothing to redo
    return seat


def _after_step(s: Seat, p: Prepared, device, lv, judge_from, t0: float, report) -> None:
    """The solo loop's cadences for one seat after its step: log, dev perplexity, checkpoint (zoo.train.loop)."""
    cfg, st = s.cfg, s.st
    final = st.step == cfg.train.steps
    on_grid = st.step % cfg.train.checkpoint_every == 0
    log = st.step % cfg.train.log_every == 0 or st.step == 1 or final
    evaluate_now = st.step % cfg.train.eval_every == 0 or final
    st.elapsed = s.elapsed0 + time.time() - t0  # the stack's clock: each seed trained all of it
    point = None
    lr = _lr(cfg, st.step)
    if log or evaluate_now or on_grid:
        loss_sum, nll_sum = s.stats.tolist()
        if not math.isfinite(loss_sum):
            from zoo.train.loop import NonFiniteLoss  # the solo run's error (here: no import at load time)
            raise NonFiniteLoss(f"non-finite loss at step {st.step} (lr {lr:.3g}); lower train.schedule.lr_scale")
        if log:
            now = time.time()
            point = LogPoint(step=st.step, steps=cfg.train.steps, loss=loss_sum / s.log_tokens,
                             nll=nll_sum / s.log_tokens, lr=lr, elapsed_s=st.elapsed,
                             tokens_per_s=s.log_tokens / max(now - s.last_log, 1e-9), epoch=st.epoch,
                             padding_fraction=s.padding, tokens_seen=st.tokens_seen)
            s.last_log, s.log_tokens = now, 0
            s.stats.zero_()
            if lv is not None and st.step >= judge_from and lv.problem(point.nll, st.step):
                raise stop(cfg, st.step, point.nll, lv, lr)
    if evaluate_now:
        s.dev_ppl = dev_perplexity(s.model, p.dev, cfg.train.batch_tokens)
        s.model.train()
        point = point or LogPoint(step=st.step, steps=cfg.train.steps, elapsed_s=st.elapsed)
        point.dev_ppl = s.dev_ppl
    if point:
        with open(s.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(wire(point)) + "\n")
        report(point)
    saving = final or on_grid and (st.step > averaged_from(cfg) or
                                   st.elapsed - s.saved_at >= 60 * cfg.train.checkpoint_minutes)
    if saving:
        s.saved_at = st.elapsed
        t = time.perf_counter()
        ck = Checkpoint(st, state_dict(s.model), torch.get_rng_state(), cfg.model_dump(mode="json"),
                        torch.cuda.get_rng_state(device) if device.type == "cuda" else None, s.opt.state_dict())
        write_checkpoint(copy.deepcopy(ck.as_dict()), s.out, cfg.train.keep_checkpoints)
        st.save_seconds += time.perf_counter() - t


def _finish(s: Seat, p: Prepared, device, amp, report) -> RunResult:
    """The seat's result as zoo.train.loop.train writes a solo run's: scored, in summary.json."""
    cfg, st = s.cfg, s.st
    if s.dev_ppl is None and st.step:
        s.dev_ppl = dev_perplexity(s.model, p.dev, cfg.train.batch_tokens)
    result = RunResult(
        config_hash=cfg.config_hash(), variant=cfg.variant, profile=cfg.profile, steps_done=st.step,
        tokens_seen=st.tokens_seen, train_seconds=st.elapsed, checkpoint_seconds=st.save_seconds,
        dev_ppl=s.dev_ppl, vocab_size_actual=p.vocab_size, tgt_vocab_size=p.tgt_vocab_size, bpe_model=str(p.sp_path),
        dataset=cfg.data.dataset, train_pairs=len(p.train), eval_split=cfg.eval.split,
        hardware=Hardware(device=str(device), threads=torch.get_num_threads(), workers=1,
                          device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                          compute_dtype="bf16" if amp else "fp32"))
    t = time.time()
    score(cfg, s.out, s.model, p, device, result)
    result.total_seconds = st.elapsed + time.time() - t
    atomic_write_text(s.out / "summary.json", result.model_dump_json(indent=2))
    report(Done(result=result))
    return result
