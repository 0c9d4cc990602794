"""Train one variant the paper's way (section 5), then decode and score it.

Adam (0.9, 0.98, 1e-9); lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5);
label-smoothed cross-entropy; token-budget batches with gradient accumulation derived so a step
holds `batch_tokens` whatever the number of workers; atomic checkpoints written beside training, every
K steps where they are averaged and once per `checkpoint_minutes` elsewhere, the last k kept; resume from
the latest; average the last k checkpoints for evaluation when the spec says so.

One process trains one trial. `report` receives a dict of metrics at every log point (the Ray
runner passes Ray's report function; `zoo train` prints a progress line). With torch.distributed
initialised (the runner's data-parallel workers), each worker takes its shards of every step and
the gradients are summed across workers, so the update equals the single-worker one.

This module holds the data preparation, the loop and the evaluation; the recipe's pieces live in
zoo.train.recipe, the checkpoint files in zoo.train.checkpointing, the device, dtype and memory in
zoo.train.device (the package's door, zoo.train, serves all their public names).
"""
from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from zoo.data.batching import collate, encode_pairs, make_batches, pair_lengths, shard
from zoo.data.bpe import bpe_model, load_sp
from zoo.data.corpora import corpus, data_dir
from zoo.data.encoded import EncodedCorpus, encoded_corpus
from zoo.data.read import load_pairs
from zoo.tokens import EOS
from zoo.train.checkpointing import Interrupt, average_checkpoints, checkpoints, clear_unfinished, resume, writing
from zoo.config import Config, dotted
from zoo.train.device import train_device, rank_and_world, autocast_dtype, check_memory, gpu_share, keep_freed_memory
from zoo.errors import UserError
from zoo.model import Transformer, build_model, count_params
from zoo.paths import atomic_write_text, inside
from zoo.train.recipe import make_optimizer, smoothed_loss  # noqa: F401 (smoothed_loss: tests reach it here)
from zoo.train.step import compiled, gradients, train_step
from zoo.train.writer import Writer
from zoo.result import Attention, Hardware, LogPoint, RunResult, SplitScore

__all__ = ["GPUOutOfMemoryError", "NonFiniteLoss", "Prepared", "attention_map", "build", "compiled", "data_parallel",
           "dev_perplexity", "dev_sentence_nll", "evaluate", "load_for_eval", "prepare", "rank_parts", "read_stats",
           "target_vocab", "train"]  # what it lends outside its package (the door serves these)

Report = Callable[[dict], None]


# -- data ---------------------------------------------------------------------------------------

@dataclass
class Prepared:
    sp_path: Path
    sp: object  # the loaded sentencepiece model of sp_path (the shared or source-side BPE)
    train: EncodedCorpus  # memory-mapped from the encoded cache; len() is the pair count
    dev: list  # [(src_ids, tgt_ids)]: small, kept as lists
    evals: dict  # split -> (sources, references): the spec's eval split first, then extra_splits
    likelihood: dict = field(default_factory=dict)  # split -> encoded pairs: the perplexity of each split but dev
    tgt_vocab: object = None  # the target side's own vocabulary (trees.SymbolVocab), None = shared BPE

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int | None:
        return None if self.tgt_vocab is None else self.tgt_vocab.get_piece_size()


def target_vocab(cfg: Config, root: Path | None = None):
    """The tree side's whole-symbol vocabulary (built from the training split) when the spec asks
    for one (data.target_vocab: symbols), else None: source and target share the BPE."""
    if cfg.data.target_vocab != "symbols":
        return None
    from zoo.data.trees import SymbolVocab
    return SymbolVocab.from_targets((t for _, t in load_pairs(cfg.data.dataset, "train", data_dir(root))),
                                    tags=cfg.data.preterminals == "tags")


