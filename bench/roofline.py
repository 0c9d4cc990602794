"""A roofline of one training step, traced on the meta device (bench_train.py --predict).

The trace: one forward, loss and backward of zoo's Transformer on meta tensors (shapes only) of a batch's
padded shapes, under a dispatch mode that sees every aten op. Each op is one kernel: matmul-class ops count
their FLOPs (torch.utils.flop_counter's formulas), every op the bytes it reads and writes (a broadcast
tensor once; an indexed op only what it addresses). What the trace models:
- autocast's real traffic (`amp`): the weights, the embeddings and the residual stream stay fp32; a matmul
  (linear, the pre-softmax product, attention) casts its fp32 inputs to bf16 (a kernel reading 4 and writing
  2 bytes an element; a weight once per forward, as autocast caches the casts of leaf tensors), then reads and
  writes bf16; the backward casts those inputs' gradients back to fp32; layer norm runs in fp32;
- attention as the fused kernel a GPU runs (memory-efficient SDPA, as with cuDNN attention off: the scores
  never reach memory), with its own achievable fraction (short sequences keep it far from the peak);
- padding: the trace runs a real batch's padded shapes, while MFU counts its non-pad tokens only;
- dropout's random draws: a mask element is a draw, which a CPU makes at a measured rate far below its copy
  bandwidth (about a fifth of a bf16 cpu-profile step on this Xeon; without it the self-check read -14 to -28%);
  a GPU's draws are memory-bound;
- `fused` (train.compile on): a chain of pointwise ops (casts included) is one kernel whose intermediate
  tensors are neither written nor read back; the loss is its compiled per-chunk kernels.
Time: each kernel takes max(FLOPs / (peak x the device's achievable fraction), bytes / (bandwidth x its
achievable fraction), the device's floor per kernel); a GPU's step is their sum but never less than the
host's dispatch time (kernels x host seconds each: eager PyTorch queues kernels one by one); a CPU runs each
kernel on the host, so the dispatch time adds. Plus the fused Adam update (28 bytes a parameter).
A device's fractions and costs are ranges: a prediction is a point (each range's middle) and its best and
worst cases. This CPU's side is measured, not assumed (`calibrate_cpu`): its peak, its copy bandwidth, the
fraction its matmul and attention kernels reach at the step's own shapes, its per-op cost, its exp and
random-draw rates.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry


@dataclass(frozen=True)
class Device:
    name: str
    peak: float  # matmul FLOP/s in the compute dtype (datasheet, or measured on a CPU)
    bandwidth: float  # memory bytes/s (datasheet, or measured)
    matmul: tuple[float, float]  # fraction of the peak this model's GEMMs reach (worst, best)
    attention: tuple[float, float]  # the same inside the fused attention kernels
    memory: tuple[float, float]  # fraction of the bandwidth a memory-bound kernel reaches
    floor: tuple[float, float]  # seconds any kernel takes at least on the device (best, worst)
    host: tuple[float, float]  # host seconds to dispatch one kernel, eager (best, worst)
    synchronous: bool = False  # a CPU: the host runs each kernel itself, so dispatch adds instead of overlapping
    exp_per_s: float = float("inf")  # elements/s of an exp-heavy kernel (softmax): a CPU's limit, never a GPU's
    rng_per_s: float = float("inf")  # elements/s of a random draw (dropout's mask): a CPU's limit, never a GPU's
    source: str = ""
    # the calibrated terms (H100_MEASURED); 0 / None: the datasheet model above
    attention_tile: float = 0.0  # seconds per attention tile (a sentence x a head x 64 x 64 positions, fwd + bwd)
    matmul_fixed: float = 0.0  # seconds every matmul kernel takes on top of its FLOPs (tails, thin shapes)
    memory_fixed: float = 0.0  # seconds every memory-bound kernel takes on top of its bytes (launch, tail)
    exp_memory: tuple[float, float] | None = None  # fraction of the bandwidth an exp-heavy kernel (softmax) reaches
    pipeline: bool = False  # host and GPU as a queue, kernel by kernel (idle GPU where the host lags), not max of sums


# Datasheets (bf16 dense tensor-core peak, HBM bandwidth): H100 SXM5 989 TFLOP/s (1979 with sparsity), 3.35 TB/s
# (NVIDIA H100 datasheet, 2023); H200 SXM 989 TFLOP/s, 4.8 TB/s (NVIDIA H200 datasheet, 2024); A100 SXM4 80GB
# 312 TFLOP/s, 2.039 TB/s (NVIDIA A100 datasheet, 2021). The achievable fractions are this model's, not a
# large square GEMM's: K = d_model (512, 1024) is thin, and cuBLAS's best large bf16 GEMMs reach about
# 0.75-0.8 of the H100's and 0.8-0.85 of the A100's peak. Attention at 20-40 tokens a sentence is a grid of
# tiny tiles. STREAM-like copies reach 0.8-0.9 of HBM. Eager PyTorch spends 5-12 us of host time per op
# with autograd; a kernel lasts at least 2-4 us.
_GPU = dict(attention=(0.10, 0.35), memory=(0.70, 0.90), floor=(2e-6, 4e-6), host=(5e-6, 12e-6))
GPUS = {
    "H100 SXM": Device("H100 SXM", 989e12, 3.35e12, matmul=(0.45, 0.75), **_GPU, source="datasheet"),
    "H200 SXM": Device("H200 SXM", 989e12, 4.8e12, matmul=(0.45, 0.75), **_GPU, source="datasheet"),
    "A100 SXM": Device("A100 SXM", 312e12, 2.039e12, matmul=(0.55, 0.80), **_GPU, source="datasheet"),
}


# -- the roofline calibrated on a measured H100 -------------------------------------------------------
# Every constant of the calibration, measured on one H100 80GB HBM3 (PyTorch 2.11.0+cu130): the first run at
# b2e5323 (../shared/gpu/h100-first-run: base 46.8 ms, big 77.5 ms a step on 12,500-token batches, bf16 autocast,
# eager) and a torch.profiler run of the same step (issue 44; base and big at 12,500 and 25,000 tokens:
# docs/benchmarks.md). The profiler's kernel time per class at 12,500 tokens (base / big, ms a step): elementwise, reduce
# and copies 20.7 / 30.4, attention 9.3 / 18.3, matmuls 8.4 / 22.7, softmax (the loss's, over 37,000) 4.5 / 4.5,
# fused Adam 0.67 / 2.24, GPU idle (synchronized wall - busy) 5.3 / 3.1; the host queued a step's 1746 kernels
# in 43.6 ms. Fitted from those, not from the step times they are checked against:
H100_MEASURED = dict(
    peak=989e12, bandwidth=3.35e12,  # the datasheet's: the fractions below are of these
    # matmuls: F / (peak x 0.875) + 12 us a kernel: the two-point fit to base's 8.41 ms (5.16 traced TFLOP) and
    # big's 22.70 ms (17.52 TFLOP) over 201 traced matmuls each. That 0.875 is above the square-GEMM peak the
    # run measured (0.70 of the datasheet), so how the time splits between the two terms is a hypothesis
    matmul=(0.875, 0.875), matmul_fixed=12.2e-6,
    # memory-bound kernels (elementwise, reductions, copies, dropout, Adam): bytes / (0.86 x the bandwidth) +
    # 3.8 us a kernel: the fit to base's 21.4 ms (48.2 traced GB) and big's 32.6 ms (80.6 GB), 1238 kernels each
    memory=(0.86, 0.86), memory_fixed=3.8e-6,
    # the loss's softmax kernels over 37,000 logits a row: the traced bytes (8.07 GB) at 0.53 of the bandwidth
    exp_memory=(0.53, 0.53),
    # memory-efficient attention at 12-28 positions a sentence: 66-67 ns per tile (one sentence, one head, up
    # to 64 x 64 positions, forward and backward), base and big, 12,500 and 25,000 tokens alike (d_k 64); its
    # FLOPs at these lengths are 0.3% of the peak's worth. Tiles for sentences past 64 positions: a hypothesis
    attention_tile=66.6e-9, attention=(0.10, 0.35),
    # the host: 28 us to queue a traced kernel (43.6 ms / 1533 traced kernels: Python, autograd, autocast,
    # the allocator), as a queue: the GPU idles where a stretch of short kernels outruns the host
    host=(28e-6, 28e-6), floor=(0.0, 0.0), pipeline=True,
)
CALIBRATED = {"H100 SXM": Device("H100 SXM (calibrated)", **H100_MEASURED,
                                 source="calibrated on H100 80GB HBM3, b2e5323 and issue 44's profile")}


def gpu_spec(device_name: str) -> Device | None:
    """The datasheet entry for a torch.cuda.get_device_name() (NVIDIA H100 80GB HBM3, NVIDIA A100-SXM4-80GB)."""
    for key in ("H200", "H100", "A100"):
        if key in device_name.upper():
            return GPUS[f"{key} SXM"]
    return None


@dataclass
class Kernel:
    kind: str  # "matmul", "attention", "memory", "exp" or "rng" (the last two: memory-bound on a GPU, compute-bound on a CPU)
    flops: float
    bytes: float
    replay: tuple | None = None  # a matmul's or attention's call, to time it on this CPU (calibrate_cpu)
    tiles: float = 0.0  # attention: half the call's tiles (sentences x heads x 64 x 64 blocks) per fwd or bwd kernel


@dataclass
class Trace:
    kernels: list[Kernel] = field(default_factory=list)

    @property
    def flops(self) -> float:
        return sum(k.flops for k in self.kernels if k.kind in ("matmul", "attention"))

    @property
    def bytes(self) -> float:
        return sum(k.bytes for k in self.kernels)

    def seconds(self, d: Device, case: str = "mid") -> float:
        """The step on device d: case "best", "mid" (each range's middle) or "worst"."""
        pick = {"best": lambda r, up: r[up], "worst": lambda r, up: r[1 - up], "mid": lambda r, up: sum(r) / 2}[case]
        frac = {"matmul": pick(d.matmul, 1), "attention": pick(d.attention, 1)}
        bw, floor, host = d.bandwidth * pick(d.memory, 1), pick(d.floor, 0), pick(d.host, 0)
        rate = {"exp": d.exp_per_s, "rng": d.rng_per_s, "memory": float("inf")}
        exp_bw = d.bandwidth * pick(d.exp_memory, 1) if d.exp_memory else bw
        work = [max(k.flops / (d.peak * frac[k.kind]) if k.kind in frac else k.flops / rate[k.kind],
                    k.bytes / (exp_bw if k.kind == "exp" else bw)) for k in self.kernels]
        if d.attention_tile or d.matmul_fixed or d.memory_fixed:  # the calibrated terms (H100_MEASURED)
            work = [k.tiles * d.attention_tile if k.kind == "attention" and d.attention_tile
                    else w + (d.matmul_fixed if k.kind == "matmul" else d.memory_fixed)
                    for k, w in zip(self.kernels, work)]
        if d.synchronous:
            return sum(work) + host * len(work)
        if d.pipeline:  # the host queues kernel i at (i + 1) x host; the GPU runs it once queued and free
            gpu = 0.0
            for i, w in enumerate(work):
                gpu = max(gpu, (i + 1) * host) + max(w, floor)
            return gpu
        return max(sum(max(w, floor) for w in work), host * len(work))


def _bytes(x) -> int:
    if isinstance(x, torch.Tensor):  # a broadcast (expanded) tensor is read once, not once per element
        return min(x.numel() * x.element_size(), x.untyped_storage().nbytes())
    if isinstance(x, (list, tuple)):
        return sum(_bytes(y) for y in x)
    return 0


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)


