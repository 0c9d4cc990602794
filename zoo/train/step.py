"""One training step: what zoo.train's loop does per step, and what bench/bench_train.py and `zoo run --plan`
time, so a benchmark or an estimate measures the step a run takes.

The run's choices come from its config: bf16 autocast when its precision says so (zoo.train.device.autocast_dtype)
and the model compiled when train.compile is on, the loss then as its compiled per-chunk kernels (step_setup,
gradients); a GPU's attention backends and TF32 are zoo.train.device.train_device's, which the bench calls
too. The step's loss statistics stay on the device (no loss.item()): the host never waits for the device
inside a step. Logging, evaluation and checkpoints are the loop's.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.distributed as dist

from zoo.config import Config
from zoo.model import dropout_key
from zoo.train import compiled_loss, fused_loss, recipe
from zoo.train.device import autocast, autocast_dtype, rank_and_world

__all__ = ["WHOLE_FROM_STEPS", "batch_loss", "compiled", "data_parallel", "draws_key", "read_stats", "step_setup",
           "train_step", "whole_model"]  # what it lends outside its package (the door serves these)


# train.compile on compiles the whole model on a GPU for a run of at least this many steps, regionally otherwise. On
# the H100 whole took 69 s before base's first step against regional's 35 s, and stepped in 56.7 ms against 64.4:
# the 34 s are repaid after ~4,400 steps. A CPU, smoke runs and tests keep the short regional warm-up.
WHOLE_FROM_STEPS = 5000


def whole_model(cfg: Config, device: torch.device) -> bool:
    """Whether train.compile on compiles the whole model (True) or its layers (False): the rule above."""
    return device.type == "cuda" and cfg.train.steps >= WHOLE_FROM_STEPS


def compiled(module: torch.nn.Module, cfg: Config, backend: str = "inductor",
             whole: bool | None = None) -> torch.nn.Module:
    """train.compile on: the module the training forward runs through, compiled with dynamic shapes, so the
    token-budget batches' ever-changing (batch, length) shapes share one graph instead of compiling one each.

    Regionally: a Transformer (inside DDP or not) compiles its encoder layer and its decoder layer once each
    (Transformer.compile_layers) and stays itself; the embeddings, the pre-softmax map and the loop over
    layers run eagerly between the graphs. `whole` (or a model without compile_layers) compiles the whole
    forward into one graph instead; None: whole_model's rule (a long run on a GPU), as the loop takes it.

    Duck sizing is off: with it, a first batch whose source and target lengths happen to be equal gives both
    one symbol, and the first batch where they differ compiles the model again (on an H100, recompiles up to
    step ~20 and 80 s before step 1). Without it the first step's graphs serve every later shape."""
    if cfg.train.compile != "on":
        return module
    import torch.fx.experimental._config as fx_config  # read when a graph is traced, so set before the first step
    fx_config.use_duck_shape = False
    model = getattr(module, "module", module)  # DDP holds the model as .module
    if whole is None:
        whole = whole_model(cfg, next(model.parameters()).device)
    if whole or not hasattr(model, "compile_layers"):
        return torch.compile(module, dynamic=True, backend=backend)
    model.compile_layers(dynamic=True, backend=backend)
    return module


def data_parallel(model: torch.nn.Module, device) -> torch.nn.Module:
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


def step_setup(cfg: Config, model: torch.nn.Module, device: torch.device,
               whole: bool | None = None) -> tuple[torch.nn.Module, torch.dtype | None]:
    """(the module the forward runs through, the autocast dtype) of a one-process run of `cfg` on `device`
    (the loop wraps the model in DDP first when it has several ranks); `whole`: see compiled."""
    return compiled(model, cfg, whole=whole), autocast_dtype(cfg.train.precision, device, cfg.model.d_model)


