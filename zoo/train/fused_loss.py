"""The pre-softmax map and the label-smoothed loss in one, chunk by chunk (train.fused_loss on): the
(tokens x V) logits are never held whole, forward or backward.

zoo.train.recipe.smoothed_loss takes the model's logits: for the paper's base batch (12,500 target tokens x
37,000) 0.9 GB in bf16, kept for the backward, plus its gradient of the same size. Here the loss takes the
decoder's final states h (N, d_model) and the output matrix W (V, d_model; the tied embedding where the
model ties them) and, for each chunk of rows, computes logits = h W^T, the loss in closed form and the
log-sum-exp, and from the same chunk d loss / d logits = softmax - q (padding rows 0), then dh = g W and
dW += g^T h (the loss is a sum: the backward only scales them by its one incoming number). Held from the
forward to the backward: dh and dW, the size of h and W.

Smoothing in closed form, as the recipe defines it: q puts 1 - eps on the target and eps / (V - 2) on every
token but the target and padding, so loss = (1 - eps) nll + eps / (V - 2) ((V - 2) lse - (sum of logits -
target's - pad's)). Padding rows are excluded as today. Same value and gradients as recipe.smoothed_loss on
the model's logits (tests/test_fused_loss.py: fp32 and bf16 autocast, tolerances there).

Under autocast the matmuls run in the autocast dtype, as the model's own pre-softmax map does (the logits of
a chunk in bf16, upcast to fp32 for the softmax); the gradient of W sums the chunks in fp32.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

from zoo.tokens import PAD

__all__ = []  # nothing outside its package: the package's parts import it by module

# logits per chunk: on a GPU 2^26 (256 MB in fp32, 1813 rows of a 37,000-token vocabulary: 7 chunks of the
# paper's base batch, whose ~25 kernels each the host queues at ~28 us; smaller chunks leave an H100 waiting
# on the host, bench/bench_speed.py --part predict); on a CPU, which runs each kernel itself, 2^22 (16 MB)
CHUNK = {"cuda": 2 ** 26, "cpu": 2 ** 22}


def _compute_dtype(x: torch.Tensor) -> torch.dtype | None:
    """The autocast dtype the model's matmuls take here, or None (no autocast: the inputs' own)."""
    kind = x.device.type
    if not torch.amp.is_autocast_available(kind):  # the meta device (bench/roofline.py's trace)
        return None
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None


def _chunk_loss(x: torch.Tensor, target: torch.Tensor, eps: float):
    """Per row of fp32 logits x (rows, V): the smoothed loss, the NLL and the log-sum-exp."""
    V = x.size(1)
    lse = torch.logsumexp(x, dim=1)
    x_t = x.gather(1, target[:, None]).squeeze(1)
    nll = lse - x_t
    if not eps:
        return nll, nll, lse
    others = (V - 2) * lse - (x.sum(1) - x_t - x[:, PAD])  # -log p over the tokens neither target nor pad
    return (1 - eps) * nll + eps / (V - 2) * others, nll, lse


class FusedSmoothedLoss(torch.autograd.Function):
    """recipe.smoothed_loss(h @ W^T, target, eps) (summed loss, summed NLL over non-pad targets), in chunks.

    The loss is a sum, so its gradient is d loss / d logits times one number (the backward's grad_loss): each
    chunk's gradients of h and W are made in the forward, from the chunk's logits still at hand, and the
    backward only scales them. Three matmuls over the vocabulary a step, as with the logits made whole; no
    second pass over them."""

    @staticmethod
    def forward(ctx, h, W, target, eps, chunk):
        dtype = _compute_dtype(h)
        N, V = h.size(0), W.size(0)
        rows = max(1, chunk // V)
        other = eps / (V - 2) if eps else 0.0  # q on every token but the target and padding
        keep = target != PAD
        grads = any(ctx.needs_input_grad[:2])
        with torch.autocast(h.device.type, enabled=False) if dtype else nullcontext():
            hc, Wc = (h, W) if dtype is None else (h.to(dtype), W.to(dtype))
            loss, nll = h.new_empty(N, dtype=torch.float32), h.new_empty(N, dtype=torch.float32)
            dh = torch.empty_like(hc) if grads else None
            dW = torch.zeros(W.shape, dtype=torch.float32, device=W.device) if grads else None
            for a in range(0, N, rows):
                r = slice(a, a + rows)
                x = (hc[r] @ Wc.t()).float()  # this chunk's logits, rounded as the model's own would be
                loss[r], nll[r], lse = _chunk_loss(x, target[r], eps)
                if not grads:
                    continue
                # d loss / d logits = softmax - q on kept rows; the softmax, not exp(x - lse): torch.exp takes
                # a slow path below -87 on a CPU (recipe.py)
                g = torch.softmax(x, 1)
                if other:
                    g.sub_(other)
                    g[:, PAD] += other
                g.scatter_add_(1, target[r, None], g.new_full((g.size(0), 1), other - (1 - eps)))
                g = g.mul_(keep[r, None]).to(hc.dtype)  # the gradient of the logits, in their dtype
                torch.mm(g, Wc, out=dh[r])
                if dW.dtype == g.dtype:
                    dW.addmm_(g.t(), hc[r])
                else:
                    dW += g.t() @ hc[r]  # summed in fp32 over the chunks
        ctx.save_for_backward(dh, dW)
        ctx.dtypes = h.dtype, W.dtype
        nll = torch.where(keep, nll, 0.0).sum()
        ctx.mark_non_differentiable(nll)
        return torch.where(keep, loss, 0.0).sum(), nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        dh, dW = ctx.saved_tensors
        h_dtype, W_dtype = ctx.dtypes
        return (dh * grad_loss).to(h_dtype), (dW * grad_loss).to(W_dtype), None, None, None


def smoothed_loss(h: torch.Tensor, W: torch.Tensor, target: torch.Tensor, eps: float,
                  chunk: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """recipe.smoothed_loss of the logits h @ W^T without them: h (..., d_model) the decoder's final states,
    W (V, d_model) the pre-softmax matrix (Transformer.output_weight), target (...) the labels."""
    chunk = chunk or CHUNK.get(h.device.type, CHUNK["cuda"])
    return FusedSmoothedLoss.apply(h.reshape(-1, h.size(-1)), W, target.reshape(-1), float(eps), chunk)
