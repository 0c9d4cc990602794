"""The compiled Transformer: paper structure, tied weights, cached decoding = full forward."""
import torch

from zoo.model.transformer import build_model, count_params, sinusoid_table
from zoo.config import ModelSpec

TINY = ModelSpec(N=2, d_model=32, d_ff=64, h=4, d_k=8, d_v=12, dropout=0.1, max_len=64)


def test_shapes_and_tied_weights():
    m = build_model(TINY, 50)
    src, tgt = torch.randint(4, 50, (3, 9)), torch.randint(4, 50, (3, 5))
    assert m(src, tgt).shape == (3, 5, 50)
    assert m.src_embed.weight is m.tgt_embed.weight and m.out_proj is None
    untied = build_model(TINY.model_copy(update={"share_embeddings": False}), 50)
    assert count_params(untied) - count_params(m) == 2 * 50 * 32


def test_independent_dk_dv():
    m = build_model(TINY, 50)
    att = m.encoder[0].self_attn
    assert att.w_q.weight.shape == (4 * 8, 32) and att.w_v.weight.shape == (4 * 12, 32)
    assert att.w_o.weight.shape == (32, 4 * 12)


def test_sinusoid_matches_formula():
    pe = sinusoid_table(10, 8)
    pos, i = 7, 2
    assert torch.isclose(pe[pos, 2 * i], torch.tensor(pos / 10000 ** (2 * i / 8)).sin())
    assert torch.isclose(pe[pos, 2 * i + 1], torch.tensor(pos / 10000 ** (2 * i / 8)).cos())


def test_cached_decoding_equals_full_forward():
    for pe in ("sinusoidal", "learned"):
        torch.manual_seed(0)
        m = build_model(TINY.model_copy(update={"positional_encoding": pe}), 40).eval()
        src = torch.randint(4, 40, (3, 8))
        src[1, 5:] = 0  # padding must be masked in the cross-attention
        tgt = torch.randint(4, 40, (3, 7))
        with torch.no_grad():
            full = m(src, tgt)
            memory, mask = m.encode(src)
            cache = m.new_cache()
            steps = [m.decode(tgt[:, t:t + 1], memory, mask, cache) for t in range(tgt.size(1))]
        assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


def test_padding_does_not_change_results():
    torch.manual_seed(0)
    m = build_model(TINY, 40).eval()
    src = torch.randint(4, 40, (1, 6))
    tgt = torch.randint(4, 40, (1, 4))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1)
    with torch.no_grad():
        assert torch.allclose(m(src, tgt), m(padded, tgt), atol=1e-5)


def test_causal_mask_future_does_not_leak():
    torch.manual_seed(0)
    m = build_model(TINY, 40).eval()
    src, tgt = torch.randint(4, 40, (1, 6)), torch.randint(4, 40, (1, 5))
    tgt2 = tgt.clone()
    tgt2[0, 4] = (tgt[0, 4] + 1) % 40
    with torch.no_grad():
        assert torch.allclose(m(src, tgt)[:, :4], m(src, tgt2)[:, :4], atol=1e-6)


def test_dropout_only_in_training():
    m = build_model(TINY, 40)
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    m.eval()
    with torch.no_grad():
        assert torch.equal(m(src, tgt), m(src, tgt))
    m.train()
    assert not torch.equal(m(src, tgt), m(src, tgt))


def test_residual_dropout_on_cpu_is_dropout():
    """Residual's one-pass CPU dropout: LayerNorm(x + mask * s / (1 - p)), masks drawn at rate p
    (to 2^-16), the gradient through s is mask / (1 - p), and eval mode drops nothing."""
    from zoo.model.transformer import Residual, _keep_mask
    torch.manual_seed(0)
    keep, scale = _keep_mask(torch.empty(400, 500), 0.1)
    assert keep.dtype == torch.bool and keep.shape == (400, 500)
    assert abs(keep.float().mean().item() - 0.9) < 0.003 and abs(scale * 0.9 - 1) < 1e-4
    res = Residual(8, 0.3)
    res.norm = torch.nn.Identity()  # look at x + Dropout(s) itself
    x, s = torch.randn(64, 50, 8), torch.randn(64, 50, 8, requires_grad=True)
    out = res(x, s)
    kept = (out - x).abs() > 1e-6
    assert abs(kept.float().mean().item() - 0.7) < 0.02
    torch.testing.assert_close((out - x)[kept], (s / 0.7)[kept], rtol=1e-4, atol=1e-5)
    out.sum().backward()
    torch.testing.assert_close(s.grad, kept.float() / 0.7, rtol=1e-4, atol=1e-5)
    res.eval()
    torch.testing.assert_close(res(x, s), x + s)


def test_bf16_autocast_on_cpu_keeps_masks_and_matches_fp32():
    """Under CPU bf16 autocast attention runs in fp32 (zoo.model): the masks still hold (a padded
    source, a future target token changed) and the logits agree with fp32 to bf16 rounding."""
    torch.manual_seed(0)
    m = build_model(TINY.model_copy(update={"dropout": 0.0}), 40).eval()
    src = torch.randint(4, 40, (2, 8))
    src[1, 5:] = 0
    tgt = torch.randint(4, 40, (2, 6))
    later = tgt.clone()
    later[:, 4:] = 7
    with torch.no_grad():
        fp32 = m(src, tgt)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16, bf16_later = m(src, tgt).float(), m(src, later).float()
            padded = m(torch.cat([src[:1], torch.zeros(1, 4, dtype=torch.long)], 1), tgt[:1]).float()
    assert (bf16 - fp32).abs().max() < 0.05 * fp32.abs().max()
    assert torch.equal(bf16[:, :4], bf16_later[:, :4])  # causal: positions before 4 never see 4 and 5
    assert torch.allclose(padded, bf16[:1], atol=0.05 * fp32.abs().max().item())


def test_build_model_makes_the_word_pointer_model():
    """zoo.build_model builds a `model.word_pointer` model that runs before its vocabularies are known
    (stand-in tables) and takes theirs when given."""
    m = TINY.model_copy(update={"word_pointer": True})
    model = build_model(m, 40, 30).eval()
    src, tgt = torch.randint(4, 40, (2, 7)), torch.randint(4, 30, (2, 5))
    assert model(src, tgt).shape == (2, 5, 30)
    real = build_model(m, 40, 30, word_pointer=([i % 2 == 0 for i in range(40)], [i < 10 for i in range(30)]))
    assert real.word_start.sum() == 20 and real.preterminal.sum() == 10
