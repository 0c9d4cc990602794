"""One training step (issue 37): the loop, the bench and `zoo run --plan` take zoo.train.step.train_step, the
step the loop always took, and the roofline traces what autocast really moves. Tiny models, CPU only."""
import ast
import io
import sys
from pathlib import Path

import pytest
import torch

from zoo import data as zdata
from zoo.config import Config, ModelSpec
from zoo.model.transformer import build_model
from zoo.train import loop as zloop, make_optimizer, smoothed_loss
from zoo.train import step as zstep

REPO = Path(__file__).resolve().parents[1]
V = 24
TINY = ModelSpec(N=1, d_model=16, d_ff=32, h=2, d_k=8, d_v=8, dropout=0.1)


def _imported(path: Path) -> set[str]:
    """Every module a file imports, at any depth (a function's lazy imports too), read with ast."""
    got = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            got |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module:
            got |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
    return got


@pytest.mark.parametrize("path", ["zoo/train/loop.py", "runner/plan.py", "bench/bench_train.py"])
def test_loop_bench_and_plan_share_one_step(path):  # by module inside zoo.train, through its door outside
    assert {"zoo.train.step", "zoo.train.train_step"} & _imported(REPO / path), f"{path} does not take zoo.train.step"


def _batches(n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = lambda: torch.randint(4, V, (int(torch.randint(2, 9, (1,), generator=g)),), generator=g).tolist()
    pairs = [(ids(), ids()) for _ in range(6 * n)]
    return [zdata.collate(pairs, list(range(6 * i, 6 * i + 6))) for i in range(n)]


def test_train_step_is_the_step_the_loop_took():
    """train_step against the loop's step as it was written before it moved (lr, zero_grad, forward, the
    label-smoothed loss over the step's tokens, backward, Adam): the same weights and statistics, bit for bit."""
    cfg, cpu = Config(variant="t", model=TINY, train={"label_smoothing": 0.1}), torch.device("cpu")
    runs = []
    for shared in (True, False):
        torch.manual_seed(0)
        model = build_model(TINY, V)
        opt = make_optimizer(model)
        stats = torch.zeros(2, dtype=torch.float64)
        torch.manual_seed(1)
        for i, b in enumerate(_batches()):
            lr = cfg.train.schedule.lr(i + 1, TINY.d_model, cfg.train.steps)
            if shared:
                zstep.train_step(cfg, model, opt, cpu, [(b, 1.0)], b.n_tgt_tokens, stats, None, lr)
                continue
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            loss, nll = smoothed_loss(model(b.src, b.tgt_in), b.tgt_out, 0.1)
            (loss * (1.0 / b.n_tgt_tokens)).backward()
            stats += torch.stack([loss.detach(), nll]).double()
            opt.step()
        runs.append(([p.detach().clone() for p in model.parameters()], stats.clone()))
    (w1, s1), (w2, s2) = runs
    assert all(torch.equal(a, b) for a, b in zip(w1, w2)) and torch.equal(s1, s2)


def test_zoos_adam_is_torchs_update_and_state_without_importing_dynamo(tmp_path):
    """make_optimizer's Adam against torch.optim.Adam: the same weights and state bit for bit over steps, a zeroed
    gradient and a state_dict round trip (fused and not); and a process that trains imports no torch._dynamo."""
    from zoo.train.recipe import Adam
    for fused in (True, None):
        runs = []
        for cls in (Adam, torch.optim.Adam):
            torch.manual_seed(0)
            model = build_model(TINY, V)
            opt = cls(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9, fused=fused)
            for i, b in enumerate(_batches()):
                if i == 2:  # resume from a copy of its state, as a checkpoint does
                    state = opt.state_dict()
                    opt = cls(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9, fused=fused)
                    opt.load_state_dict(state)
                opt.zero_grad(set_to_none=True)
                loss, _ = smoothed_loss(model(b.src, b.tgt_in), b.tgt_out, 0.1)
                loss.backward()
                opt.step()
            runs.append(([p.detach().clone() for p in model.parameters()], opt.state_dict()))
        (w1, s1), (w2, s2) = runs
        assert all(torch.equal(a, b) for a, b in zip(w1, w2)), fused
        assert s1["param_groups"] == s2["param_groups"] and s1["state"].keys() == s2["state"].keys()
        assert all(torch.equal(s1["state"][k][n], s2["state"][k][n]) for k in s1["state"] for n in s1["state"][k])
    code = ("import sys, torch; from zoo.model.transformer import build_model; from zoo.config import ModelSpec; "
            "from zoo.train import make_optimizer; m = build_model(ModelSpec(N=1, d_model=16, d_ff=32, h=2, d_k=8, "
            "d_v=8), 24); o = make_optimizer(m, 1e-3); m(torch.ones(2, 3, dtype=torch.long), "
            "torch.ones(2, 3, dtype=torch.long)).sum().backward(); o.step(); o.zero_grad(); o.load_state_dict("
            "o.state_dict()); print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))")
    import subprocess
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr[-2000:]
    # torch's Adam made in the process wraps its class's step once more (the step hooks): ours still steps past
    # every wrapper (no graph break called) and runs the hooks once a step
    from torch import _dynamo
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    seen, breaks = [], []
    handle = register_optimizer_step_pre_hook(lambda opt, a, k: seen.append(type(opt)))
    real_break = _dynamo.graph_break
    _dynamo.graph_break = lambda *a, **k: breaks.append(1) or real_break(*a, **k)
    try:
        model = build_model(TINY, V)
        torch.optim.Adam(model.parameters())
        opt = Adam(model.parameters(), lr=1e-3)
        b = _batches()[0]
        smoothed_loss(model(b.src, b.tgt_in), b.tgt_out, 0.1)[0].backward()
        opt.step()
    finally:
        handle.remove()
        _dynamo.graph_break = real_break
    assert seen == [Adam] and not breaks, (seen, breaks)


def test_the_loop_steps_through_train_step(monkeypatch):
    calls = []
    real = zstep.train_step
    monkeypatch.setattr(zloop, "train_step", lambda *a, **k: calls.append(a[-1]) or real(*a, **k))
    cfg = Config(variant="t", model=TINY)
    model = build_model(TINY, V)
    b = _batches(1)[0]
    work = zloop._Work(0, 0, b.n_tgt_tokens, [(b, 1.0)])
    zloop._step(cfg, model, make_optimizer(model), torch.device("cpu"), work, torch.zeros(2, dtype=torch.float64),
                None, 1e-3)
    assert calls == [1e-3]


def test_plan_times_the_trials_own_step(monkeypatch):
    """`zoo run --plan` measures train_step with the trial's precision (a warm-up step, then `steps`)."""
    from runner import plan
    calls = []
    real = zstep.train_step
    monkeypatch.setattr(zstep, "train_step", lambda *a, **k: calls.append(a[7]) or real(*a, **k))
    cfg = Config(variant="t", model=TINY, data={"vocab_size": V}, train={"precision": "fp32"})
    assert plan.measured_flops_per_s(cfg, steps=2) > 0 and calls == [None] * 3  # amp None: fp32, as asked


@pytest.mark.parametrize("pack", ["off", "on"])
def test_plan_times_the_trials_batch_layout(monkeypatch, pack):
    """With train.pack on, `--plan` times packed rows (the masks that keep sentences apart cost time too), and a
    trial that differs only in pack gets a measurement of its own."""
    from runner import plan
    seen, real = [], zstep.train_step
    monkeypatch.setattr(zstep, "train_step", lambda *a, **k: seen.append(a[4][0][0]) or real(*a, **k))
    cfg = Config(variant="t", model=TINY, data={"vocab_size": V}, train={"precision": "fp32", "pack": pack})
    assert plan.measured_flops_per_s(cfg, steps=1) > 0
    packed = [b.src_seg is not None for b in seen]
    assert packed == [pack == "on"] * 2, packed
    if pack == "on":  # SEQ_LEN-piece sentences: two a 64-token row
        assert int(seen[0].src_seg.max()) == 2, seen[0].src_seg
    measured = []
    monkeypatch.setattr(plan, "measured_flops_per_s", lambda c: measured.append(c.train.pack) or 1e9)
    other = cfg.model_copy(update={"train": cfg.train.model_copy(update={"pack": "off" if pack == "on" else "on"})})
    plan.plan([cfg, cfg, other], stream=io.StringIO())
    assert measured == [pack, "off" if pack == "on" else "on"]


def _bench():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_train
        import roofline
    finally:
        sys.path.remove(str(REPO / "bench"))
    return bench_train, roofline


def test_bench_warms_every_shape_and_reads_the_loss_once(monkeypatch):
    bench_train, _ = _bench()
    cfg = Config(variant="t", model=TINY, data={"vocab_size": V})
    tr = bench_train.Trainer(build_model(TINY, V), cfg)
    batches = _batches(3)
    steps = []
    real = bench_train.train_step
    monkeypatch.setattr(bench_train, "train_step", lambda *a, **k: steps.append(1) or real(*a, **k))
    tr.warm_up(batches + batches)  # each shape once
    assert len(steps) == len({(b.src.shape, b.tgt_in.shape) for b in batches})
    items = []
    real_item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda t: items.append(1) or real_item(t))
    tr.run(batches)
    assert len(items) == 1 and tr.steps == 3 and tr.tps > 0  # one read, after the clock stopped


