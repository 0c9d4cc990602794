"""One trial, the paper's way (section 5): prepared (zoo.train.prepared), resumed from its newest checkpoint
(zoo.train.checkpointing), trained step by step, then decoded and scored (zoo.train.evaluation).

The loop: token-budget batches with gradient accumulation derived so a step holds `batch_tokens` whatever
the number of workers; the learning rate of equation (3) each step; the loss read, the dev perplexity
measured and checkpoints written (beside training, by zoo.train.writer) on their cadences. With
torch.distributed initialised (the runner's data-parallel workers), each worker takes its shards of every
step and the gradients are summed across workers, so the update equals the single-worker one.

`report` receives the trial's events, typed (zoo.result: LogPoint at every log point and evaluation;
Resumed, BadCheckpoint, NoOptimizerState, ConfigChanged on a resume; Done with the RunResult): the Ray
runner forwards them to Tune (runner.trial), `zoo train` prints a progress line.
"""
from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from zoo.config import Config
from zoo.data import BatchOrder, pair_lengths, shard
from zoo.errors import UserError
from zoo.model import drawing
from zoo.paths import atomic_write_text
from zoo.result import Done, Event, Hardware, LogPoint, Resumed, RunResult, wire
from zoo.train.checkpointing import (Interrupt, State, averaged_from, clear_unfinished, config_changes, finished,
                                     ready_folder, refuse_other_model, resume, save, writing)
from zoo.train.device import (agreed, autocast_dtype, check_memory, keep_freed_memory, out_of_memory, rank_and_world,
                              train_device)
from zoo.train.evaluation import dev_perplexity, score
from zoo.train.learning import check_from, levels, stop
from zoo.train.prepared import Prepared, build, check_kept, prepare, training_batch
from zoo.train.recipe import make_optimizer
from zoo.train.step import compiled, data_parallel, draws_key, gradients, read_stats, train_step
from zoo.train.writer import Writer

__all__ = ["NonFiniteLoss", "rank_parts", "train"]  # what it lends outside its package (the door serves these)

Report = Callable[[Event], None]


class NonFiniteLoss(UserError):
    """The run diverged (a learning rate too high for the model): a spec problem, exit 2 in `zoo train`."""


def train(cfg: Config, out: Path, data_root: Path | None = None, report: Report | None = None,
          prepared: Prepared | None = None) -> RunResult:
    """Train (or resume) one variant into `out`, then decode and score it; return the result (also
    written to summary.json). A run whose summary matches its config returns it without training."""
    out = Path(out)
    report = report or (lambda m: None)
    rank, world = rank_and_world()
    if done := finished(out, cfg):
        return done  # finished before: nothing to redo
    t0 = time.time()
    device = train_device(cfg)  # a GPU request without CUDA stops here, before anything is written
    refuse_other_model(out, cfg)  # every rank: a folder of another model's work is never resumed into
    changes = config_changes(out, cfg) if rank == 0 else []  # read before config.json becomes this config
    ready_folder(out)
    if rank == 0:
        atomic_write_text(out / "config.json", json.dumps(cfg.model_dump(mode="json"), indent=2))
        clear_unfinished(out)

    amp = autocast_dtype(cfg.train.precision, device, cfg.model.d_model)
    check_memory(cfg, world, device)  # before the data or the model take any
    if device.type == "cpu":
        keep_freed_memory()
    p = prepared or prepare(cfg, data_root)
    check_kept(cfg, p)
    torch.manual_seed(cfg.train.seed)
    model = build(cfg, p.sp, p.tgt_vocab).to(device)  # same seed: identical weights on every worker
    torch.manual_seed(cfg.train.seed * 1000 + rank)  # but each worker its own dropout masks
    opt = make_optimizer(model, 0.0, tuple(cfg.train.optimizer.betas), cfg.train.optimizer.eps)
    ck = resume(out, model, opt, device, report, changes)
    st = ck.state if ck else State()  # resumed exactly where the last loadable checkpoint left off
    if ck:
        ck.restore_generators(cfg.train.seed, device)
        report(Resumed(step=st.step))
    try:
        dev_ppl = _loop(cfg, out, model, opt, p, device, st, report, amp)
    except torch.cuda.OutOfMemoryError as e:
        raise out_of_memory(cfg, model, device, st.step, world, e) from None
    if dev_ppl is None and st.step:  # resumed from its final checkpoint: no step was left to evaluate at
        dev_ppl = dev_perplexity(model, p.dev, cfg.train.batch_tokens)

    # validated here, once, in the trial's process; the driver reads it back once (zoo.result.event)
    result = RunResult(
        config_hash=cfg.config_hash(), variant=cfg.variant, profile=cfg.profile, steps_done=st.step,
        time_limited=st.step < cfg.train.steps,  # the loop ends early only at its time limit
        tokens_seen=st.tokens_seen, train_seconds=st.elapsed, checkpoint_seconds=st.save_seconds, dev_ppl=dev_ppl,
        vocab_size_actual=p.vocab_size,
        tgt_vocab_size=p.tgt_vocab_size, bpe_model=str(p.sp_path), dataset=cfg.data.dataset,
        train_pairs=len(p.train), eval_split=cfg.eval.split,
        hardware=Hardware(device=str(device), threads=torch.get_num_threads(), workers=world,
                          device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                          compute_dtype="bf16" if amp else "fp32"))
    if rank == 0:
        score(cfg, out, model, p, device, result)
        result.total_seconds = time.time() - t0
        atomic_write_text(out / "summary.json", result.model_dump_json(indent=2))
        report(Done(result=result))
    return result


