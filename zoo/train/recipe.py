"""The paper's training recipe (section 5.3, 5.4): Adam (0.9, 0.98, 1e-9), the learning rate of
equation (3) (`noam_lr`) and label-smoothed cross-entropy (`smoothed_loss`, computed in chunks so no fp32
copy of the whole logits tensor is made).
"""
from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F

from zoo.tokens import PAD

__all__ = ["LOSS_CHUNK", "make_optimizer", "smoothed_loss", "smoothed_rows"]  # what it lends outside its package (the door serves these)


# -- the recipe's pieces ------------------------------------------------------------------------



def smoothed_loss(logits: torch.Tensor, target: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed cross-entropy and summed NLL over non-pad targets.

    The true token gets 1 - eps; eps is spread evenly over the other tokens except padding,
    which never appears as a target (Szegedy et al. 2016, section 7). The NLL sum carries no
    gradient (it is for logging)."""
    V = logits.size(-1)
    target = target.reshape(-1)
    loss, nll = smoothed_rows(logits.reshape(-1, V), target, float(eps))
    keep = target != PAD
    return torch.where(keep, loss, 0.0).sum(), torch.where(keep, nll, 0.0).sum()


def smoothed_rows(logits: torch.Tensor, target: torch.Tensor,
                  eps: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """smoothed_loss before its sums: each row's (loss, NLL) of (N, V) logits, padding rows included (the
    caller masks them). `eps` a number, or one per row (N,): seeds of several label smoothings stacked in one
    batch (zoo.train.stacked) take the whole batch's loss in one pass."""
    return _SmoothedRows.apply(logits, target, eps)


LOSS_CHUNK = 2 ** 24  # logits per chunk of the loss (64 MB in fp32): no fp32 copy of the whole (tokens x V)


class _SmoothedRows(torch.autograd.Function):
    """smoothed_rows with its gradient written out: d loss_r / d logits_r = softmax - q per row,
    q the smoothed target distribution (1 - eps on the target, eps / (V - 2) on every token but the
    target and padding). Autograd's own graph for the formula fills and scatters several (tokens x V)
    tensors; this one keeps the logits for the backward pass and writes one gradient tensor.

    Rows go in chunks of about LOSS_CHUNK logits, each upcast to fp32 on its own: under bf16 autocast
    the whole fp32 copy and log-probabilities (2 x 4 bytes x 12500 x 37000 = 3.7 GB for the paper's
    base batch) are never built, only a chunk's. The softmax is recomputed in the backward pass by
    torch.softmax, not as exp(log p): torch.exp takes a slow path below -87 (logits of std 40: 12x
    slower), the softmax kernel does not."""

    @staticmethod
    def forward(ctx, logits, target, eps):
        N, V = logits.shape
        per_row = isinstance(eps, torch.Tensor)
        loss, nll = logits.new_empty(N, dtype=torch.float32), logits.new_empty(N, dtype=torch.float32)
        for r in _chunks(N, V):
            logp = F.log_softmax(logits[r].float(), dim=-1)  # (rows, V): this chunk only
            nll[r] = -logp.gather(1, target[r, None]).squeeze(1)
            if per_row or eps:
                e = eps[r] if per_row else eps
                others = -(logp.sum(1) - logp[:, PAD]) - nll[r]  # -log p over tokens neither target nor pad
                loss[r] = (1 - e) * nll[r] + e / (V - 2) * others
        loss = loss if per_row or eps else nll
        ctx.save_for_backward(logits, target, eps if per_row else None)
        ctx.eps = None if per_row else eps
        ctx.mark_non_differentiable(nll)
        return (loss.clone() if loss is nll else loss), nll

    @staticmethod
    def backward(ctx, grad_loss, grad_nll):
        logits, target, eps_rows = ctx.saved_tensors
        N, V = logits.shape
        eps = eps_rows if eps_rows is not None else ctx.eps
        # q on every token but the target and padding; per row when eps is
        other = (eps / (V - 2))[:, None] if eps_rows is not None else (eps / (V - 2) if eps else 0.0)
        scale = grad_loss  # (N,): 0 on the rows the caller masked (padding)
        # fp32 logits (a CPU run): the softmax is the gradient tensor itself, written in place
        grad = None if logits.dtype == torch.float32 else torch.empty_like(logits)
        for r in _chunks(N, V) if grad is not None else [slice(0, N)]:
            g = torch.softmax(logits[r], -1, dtype=torch.float32)
            if eps_rows is not None:
                o = other[r]
                g.sub_(o)
                g[:, PAD] += o[:, 0]
                g.scatter_add_(1, target[r, None], o - (1 - eps_rows[r, None]))
            else:
                if other:
                    g.sub_(other)
                    g[:, PAD] += other
                g.scatter_add_(1, target[r, None], g.new_full((g.size(0), 1), other - (1 - eps)))
            g.mul_(scale[r, None])
            if grad is None:
                return g, None, None
            grad[r] = g
        return grad, None, None


def _chunks(N: int, V: int) -> list[slice]:
    rows = max(1, LOSS_CHUNK // V)
    return [slice(a, min(a + rows, N)) for a in range(0, N, rows)]


class Adam(torch.optim.Adam):
    """torch's Adam, its update and state as they are, without the wrappers that import torch._dynamo on the
    first call (`torch._disable_dynamo`, and `step`'s graph breaks): they matter only where dynamo traces the
    optimizer, and zoo compiles the model, never its update. The import costs every trial process ~3 s of CPU
    (a smoke `zoo train`: 9.8 -> 6.3 s); a compiled run imports dynamo for its model as before. inspect.unwrap goes
    under every wrapper (a torch without them: the function as it is): once torch's Adam has been made in a process,
    its class's step also carries the step hooks, which ours runs itself."""
    add_param_group = inspect.unwrap(torch.optim.Optimizer.add_param_group)
    zero_grad = inspect.unwrap(torch.optim.Optimizer.zero_grad)
    state_dict = inspect.unwrap(torch.optim.Optimizer.state_dict)
    load_state_dict = inspect.unwrap(torch.optim.Optimizer.load_state_dict)

    @torch.no_grad()  # what the wrapper sets (grad mode off: `differentiable` is never on here)
    def step(self, closure=None):
        return _ADAM_STEP(self, closure)


_ADAM_STEP = inspect.unwrap(torch.optim.Adam.step)


def make_optimizer(model: torch.nn.Module, lr: float = 0.0, betas: tuple = (0.9, 0.98),
                   eps: float = 1e-9) -> torch.optim.Optimizer:
    """Adam (section 5.3); the learning rate is set every step by the schedule. torch's fused
    kernel where the parameters allow it (CPU or CUDA floats): one pass per tensor (a cpu-profile
    step's update: 13 -> 5 ms on one thread), the same update to float rounding."""
    params = list(model.parameters())
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params)
    return Adam(params, lr=lr, betas=betas, eps=eps, fused=fused or None)