def test_roofline_traces_autocasts_casts_and_ranges():
    """Under amp the weights and the residual stream stay fp32: the trace holds their casts (a weight cast
    once per forward), and a step's best case is faster than its worst."""
    _, roofline = _bench()
    with torch.device("meta"):
        model = build_model(TINY.model_copy(update={"dropout": 0.0}), V).train()
    ids = torch.ones(4, 6, dtype=torch.long, device="meta")
    loss = lambda lg, t: smoothed_loss(lg, t, 0.1)[0]
    fp32, _ = roofline.step(model, ids, ids, ids, loss)
    amp, attention = roofline.step(model, ids, ids, ids, loss, amp=True)
    assert len(amp.kernels) > len(fp32.kernels) and amp.flops == fp32.flops and len(attention) == 3
    h100 = roofline.GPUS["H100 SXM"]
    assert amp.seconds(h100, "best") < amp.seconds(h100, "mid") < amp.seconds(h100, "worst")
    compiled, _ = roofline.step(model, ids, ids, ids, loss, fused=True, amp=True, compiled_loss=True)
    assert len(compiled.kernels) < len(amp.kernels) and compiled.bytes < amp.bytes
    assert roofline.gpu_spec("NVIDIA H100 80GB HBM3") is h100 and roofline.gpu_spec("NVIDIA A100-SXM4-80GB").peak == 312e12


def test_roofline_times_dropouts_draws_at_the_cpus_rate():
    """A CPU draws dropout's mask at a measured rate (far below its copy bandwidth); a GPU's draws are
    memory-bound. Each mask element is one draw."""
    _, roofline = _bench()
    with torch.device("meta"):
        model = build_model(TINY.model_copy(update={"dropout": 0.1}), V).train()
    ids = torch.ones(4, 6, dtype=torch.long, device="meta")
    trace, _ = roofline.step(model, ids, ids, ids, lambda lg, t: smoothed_loss(lg, t, 0.1)[0])
    rng = [k for k in trace.kernels if k.kind == "rng"]
    assert rng and all(k.flops == 4 * 6 * TINY.d_model for k in rng[:1])  # the source embedding's mask
    cpu = roofline.Device("cpu", 1e11, 1e10, matmul=(1, 1), attention=(1, 1), memory=(1, 1), floor=(0, 0),
                          host=(0, 0), synchronous=True, exp_per_s=1e8)
    slow = roofline.Device(**{**cpu.__dict__, "rng_per_s": 1e6})
    assert trace.seconds(slow) - trace.seconds(cpu) >= 0.9 * sum(k.flops for k in rng) / 1e6