def prepare(cfg: Config, root: Path | None = None) -> Prepared:
    root = data_dir(root)
    name = cfg.data.dataset
    tgt_vocab = target_vocab(cfg, root)
    sp_path = bpe_model(name, cfg.data.vocab_size, root, source_only=tgt_vocab is not None)
    sp = load_sp(sp_path)
    # Encoded once per (corpus, BPE, max_len, max_train_pairs, target vocabulary), then memory-mapped.
    train = encoded_corpus(name, sp_path, root, cfg.data.max_len, cfg.data.max_train_pairs, tgt_vocab)
    if len(train.lengths) == 0:  # every pair was longer than data.max_len: nothing to train on
        raise UserError(f"data.max_len: {cfg.data.max_len} word-pieces leaves no training pair of {name} (all "
                        f"{train.dropped} are longer on one side); raise data.max_len (the paper's specs use 256)")
    dev_pairs = load_pairs(name, "dev", root)
    evals = {}
    for split in dict.fromkeys([cfg.eval.split, *cfg.eval.extra_splits]):
        pairs = dev_pairs if split == "dev" else load_pairs(name, split, root)
        pairs = pairs[: cfg.eval.max_sentences] if cfg.eval.max_sentences else pairs
        evals[split] = ([s for s, _ in pairs], [t for _, t in pairs])
    if cfg.eval.max_sentences:
        dev_pairs = dev_pairs[: max(cfg.eval.max_sentences * 4, 64)]
    likelihood = {}  # every scored split's per-sentence likelihood but dev's (dev_nll_stats has it)
    for split in dict.fromkeys([cfg.eval.split, *cfg.eval.extra_splits, *cfg.eval.ppl_splits]):
        if split != "dev":
            pairs = load_pairs(name, split, root)
            pairs = pairs[: cfg.eval.max_sentences] if cfg.eval.max_sentences else pairs
            likelihood[split] = encode_pairs(sp, pairs, cfg.data.max_len, tgt_vocab)
    return Prepared(sp_path, sp, train, encode_pairs(sp, dev_pairs, cfg.data.max_len, tgt_vocab), evals,
                    tgt_vocab=tgt_vocab, likelihood=likelihood)


def build(cfg: Config, sp, tgt_vocab=None) -> Transformer:
    """cfg's model over its vocabularies: sp the (source or shared) BPE, tgt_vocab the tree side's own."""
    model = build_model(cfg.model, sp.get_piece_size(), tgt_vocab and tgt_vocab.get_piece_size())
    if cfg.model.word_pointer:
        from zoo.data.trees import word_pointer_tables
        model.set_word_pointer(*word_pointer_tables(sp, tgt_vocab))
    return model


# -- the loop -----------------------------------------------------------------------------------

class GPUOutOfMemoryError(UserError):
    """The GPU ran out of memory: the trial fails with the figures that set its size."""

class NonFiniteLoss(UserError):
    """The run diverged (a learning rate too high for the model): a spec problem, exit 2 in `zoo train`."""


@dataclass
class _State:
    """Where the loop stands; a checkpoint holds the same fields, so a resumed run continues exactly."""
    step: int = 0
    epoch: int = 0
    cursor: int = 0
    elapsed0: float = 0.0  # training seconds before this process (earlier attempts)
    tokens_seen: int = 0
    save_s: float = 0.0  # of the training seconds, those the loop waited on checkpoints (earlier attempts too)
    dev_ppl: float | None = None


