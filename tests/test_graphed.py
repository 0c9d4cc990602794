"""train.cuda_graph on (zoo.train.graphed): a batch padded up to its bucket trains as the batch itself (same loss,
same update, dropout on), buckets are few and reused, and on a GPU the recorded graph replays the eager step."""
import pytest
import torch

from zoo import data as zdata
from zoo import spec as zspec
from zoo.model import build_model, dropout_key
from zoo.model.dropout import drawing
from zoo.train import graphed, make_optimizer, train_step


@pytest.fixture(scope="module")
def batches(data_root):
    """Real Multi30k batches of the smoke profile (1000 BPE pieces), token-budget cut: shapes that differ."""
    sp = zdata.load_sp(zdata.bpe_model("multi30k", 1000, data_root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs("multi30k", "train", data_root)[:400], 64)
    order = zdata.make_batches(zdata.pair_lengths(pairs), 600, 1, 0)
    every = [zdata.collate(pairs, o) for o in order]
    key = lambda b: (graphed.bucket(b.src.size(1), 8, 1), graphed.bucket(b.tgt_in.size(1), 8, 1))
    shared = max(({key(b) for b in every}), key=lambda k: sum(key(b) == k for b in every))
    same = [b for b in every if key(b) == shared][:3]  # three batches of one bucket, one of another
    return same + [next(b for b in every if key(b) != shared)]


@pytest.fixture(scope="module")
def unbucketed(batches):
    return _train(_cfg("off"), batches)


def _cfg(graph: str, *sets):
    return zspec.resolve("base", profile="smoke", sets=["train.precision=fp32", f"train.cuda_graph={graph}", *sets])[0]


def _train(cfg, batches, device="cpu", steps=None):
    """(the step's summed loss and NLL per step, the parameters after) of a fresh seeded model; dropout on
    (counter-based masks keyed by step, as the loop draws them)."""
    torch.manual_seed(0)
    model = build_model(cfg.model, cfg.data.vocab_size).to(device).train()
    opt = make_optimizer(model, 1e-3)
    dev = torch.device(device)
    out = []
    for i, b in enumerate(batches[:steps]):
        stats = torch.zeros(2, dtype=torch.float64, device=dev)
        with drawing(dropout_key(cfg.train.seed, i + 1, device=dev)):
            train_step(cfg, model, opt, dev, [(b, 1.0)], b.n_tgt_tokens, stats, None, 1e-3)
        out.append(stats.tolist())
    return torch.tensor(out), [p.detach().cpu().clone() for p in model.parameters()], opt


def test_bucket_ladder_holds_every_size_with_few_rungs():
    lengths = [graphed.bucket(n, 8, 1) for n in range(1, 300)]
    assert all(b >= n for n, b in zip(range(1, 300), lengths))
    assert all(b <= max(8, 1.1 * n + 1) for n, b in zip(range(1, 300), lengths))  # waste bounded: ~9% at most
    assert len(set(lengths)) <= 45  # lengths 1..299: a few dozen shapes, not one a length
    rows = [graphed.bucket(n) for n in range(1, 2000)]
    assert all(r % 8 == 0 and n <= r <= max(8, 1.1 * n + 8) for n, r in zip(range(1, 2000), rows))


def test_bucketed_step_trains_as_the_unbucketed_one(batches, unbucketed):
    b = batches[0]
    ref_stats, ref_params, _ = unbucketed
    got_stats, got_params, opt = _train(_cfg("on"), batches)
    g = opt.graphed_step
    shapes = {tuple(x.src.shape) + tuple(x.tgt_in.shape) for x in batches}
    assert len(shapes) > len(g.buckets) >= 1  # the batches' shapes share buckets
    for key, bk in g.buckets.items():  # the step ran padded: a bucket's buffers are its shape, not a batch's
        assert tuple(bk.batch.src.shape) == key[:2] and bk.batch.tgt_in.shape[1] == key[2]
    assert any(bk.batch.src.size(0) > b.src.size(0) for bk in g.buckets.values())  # padding rows too
    assert sum(bk.steps for bk in g.buckets.values()) == len(batches) and g.eager_steps == 0
    torch.testing.assert_close(got_stats, ref_stats, rtol=1e-5, atol=1e-4)  # the same loss and NLL, step by step
    for p, q in zip(got_params, ref_params):  # the same update after 4 steps of Adam
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_full_ladder_falls_back_to_a_bucket_that_holds_the_batch_or_eager(batches, unbucketed, monkeypatch):
    monkeypatch.setattr(graphed, "MAX_GRAPHS", 1)
    ref_stats, ref_params, _ = unbucketed
    got_stats, got_params, opt = _train(_cfg("on"), batches)
    g = opt.graphed_step
    assert len(g.buckets) == 1
    assert sum(bk.steps for bk in g.buckets.values()) + g.eager_steps == len(batches)
    torch.testing.assert_close(got_stats, ref_stats, rtol=1e-5, atol=1e-4)
    for p, q in zip(got_params, ref_params):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_cuda_graph_is_not_part_of_the_config_hash():
    assert _cfg("on").config_hash() == _cfg("off").config_hash()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA graph needs a GPU (the CPU runs the bucketed step)")
def test_recorded_graph_replays_the_eager_step_on_a_gpu(batches):
    ref_stats, ref_params, _ = _train(_cfg("off"), batches, "cuda")
    got_stats, got_params, opt = _train(_cfg("on"), batches, "cuda")
    g = opt.graphed_step
    assert all(bk.graph is not None for bk in g.buckets.values())
    assert any(bk.steps > 1 for bk in g.buckets.values())  # replayed, not only recorded
    torch.testing.assert_close(got_stats, ref_stats, rtol=1e-4, atol=1e-3)
    for p, q in zip(got_params, ref_params):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4)


