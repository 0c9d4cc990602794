"""train.fused_loss on: the pre-softmax map inside the loss, chunk by chunk, gives recipe.smoothed_loss's value
and gradients on the model's logits (fp32 and bf16 autocast), and the step trains the same."""
import pytest
import torch

from zoo import spec as zspec
from zoo.config import ModelSpec
from zoo.model import build_model
from zoo.train import fused_loss, make_optimizer, train_step
from zoo.train.recipe import smoothed_loss

TINY = ModelSpec(N=2, d_model=32, d_ff=64, h=4, d_k=8, d_v=8, dropout=0.0, max_len=64)


def _batch(V: int, B: int = 5, S: int = 9, T: int = 11):
    g = torch.Generator().manual_seed(1)
    src, tgt_in, tgt_out = (torch.randint(3, V, (B, n), generator=g) for n in (S, T, T))
    src[1, 6:] = tgt_in[2, 4:] = tgt_out[2, 4:] = tgt_out[0, 9:] = 0  # padding rows count nothing
    return src, tgt_in, tgt_out


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("amp", [None, torch.bfloat16])
@pytest.mark.parametrize("tied,eps", [(True, 0.1), (False, 0.1), (True, 0.0)])
def test_fused_loss_equals_the_recipe_on_the_models_logits(amp, tied, eps):
    V = 40
    torch.manual_seed(0)
    model = build_model(TINY.model_copy(update={"share_embeddings": tied}), V)
    src, tgt_in, tgt_out = _batch(V)
    with torch.autocast("cpu", dtype=amp or torch.bfloat16, enabled=amp is not None):
        ref_loss, ref_nll = smoothed_loss(model(src, tgt_in), tgt_out, eps)
    ref_loss.backward()
    ref = _grads(model)
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=amp or torch.bfloat16, enabled=amp is not None):
        h = model(src, tgt_in, states=True)
        loss, nll = fused_loss.smoothed_loss(h, model.output_weight(), tgt_out, eps, chunk=7 * V)  # 8 chunks, last short
    loss.backward()
    got = _grads(model)
    # fp32: rounding only; bf16: each chunk's logits rounded as the model's are, dW summed in fp32 (the model's
    # one bf16 matmul over all rows rounds once) -- the tolerance is bf16's 2^-8 relative on the largest gradient
    rtol, atol = (1e-5, 1e-6) if amp is None else (1e-2, 1e-2)
    assert torch.allclose(loss, ref_loss, rtol=rtol) and torch.allclose(nll, ref_nll, rtol=rtol)
    assert got.keys() == ref.keys()
    for n in ref:
        scale = ref[n].abs().max()
        assert torch.allclose(got[n], ref[n], rtol=rtol, atol=atol * scale), n


def test_the_step_with_fused_loss_trains_as_without():
    cfg = zspec.resolve("base", profile="smoke")[0]
    V = cfg.data.vocab_size
    src, tgt_in, tgt_out = _batch(V)
    from zoo.data.batching import Batch
    b = Batch(src, tgt_in, tgt_out, int((src != 0).sum()), int((tgt_out != 0).sum()), 0.0)
    losses, weights = [], []
    for fused in ("off", "on"):
        c = cfg.model_copy(update={"train": cfg.train.model_copy(update={"fused_loss": fused})})
        torch.manual_seed(0)
        model = build_model(c.model.model_copy(update={"dropout": 0.0}), V)
        opt = make_optimizer(model, lr=1e-3)
        stats = torch.zeros(2, dtype=torch.float64)
        for _ in range(2):
            train_step(c, model, opt, torch.device("cpu"), [(b, 1.0)], b.n_tgt_tokens, stats)
        losses.append(stats.clone())
        weights.append(model.output_weight().detach().clone())
    assert torch.allclose(losses[0], losses[1], rtol=1e-5)
    assert torch.allclose(weights[0], weights[1], atol=1e-5)
    assert cfg.config_hash() == cfg.model_copy(
        update={"train": cfg.train.model_copy(update={"fused_loss": "on"})}).config_hash()
