"""Seeds side by side (zoo.train.stacked): a stacked seed trains exactly as it trains alone.

The solo runs are zoo.train.train's, on the real Multi30k sample (smoke profile: one layer, d_model 32, dropout
on); the stacked runs are train_stacked's. Curves are compared step by step, to float tolerance: the stacked
forward pads each seed's batch to the stack's shape and sums in other orders, the masks and data are the same.
"""
import json

import pytest
import torch
from torch.func import vmap
from torch.utils._python_dispatch import TorchDispatchMode

from zoo.model import Draws, dropout_key
from zoo.spec import resolve
from zoo.train import train
from zoo.train.stacked import Seat, Stack, stack_problem, stack_size, stacked_step, train_stacked

STEPS = 50
TOLERANCE = 1e-3  # relative, on each step's loss (see _same)
BASE = [f"train.steps={STEPS}", "train.log_every=1", "train.checkpoint_every=25", "train.eval_every=50",
        "train.batch_tokens=300", "eval.max_sentences=2", "model.dropout=0.1",
        # a quarter of smoke's rate (peak 0.014 at d_model 32): at the full rate a one-ulp difference (another
        # summation order: padding, a batched kernel) grows 10x every few steps, to 1e-3 by step 50
        "train.schedule.lr_scale=0.25"]
# three seeds of one row, and a fourth run of another row that differs only in shape-keeping values (P_drop too:
# a stack of rows that differ in it draws each seed's masks at its own P_drop)
ROWS = [["train.seed=1"], ["train.seed=2"], ["train.seed=3"],
        ["train.seed=4", "train.label_smoothing=0.0", "train.schedule.lr_scale=0.4", "model.dropout=0.2"]]


def _cfg(repo, sets, extra=()):
    return resolve(repo / "specs" / "table3_A.yaml", "A2", "smoke", BASE + sets + list(extra))[0]


def _curve(out) -> dict[int, float]:
    points = (json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines())
    return {p["step"]: p["loss"] for p in points if p.get("loss") is not None}


def _same(a: dict, b: dict, steps) -> None:
    """Curves equal to float tolerance. A stacked step's loss and gradients equal the solo step's to ~1e-6
    (another summation order: padding, batched kernels), but Adam turns a rounding-level difference in a
    near-zero gradient into a full step of the other sign, so the curves part slowly (measured: 1.5e-7 to
    4.2e-4 over 50 steps at BASE's rate; at smoke's full rate 1e-3 by step 50). The first step (the
    initialisation, the data and the masks, before any update) must agree to rounding; every step to
    TOLERANCE: another dropout mask changes a step's loss by 6e-4 to 1.2e-2 (2e-3 to 5e-3 typically),
    another batch by more."""
    assert [s for s in steps if s not in a or s not in b] == []
    devs = {s: abs(a[s] - b[s]) / abs(a[s]) for s in steps}
    print(f"max relative deviation over steps {min(steps)}-{max(steps)}: {max(devs.values()):.2g}")
    first = min(steps)
    assert devs[first] < 1e-6 or first > 1, f"step {first}: alone {a[first]}, stacked {b[first]}"
    worst = max(devs, key=devs.get)
    assert devs[worst] < TOLERANCE, f"step {worst}: alone {a[worst]}, stacked {b[worst]}"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: on a shared 2-core machine two threads wait on each other (10x slower steps)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def solo(repo, data_root, tmp_path_factory):
    """Each row trained alone, uninterrupted: its loss at every step."""
    root = tmp_path_factory.mktemp("solo")
    curves = []
    for k, sets in enumerate(ROWS):
        train(_cfg(repo, sets), root / f"r{k}", data_root)
        curves.append(_curve(root / f"r{k}"))
    return curves