def train(cfg: Config, out: Path, data_root: Path | None = None, report: Report | None = None,
          prepared: Prepared | None = None) -> RunResult:
    """Train (or resume) one variant into `out`, then decode and score it; return the result (also
    written to summary.json). A run whose summary matches its config returns it without training."""
    out = Path(out)
    report = report or (lambda m: None)
    rank, world = rank_and_world()
    summary_path = out / "summary.json"
    done = _finished(summary_path)
    if done is not None and done.config_hash == cfg.config_hash():
        return done  # finished before: nothing to redo
    t0 = time.time()
    device = train_device(cfg)  # a GPU request without CUDA stops here, before anything is written
    changes = _changes(out, cfg) if rank == 0 else []  # read before config.json becomes this config
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    if rank == 0:
        atomic_write_text(out / "config.json", json.dumps(cfg.model_dump(mode="json"), indent=2))
        clear_unfinished(out)

    amp = autocast_dtype(cfg.train.precision, device)
    check_memory(cfg, world, device)  # before the data or the model take any
    if device.type == "cpu":
        keep_freed_memory()
    p = prepared or prepare(cfg, data_root)
    torch.manual_seed(cfg.train.seed)
    model = build(cfg, p.sp, p.tgt_vocab).to(device)  # same seed: identical weights on every worker
    torch.manual_seed(cfg.train.seed * 1000 + rank)  # but each worker its own dropout masks
    opt = make_optimizer(model, 0.0, tuple(cfg.train.optimizer.betas), cfg.train.optimizer.eps)
    st = _State()
    resumed = resume(out, model, opt, device, report, changes)
    if resumed:
        ck = resumed[1]  # resume exactly where the last loadable checkpoint left off
        st = _State(ck["step"], ck["epoch"], ck["cursor"], ck.get("elapsed", 0.0), ck.get("tokens_seen", 0),
                    save_s=ck.get("save_seconds", 0.0))
        torch.set_rng_state(ck["rng"].cpu())  # loaded onto the device with the rest: the generator wants host bytes
        if device.type == "cuda" and "cuda_rng" in ck:
            torch.cuda.set_rng_state(ck["cuda_rng"].cpu(), device)
        if rank:  # the checkpoint holds rank 0's generator: the others draw their own masks again
            torch.manual_seed(cfg.train.seed * 1000 + rank + 1_000_003 * st.step)
            if device.type == "cuda":
                torch.cuda.manual_seed(cfg.train.seed * 1000 + rank + 1_000_003 * st.step)
        report({"event": "resumed", "step": st.step})
    try:
        train_s = _loop(cfg, out, model, opt, p, device, st, report, amp)
    except torch.cuda.OutOfMemoryError as e:
        raise _out_of_memory(cfg, model, device, st.step, world, e) from None
    if st.dev_ppl is None and st.step:  # resumed from its final checkpoint: no step was left to evaluate at
        st.dev_ppl = dev_perplexity(model, p.dev, cfg.train.batch_tokens)

    result = RunResult(
        config_hash=cfg.config_hash(), variant=cfg.variant, profile=cfg.profile, steps_done=st.step,
        tokens_seen=st.tokens_seen, train_seconds=train_s, checkpoint_seconds=st.save_s, dev_ppl=st.dev_ppl,
        vocab_size_actual=p.vocab_size,
        tgt_vocab_size=p.tgt_vocab_size, bpe_model=str(p.sp_path), dataset=cfg.data.dataset,
        train_pairs=len(p.train), eval_split=cfg.eval.split,
        hardware=Hardware(device=str(device), threads=torch.get_num_threads(), workers=world,
                          device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                          compute_dtype="bf16" if amp else "fp32"))
    if rank == 0:
        if st.dev_ppl is not None:  # the final weights' dev likelihood per sentence, for the claims' resampling
            result.dev_nll_stats = dev_sentence_nll(model, p.dev, cfg.train.batch_tokens)
        nll = {split: dev_sentence_nll(model, pairs, cfg.train.batch_tokens) for split, pairs in p.likelihood.items()}
        result.splits, result.attention = evaluate(cfg, out, model, p, device)
        for split, stats in nll.items():  # the final weights' likelihood, as dev's (decoding may average)
            score = result.splits.setdefault(split, SplitScore(eval_split=split, eval_sentences=len(stats)))
            score.nll_stats = stats
            score.ppl = math.exp(sum(x for x, _ in stats) / max(1, sum(n for _, n in stats)))
        result.total_seconds = time.time() - t0
        atomic_write_text(summary_path, result.model_dump_json(indent=2))
        report({"event": "done", **result.model_dump(mode="json")})
    return result


