"""A roofline model of one training step, traced on the meta device (bench_train.py --predict).

One forward, loss and backward of zoo's Transformer runs on meta tensors (shapes only, no data)
under a dispatch mode that sees every aten op: matmul-class ops (mm, addmm, bmm, attention) count
their FLOPs with torch.utils.flop_counter's formulas, every op counts the bytes it reads and writes.
An op takes max(FLOPs / peak, bytes / bandwidth); a step is the sum over its ops, plus the fused
Adam update (fp32 weight, gradient and two moments read, three written: 28 bytes a parameter).

`fused` models torch.compile: a chain of pointwise ops (each consuming the one before) becomes one
kernel, so the intermediate tensors between them are neither written nor read back. Attention is
traced as the memory-efficient SDPA kernel (its FLOPs, its inputs and outputs: scores never reach
memory), as on a GPU where cuDNN attention is off (zoo.train.device.train_device).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

# bf16 dense tensor-core peaks and HBM bandwidths, from the vendors' data sheets:
# H100 SXM5: 989 TFLOP/s bf16 dense (1979 with sparsity), 3.35 TB/s HBM3 (NVIDIA H100 Tensor Core GPU
# datasheet, 2023); A100 SXM4 80GB: 312 TFLOP/s bf16 dense, 2.039 TB/s HBM2e (NVIDIA A100 datasheet, 2021).
GPUS = {"H100 SXM": (989e12, 3.35e12), "A100 SXM": (312e12, 2.0e12)}


@dataclass
class Trace:
    flops: float = 0.0  # matmul-class FLOPs
    seconds: float = 0.0  # the roofline sum
    bytes: float = 0.0  # bytes moved, all ops
    ops: int = 0  # kernels (after fusion when fused)


def _bytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_bytes(y) for y in x)
    return 0


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)




class _Count(TorchDispatchMode):
    def __init__(self, peak: float, bandwidth: float, fused: bool):
        super().__init__()
        self.peak, self.bw, self.fused = peak, bandwidth, fused
        self.t = Trace()
        self.last_pointwise: set[int] = set()  # ids of the storages the previous pointwise op wrote

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view or func in (torch.ops.aten.detach.default, torch.ops.aten._unsafe_view.default) \
                or func.name().startswith(("aten::view", "aten::_reshape_alias", "aten::t", "aten::transpose",
                                           "aten::expand", "aten::permute", "aten::split", "aten::slice")):
            return out  # no data moves
        if func.name().startswith(("aten::empty", "aten::new_empty", "aten::zeros", "aten::ones",
                                   "aten::full", "aten::new_full", "aten::scalar_tensor", "aten::lift")):
            return out  # an allocation (a zero fill, if any, is a memset: counted as free)
        read = [t for t in _tensors((args, list(kwargs.values())))]
        wrote = list(_tensors(out))
        nbytes = sum(_bytes(t) for t in read) + sum(_bytes(t) for t in wrote)
        if func.name().startswith(("aten::gather", "aten::scatter", "aten::index", "aten::select")):
            # indexed: only the addressed elements move (2 x the index's count, plus the index)
            small = min((t for t in read + wrote if t.dim()), key=lambda t: t.numel(), default=None)
            nbytes = 3 * _bytes(small) if small is not None else 0
        flops = flop_registry[func._overloadpacket](*args, **kwargs, out_val=out) \
            if func._overloadpacket in flop_registry else 0
        pointwise = torch.Tag.pointwise in func.tags
        if self.fused and pointwise:
            chained = [t for t in read if t.untyped_storage()._cdata in self.last_pointwise]
            if chained:  # fused with the op before: its output stays in registers, one kernel for both
                nbytes -= 2 * sum(_bytes(t) for t in chained)
                self.t.ops -= 1
            self.last_pointwise = {t.untyped_storage()._cdata for t in wrote}
        else:
            self.last_pointwise = set()
        self.t.ops += 1
        self.t.flops += flops
        self.t.bytes += max(nbytes, 0)
        self.t.seconds += max(flops / self.peak, max(nbytes, 0) / self.bw)
        return out


class _EfficientAttention(TorchFunctionMode):
    """SDPA as the memory-efficient kernel (the meta device would otherwise trace the math path,
    whose (T x S) scores a fused kernel never writes)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not F.scaled_dot_product_attention:
            return func(*args, **kwargs)
        q, k, v = args[:3]
        mask, causal = kwargs.get("attn_mask"), kwargs.get("is_causal", False)
        bias = None
        if mask is not None:
            bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).expand(q.size(0), q.size(1), q.size(2), k.size(2))
        out = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, causal)[0]
        return out


# The label-smoothed loss under train.compile on (zoo.train's per-chunk kernels, compiled): the forward
# reads each logit twice (the row's max, then its log-sum-exp, the target's and the smoothing sum in the
# same pass) and keeps the log-sum-exp; the backward reads each logit once and writes its gradient once.
COMPILED_LOSS_ACCESSES = 4  # per logit, each of the logits' element size


def step(model, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor, loss_fn, peak: float,
         bandwidth: float, fused: bool, n_params: int, compiled_loss: bool = False) -> Trace:
    """The roofline of one training step of `model` (already on the meta device) on these shapes.
    compiled_loss: the loss as its compiled kernels (COMPILED_LOSS_ACCESSES), not as the eager ops traced."""
    count = _Count(peak, bandwidth, fused)
    with _EfficientAttention(), count:
        logits = model(src, tgt_in)
        if compiled_loss:  # the eager loss's ops are not traced: its grad enters the graph as one tensor
            count.__exit__(None, None, None)
            nbytes = COMPILED_LOSS_ACCESSES * _bytes(logits)
            count.t.bytes += nbytes
            count.t.seconds += nbytes / bandwidth
            count.t.ops += 2
            count.__enter__()
            logits.backward(torch.empty_like(logits))
        else:
            loss = loss_fn(logits, tgt_out)
            loss.backward()
    t = count.t
    adam = 28 * n_params  # fused Adam: p, g, m, v read; p, m, v written (fp32)
    t.bytes += adam
    t.seconds += adam / bandwidth
    return t
