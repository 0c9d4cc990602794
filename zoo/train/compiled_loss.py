"""The label-smoothed loss as compiled kernels (train.compile on): what keeps the loss off the GPU's critical path.

Eager, zoo.train.recipe.smoothed_loss runs about ten passes over the (tokens x V) logits per step (upcast,
log_softmax, gather, sums; softmax, subtract, scatter, scale, downcast): ~42 bytes moved per logit,
a third of the paper's base step on an H100 (bench_train.py --predict). Compiled, each chunk of rows is
one reduction kernel forward (max, then log-sum-exp with the target's and the smoothing sum in the same
pass; the log-sum-exp kept) and one pointwise kernel backward (gradient = exp(x - lse) - q, written in the
logits' dtype): 4 accesses per logit (bench/roofline.py COMPILED_LOSS_ACCESSES).

Same value and gradient as the eager loss (tests/test_parallel.py); the eager one stays the default, since
compile has not paid on the CPU.
"""
from __future__ import annotations

import functools

import torch

from zoo.tokens import PAD

__all__ = []  # nothing outside its package: the package's parts import it by module

BACKEND = "inductor"  # tests use "aot_eager": the same graphs without a C++ build


def _forward(x: torch.Tensor, target: torch.Tensor, eps: float):
    """Per row of logits x (rows, V): the smoothed loss, the NLL and the log-sum-exp (for the backward)."""
    x = x.float()
    V = x.size(1)
    lse = torch.logsumexp(x, dim=1)
    x_t = x.gather(1, target[:, None]).squeeze(1)
    nll = lse - x_t
    # sum of -log p over the tokens that are neither the target nor padding: (V - 2) lse - their logits
    others = (V - 2) * lse - (x.sum(1) - x_t - x[:, PAD])
    return (1 - eps) * nll + eps / (V - 2) * others, nll, lse


def _backward(x: torch.Tensor, target: torch.Tensor, lse: torch.Tensor, scale: torch.Tensor, eps: float,
              out: torch.Tensor) -> None:
    """out = d loss / d x = (softmax(x) - q) * scale per row, in x's dtype (written in place: no copy after)."""
    V = x.size(1)
    other = eps / (V - 2)
    g = torch.exp(x.float() - lse[:, None]) - other
    g[:, PAD] += other
    g = g.scatter_add(1, target[:, None], torch.full_like(lse[:, None], other - (1 - eps)))
    out.copy_(g * scale[:, None])


@functools.cache
def _kernels(backend: str):
    return (torch.compile(_forward, dynamic=True, backend=backend),
            torch.compile(_backward, dynamic=True, backend=backend))


class CompiledSmoothedLoss(torch.autograd.Function):
    """zoo.train.smoothed_loss's contract (summed loss, summed NLL over non-pad targets), in chunks."""

    @staticmethod
    def forward(ctx, logits, target, eps, chunk):
        fwd, _ = _kernels(BACKEND)
        N, V = logits.shape
        rows = max(1, chunk // V)
        parts = [fwd(logits[a:a + rows], target[a:a + rows], eps) for a in range(0, N, rows)]
        loss, nll, lse = (torch.cat(x) for x in zip(*parts))
        keep = target != PAD
        ctx.save_for_backward(logits, target, keep, lse)
        ctx.eps, ctx.rows = eps, rows
        nll = torch.where(keep, nll, 0.0).sum()
        ctx.mark_non_differentiable(nll)
        return torch.where(keep, loss, 0.0).sum(), nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        _, bwd = _kernels(BACKEND)
        logits, target, keep, lse = ctx.saved_tensors
        scale = grad_loss * keep
        rows, N = ctx.rows, logits.size(0)
        grad = torch.empty_like(logits)
        for a in range(0, N, rows):
            bwd(logits[a:a + rows], target[a:a + rows], lse[a:a + rows], scale[a:a + rows], ctx.eps, grad[a:a + rows])
        return grad, None, None, None


def smoothed_loss(logits: torch.Tensor, target: torch.Tensor, eps: float, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    V = logits.size(-1)
    return CompiledSmoothedLoss.apply(logits.reshape(-1, V), target.reshape(-1), float(eps), chunk)