def _finished(summary_path: Path) -> RunResult | None:
    """The run's result when it finished before; None when absent or unreadable (a half-copied or
    foreign file is not a reason to skip training)."""
    try:
        return RunResult.model_validate_json(summary_path.read_text())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None


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
    """The loop's batches, one step ahead on a background thread: the epoch's batch order, this rank's
    micro-batches, collated and (on a GPU) pinned while the device works on the step before."""

    def __init__(self, cfg: Config, pairs, lengths, epoch: int, cursor: int, pin: bool):
        self.cfg, self.pairs, self.lengths, self.pin = cfg, pairs, lengths, pin
        self.epoch, self.cursor = epoch, cursor
        self.rank, self.world = rank_and_world()
        self.accumulation = _accumulation(cfg, self.world)
        self.batches = make_batches(lengths, cfg.train.batch_tokens, cfg.train.seed, epoch)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="zoo-batches")
        self.ahead = self.pool.submit(self._build)

    def _build(self) -> _Work:
        if self.cursor >= len(self.batches):
            self.epoch, self.cursor = self.epoch + 1, 0
            self.batches = make_batches(self.lengths, self.cfg.train.batch_tokens, self.cfg.train.seed, self.epoch)
        batch = self.batches[self.cursor]
        self.cursor += 1
        parts = []
        for idx, w in rank_parts(batch, self.lengths, self.world, self.accumulation, self.rank):
            b = collate(self.pairs, idx)
            parts.append((b.pinned() if self.pin else b, w))
        return _Work(self.epoch, self.cursor, int(self.lengths[batch, 1].sum()), parts)

    def next(self) -> _Work:
        work = self.ahead.result()
        self.ahead = self.pool.submit(self._build)
        return work

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def data_parallel(model: Transformer, device) -> torch.nn.Module:
    """The module the training forward runs through: torch's DistributedDataParallel when this process
    is one of several ranks (bucketed gradient all-reduces, overlapped with the backward pass, on the
    model's device), else the model itself. No buffer broadcast before each forward: the model's buffers
    (position tables such as `pe`, ALiBi's slopes, the parser's word tables) are computed alike on every
    rank, non-persistent and never trained."""
    if rank_and_world()[1] == 1:
        return model
    import inspect
    from torch.nn.parallel import DistributedDataParallel as DDP
    # torch 2.13 renamed broadcast_buffers (now deprecated, with a warning) to forward_sync_buffers
    no_sync = "forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(DDP).parameters else "broadcast_buffers"
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None, gradient_as_bucket_view=True,
               **{no_sync: False})


def _changes(out: Path, cfg: Config) -> list[str]:
    """How the config of the run in `out` (its config.json) differs from `cfg` in what identifies a run,
    as "field: old -> new"; [] when it is the same run, or there is none (or none that reads)."""
    try:
        before = Config.model_validate_json((out / "config.json").read_text())
    except (OSError, ValueError):
        return []
    if before.config_hash() == cfg.config_hash():
        return []
    old, new = (dotted(c.model_dump(mode="json")) for c in (before, cfg))
    return [f"{k}: {old.get(k)} -> {new.get(k)}" for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)]


