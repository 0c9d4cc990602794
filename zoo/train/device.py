"""Where a trial runs: its rank among the data-parallel workers, its device (a GPU request without CUDA
is an error unless the spec allows the CPU), its share of the GPU, the compute dtype (`autocast`), and
the memory check before anything is allocated.
"""
from __future__ import annotations

import ctypes
import math
import os
import platform
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from zoo.errors import UserError
from zoo.config import Config

__all__ = ["GPUOutOfMemoryError", "NoGPU", "autocast", "autocast_dtype", "available_memory", "check_memory",
           "cpu_has_bf16", "cuda_seen", "gpu_share", "keep_freed_memory",
           "train_device"]  # what it lends outside its package (the door serves these)


def rank_and_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def agreed(elapsed: float, device) -> float:
    """The longest of the ranks' training times (an all-reduce MAX on the model's device), so that the
    time limit and the checkpoint clock stop or save every rank at the same step."""
    if rank_and_world()[1] == 1:
        return elapsed
    t = torch.tensor([elapsed], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


class NoGPU(UserError):
    """A spec asks for a GPU where torch sees none (and does not opt into the CPU fallback)."""


def cuda_seen() -> str:
    """What torch sees of CUDA here, for messages."""
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return (f"torch {torch.__version__} ({build}) sees {torch.cuda.device_count()} CUDA devices, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}")


def train_device(cfg: Config) -> torch.device:
    """The device this process trains on. A GPU request without CUDA stops here, before anything is
    built, unless the spec opts into the CPU (resources.allow_cpu_fallback): a run that asked for a GPU
    and silently took hours on a CPU is a worse outcome than an error."""
    r = cfg.resources
    if r.gpus <= 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if r.allow_cpu_fallback:
            print(f"zoo: resources.gpus {r.gpus:g} but {cuda_seen()}: training on the CPU "
                  "(resources.allow_cpu_fallback)", file=sys.stderr)
            return torch.device("cpu")
        raise NoGPU(f"variant {cfg.variant}: resources.gpus is {r.gpus:g}, but {cuda_seen()}. Install a CUDA "
                    "build of torch or run where a GPU is visible; or set resources.gpus=0 to train on the CPU, "
                    "or resources.allow_cpu_fallback=true to accept the CPU when no GPU is there")
    device = torch.device("cuda", torch.cuda.current_device())
    if r.gpus < 1:  # a share: the caching allocator stops at it, so a neighbour's trial keeps its own
        torch.cuda.set_per_process_memory_fraction(r.gpus, device)
    # TF32 for whatever fp32 matmuls stay outside bf16 autocast (Ampere and newer)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    # cuDNN's attention builds an execution plan per exact shape, and token-budget batches bring a new
    # shape almost every step; flash and memory-efficient attention need no plan (and are as fast here)
    torch.backends.cuda.enable_cudnn_sdp(False)
    return device


def gpu_share(cfg: Config, device) -> tuple[int, str]:
    """Bytes of the GPU this trial may use (its resources.gpus share) and how to say so."""
    total = torch.cuda.get_device_properties(device).total_memory
    g = min(cfg.resources.gpus, 1.0)
    if g >= 1:
        return total, f"GPU {device} holds"
    return int(total * g), (f"its share of GPU {device} (resources.gpus {g:g}: {g:.0%} of "
                            f"{total / 2**30:.1f} GiB, the rest for up to {math.floor(1 / g) - 1} other trials) is")


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AVX512-BF16 or AMX), through oneDNN. Elsewhere
    torch emulates bf16 matmuls, slower than fp32 ones."""
    try:
        return torch.backends.mkldnn.is_available() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# `precision: auto` on a GPU: bf16 autocast from this width on, TF32 below it. On an H100 (b2e5323) the cpu
# profile's base (d_model 256) trained at 178-203k target tokens/s in TF32 and 100-128k under bf16 autocast:
# at that width the casts cost more than the bf16 matmuls save. That bf16 wins at the paper's widths (512,
# 1024) is a hypothesis the GPU check measures (scripts/gpu-check.sh, the small-trial step).
AUTO_BF16_FROM = 512


def autocast_dtype(precision: str, device: torch.device, d_model: int | None = None) -> torch.dtype | None:
    """The dtype training's matmuls autocast to on `device`; None: fp32 throughout (TF32 on a GPU).

    bf16 autocast keeps the weights, their gradients, Adam's moments and the loss in fp32 (mixed
    precision, as on a GPU). On this project's 2-core CPU (AVX512-BF16) a bf16 matmul runs at ~4x
    the fp32 one and a cpu-profile step takes ~0.4x the time (attention stays fp32 there, see
    zoo.model.MultiHeadAttention). `auto` picks what is faster for a model of width `d_model`: fp32 on a
    CPU, and on a GPU bf16 from AUTO_BF16_FROM on (None: any width)."""
    if precision == "fp32" or (precision == "auto" and device.type != "cuda"):
        return None
    if precision == "auto" and d_model is not None and d_model < AUTO_BF16_FROM:
        return None
    if device.type == "cuda" or cpu_has_bf16():
        return torch.bfloat16
    print("zoo: train.precision bf16: this CPU has no bf16 instructions (AVX512-BF16 or AMX), where bf16 "
          "matmuls are slower than fp32 ones; training in fp32 (the run records it)", file=sys.stderr)
    return None


def autocast(device: torch.device, amp: torch.dtype | None):
    """The context a training forward pass runs in: autocast to `amp` (from autocast_dtype), or off."""
    return torch.autocast(device.type, dtype=amp or torch.bfloat16, enabled=amp is not None)



def keep_freed_memory() -> bool:
    """Have glibc's malloc keep the memory a training step frees, for the next step to reuse.

    By default glibc serves every allocation over 32 MB (the logits, their gradient and the
    log-probabilities of a step: tokens x vocabulary floats, 134 MB at 4200 x 8000) with a fresh
    mmap and unmaps it on free, so every step page-faults those buffers in again (kernel time,
    zeroed pages): a fifth of the CPU time of a cpu-profile step. No mmap for allocations and no
    trimming of the heap's top keep them in the process once the first steps have grown it.
    The process then holds its peak memory (it would again on the next step). Returns whether the
    setting took (False off glibc)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, -1))  # -1: never trim