def test_each_seed_draws_at_its_own_p_drop_in_a_stack():
    """Rows that differ in P_drop stack: vmapped with P_drop a tensor, a seed's mask and scale are its solo ones at
    its float P_drop (0 keeps everything, scale 1), and its dropout output equals the solo one to rounding."""
    ps = [0.0, 0.1, 0.3]
    keys = torch.stack([dropout_key(s, 7) for s in (1, 2, 3)])
    x = torch.randn(5, 9, 33)
    solo = [Draws(dropout_key(s, 7)).keep(x, p) for s, p in zip((1, 2, 3), ps)]
    masks, scales = vmap(lambda k, q: Draws(k, q).keep(x, q))(keys, torch.tensor(ps))
    for k, (mask, scale) in enumerate(solo):
        assert torch.equal(masks[k], mask) and abs(scales[k].item() - scale) < 1e-6
    assert masks[0].all() and scales[0].item() == 1.0 and not masks[2].all()
    out = vmap(lambda k, q: Draws(k, q).drop(x, q))(keys, torch.tensor(ps))
    assert torch.allclose(out[2], Draws(dropout_key(3, 7)).drop(x, 0.3), rtol=1e-6) and torch.equal(out[0], x)


def test_masks_depend_on_coordinates_not_on_padding_or_stacking():
    """A seed's masks at its real positions are the same unpadded, padded, or vmapped beside other seeds; the
    keep rate is 1 - p and neighbouring elements are independent."""
    keys = torch.stack([dropout_key(s, 7) for s in (1, 2, 3)])
    alone = [Draws(dropout_key(s, 7)).keep(torch.zeros(5, 9, 33), 0.1)[0] for s in (1, 2, 3)]
    padded = vmap(lambda k, x: Draws(k).keep(x, 0.1)[0])(keys, torch.zeros(3, 8, 12, 33))
    for k in range(3):
        assert torch.equal(padded[k, :5, :9], alone[k])
    assert not torch.equal(alone[0], alone[1])  # each seed its own
    second = Draws(dropout_key(1, 7))
    second.keep(torch.zeros(1), 0.1)
    assert not torch.equal(second.keep(torch.zeros(5, 9, 33), 0.1)[0], alone[0])  # each call site its own
    m = Draws(dropout_key(1, 8)).keep(torch.zeros(64, 100, 256), 0.5)[0].float() * 2 - 1
    assert abs(m.mean()) < 0.01
    for dim in range(3):
        a, b = m.narrow(dim, 1, m.size(dim) - 1), m.narrow(dim, 0, m.size(dim) - 1)
        assert abs((a * b).mean()) < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("K", [1, 2, 4])
def test_stacked_rows_through_a_resume(repo, data_root, tmp_path, solo, K):
    """K = 1, 2, 4 rows (at 4: three seeds and a row with other label smoothing, learning rate and P_drop) stopped at step
    25, resumed from their per-seed checkpoints, equal each row trained alone straight through, step by step (the
    steps before the stop and after the resume); a solo run resumes a stacked seed's checkpoint as its own."""
    outs = [tmp_path / f"r{k}" for k in range(K)]
    train_stacked([_cfg(repo, sets, ["train.steps=25"]) for sets in ROWS[:K]], outs, data_root)
    for out in outs:
        assert (out / "checkpoints" / "step_00000025.pt").exists() and (out / "checkpoints" / "optim_00000025.pt").exists()
        (out / "summary.json").unlink()
    solo_resume = tmp_path / "solo-resumes"
    (solo_resume / "checkpoints").mkdir(parents=True)
    for f in ("step_00000025.pt", "optim_00000025.pt"):
        (solo_resume / "checkpoints" / f).write_bytes((outs[-1] / "checkpoints" / f).read_bytes())
    results = train_stacked([_cfg(repo, sets) for sets in ROWS[:K]], outs, data_root)
    assert [r.steps_done for r in results] == [STEPS] * K
    for k in range(K):
        _same(solo[k], _curve(outs[k]), range(1, STEPS + 1))
    train(_cfg(repo, ROWS[K - 1]), solo_resume, data_root)
    _same(solo[K - 1], _curve(solo_resume), range(26, STEPS + 1))