def _loop(cfg: Config, out: Path, model: Transformer, opt, p: Prepared, device, st: _State, report: Report,
          amp: torch.dtype | None = None) -> float:
    """Train from `st` to the planned steps (or the time limit), updating `st`; log, evaluate the
    dev perplexity and checkpoint on their cadences. Returns the training seconds, earlier attempts included.

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
    elapsed = saved_at = st.elapsed0  # training seconds now, and at the last checkpoint
    window = _averaged_from(cfg)
    writer = Writer() if rank == 0 else None  # rank 0 saves; the other ranks never wait for a write
    model.train()
    with Interrupt(active=world == 1) as signal_, _closing(loader, writer, st):
        while st.step < cfg.train.steps:
            work = loader.next()
            st.step += 1
            lr = cfg.train.schedule.lr(st.step, cfg.model.d_model, cfg.train.steps)
            pad_frac = _step(cfg, fwd, opt, device, work, stats, amp, lr)
            st.epoch, st.cursor = work.epoch, work.cursor
            st.tokens_seen += work.n_tgt
            log_tokens += work.n_tgt

            final = st.step == cfg.train.steps
            on_grid = st.step % cfg.train.checkpoint_every == 0  # where a checkpoint may fall
            log = st.step % cfg.train.log_every == 0 or st.step == 1 or final
            evaluate_now = st.step % cfg.train.eval_every == 0 or final
            point, save = None, final
            stopping = signal_.asked is not None  # Ctrl-C: this step is the last, checkpointed unless it would
            # break the averaged checkpoints' spacing (inside the window, the last one is <= checkpoint_every back)
            if log or evaluate_now or on_grid or stopping:  # the only host sync of the steady state
                # one clock for every rank (the slowest's): a rank that stopped or saved alone would leave
                # the others waiting in a collective
                elapsed = _agreed(st.elapsed0 + time.time() - t_start, device)
                final = final or _out_of_time(cfg, elapsed)
                log, evaluate_now = log or final, evaluate_now or final
                save = final or on_grid and (st.step > window or elapsed - saved_at >= 60 * cfg.train.checkpoint_minutes) \
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
                                     nll=nll_sum / log_tokens, lr=lr, elapsed_s=elapsed,
                                     tokens_per_s=log_tokens / max(now - last_log, 1e-9), epoch=st.epoch,
                                     padding_fraction=pad_frac, tokens_seen=st.tokens_seen)
                    last_log, log_tokens, since_log = now, 0, [0.0, 0.0]
            if evaluate_now:
                st.dev_ppl = dev_perplexity(model, p.dev, cfg.train.batch_tokens)
                if not math.isfinite(st.dev_ppl):  # finite training loss, but the dev loss is past exp()'s range
                    raise NonFiniteLoss(f"non-finite loss at step {st.step} (lr {lr:.3g}): the dev perplexity "
                                        "overflows; lower train.schedule.lr_scale")
                model.train()
                point = point or LogPoint(step=st.step, steps=cfg.train.steps, elapsed_s=elapsed)
                point.dev_ppl = st.dev_ppl
            if point:
                row = point.model_dump(exclude_none=True)
                if rank == 0:
                    with writing(out / "metrics.jsonl"), open(out / "metrics.jsonl", "a") as f:
                        f.write(json.dumps(row) + "\n")
                report(row)
            if save:
                saved_at = elapsed
            if save and writer is not None:
                t = time.perf_counter()
                _save(out, cfg, model, opt, st, elapsed, device, writer)
                st.save_s += time.perf_counter() - t  # the loop's wait: the copy to the writer (and a write before it)
            if final:
                break
            if stopping:
                signal_.stop()
    return st.elapsed0 + time.time() - t_start


@contextmanager
def _closing(loader, writer: Writer | None, st: _State):
    """The loader's threads end, and the last checkpoint is on disk before the run is scored (averaging
    reads it) or before an interrupt reaches the user (a resume reads it)."""
    try:
        yield
    finally:
        loader.close()
        if writer is not None:
            t = time.perf_counter()
            writer.close()
            st.save_s += time.perf_counter() - t


def read_stats(stats: torch.Tensor) -> tuple[float, float]:
    """The summed (loss, NLL) of every rank since the last read, then zeroed: all-reduced where the
    statistics live, on the model's device (NCCL serves only CUDA tensors), every rank at the same step."""
    if rank_and_world()[1] > 1:
        dist.all_reduce(stats)
    loss_sum, nll_sum = stats.tolist()
    stats.zero_()
    return loss_sum, nll_sum


def _step(cfg: Config, fwd: torch.nn.Module, opt, device, work: _Work, stats: torch.Tensor,
          amp: torch.dtype | None = None, lr: float | None = None) -> float:
    """This rank's share of one optimizer step at `lr`: zoo.train.step.train_step, the step the bench and
    `zoo run --plan` time. Without `lr`, the gradients only (the caller steps Adam, as tests drive ranks).
    The step's summed loss and NLL go to `stats` on the device; returns the padding fraction."""
    if lr is None:
        return gradients(cfg, fwd, opt, device, work.parts, work.n_tgt, stats, amp)
    return train_step(cfg, fwd, opt, device, work.parts, work.n_tgt, stats, amp, lr)