def check_memory(cfg: Config, world: int, device) -> None:
    """Refuse a model this machine (or GPU) cannot train before allocating anything."""
    from zoo.model import gib, memory_text, train_memory
    est = train_memory(cfg, world)
    if device.type == "cuda":
        have, what = gpu_share(cfg, device)
    else:
        have, what = available_memory(), "this machine has available"
    if have and est["total"] > have:
        raise UserError(f"variant {cfg.variant}: training needs about {memory_text(est)}, but {what} "
                        f"{gib(have)}; lower model.d_model, model.d_ff or model.N, set "
                        "train.max_tokens_per_device (gradient accumulation keeps the step's batch) or "
                        "lower data.max_len, or use a machine with more memory")


class GPUOutOfMemoryError(UserError):
    """The GPU ran out of memory: the trial fails with the figures that set its size."""


def out_of_memory(cfg: Config, model, device, step: int, world: int, e: Exception) -> GPUOutOfMemoryError:
    """The GPUOutOfMemoryError of `model` training at `step`: the figures that set its size, and what to change."""
    from zoo.model import count_params, gib, memory_text, train_memory
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


def available_memory() -> int | None:
    """Bytes this process can still allocate: MemAvailable, capped by a cgroup (container) limit."""
    try:
        info = dict(l.split(":", 1) for l in Path("/proc/meminfo").read_text().splitlines() if ":" in l)
        have = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit.isdigit():
            have = min(have, int(limit) - used)
    except (OSError, ValueError):
        pass
    return have


