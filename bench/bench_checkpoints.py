"""What saving often costs the training loop (issue 37): the smoke profile's A2 trained 90 steps with a
checkpoint every 3 steps (30 saves: the gpu profile's base saves every 18) against the same run saving
only its last step, the two alternating round by round so machine noise hits both alike. Prints the
share of training time the loop waited on checkpoints (the copies to the writer, and a write it had to
wait for) and the saving run's tokens/s as a ratio of the other's: what saving costs in all. The writes
run in the writer's process (zoo.train.writer); tests/test_checkpoints_async.py checks that, this
measures it.

It then saves a 200 MB state (--stall-mb) with torch.save on a thread, as zoo did before, and with the
writer, while a Python thread counts: the longest the counting thread was kept from running, which is what
a GPU loop's kernel launches would wait.

    taskset -c 1 env OMP_NUM_THREADS=1 ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_checkpoints.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch

from zoo.spec import resolve
from zoo.train import train
from zoo.train.checkpointing import atomic_save
from zoo.train.writer import Writer

REPO = Path(__file__).resolve().parents[1]


def run(every: int, steps: int, out: Path):
    cfg = resolve(REPO / "specs/table3_A.yaml", "A2", "smoke",
                  ["eval.max_sentences=2", "train.checkpoint_minutes=0", f"train.steps={steps}",
                   f"train.checkpoint_every={every}", f"train.eval_every={steps}"])[0]
    return train(cfg, out, Path(os.environ.get("ZOO_DATA_DIR", "../shared/data")))


def longest_stall(save) -> tuple[float, float]:
    """(seconds `save()` took, the longest gap a busy Python thread saw meanwhile)."""
    stop, gaps = threading.Event(), [0.0]

    def count():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            gaps[0], last = max(gaps[0], now - last), now
    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    save()
    took = time.perf_counter() - t0
    stop.set()
    t.join()
    return took, gaps[0]


def stalls(mb: int, tmp: Path) -> None:
    (tmp / "checkpoints").mkdir()
    ck = {"step": 1, "model": {"w": torch.randn(mb * 2**18)}, "optim": {"m": torch.randn(mb * 2**18)}}
    w = Writer()
    w.save({"step": 0, "model": {"w": torch.ones(1)}}, tmp, keep=1)  # the writer started and warm
    w.wait()
    for name, save in [("torch.save, on the calling thread's process", lambda: atomic_save(ck, tmp / "t.pt")),
                       ("the writer process (copy + write)", lambda: (w.save(ck, tmp, keep=1), w.wait()))]:
        took, gap = min((longest_stall(save) for _ in range(3)), key=lambda r: r[1])
        print(f"{2 * mb} MB by {name}: {took * 1e3:.0f} ms; the busy thread's longest wait {gap * 1e3:.1f} ms")
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--stall-mb", type=int, default=100, help="MB of each of the state's two tensors")
    a = ap.parse_args()
    share, ratio = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run(a.every, a.steps, Path(tmp) / "warm")  # the first run in a process pays for data and allocations
        for r in range(a.rounds):
            often = run(a.every, a.steps, Path(tmp) / f"often{r}")
            last = run(a.steps, a.steps, Path(tmp) / f"last{r}")
            share.append(often.checkpoint_share)
            ratio.append((often.tokens_seen / often.train_seconds) / (last.tokens_seen / last.train_seconds))
            print(f"round {r + 1}: waited {100 * often.checkpoint_share:.2f}% of {often.train_seconds:.2f} s on "
                  f"{a.steps // a.every} checkpoints; tokens/s {ratio[-1]:.3f}x of saving once", flush=True)
    print(f"median over {a.rounds} rounds ({torch.get_num_threads()} threads): the loop waited "
          f"{100 * statistics.median(share):.2f}% of training time on checkpoints; tokens/s saving every "
          f"{a.every} steps = {statistics.median(ratio):.3f}x of saving once")
    with tempfile.TemporaryDirectory() as tmp:
        stalls(a.stall_mb, Path(tmp))


if __name__ == "__main__":
    main()