def _out_of_memory(cfg: Config, model: Transformer, device, step: int, world: int, e: Exception) -> GPUOutOfMemoryError:
    from zoo.model import gib, memory_text, train_memory
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    have, what = gpu_share(cfg, device) if device.type == "cuda" else (0, f"{device} holds")
    per_device = cfg.train.max_tokens_per_device or cfg.train.batch_tokens // world
    g = cfg.resources.gpus
    shared = (f"This trial holds a {g:g} share of the GPU, shared with up to {math.floor(1 / g) - 1} other trials: "
              f"give it resources.gpus 1 (or a larger share), or " if 0 < g < 1 else "")
    return GPUOutOfMemoryError(
        f"variant {cfg.variant}: out of GPU memory at step {step} ({device}: peak {gib(peak)} allocated; {what} "
        f"{gib(have)}; {count_params(model):,} parameters, {per_device} tokens per "
        f"device per pass, estimated need {memory_text(train_memory(cfg, world))}). {shared}Set "
        f"train.max_tokens_per_device (gradient accumulation keeps the step's batch), lower data.max_len or "
        f"the model's size{'' if shared else ', or give the trial a whole GPU (resources.gpus)'}. "
        f"{str(e).splitlines()[0][:200] if str(e) else ''}".strip())


def _accumulation(cfg: Config, world: int) -> int:
    cap = cfg.train.max_tokens_per_device
    return 1 if not cap else max(1, math.ceil(cfg.train.batch_tokens / (world * cap)))


def _out_of_time(cfg: Config, elapsed: float) -> bool:
    return cfg.train.time_limit_minutes is not None and elapsed >= 60 * cfg.train.time_limit_minutes


