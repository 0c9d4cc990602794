"""Data-parallel training and the steady-state step, on the CPU: torch's DDP over gloo ranks in
spawned processes, the device rule of every collective, host syncs per step, torch.compile's
recompiles and graph breaks, the chunked label-smoothed loss. Tiny models, a few steps each."""
import os
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils._python_dispatch import TorchDispatchMode

from zoo import data as zdata
from zoo.train import compiled_loss, loop as ztrain, recipe, step as zstep
from zoo.model.transformer import build_model
from zoo.config import Config, ModelSpec

V = 24
TINY = ModelSpec(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8, dropout=0.0)


def _cfg(**train) -> Config:
    return Config(variant="t", model=TINY, train={"label_smoothing": 0.1, **train})


def _pairs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(4, V, rng.integers(1, 9)).tolist(), rng.integers(4, V, rng.integers(1, 9)).tolist())
            for _ in range(n)]


# Steps of (pair indices, accumulation): a 1-pair batch (fewer pairs than ranks), a 3-pair batch
# that 2 ranks x 2 micro-batches cannot fill, and an ordinary one.
STEPS = [([7], 1), ([1, 2, 3], 2), ([10, 11, 12, 13, 14, 15], 2)]


def _train_steps(rank: int, world: int, strict: bool = False, compile: bool = False, N: int = 1) -> tuple[dict, list]:
    """STEPS through zoo.train's _step and read_stats on this rank; (weights, [(loss, nll) per step]).
    compile: train.compile on, the module wrapped as the loop wraps it (compiled(data_parallel(model)))."""
    torch.manual_seed(0)
    model = build_model(TINY.model_copy(update={"N": N}), V)
    opt = recipe.make_optimizer(model, 1e-3)
    cfg, cpu = _cfg(compile="on" if compile else "off"), torch.device("cpu")
    fwd = zstep.data_parallel(model, cpu)
    if compile:  # dynamo's graphs without a C++ build, for the layers and the loss alike
        compiled_loss.BACKEND = "aot_eager"
        fwd = zstep.compiled(fwd, cfg, backend="aot_eager")
    stats = torch.zeros(2, dtype=torch.float64)
    pairs = _pairs()
    lengths = zdata.pair_lengths(pairs)
    read = []
    for idx, accumulation in STEPS:
        batch = np.array(idx)
        parts = [(zdata.collate(pairs, p), w) for p, w in ztrain.rank_parts(batch, lengths, world, accumulation, rank)]
        work = ztrain._Work(0, 0, int(lengths[batch, 1].sum()), parts)
        # strict: a tensor made without naming the model's device lands on the meta device (as one
        # made on a GPU worker without a device lands on the CPU), which the collectives refuse
        with torch.device("meta") if strict else torch.device("cpu"):
            ztrain._step(cfg, fwd, opt, cpu, work, stats)
            opt.step()
            read.append(zstep.read_stats(stats))
    return {k: v.clone() for k, v in model.state_dict().items()}, read


class DeviceStrict:
    """Every collective's tensors must be on `device`, as NCCL's are on the GPU ("No backend type
    associated with device type cpu"): the Python-level collectives zoo.train calls, wrapped."""

    def __init__(self, device: str):
        self.device, self.seen = torch.device(device), []

    def __enter__(self):
        self.saved = {n: getattr(dist, n) for n in ("all_reduce", "broadcast", "all_gather", "reduce_scatter")}
        for name, f in self.saved.items():
            setattr(dist, name, self._checked(name, f))
        return self

    def _checked(self, name, f):
        def g(t, *a, **k):
            self.seen.append((name, t.device))
            if t.device != self.device:
                raise RuntimeError(f"No backend type associated with device type {t.device.type}")
            return f(t, *a, **k)
        return g

    def __exit__(self, *exc):
        for name, f in self.saved.items():
            setattr(dist, name, f)


def _rank_main(rank: int, world: int, port: int, out: str) -> None:
    """The three runs the tests below compare with one rank, one after another on the same two ranks."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        runs = {"eager": _train_steps(rank, world)}
        with DeviceStrict("cpu") as ds:
            runs["strict"] = _train_steps(rank, world, strict=True)
        assert ds.seen, "no collective was checked"
        runs["compiled"] = _train_steps(rank, world, compile=True, N=2)  # last: it sets the loss's backend
        torch.save({k: {"weights": w, "read": r} for k, (w, r) in runs.items()}, f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """Two gloo ranks in spawned processes (started once for the module: each imports torch), each rank's
    {"eager", "strict", "compiled"} run: its weights and every step's read statistics."""
    out = str(tmp_path_factory.mktemp("ranks") / "rank")
    mp.spawn(_rank_main, args=(2, _free_port(), out), nprocs=2, join=True)
    return [torch.load(f"{out}.{r}", weights_only=True) for r in range(2)]


