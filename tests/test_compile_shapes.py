"""train.compile on meets token-budget batches of ever new (sentences, length) shapes: zoo.train.step.compiled
compiles with dynamic shapes, so a compiled run compiles a bounded number of graphs, all in its first steps."""
import pytest
import torch
from torch._dynamo.utils import counters

from zoo import data as zdata
from zoo.model import build_model
from zoo.spec import resolve
from zoo.train import compiled_loss, make_optimizer, train_step
from zoo.train.step import compiled


@pytest.mark.slow  # torch.compile
def test_a_compiled_model_on_varied_batches_compiles_a_bounded_number_of_graphs(monkeypatch, data_root):
    monkeypatch.setattr(compiled_loss, "BACKEND", "aot_eager")  # dynamo's graphs and guards, no C++ build
    cfg = resolve("specs/base.yaml", profile="smoke", sets=["train.compile=on"])[0]
    sp = zdata.load_sp(zdata.bpe_model(cfg.data.dataset, cfg.data.vocab_size, data_root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs(cfg.data.dataset, "train", data_root)[:2000], 64)
    order = zdata.make_batches(zdata.pair_lengths(pairs), 600, 1, 0)
    batches = [zdata.collate(pairs, order[i]) for i in range(16)]
    assert len({(b.src.shape, b.tgt_in.shape) for b in batches}) >= 10  # shapes the steps have not met
    torch.manual_seed(0)
    model = build_model(cfg.model, cfg.data.vocab_size)
    fwd, opt = compiled(model, cfg, backend="aot_eager"), make_optimizer(model, 1e-4)
    stats = torch.zeros(2, dtype=torch.float64)
    torch._dynamo.reset()
    counters.clear()
    graphs = []
    for b in batches:
        train_step(cfg, fwd, opt, torch.device("cpu"), [(b, 1.0)], b.n_tgt_tokens, stats)
        graphs.append(counters["stats"]["unique_graphs"])
    # the model and the loss's forward and backward kernels, all at the first step: no recompile for a
    # batch whose source and target lengths differ (duck sizing off) nor for any later shape
    assert graphs[-1] <= 4 and graphs[-1] == graphs[0], graphs
    assert torch.isfinite(stats).all()


@pytest.mark.slow  # torch.compile
def test_regional_compilation_serves_every_layer_with_one_graph_and_leaves_decoding_eager(monkeypatch, data_root):
    """train.compile on compiles one encoder layer and one decoder layer (Transformer.compile_layers), not the
    whole model: the graphs do not grow with N, the loss is the eager model's, and evaluation and beam search
    (eval mode, a cache) compile nothing."""
    from zoo.model.decode import beam_search
    from zoo.train import recipe
    monkeypatch.setattr(compiled_loss, "BACKEND", "aot_eager")
    cfg = resolve("specs/base.yaml", profile="smoke", sets=["train.compile=on", "model.N=3", "model.dropout=0"])[0]
    sp = zdata.load_sp(zdata.bpe_model(cfg.data.dataset, cfg.data.vocab_size, data_root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs(cfg.data.dataset, "train", data_root)[:600], 64)
    order = zdata.make_batches(zdata.pair_lengths(pairs), 400, 1, 0)
    batches = [zdata.collate(pairs, order[i]) for i in range(4)]
    torch.manual_seed(0)
    model = build_model(cfg.model, cfg.data.vocab_size).train()
    eager = [recipe.smoothed_loss(model(b.src, b.tgt_in), b.tgt_out, 0.1)[0].item() for b in batches]
    torch._dynamo.reset()
    counters.clear()
    fwd = compiled(model, cfg, backend="aot_eager")
    assert fwd is model  # regional: the model itself, its layers' forward compiled
    loss = [recipe.smoothed_loss(fwd(b.src, b.tgt_in), b.tgt_out, 0.1)[0] for b in batches]
    loss[0].backward()
    # one graph for the encoder layer and one for the decoder layer, whichever of the 3 + 3 layers runs them
    assert counters["stats"]["unique_graphs"] == 2, dict(counters["stats"])
    assert [x.item() for x in loss] == __import__("pytest").approx(eager, rel=1e-5)
    assert all(p.grad is not None for p in model.encoder[0].parameters())
    model.eval()
    with torch.no_grad():
        model(batches[0].src, batches[0].tgt_in)
    beam_search(model, batches[0].src[:2], beam_size=2, alpha=0.6, max_len_offset=5)
    assert counters["stats"]["unique_graphs"] == 2  # evaluation and decoding ran eagerly