@pytest.mark.slow
def test_stacked_rows_bucketed_as_for_a_cuda_graph(repo, data_root, tmp_path, solo):
    """train.cuda_graph on: the stack's step on its batches padded to a bucket's shape (zoo.train.graphed.GraphedStack;
    on a GPU each bucket's step is recorded once and replayed, on a CPU the same bucketed step runs eagerly) trains
    each of the four rows as it trains alone."""
    outs = [tmp_path / f"r{k}" for k in range(len(ROWS))]
    train_stacked([_cfg(repo, sets, ["train.cuda_graph=on"]) for sets in ROWS], outs, data_root)
    for k in range(len(ROWS)):
        _same(solo[k], _curve(outs[k]), range(1, STEPS + 1))


@pytest.mark.slow
def test_a_diverging_seed_ends_alone(repo, data_root, tmp_path, solo):
    """A row with a huge learning rate stops (its error is its result); the others' curves are unchanged."""
    cfgs = [_cfg(repo, ROWS[0]), _cfg(repo, ["train.seed=9", "train.schedule.lr_scale=1000"]), _cfg(repo, ROWS[1])]
    said = []  # (seat, what) in the order reported
    results = train_stacked(cfgs, [tmp_path / f"r{k}" for k in range(3)], data_root,
                            lambda k, e: said.append((k, type(e).__name__, getattr(e, "step", None))))
    assert isinstance(results[1], Exception) and not (tmp_path / "r1" / "summary.json").exists()
    # its end is said when it happens, not when the stack ends: the others log steps after it
    end = said.index((1, type(results[1]).__name__, None))
    assert [s for k, _, s in said[end:] if k == 0 and s] and all(k != 1 for k, *_ in said[end + 1:])
    assert len(_curve(tmp_path / "r1")) < STEPS
    for k, row in ((0, 0), (2, 1)):
        _same(solo[row], _curve(tmp_path / f"r{k}"), range(1, STEPS + 1))


def test_only_shape_keeping_differences_stack(repo):
    rows = [_cfg(repo, ROWS[0]), _cfg(repo, ROWS[3])]
    assert stack_problem(rows) is None
    assert "model.d_ff" in stack_problem(rows + [_cfg(repo, ["model.d_ff=64"])])
    assert "attention_dropout" in stack_problem([_cfg(repo, ["model.attention_dropout=0.1"])])