def train_step(cfg: Config, fwd: torch.nn.Module, opt: torch.optim.Optimizer, device: torch.device, parts: list,
               n_tgt: int, stats: torch.Tensor, amp: torch.dtype | None = None, lr: float | None = None) -> float:
    """One optimizer step: the learning rate (`lr`, the schedule's for this step; None keeps the optimizer's),
    the gradients of this rank's micro-batches (`gradients`), Adam's update. Adds the step's summed loss and
    NLL to `stats` on the device; returns the last micro-batch's padding fraction."""
    if cfg.train.cuda_graph == "on":  # the whole step as one CUDA graph per bucket of shapes (zoo.train.graphed)
        from zoo.train import graphed
        if (pad := graphed.train_step(cfg, fwd, opt, device, parts, n_tgt, stats, amp, lr)) is not None:
            return pad
    if lr is not None:
        for g in opt.param_groups:
            g["lr"] = lr
    pad = gradients(cfg, fwd, opt, device, parts, n_tgt, stats, amp)
    opt.step()
    return pad


def gradients(cfg: Config, fwd: torch.nn.Module, opt: torch.optim.Optimizer, device: torch.device, parts: list,
              n_tgt: int, stats: torch.Tensor, amp: torch.dtype | None = None) -> float:
    """Gradients of one optimizer step: `parts` ([(Batch, weight)]) are this rank's micro-batches of a step of
    `n_tgt` target tokens (all ranks'); summed over ranks by DDP's all-reduce during the last micro-batch's
    backward (no_sync before it: accumulation stays local). A weight of 0 marks a stand-in micro-batch
    (zoo.train.loop.rank_parts). Returns the last micro-batch's padding fraction (a host figure)."""
    world = rank_and_world()[1]
    opt.zero_grad(set_to_none=True)
    # DDP averages gradients over ranks; scaled by world / (the step's tokens) the sum of all ranks'
    # losses is the single-worker one: splitting a batch does not change its gradient.
    scale = world / n_tgt
    for i, (b, weight) in enumerate(parts):
        b = b.to(device)
        sync = world == 1 or i == len(parts) - 1
        with nullcontext() if sync else fwd.no_sync():
            loss, nll = batch_loss(cfg, fwd, b, device, amp)
            (loss * (weight * scale)).backward()
        stats += torch.stack([loss.detach(), nll]).double() * weight
    return b.padding_fraction


def batch_loss(cfg: Config, fwd: torch.nn.Module, b, device: torch.device,
               amp: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One micro-batch's forward and its summed (label-smoothed loss, NLL) over its non-pad targets, as the
    run's choices take it (fused loss, compiled loss or the recipe's); also zoo.train.graphed's body."""
    eps, fused = cfg.train.label_smoothing, cfg.train.fused_loss == "on"
    seg = {} if b.src_seg is None else {"src_seg": b.src_seg, "tgt_seg": b.tgt_seg}  # a packed batch
    with autocast(device, amp):
        out = fwd(b.src, b.tgt_in, **seg, **({"states": True} if fused else {}))
        if fused:  # the decoder's states: the pre-softmax map runs inside the loss, chunk by chunk
            return fused_loss.smoothed_loss(out, getattr(fwd, "module", fwd).output_weight(), b.tgt_out, eps)
    if cfg.train.compile == "on":
        return compiled_loss.smoothed_loss(out, b.tgt_out, eps, recipe.LOSS_CHUNK)
    return recipe.smoothed_loss(out, b.tgt_out, eps)


def read_stats(stats: torch.Tensor) -> tuple[float, float]:
    """The summed (loss, NLL) of every rank since the last read, then zeroed: all-reduced where the
    statistics live, on the model's device (NCCL serves only CUDA tensors), every rank at the same step."""
    if rank_and_world()[1] > 1:
        dist.all_reduce(stats)
    loss_sum, nll_sum = stats.tolist()
    stats.zero_()
    return loss_sum, nll_sum


def draws_key(cfg: Config, step: int, rank: int = 0, device=None):
    """The key of a step's dropout masks (zoo.model.dropout): a function of (seed, rank, step), so a seed trained
    beside others (zoo.train.stacked) draws what it draws alone. None when compiled: the compiler fuses torch's
    own dropout into its kernels."""
    if cfg.train.compile == "on":
        return None
    from zoo.data import to_device  # here: zoo.data.batching at the top would lengthen the import chain
    key = dropout_key(cfg.train.seed, step, rank=rank)  # made on the host, then copied without blocking: a
    return key if device is None else to_device(key, device)  # blocking copy would wait for the step before
