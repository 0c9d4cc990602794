"""Seeds side by side (zoo.train.stacked): a stacked seed trains exactly as it trains alone.

The solo runs are zoo.train.train's, on the real Multi30k sample (smoke profile: one layer, d_model 32, dropout
on); the stacked runs are train_stacked's. Curves are compared step by step, to float tolerance: the stacked
forward pads each seed's batch to the stack's shape and sums in other orders, the masks and data are the same.
"""
import json

import pytest
import torch
from torch.func import vmap

from zoo.model import Draws, dropout_key
from zoo.spec import resolve
from zoo.train import train
from zoo.train.stacked import stack_problem, stack_size, train_stacked

STEPS, STOP = 20, 10  # 20 steps: another dropout mask or batch already parts the curves past TOLERANCE
TOLERANCE = 1e-3  # relative, on each step's loss (see _same)
BASE = [f"train.steps={STEPS}", "train.log_every=1", f"train.checkpoint_every={STOP}", f"train.eval_every={STEPS}",
        "train.batch_tokens=300", "eval.max_sentences=2", "model.dropout=0.1",
        # a quarter of smoke's rate (peak 0.014 at d_model 32): at the full rate a one-ulp difference (another
        # summation order: padding, a batched kernel) grows 10x every few steps, to 1e-3 by step 50
        "train.schedule.lr_scale=0.25"]
# three seeds of one row, and a fourth run of another row that differs only in shape-keeping values
ROWS = [["train.seed=1"], ["train.seed=2"], ["train.seed=3"],
        ["train.seed=4", "train.label_smoothing=0.0", "train.schedule.lr_scale=0.4"]]


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
    """K = 1, 2, 4 rows (at 4: three seeds and a row with other label smoothing and learning rate) stopped at step
    STOP, resumed from their per-seed checkpoints, equal each row trained alone straight through, step by step (the
    steps before the stop and after the resume); a solo run resumes a stacked seed's checkpoint as its own."""
    outs = [tmp_path / f"r{k}" for k in range(K)]
    train_stacked([_cfg(repo, sets, [f"train.steps={STOP}"]) for sets in ROWS[:K]], outs, data_root)
    kept = (f"step_{STOP:08d}.pt", f"optim_{STOP:08d}.pt")
    for out in outs:
        assert (out / "checkpoints" / kept[0]).exists() and (out / "checkpoints" / kept[1]).exists()
        (out / "summary.json").unlink()
    solo_resume = tmp_path / "solo-resumes"
    (solo_resume / "checkpoints").mkdir(parents=True)
    for f in kept:
        (solo_resume / "checkpoints" / f).write_bytes((outs[-1] / "checkpoints" / f).read_bytes())
    results = train_stacked([_cfg(repo, sets) for sets in ROWS[:K]], outs, data_root)
    assert [r.steps_done for r in results] == [STEPS] * K
    for k in range(K):
        _same(solo[k], _curve(outs[k]), range(1, STEPS + 1))
    train(_cfg(repo, ROWS[K - 1]), solo_resume, data_root)
    _same(solo[K - 1], _curve(solo_resume), range(STOP + 1, STEPS + 1))


@pytest.mark.slow
def test_a_diverging_seed_ends_alone(repo, data_root, tmp_path, solo):
    """A row with a huge learning rate stops (its error is its result); the others' curves are unchanged."""
    cfgs = [_cfg(repo, ROWS[0]), _cfg(repo, ["train.seed=9", "train.schedule.lr_scale=1000"]), _cfg(repo, ROWS[1])]
    results = train_stacked(cfgs, [tmp_path / f"r{k}" for k in range(3)], data_root)
    assert isinstance(results[1], Exception) and not (tmp_path / "r1" / "summary.json").exists()
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