@pytest.mark.slow  # two processes train (gloo)
def test_two_ranks_on_batches_smaller_than_the_ranks_match_one_rank(ranks):
    """A 1-pair batch on 2 ranks (one rank gets a zero-weight stand-in), a batch too small for 2 x 2
    micro-batches: no collective mismatch, and every step's update and loss equal one rank's."""
    one, one_read = _train_steps(0, 1)
    for r in (r["eager"] for r in ranks):
        for k in one:
            torch.testing.assert_close(r["weights"][k], one[k], rtol=1e-5, atol=1e-6)
        assert np.allclose(r["read"], one_read, rtol=1e-6)  # every step's (loss, NLL), summed over ranks


@pytest.mark.slow  # two processes train (gloo)
def test_two_ranks_with_compiled_layers_match_one_eager_rank(ranks):
    """train.compile on across ranks, as the loop runs it: DDP around the model, each rank's encoder and decoder
    layers compiled regionally (2 + 2 layers, one graph a kind). DDP's all-reduce still sees every layer's
    gradient: every step's update and loss equal one eager rank's."""
    one, one_read = _train_steps(0, 1, N=2)
    for r in (r["compiled"] for r in ranks):
        for k in one:
            torch.testing.assert_close(r["weights"][k], one[k], rtol=1e-5, atol=1e-6)
        assert np.allclose(r["read"], one_read, rtol=1e-6)


@pytest.mark.slow  # two processes train (gloo)
def test_every_collective_on_the_models_device(ranks):
    """The data-parallel step and the statistics' reduction on a device-strict group: tensors made
    without the model's device land on the meta device, and a collective on anything but the model's
    device fails, as NCCL fails on a CPU tensor. (Today's main all-reduced a CPU float64 tensor.)"""
    one, _ = _train_steps(0, 1)
    for k in one:
        torch.testing.assert_close(ranks[1]["strict"]["weights"][k], one[k], rtol=1e-5, atol=1e-6)


def test_rank_parts_never_leave_a_rank_empty():
    lengths = np.array([[3, 4]] * 10)
    for n in range(1, 10):
        for world in (1, 2, 4):
            per_rank = [ztrain.rank_parts(np.arange(n), lengths, world, 3, r) for r in range(world)]
            assert len({len(p) for p in per_rank}) == 1  # every rank the same number of micro-batches
            assert all(len(idx) >= 1 for p in per_rank for idx, _ in p)
            real = sorted(i for p in per_rank for idx, w in p if w for i in idx)
            assert real == list(range(n))  # every pair once at weight 1