# ops by name without the overload: views and allocations move no data; an indexed op moves only what it
# addresses; an exp-heavy op runs an exp (or the like) per element
_FREE = {"aten::view", "aten::_reshape_alias", "aten::t", "aten::transpose", "aten::expand", "aten::permute",
         "aten::split", "aten::split_with_sizes", "aten::slice", "aten::detach", "aten::_unsafe_view", "aten::alias",
         "aten::unsqueeze", "aten::squeeze", "aten::as_strided", "aten::unbind", "aten::select", "aten::empty",
         "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided", "aten::lift_fresh",
         "aten::scalar_tensor"}
_INDEXED = {"aten::gather", "aten::scatter", "aten::scatter_add", "aten::scatter_add_", "aten::index",
            "aten::index_select", "aten::embedding", "aten::index_put_", "aten::_index_put_impl_"}
# a random draw per element (dropout's mask): on a CPU generating the numbers, not memory, sets the pace
_RNG = {"aten::bernoulli_", "aten::bernoulli", "aten::native_dropout", "aten::uniform_", "aten::rand"}
_EXP = {"aten::_softmax", "aten::_log_softmax", "aten::exp", "aten::logsumexp", "aten::tanh", "aten::gelu",
        "aten::_log_softmax_backward_data"}


class _Count(TorchDispatchMode):
    def __init__(self, fused: bool):
        super().__init__()
        self.fused = fused
        self.t = Trace()
        self.last_pointwise: set[int] = set()  # ids of the storages the previous pointwise op wrote

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.name().split(".")[0]
        if func.is_view or name in _FREE:
            return out
        read, wrote = list(_tensors((args, list(kwargs.values())))), list(_tensors(out))
        if name.startswith("aten::new_") or name.endswith("_like"):  # its argument gives a shape, not data
            read = []
        nbytes = sum(_bytes(t) for t in read) + sum(_bytes(t) for t in wrote)
        if name in _INDEXED:  # only the addressed elements move (2 x the index's count, plus the index)
            small = min((t for t in read + wrote if t.dim()), key=lambda t: t.numel(), default=None)
            nbytes = 3 * _bytes(small) if small is not None else 0
        flops = flop_registry[func._overloadpacket](*args, **kwargs, out_val=out) \
            if func._overloadpacket in flop_registry else 0
        kind = "attention" if "attention" in name else "matmul" if flops else "exp" if name in _EXP \
            else "rng" if name in _RNG else "memory"
        if kind in ("exp", "rng"):  # counted in elements, timed against the device's exp or random-draw rate
            flops = sum(t.numel() for t in wrote)
        replay = (func, [(tuple(t.shape), t.stride(), t.dtype) if isinstance(t, torch.Tensor) else t for t in args]) \
            if kind == "matmul" else None
        pointwise = torch.Tag.pointwise in func.tags or name == "aten::_to_copy"
        if self.fused and pointwise:
            chained = [t for t in read if t.untyped_storage()._cdata in self.last_pointwise]
            if chained and self.t.kernels and self.t.kernels[-1].kind in ("memory", "exp"):
                # fused with the op before: its output stays in registers, one kernel for both
                prev = self.t.kernels.pop()
                nbytes += prev.bytes - 2 * sum(_bytes(t) for t in chained)
                kind = "exp" if "exp" in (kind, prev.kind) else kind
                flops += prev.flops
            self.last_pointwise = {t.untyped_storage()._cdata for t in wrote}
        else:
            self.last_pointwise = set()
        tiles = 0.0
        if kind == "attention":  # q (B, h, T, d), k (B, h, S, d): after the backward's grad_out
            q, k = [t for t in _tensors(args) if t.dim() == 4][1 if "backward" in name else 0:][:2]
            tiles = q.size(0) * q.size(1) * -(-q.size(2) // 64) * -(-k.size(2) // 64) / 2
        self.t.kernels.append(Kernel(kind, flops, max(nbytes, 0), replay, tiles))
        return out


class _Functions(TorchFunctionMode):
    """What the run's autocast and attention backend do, at the function level (the meta device has no
    autocast of its own): amp casts each matmul's inputs to bf16 (a leaf weight once per forward, as
    autocast's cache), layer norm runs fp32; SDPA becomes the memory-efficient kernel (fp32 under
    attention_fp32, as zoo.model runs it under a CPU's autocast). `attention` collects SDPA's calls."""

    MATMULS = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__}

    def __init__(self, amp: bool, attention_fp32: bool = False, math: bool = False):
        super().__init__()
        self.amp, self.attention_fp32, self.math = amp, attention_fp32, math
        self.cache: dict[int, torch.Tensor] = {}
        self.attention: list[tuple] = []

    def _low(self, t):
        if not (self.amp and isinstance(t, torch.Tensor) and t.dtype == torch.float32):
            return t
        if t.is_leaf and t.requires_grad:  # a weight: cast once per forward
            return self.cache.setdefault(id(t), t.to(torch.bfloat16))
        return t.to(torch.bfloat16)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.amp and func in self.MATMULS:
            return func(*[self._low(a) for a in args], **{k: self._low(v) for k, v in kwargs.items()})
        if self.amp and func is F.layer_norm:
            return func(args[0].float(), *args[1:], **kwargs)
        if func is not F.scaled_dot_product_attention:
            return func(*args, **kwargs)
        q, k, v = args[:3]
        q, k, v = (x.float() for x in (q, k, v)) if self.attention_fp32 else (self._low(x) for x in (q, k, v))
        mask, causal = kwargs.get("attn_mask"), kwargs.get("is_causal", False)
        self.attention.append((q.shape, k.shape, v.shape, None if mask is None else mask.shape, causal, q.dtype))
        if self.math:  # the math backend's own ops, each a kernel (traced by _Count)
            with sdpa_kernel([SDPBackend.MATH]):
                return func(q, k, v, *args[3:], **kwargs)
        bias = None
        if mask is not None:  # the additive bias SDPA makes of a boolean mask, broadcast over heads and queries
            bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).expand(q.size(0), q.size(1), q.size(2), k.size(2))
        return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, causal)[0]


