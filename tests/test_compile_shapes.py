"""train.compile on meets token-budget batches of ever new (sentences, length) shapes: zoo.train.step.compiled
compiles with dynamic shapes, so a compiled run compiles a bounded number of graphs, all in its first steps."""
import torch
from torch._dynamo.utils import counters

from zoo import data as zdata
from zoo.model import build_model
from zoo.spec import resolve
from zoo.train import compiled_loss, make_optimizer, train_step
from zoo.train.step import compiled


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