class HostSyncs(TorchDispatchMode):
    """Counts the host reads of device values: item(), bool(), float() and int() of a tensor all go
    through aten._local_scalar_dense; tolist() and numpy() are counted by name."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.n += 1
        return func(*args, **(kwargs or {}))


def test_a_training_step_never_waits_for_the_device(monkeypatch):
    """The steady state reads nothing back: forward, loss, backward and Adam of 4 steps (2 micro-batches
    each) sync the host 0 times; the statistics are read once, at the log point."""
    torch.manual_seed(0)
    model = build_model(TINY.model_copy(update={"dropout": 0.1}), V)
    opt = recipe.make_optimizer(model, 1e-3)
    cfg, cpu = _cfg(), torch.device("cpu")
    pairs = _pairs()
    lengths = zdata.pair_lengths(pairs)
    stats = torch.zeros(2, dtype=torch.float64)
    listed = []
    real_tolist, real_numpy = torch.Tensor.tolist, torch.Tensor.numpy
    monkeypatch.setattr(torch.Tensor, "tolist", lambda t: listed.append(1) or real_tolist(t))
    monkeypatch.setattr(torch.Tensor, "numpy", lambda t, **k: listed.append(1) or real_numpy(t, **k))
    works = [ztrain._Work(0, 0, int(lengths[b, 1].sum()),
                          [(zdata.collate(pairs, p), w) for p, w in ztrain.rank_parts(b, lengths, 1, 2, 0)])
             for b in (np.arange(0, 6), np.arange(6, 14), np.arange(14, 17), np.arange(20, 30))]
    with HostSyncs() as syncs:
        for work in works:
            ztrain._step(cfg, model, opt, cpu, work, stats)
            opt.step()
    assert syncs.n == 0 and not listed, (syncs.n, len(listed))
    loss, nll = zstep.read_stats(stats)
    assert len(listed) == 1 and loss > 0 and nll > 0 and not stats.any()


@pytest.mark.slow  # torch.compile
def test_compile_recompiles_per_bucket_at_most_and_the_model_has_no_graph_break():
    """train.compile on: 50 length-bucketed batches (make_batches' token budgets: every one a new
    (batch, length) shape) through the compiled model, forward and backward. Dynamic shapes keep the
    compiles to at most one per power-of-two length bucket (here 2: the graph, and once more when the
    first batch's equal source and target lengths were assumed equal), and the model is one graph."""
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    rng = np.random.default_rng(0)
    pairs = [(rng.integers(4, V, rng.integers(2, 60)).tolist(), rng.integers(4, V, rng.integers(2, 60)).tolist())
             for _ in range(1500)]
    lengths = zdata.pair_lengths(pairs)
    batches = zdata.make_batches(lengths, 300, 1, 0)[:50]
    shapes = {(zdata.collate(pairs, b).src.shape, zdata.collate(pairs, b).tgt_in.shape) for b in batches}
    buckets = {(int(s[1]).bit_length(), int(t[1]).bit_length()) for s, t in shapes}
    torch.manual_seed(0)
    model = build_model(TINY.model_copy(update={"dropout": 0.1}), V).train()
    fwd = zstep.compiled(model, _cfg(compile="on"), backend="aot_eager")  # dynamo's graphs, no C++ build
    for b in batches:
        b = zdata.collate(pairs, b)
        loss, _ = recipe.smoothed_loss(fwd(b.src, b.tgt_in), b.tgt_out, 0.1)
        loss.backward()
    graphs = counters["stats"]["unique_graphs"]
    assert len(shapes) > 30, len(shapes)  # most batches a new shape
    assert 1 <= graphs <= len(buckets), (graphs, len(buckets))
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    assert zstep.compiled(model, _cfg()) is model  # off: the model itself


def _old_smoothed_loss(logits, target, eps):
    """main's loss before chunking: one fp32 log-softmax over all the logits (the reference)."""
    V = logits.size(-1)
    logp = torch.log_softmax(logits.float(), -1).view(-1, V)
    target = target.reshape(-1)
    keep = target != 0
    nll = -logp.gather(1, target[:, None]).squeeze(1)
    others = -(logp.sum(1) - logp[:, 0]) - nll
    loss = (1 - eps) * nll + eps / (V - 2) * others if eps else nll
    return torch.where(keep, loss, 0.0).sum(), torch.where(keep, nll, 0.0).sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_chunked_loss_equals_the_whole_one(monkeypatch, dtype):
    """Chunks of a few rows (the boundary falls mid-batch, pad rows included) give main's loss, and
    the gradient of the whole fp32 softmax, in the logits' own dtype."""
    torch.manual_seed(0)
    logits = (4 * torch.randn(3, 7, 50)).to(dtype).requires_grad_()
    target = torch.randint(1, 50, (3, 7))
    target[0, 4:] = 0
    ref, ref_nll = _old_smoothed_loss(logits, target, 0.1)
    g_ref, = torch.autograd.grad(ref, logits)
    monkeypatch.setattr(recipe, "LOSS_CHUNK", 50 * 4)  # 4 rows a chunk: 21 rows in 6 chunks
    assert len(recipe._chunks(21, 50)) == 6
    loss, nll = recipe.smoothed_loss(logits, target, 0.1)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6) and nll.item() == pytest.approx(ref_nll.item(), rel=1e-6)
    g, = torch.autograd.grad(loss, logits)
    assert g.dtype == dtype
    torch.testing.assert_close(g.float(), g_ref.float(), rtol=1e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-6)


@pytest.mark.slow  # zoo train in a process of its own (torch's import: over 3 s)
def test_a_gpu_request_without_cuda_exits_2_before_training(repo, data_root, tmp_path):
    """No CUDA here: gpus 1 stops before anything is written, naming what torch sees and the opt-in;
    gpus above 1 per worker and a share with several workers are spec errors."""
    import subprocess
    import sys
    env = {**os.environ, "ZOO_DATA_DIR": str(data_root)}
    zoo = lambda *a: subprocess.run([sys.executable, "-m", "zoo.cli", *a], capture_output=True, text=True, env=env)
    r = zoo("train", "base", "--profile", "smoke", "--set", "resources.gpus=1", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "sees 0 CUDA devices" in r.stderr and "resources.allow_cpu_fallback=true" in r.stderr
    assert not (tmp_path / "o" / "checkpoints").exists()
    for sets, needle in ((["resources.gpus=1.5"], "set workers: 2 and gpus: 1"),
                         (["resources.gpus=0.5", "resources.workers=2"], "a share of a GPU (gpus: 0.5)")):
        r = zoo("show", "base", "--profile", "smoke", *[x for s in sets for x in ("--set", s)])
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
