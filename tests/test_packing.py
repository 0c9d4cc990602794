"""Packed batches (several sentences a row, zoo.data.packing + zoo.model.packing) give each sentence the logits,
loss and gradients it has unpacked; the packing holds the batch's tokens and no more rows than it needs."""
import numpy as np
import pytest
import torch

from zoo.config import ModelSpec
from zoo.data.batching import collate
from zoo.data.packing import pack, rows_of
from zoo.model import build_model
from zoo.model.packing import positions
from zoo.train.recipe import smoothed_loss

TINY = ModelSpec(N=2, d_model=32, d_ff=64, h=4, d_k=8, d_v=8, dropout=0.0, max_len=64)
V = 30


def _pairs(n=9, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(4, V, rng.integers(1, 9)).tolist(), rng.integers(4, V, rng.integers(1, 11)).tolist())
            for _ in range(n)]


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_rows_first_fit_and_positions_restart():
    assert rows_of(np.array([[3, 4], [5, 2], [2, 2], [6, 6]]), 8) == [[3, 2], [1, 0]]
    seg = torch.tensor([[1, 1, 1, 2, 2, 0, 0]])
    assert positions(seg, 64).tolist() == [[0, 1, 2, 0, 1, 0, 1]]


@pytest.mark.parametrize("amp", [None, torch.bfloat16])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_packed_sentences_train_as_unpacked(amp, positional):
    pairs = _pairs()
    idx = list(range(len(pairs)))
    flat, packed = collate(pairs, idx), pack(pairs, idx, row=16)
    assert packed.src.size(0) < flat.src.size(0)  # rows shared
    assert (packed.n_src_tokens, packed.n_tgt_tokens) == (flat.n_src_tokens, flat.n_tgt_tokens)
    assert sorted(packed.indices) == idx and (packed.tgt_out != 0).sum() == flat.n_tgt_tokens
    torch.manual_seed(0)
    model = build_model(TINY.model_copy(update={"positional_encoding": positional}), V)
    model.train()  # dropout 0: the same function in both layouts
    out = {}
    for name, b in (("flat", flat), ("packed", packed)):
        model.zero_grad(set_to_none=True)
        seg = {} if b.src_seg is None else {"src_seg": b.src_seg, "tgt_seg": b.tgt_seg}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp is not None):
            logits = model(b.src, b.tgt_in, **seg)
        loss, _ = smoothed_loss(logits, b.tgt_out, 0.1)
        loss.backward()
        out[name] = logits.detach().float(), loss, _grads(model)
    # each sentence's logits: row i of the flat batch against its place in the packed row
    (lf, loss_f, gf), (lp, loss_p, gp) = out["flat"], out["packed"]
    # bf16: shapes alone move the CPU's rounding: the flat batch with 3 more padding columns changes a gradient by
    # up to 9.3% of its tensor's largest element (a wrong mask changes it by its whole size)
    tol = 1e-4 if amp is None else 0.1
    for r in range(packed.src.size(0)):
        for k in range(1, int(packed.tgt_seg[r].max()) + 1):
            where = (packed.tgt_seg[r] == k).nonzero().squeeze(1)
            i = packed.indices[sum(int(packed.tgt_seg[q].max()) for q in range(r)) + k - 1]
            assert torch.allclose(lp[r, where], lf[i, :len(where)], atol=tol * float(lf.abs().max())), (r, k)
    assert torch.allclose(loss_p, loss_f, rtol=1e-5 if amp is None else 1e-2)
    for n in gf:
        assert torch.allclose(gp[n], gf[n], rtol=1e-3, atol=tol * float(gf[n].abs().max())), n


def test_rotary_models_refuse_to_pack():
    pairs = _pairs(4)
    b = pack(pairs, range(4), row=16)
    model = build_model(TINY.model_copy(update={"positional_encoding": "rope"}), V)
    with pytest.raises(ValueError, match="packing needs positions added to the embeddings"):
        model(b.src, b.tgt_in, src_seg=b.src_seg, tgt_seg=b.tgt_seg)


@pytest.mark.parametrize("fused", ["off", "on"])
def test_the_step_trains_a_packed_batch_as_the_unpacked_one(fused):
    from zoo import spec as zspec
    from zoo.train import make_optimizer, train_step
    cfg = zspec.resolve("base", profile="smoke", sets=[f"train.fused_loss={fused}", "model.dropout=0"])[0]
    pairs = _pairs(12, seed=3)
    stats, weights = [], []
    for b in (collate(pairs, range(12)), pack(pairs, range(12), row=24)):
        torch.manual_seed(0)
        model = build_model(cfg.model, cfg.data.vocab_size)
        opt = make_optimizer(model, lr=1e-3)
        s = torch.zeros(2, dtype=torch.float64)
        for _ in range(2):
            train_step(cfg, model, opt, torch.device("cpu"), [(b, 1.0)], b.n_tgt_tokens, s)
        stats.append(s)
        weights.append(model.output_weight().detach().clone())
    assert torch.allclose(stats[0], stats[1], rtol=1e-5)
    assert torch.allclose(weights[0], weights[1], atol=1e-5)


def test_a_packed_run_trains_as_the_unpacked_one(data_root, tmp_path):
    """train.pack on in the loop: without dropout a packed run's loss equals the unpacked run's step by step (the same
    pairs a step, several to a row); its batches are packed (fewer rows: its logged padding is the packed rows')."""
    import json
    from zoo import spec as zspec
    from zoo.train import train
    curves = {}
    for pack_ in ("off", "on"):
        cfg = zspec.resolve("base", profile="smoke", sets=[f"train.pack={pack_}", "model.dropout=0", "train.steps=8",
                                                            "train.log_every=1", "eval.max_sentences=2"])[0]
        train(cfg, tmp_path / pack_, data_root)
        points = [json.loads(x) for x in (tmp_path / pack_ / "metrics.jsonl").read_text().splitlines()]
        curves[pack_] = {p["step"]: (p["loss"], p["padding_fraction"]) for p in points if p.get("loss") is not None}
    assert sorted(curves["on"]) == sorted(curves["off"]) == list(range(1, 9))
    for step, (loss, _) in curves["off"].items():
        assert abs(curves["on"][step][0] - loss) < 1e-4 * loss, (step, curves)
    assert any(curves["on"][s][1] != curves["off"][s][1] for s in curves["off"])  # packed rows: other padding


def test_a_model_that_cannot_pack_is_refused_before_training(tmp_path, capsys):
    """Rotary positions act inside attention: train.pack on is refused (exit 2, one paragraph naming both fields)."""
    from helpers import exit_2, run
    exit_2(*run("train", "base", "--profile", "smoke", "--set", "train.pack=on", "--set",
                "model.positional_encoding=rope", "--out", tmp_path / "r", capsys=capsys),
           "train.pack: on lays several sentences to a row", "model.positional_encoding rope")


def test_the_word_pointer_is_refused_packing_too(capsys):
    """The parser's word pointer points at source positions of the whole row: train.pack on is refused for it."""
    from helpers import exit_2, run
    exit_2(*run("run", "table4_wsj", "--profile", "smoke", "--set", "train.pack=on", "--plan", "--no-measure",
                capsys=capsys), "train.pack: on lays several sentences to a row, which model.word_pointer cannot take")