def _agreed(elapsed: float, device) -> float:
    """The longest of the ranks' training times (an all-reduce MAX on the model's device), so that the
    time limit and the checkpoint clock stop or save every rank at the same step."""
    if rank_and_world()[1] == 1:
        return elapsed
    t = torch.tensor([elapsed], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def _averaged_from(cfg: Config) -> int:
    """The step after which every checkpoint_every-th step is saved, whatever the clock: the last
    eval.average_checkpoints of them are averaged, so they keep the spec's spacing. A time-limited run
    cannot know where it ends (all of it); a run that does not average, never."""
    k = cfg.eval.average_checkpoints
    if not k:
        return cfg.train.steps
    return 0 if cfg.train.time_limit_minutes is not None else cfg.train.steps - k * cfg.train.checkpoint_every


def _save(out: Path, cfg: Config, model, opt, st: _State, elapsed: float, device, writer: Writer) -> None:
    """Checkpoint `st`: the state now, copied to the writer (the loop goes on changing it in place), written
    in the writer's process (zoo.train.checkpointing.write_checkpoint), the last k kept."""
    ck = {"model": model.state_dict(), "optim": opt.state_dict(), "step": st.step,
          "epoch": st.epoch, "cursor": st.cursor, "elapsed": elapsed, "save_seconds": st.save_s,
          "tokens_seen": st.tokens_seen, "rng": torch.get_rng_state(), "config": cfg.model_dump(mode="json")}
    if device.type == "cuda":  # the GPU's dropout masks come from its own generator
        ck["cuda_rng"] = torch.cuda.get_rng_state(device)
    writer.save(ck, out, cfg.train.keep_checkpoints)


def dev_perplexity(model: Transformer, pairs: list, batch_tokens: int) -> float:
    """Per-word-piece perplexity on the dev pairs, without label smoothing (zoo.metrics computes it)."""
    from zoo import evidence as E
    lengths = pair_lengths(pairs)
    batches = (collate(pairs, b) for b in make_batches(lengths, max(batch_tokens, 2000), 0, 0))
    return E.dev_perplexity(model, batches)


def dev_sentence_nll(model: Transformer, pairs: list, batch_tokens: int) -> list[list[float]]:
    """Per dev sentence [NLL, tokens], in the split's order, the same batches as dev_perplexity."""
    from zoo import evidence as E
    lengths = pair_lengths(pairs)
    batches = (collate(pairs, b) for b in make_batches(lengths, max(batch_tokens, 2000), 0, 0))
    return E.dev_sentence_nll(model, batches, len(pairs))


def load_for_eval(cfg: Config, out: Path, model: Transformer) -> str:
    """Average the last k checkpoints into `model` when the spec asks; say what was evaluated."""
    k = cfg.eval.average_checkpoints
    ckpts = checkpoints(out)
    if k and ckpts:
        use = ckpts[-k:]
        model.load_state_dict(average_checkpoints(use))
        return f"average of the last {len(use)} checkpoints"
    return "final weights"


def evaluate(cfg: Config, out: Path, model: Transformer, p: Prepared, device) -> tuple[dict[str, SplitScore], Attention]:
    """Decode and score each eval split (the spec's own and its extra splits); the attention map."""
    from zoo import evidence as E
    from zoo.model import translate
    model.eval()
    sp = p.sp
    final = None
    if cfg.eval.average_checkpoints and cfg.eval.metric == "bleu":
        # The final weights too, on the spec's own split, so a report can check that averaging helps
        # at the same step (section 6.1) rather than compare it with some other run.
        srcs, refs = p.evals[cfg.eval.split]
        final = E.bleu(translate(model, sp, srcs, cfg.eval, tgt=p.tgt_vocab), refs)["bleu"]
    how = load_for_eval(cfg, out, model)
    model.eval()
    per_split = {}
    for split, (srcs, refs) in p.evals.items():
        t = time.time()
        hyps = translate(model, sp, srcs, cfg.eval, tgt=p.tgt_vocab)
        res = {"eval_split": split, "eval_sentences": len(hyps), "eval_weights": how,
               "decode_seconds": time.time() - t}
        if cfg.eval.metric == "f1":
            res |= E.parse_f1(srcs, hyps, refs)
        else:
            b, tok, pb = E.bleu(hyps, refs), E.tokenized_bleu(hyps, refs), E.paper_bleu(hyps, refs, corpus(cfg.data.dataset).tgt)
            res |= {"bleu_paper": pb["bleu"], "bleu_paper_label": pb["label"], "bleu_paper_stats": pb["stats"]}
            res |= {"bleu": b["bleu"], "bleu_signature": b["signature"], "bleu_tokenized": tok["bleu"],
                    "bleu_tokenized_label": tok.get("label", ""), "bleu_stats": E.bleu_stats(hyps, refs),
                    "bleu_final_weights": final if split == cfg.eval.split else None}
        atomic_write_text(inside(out, f"hyps.{split}.txt"), "\n".join(hyps) + "\n")  # split: a safe name
        per_split[split] = SplitScore.model_validate(res)
    return per_split, attention_map(model, sp, p, device)


def attention_map(model: Transformer, sp, p: Prepared, device, max_tokens: int = 24) -> Attention:
    """Each head of the last encoder layer on one short eval sentence, for the report's heat map."""
    from zoo.model import encoder_attention
    srcs = p.evals[next(iter(p.evals))][0]
    text = min((s for s in srcs[:200] if 6 <= len(sp.encode(s)) < max_tokens), key=len, default=srcs[0])
    ids = sp.encode(text)[: max_tokens - 1] + [EOS]
    w = encoder_attention(model.eval(), torch.tensor([ids], device=device))[0]
    return Attention(layer=f"encoder {len(model.encoder)}", sentence=text,
                     tokens=[sp.id_to_piece(i) for i in ids[:-1]] + ["</s>"],
                     weights=[[[round(x, 4) for x in row] for row in head] for head in w.float().cpu().tolist()])