# -- the loop -----------------------------------------------------------------------------------

@dataclass
class _Work:
    """One optimizer step's share for this rank, collated (and pinned) ahead on the loader thread."""
    epoch: int  # where the loop stands once this step is done
    cursor: int
    n_tgt: int  # the whole step's target tokens (all ranks'), known on every rank without a collective
    parts: list  # [(Batch, weight)]: this rank's micro-batches; weight 0 marks a stand-in (see rank_parts)


def rank_parts(batch, lengths, world: int, accumulation: int, rank: int) -> list[tuple]:
    """This rank's micro-batches of one step, as (indices, weight): the same number on every rank, so
    every rank takes part in every collective. A batch with fewer pairs than ranks x accumulation is
    cut into fewer micro-batches (each rank keeps at least one pair); with fewer pairs than ranks, a
    rank without a pair repeats the batch's first one at weight 0 (a zero gradient, but its
    all-reduces line up with the others')."""
    k = max(1, min(accumulation, len(batch) // world))
    parts = shard(batch, lengths, world * k)[rank::world]
    return [(part, 1.0) if len(part) else (batch[:1], 0.0) for part in parts]


class _Loader:
    """The loop's batches, one step ahead on a background thread: the run's BatchOrder, this rank's
    micro-batches, collated and (on a GPU) pinned while the device works on the step before."""

    def __init__(self, cfg: Config, pairs, lengths, epoch: int, cursor: int, pin: bool):
        self.cfg, self.pairs, self.lengths, self.pin = cfg, pairs, lengths, pin
        self.order = BatchOrder(lengths, cfg.train.batch_tokens, cfg.train.seed, epoch, cursor)
        self.rank, self.world = rank_and_world()
        self.accumulation = _accumulation(cfg, self.world)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="zoo-batches")
        self.ahead = self.pool.submit(self._build)

    def _build(self) -> _Work:
        batch = self.order.next()
        parts = []
        for idx, w in rank_parts(batch, self.lengths, self.world, self.accumulation, self.rank):
            b = training_batch(self.cfg, self.pairs, idx)
            parts.append((b.pinned() if self.pin else b, w))
        return _Work(self.order.epoch, self.order.cursor, int(self.lengths[batch, 1].sum()), parts)

    def next(self) -> _Work:
        work = self.ahead.result()
        self.ahead = self.pool.submit(self._build)
        return work

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _loop(cfg: Config, out: Path, model: torch.nn.Module, opt, p: Prepared, device, st: State, report: Report,
          amp: torch.dtype | None = None) -> float | None:
    """Train from `st` to the planned steps (or the time limit), updating `st`; log, evaluate the
    dev perplexity and checkpoint on their cadences. Returns the last dev perplexity (None: none measured).

    The loss statistics stay on the device (summed over the log interval) and are read, all-reduced
    on the device, only at log, evaluation and checkpoint steps: the host never waits on the device
    in between, so the CPU queues the next step's kernels while the GPU runs this one."""
    rank, world = rank_and_world()
    lengths = pair_lengths(p.train)  # (pairs, 2): + eos / bos
    fwd = compiled(data_parallel(model, device), cfg)
    loader = _Loader(cfg, p.train, lengths, st.epoch, st.cursor, pin=device.type == "cuda")
    stats = torch.zeros(2, dtype=torch.float64, device=device)  # summed loss and NLL since the last read
    last_log, log_tokens, last_read = time.time(), 0, st.step
    since_log = [0.0, 0.0]  # summed loss and NLL read from `stats` since the last log
    t_start = time.time()
    elapsed0 = saved_at = st.elapsed  # training seconds before this process, and at the last checkpoint
    dev_ppl = None
    window = averaged_from(cfg)
    judge_from = check_from(cfg)  # after warm-up, a run at the unigram level stops (zoo.train.learning)
    lv = levels(p.train, p.tgt_vocab_size or p.vocab_size) if judge_from else None
    state_bytes = 3 * sum(w.numel() * w.element_size() for w in model.parameters())  # weights, Adam's two moments
    writer = Writer(state_bytes) if rank == 0 else None  # rank 0 saves; the other ranks never wait for a write
    if writer is not None:
        writer.start()
    model.train()
    with Interrupt(active=world == 1) as signal_, _closing(loader, writer, st):
        while st.step < cfg.train.steps:
            work = loader.next()
            st.step += 1
            lr = cfg.train.schedule.lr(st.step, cfg.model.d_model, cfg.train.steps)
            with drawing(draws_key(cfg, st.step, rank, device)):
                pad_frac = _step(cfg, fwd, opt, device, work, stats, amp, lr)
            st.epoch, st.cursor = work.epoch, work.cursor
            st.tokens_seen += work.n_tgt
            log_tokens += work.n_tgt

            final = st.step == cfg.train.steps
            on_grid = st.step % cfg.train.checkpoint_every == 0  # where a checkpoint may fall
            log = st.step % cfg.train.log_every == 0 or st.step == 1 or final
            evaluate_now = st.step % cfg.train.eval_every == 0 or final
            point, saving = None, final
            stopping = signal_.asked is not None  # Ctrl-C: this step is the last, checkpointed unless it would
            # break the averaged checkpoints' spacing (inside the window, the last one is <= checkpoint_every back)
            if log or evaluate_now or on_grid or stopping:  # the only host sync of the steady state
                # one clock for every rank (the slowest's): a rank that stopped or saved alone would leave
                # the others waiting in a collective
                st.elapsed = agreed(elapsed0 + time.time() - t_start, device)
                final = final or _out_of_time(cfg, st.elapsed)
                log, evaluate_now = log or final, evaluate_now or final
                saving = final or on_grid and (st.step > window or st.elapsed - saved_at >= 60 * cfg.train.checkpoint_minutes) \
                    or stopping and (on_grid or st.step <= window)
                got = read_stats(stats)  # a checkpoint or evaluation step may read between two logs:
                loss_sum, nll_sum = since_log[0] + got[0], since_log[1] + got[1]  # the log covers them all
                since_log = [loss_sum, nll_sum]
                if not math.isfinite(loss_sum):  # before a checkpoint could keep the diverged weights
                    raise NonFiniteLoss(f"non-finite loss at step {st.step} (lr {lr:.3g}; the loss is read every "
                                        f"train.log_every steps, it was finite at step {last_read}); lower "
                                        "train.schedule.lr_scale")
                last_read = st.step
                if log:
                    now = time.time()
                    point = LogPoint(step=st.step, steps=cfg.train.steps, loss=loss_sum / log_tokens,
                                     nll=nll_sum / log_tokens, lr=lr, elapsed_s=st.elapsed,
                                     tokens_per_s=log_tokens / max(now - last_log, 1e-9), epoch=st.epoch,
                                     padding_fraction=pad_frac, tokens_seen=st.tokens_seen)
                    last_log, log_tokens, since_log = now, 0, [0.0, 0.0]
                    if lv is not None and st.step >= judge_from and lv.problem(point.nll, st.step):
                        raise stop(cfg, st.step, point.nll, lv, lr)  # every rank read the same all-reduced NLL
            if evaluate_now:
                dev_ppl = dev_perplexity(model, p.dev, cfg.train.batch_tokens)
                if not math.isfinite(dev_ppl):  # finite training loss, but the dev loss is past exp()'s range
                    raise NonFiniteLoss(f"non-finite loss at step {st.step} (lr {lr:.3g}): the dev perplexity "
                                        "overflows; lower train.schedule.lr_scale")
                model.train()
                point = point or LogPoint(step=st.step, steps=cfg.train.steps, elapsed_s=st.elapsed)
                point.dev_ppl = dev_ppl
            if point:
                if rank == 0:
                    with writing(out / "metrics.jsonl"), open(out / "metrics.jsonl", "a") as f:
                        f.write(json.dumps(wire(point)) + "\n")
                report(point)
            if saving:
                saved_at = st.elapsed
            if saving and writer is not None:
                t = time.perf_counter()
                save(writer, out, cfg, model, opt, st, device)
                st.save_seconds += time.perf_counter() - t  # the loop's wait: the copy to the writer (and a write before it)
            if final:
                break
            if stopping:
                signal_.stop()
    st.elapsed = elapsed0 + time.time() - t_start
    return dev_ppl


@contextmanager
def _closing(loader, writer: Writer | None, st: State):
    """The loader's threads end, and the last checkpoint is on disk before the run is scored (averaging
    reads it) or before an interrupt reaches the user (a resume reads it)."""
    try:
        yield
    finally:
        loader.close()
        if writer is not None:
            t = time.perf_counter()
            writer.close()
            st.save_seconds += time.perf_counter() - t


def _step(cfg: Config, fwd: torch.nn.Module, opt, device, work: _Work, stats: torch.Tensor,
          amp: torch.dtype | None = None, lr: float | None = None) -> float:
    """This rank's share of one optimizer step at `lr`: zoo.train.step.train_step, the step the bench and
    `zoo run --plan` time. Without `lr`, the gradients only (the caller steps Adam, as tests drive ranks).
    The step's summed loss and NLL go to `stats` on the device; returns the padding fraction."""
    if lr is None:
        return gradients(cfg, fwd, opt, device, work.parts, work.n_tgt, stats, amp)
    return train_step(cfg, fwd, opt, device, work.parts, work.n_tgt, stats, amp, lr)


def _accumulation(cfg: Config, world: int) -> int:
    cap = cfg.train.max_tokens_per_device
    return 1 if not cap else max(1, math.ceil(cfg.train.batch_tokens / (world * cap)))


def _out_of_time(cfg: Config, elapsed: float) -> bool:
    return cfg.train.time_limit_minutes is not None and elapsed >= 60 * cfg.train.time_limit_minutes
