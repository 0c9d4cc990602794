"""train.compile on: the label-smoothed loss as compiled per-chunk kernels gives the eager loss's value and gradient."""
import pytest
import torch

from zoo.train import compiled_loss
from zoo.train.recipe import smoothed_loss


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_compiled_loss_equals_the_eager_one(monkeypatch, dtype, eps):
    monkeypatch.setattr(compiled_loss, "BACKEND", "aot_eager")  # the same graphs, no C++ build in a test
    torch.manual_seed(0)
    N, V = 37, 50
    x = (torch.randn(N, V) * 4).to(dtype)
    target = torch.randint(1, V, (N,))
    target[::5] = 0  # padding rows count nothing
    ref_x, got_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref_loss, ref_nll = smoothed_loss(ref_x, target, eps)
    got_loss, got_nll = compiled_loss.smoothed_loss(got_x, target, eps, chunk=7 * V)  # 6 chunks, the last short
    (2 * ref_loss).backward()
    (2 * got_loss).backward()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    assert torch.allclose(got_loss, ref_loss, rtol=1e-5) and torch.allclose(got_nll, ref_nll, rtol=1e-5)
    assert got_x.grad.dtype == dtype and torch.allclose(got_x.grad.float(), ref_x.grad.float(), atol=tol)