def test_the_recorded_step_reads_nothing_back_to_the_host(batches, monkeypatch):
    """What a CUDA graph records (GraphedStep._body) must not read a value back to the host nor bring a host tensor
    in: its forward (dropout drawn by key), loss and backward run on the meta device, which holds no values and
    refuses both (Adam's capturable update is torch's own, left out: torch allows `capturable` on accelerators only)."""
    import contextlib
    from zoo.train import step as zstep
    monkeypatch.setattr(zstep, "autocast", lambda device, amp: contextlib.nullcontext())  # no autocast for meta
    cfg = _cfg("on", "model.dropout=0.1")
    meta = torch.device("meta")
    model = build_model(cfg.model, cfg.data.vocab_size).to(meta).train()
    opt = make_optimizer(model, 1e-3)
    monkeypatch.setattr(opt, "step", lambda: None)
    g = graphed.GraphedStep(cfg, model, opt, meta, None)
    b = batches[0]
    bk = g._find(b)
    bk.batch = zdata.Batch(b.src.to(meta), b.tgt_in.to(meta), b.tgt_out.to(meta), 0, 0, 0.0)
    g._body(bk.batch, keyed=True)
    assert all(p.grad is not None and p.grad.is_meta for p in model.parameters())


def test_packed_batches_are_bucketed_with_their_sentence_ids(data_root, batches):
    """train.pack on: a packed batch (several sentences a row) padded to its bucket, its sentence ids with it,
    trains as the packed batch itself (no eager fallback)."""
    sp = zdata.load_sp(zdata.bpe_model("multi30k", 1000, data_root))
    pairs = zdata.encode_pairs(sp, zdata.load_pairs("multi30k", "train", data_root)[:400], 64)
    packed = [zdata.pack(pairs, b.indices) for b in batches]
    ref_stats, ref_params, _ = _train(_cfg("off", "train.pack=on", "model.dropout=0.1"), packed)
    got_stats, got_params, opt = _train(_cfg("on", "train.pack=on", "model.dropout=0.1"), packed)
    g = opt.graphed_step
    assert g.eager_steps == 0 and all(bk.batch.src_seg is not None for bk in g.buckets.values())
    torch.testing.assert_close(got_stats, ref_stats, rtol=1e-5, atol=1e-4)
    for p, q in zip(got_params, ref_params):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