# The label-smoothed loss under train.compile on (zoo.train's per-chunk kernels, compiled): the forward
# reads each logit twice (the row's max, then its log-sum-exp, the target's and the smoothing sum in the
# same pass) and keeps the log-sum-exp; the backward reads each logit once and writes its gradient once.
COMPILED_LOSS_ACCESSES = 4  # per logit, each of the logits' element size


def step(model, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor, loss_fn, fused: bool = False,
         amp: bool = False, compiled_loss: bool = False, attention_fp32: bool = False, states: bool = False,
         segments: dict | None = None, math_attention: bool = False) -> tuple[Trace, list]:
    """The kernels of one training step of `model` (fp32 weights, on the meta device) on these shapes, and
    its attention calls. compiled_loss: the loss as its compiled kernels (COMPILED_LOSS_ACCESSES), not as
    the eager ops traced. states: the model gives its decoder's final states and loss_fn(states, tgt_out)
    applies the pre-softmax map itself (train.fused_loss on); segments: a packed batch's src_seg, tgt_seg;
    math_attention: SDPA as its math backend's kernels (matmuls, a softmax: a stack's, zoo.train.stacked.ATTENTION)."""
    count, fns = _Count(fused), _Functions(amp, attention_fp32, math_attention)
    with fns, count:
        logits = model(src, tgt_in, **(segments or {}), **({"states": True} if states else {}))
        fns.cache.clear()
        if compiled_loss:  # the eager loss's ops are not traced: its grad enters the graph as one tensor
            nbytes = COMPILED_LOSS_ACCESSES * _bytes(logits)
            count.t.kernels += [Kernel("memory", 0, nbytes / 2), Kernel("memory", 0, nbytes / 2)]
            logits.backward(torch.empty_like(logits))
        else:
            loss_fn(logits, tgt_out).backward()
    params = [p for p in model.parameters()]
    n = sum(p.numel() for p in params)
    # fused Adam: p, g, m, v read; p, m, v written (fp32); a launch per ~100 tensors (multi-tensor apply)
    count.t.kernels += [Kernel("memory", 0, 28 * n / (len(params) // 100 + 1))] * (len(params) // 100 + 1)
    return count.t, fns.attention


# -- this CPU, measured ------------------------------------------------------------------------------

def _timed(fn, seconds: float = 0.05, least: int = 2) -> float:
    fn()
    k, t = 0, time.perf_counter()
    while (el := time.perf_counter() - t) < seconds or k < least:
        fn()
        k += 1
    return el / k


def per_op_seconds() -> float:
    """Host seconds of one small eager op with autograd on this CPU (dispatch, autograd, allocation)."""
    x = torch.randn(64, requires_grad=True)

    def chain():
        y = x
        for _ in range(50):
            y = y * 1.0001
        y.sum().backward()
    return _timed(chain, 0.2) / 102  # 50 forward and 50 backward multiplies, the sum and its backward


def calibrate_cpu(traces: list[tuple[Trace, list]], peak: float, bandwidth: float, name: str = "this CPU",
                  probe: tuple = (4000, 8000)) -> Device:
    """This CPU as a Device: its measured peak and bandwidth, the fraction of the peak its matmuls and its
    attention reach at these traces' own shapes (every distinct one timed once with real tensors), and the
    host cost of an op, the rate of a softmax's exps and of dropout's random draws (on a `probe`-shaped tensor;
    --tiny's is smaller). Every range is a point: measured, not assumed."""
    mm_f = mm_s = at_f = at_s = 0.0
    seen: dict = {}
    for tr, attention in traces:
        for k in tr.kernels:
            if k.replay is None:
                continue
            func, shapes = k.replay
            key = (str(func), str(shapes))
            if key not in seen:
                args = [_real(*a) if isinstance(a, tuple) else a for a in shapes]
                seen[key] = _timed(lambda: func(*args))
            mm_f, mm_s = mm_f + k.flops, mm_s + seen[key]
        flops = sum(k.flops for k in tr.kernels if k.kind == "attention")
        secs = 0.0
        for q, kk, v, mask, causal, dtype in attention:
            key = ("sdpa", q, kk, v, mask, causal, dtype)
            if key not in seen:
                qt, kt, vt = (torch.randn(s, dtype=dtype, requires_grad=True) for s in (q, kk, v))
                m = None if mask is None else torch.ones(mask, dtype=torch.bool)

                def fwd_bwd():
                    F.scaled_dot_product_attention(qt, kt, vt, attn_mask=m, is_causal=causal).sum().backward()
                seen[key] = _timed(fwd_bwd)
            secs += seen[key]
        at_f, at_s = at_f + flops, at_s + secs
    mm, at = mm_f / mm_s / peak, (at_f / at_s / peak if at_s else 1.0)
    host = per_op_seconds()
    x = torch.randn(*probe)  # a CPU's softmax is bound by its exps, not by memory (logits-sized: past the caches)
    exp_per_s = x.numel() / _timed(lambda: torch.softmax(x, -1), 0.2)
    rng_per_s = x.numel() / _timed(lambda: x.bernoulli_(0.9), 0.2)  # dropout's mask, as F.dropout draws it
    return Device(name, peak, bandwidth, matmul=(mm, mm), attention=(at, at), memory=(1.0, 1.0), floor=(0.0, 0.0),
                  host=(host, host), synchronous=True, exp_per_s=exp_per_s, rng_per_s=rng_per_s, source="measured")


def _real(size, stride, dtype) -> torch.Tensor:
    """A real tensor laid out as a traced one (a weight's transposed view stays transposed)."""
    extent = 1 + sum((n - 1) * st for n, st in zip(size, stride))
    return torch.randn(extent, dtype=dtype).as_strided(size, stride)


def cpu_spec_peak(threads: int, bf16: bool) -> tuple[float, str]:
    """This CPU's nominal matmul peak from its flags and clock (no datasheet to hand): threads x the clock
    /proc/cpuinfo reports x FLOPs a cycle (AVX-512: 2 FMA units of 16 fp32 lanes assumed, 64; AVX2: 32;
    bf16 on AMX: 1024, on AVX512-BF16: 128). A label says how it was made."""
    info = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    flags = set(next((l.split(":", 1)[1].split() for l in info.splitlines() if l.startswith("flags")), []))
    mhz = next((float(l.split(":", 1)[1]) for l in info.splitlines() if l.startswith("cpu MHz")), 0.0)
    if bf16:
        per, what = (1024, "AMX bf16") if "amx_bf16" in flags else (128, "AVX512-BF16") if "avx512_bf16" in flags \
            else (0, "no bf16 instructions")
    else:
        per, what = (64, "AVX-512 fp32, 2 FMA units assumed") if "avx512f" in flags else (32, "AVX2 fp32")
    return threads * mhz * 1e6 * per, f"nominal: {threads} threads x {mhz / 1e3:.1f} GHz x {per} FLOP/cycle ({what})"