def test_the_stack_fits_the_device(repo):
    """K is as many seeds as the device's memory holds beside one runtime, at least 1, at most the seeds asked."""
    from zoo.model import train_memory
    cfg = _cfg(repo, ROWS[0])
    est = train_memory(cfg)
    one = est["total"] - est["runtime"]
    assert stack_size(cfg, 10, est["runtime"] + 4 * one + one // 2) == 4
    assert stack_size(cfg, 3, 2 ** 50) == 3 and stack_size(cfg, 10, 0) == 1


class _Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n, self.names = 0, set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        self.names.add(str(func))
        return func(*args, **(kwargs or {}))


def _stack(repo, data_root, K, device="cpu", sets=()):
    """K seeds of ROWS[0]'s row made ready to step side by side, as train_stacked makes them (no folders)."""
    import copy
    from pathlib import Path
    from zoo.data import BatchOrder, pair_lengths
    from zoo.train.checkpointing import State
    from zoo.train.prepared import build, prepare
    from zoo.train.recipe import make_optimizer
    cfgs = [_cfg(repo, [f"train.seed={k + 1}", *sets]) for k in range(K)]
    p = prepare(cfgs[0], data_root)
    seats = []
    for c in cfgs:
        torch.manual_seed(c.train.seed)
        model = build(c, p.sp, p.tgt_vocab).to(device).train()
        opt = make_optimizer(model, 0.0, tuple(c.train.optimizer.betas), c.train.optimizer.eps)
        seats.append(Seat(c, Path("."), model, opt, State(), BatchOrder(pair_lengths(p.train), c.train.batch_tokens,
                                                                        c.train.seed), p.train,
                          torch.zeros(2, dtype=torch.float64, device=device)))
    return Stack(seats, copy.deepcopy(seats[0].model).train(), device)


def test_a_seed_more_adds_few_ops_to_a_stacked_step(repo, data_root):
    """One op serves all K seeds: a seed more adds under a tenth of a solo step's dispatched ops (those left: its
    Adam update and its batch; before attention ran as math under vmap, the CPU's kernels also looped over the
    seeds). Stacking every parameter each step, its backward and a loss per seed added ~250 a seed (0.21 of a
    step)."""
    ops = {}
    for K in (1, 2, 4):
        stack = _stack(repo, data_root, K)
        stacked_step(stack)  # Adam's state made
        with _Ops() as count:
            stacked_step(stack)
        ops[K] = count.n
    per_seed = (ops[4] - ops[2]) / 2
    print(f"dispatched ops a step: {ops}; a seed more: {per_seed:.0f}")
    assert 0 < per_seed < 0.1 * ops[1], ops


def test_a_stacks_attention_is_the_math_backend_batched_by_vmap(repo, data_root):
    """Inside the vmapped step attention runs as SDPA's math backend (matmuls and a softmax, batched like any op), on
    every device: the fused kernels' batch rules leave out the logsumexp a vmapped training step's backward needs on
    a GPU (zoo.train.stacked.ATTENTION). Alone, the same model takes a fused kernel (the CPU's flash attention)."""
    stack = _stack(repo, data_root, 2, sets=["train.pack=on"])
    stacked_step(stack)
    with _Ops() as ops:
        stacked_step(stack)
    fused = sorted(n for n in ops.names if "_scaled_dot_product_" in n)
    assert not fused and any("softmax" in n for n in ops.names), fused
    from zoo.train.prepared import training_batch
    seat = stack.seats[0]
    batch = training_batch(seat.cfg, seat.pairs, seat.batches.next())
    with _Ops() as alone:
        seat.model(batch.src, batch.tgt_in, batch.src_seg, batch.tgt_seg).sum().backward()
    assert any("_scaled_dot_product_flash_attention" in n for n in alone.names), sorted(alone.names)


def test_a_stacked_seed_is_its_own_model(repo, data_root):
    """Each seed's parameters and gradients are views of its row of the stack: its own Adam moves its row only,
    and its state dict for a checkpoint holds its own weights alone (not every seed's storage)."""
    from zoo.train.stacked import state_dict
    stack = _stack(repo, data_root, 3)
    before = {n: w.detach().clone() for n, w in stack.weights.items()}
    stacked_step(stack)
    moved = [any(not torch.equal(w[k], before[n][k]) for n, w in stack.weights.items()) for k in range(3)]
    assert moved == [True, True, True]
    for k, s in enumerate(stack.seats):
        for n, p in s.model.named_parameters():
            assert p.data_ptr() == stack.weights[n][k].data_ptr() and p.grad.data_ptr() == stack.weights[n].grad[k].data_ptr()
    sd = state_dict(stack.seats[1].model)
    w = next(n for n in stack.weights)
    assert torch.equal(sd[w], stack.weights[w][1]) and sd[w].untyped_storage().nbytes() == sd[w].numel() * sd[w].element_size()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a CUDA graph needs a GPU (the CPU runs the bucketed step)")
def test_a_recorded_stack_replays_its_eager_step_on_a_gpu(repo, data_root):
    """train.cuda_graph on, K = 2 on a GPU: the stack's steps recorded per bucket and replayed give the eager stack's
    losses step by step (its batches padded to a bucket: float rounding apart; the weights themselves part at
    rounding level through Adam, as test_stacked_rows_through_a_resume's curves say)."""
    runs = {}
    for graph in ("off", "on"):
        stack = _stack(repo, data_root, 2, "cuda", ["model.dropout=0.1", f"train.cuda_graph={graph}"])
        curve = []
        for _ in range(12):
            stacked_step(stack)
            curve.append(stack.stats.sum(1).tolist())  # each seed's running sums, read after every step
        runs[graph] = (torch.tensor(curve), stack)
    stack = runs["on"][1]
    g = stack.graphed
    assert g.buckets and all(graph is not None for _, graph in g.buckets.values()) and g.eager_steps == 0
    assert len(g.buckets) < 12  # some bucket was replayed, not only recorded
    torch.testing.assert_close(runs["on"][0], runs["off"][0], rtol=1e-4, atol=1e-3)
    # the same batches again, every bucket recorded: the host never waits for the device (a blocking copy, a read)
    from zoo.data import BatchOrder, pair_lengths
    for s in stack.seats:
        s.batches = BatchOrder(pair_lengths(s.pairs), s.cfg.train.batch_tokens, s.cfg.train.seed)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(12):
            stacked_step(stack)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_a_stacks_body_reads_nothing_back_to_the_host(repo, data_root, monkeypatch):
    """What a CUDA graph records (Stack.body) must not read a value back to the host (a capture refuses .item(),
    .tolist(), a copy to the host) nor bring a host tensor in: its forward, every seed's loss (two label smoothings)
    and the backward run on the meta device, which holds no values and refuses both. Adam's capturable update is
    torch's own (left out here: torch allows `capturable` on accelerators only)."""
    import contextlib
    import zoo.train.stacked as zs
    from zoo.data import collate
    monkeypatch.setattr(zs, "autocast", lambda device, amp: contextlib.nullcontext())  # no autocast for meta
    stack = _stack(repo, data_root, 3, "meta", ["model.dropout=0.1"])
    stack.eps = torch.tensor([0.1, 0.1, 0.0], device="meta")
    for s in stack.seats:
        monkeypatch.setattr(s.opt, "step", lambda: None)
    batches = [collate(s.pairs, s.batches.next()) for s in stack.seats]
    keys = zs.dropout_key([1, 2, 3], [1, 1, 1])
    stack.body(*(x if x is None else x.to("meta") for x in zs.pad_batches(batches)), keys.to("meta"),
               torch.ones(3, device="meta"))
    assert all(w.grad.is_meta and w.grad.shape == w.shape for w in stack.weights.values())
    with pytest.raises(RuntimeError, match="meta"):  # the probe can fail: a host read inside the body is refused
        stack.stats.sum().item()


@pytest.mark.slow
def test_packed_rows_stack_as_they_train_alone(repo, data_root, tmp_path, solo):
    """train.pack on (several sentences a row, zoo.data.packing): two rows (other label smoothing, lr and P_drop in
    the second) stacked, eagerly and bucketed for a CUDA graph, each train as the row trained alone, packed too;
    dropout on (a seed's masks follow its packed positions, alone or stacked)."""
    rows = [ROWS[0], ROWS[3]]
    alone = []
    for k, sets in enumerate(rows):
        train(_cfg(repo, sets, ["train.pack=on"]), tmp_path / f"alone{k}", data_root)
        alone.append(_curve(tmp_path / f"alone{k}"))
    assert abs(alone[0][STEPS] - solo[0][STEPS]) > 1e-3 * solo[0][STEPS]  # packed: other rows, other dropout draws
    for graph in ("off", "on"):
        outs = [tmp_path / f"{graph}{k}" for k in range(len(rows))]
        train_stacked([_cfg(repo, sets, ["train.pack=on", f"train.cuda_graph={graph}"]) for sets in rows], outs,
                      data_root)
        for k in range(len(rows)):
            _same(alone[k], _curve(outs[k]), range(1, STEPS + 1))
