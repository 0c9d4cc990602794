"""What saving often costs the training loop (issue 37): the smoke profile's A2 trained 90 steps with a
checkpoint every 3 steps (30 saves: the gpu profile's base saves every 18) against the same run saving
only its last step, the two alternating round by round so machine noise hits both alike. Prints the
share of training time the loop waited on checkpoints (the host copies, and a write it had to wait for)
and the saving run's tokens/s as a ratio of the other's. The writes themselves run on the writer's
thread (zoo.train.checkpointing.Writer); tests/test_checkpoints_async.py checks that, this measures it.

    taskset -c 1 env OMP_NUM_THREADS=1 ZOO_DATA_DIR=../shared/data .venv/bin/python bench/bench_checkpoints.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import torch

from zoo.spec import resolve
from zoo.train import train

REPO = Path(__file__).resolve().parents[1]


def run(every: int, steps: int, out: Path):
    cfg = resolve(REPO / "specs/table3_A.yaml", "A2", "smoke",
                  ["eval.max_sentences=2", "train.checkpoint_minutes=0", f"train.steps={steps}",
                   f"train.checkpoint_every={every}", f"train.eval_every={steps}"])[0]
    return train(cfg, out, Path(os.environ.get("ZOO_DATA_DIR", "../shared/data")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--every", type=int, default=3)
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


if __name__ == "__main__":
    main()
