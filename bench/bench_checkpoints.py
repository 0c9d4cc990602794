"""What saving often costs the training loop (issue 37): the smoke profile's A2 trained 90 steps with a
checkpoint every 3 steps (30 saves: the gpu profile's base saves every 18) against the same run saving
only its last step, the two alternating round by round so machine noise hits both alike. Prints the
share of training time the loop waited on checkpoints (the copies to the writer, and a write it had to
wait for) and the saving run's tokens/s as a ratio of the other's: what saving costs in all. The saving run
twice: its writes in the writer's process (zoo.train.writer) from the start, and as zoo does by default for a
model this small (under writer.INLINE_BYTES of state): in the loop's own thread until they took
writer.INLINE_S, then in a writer process; tests/test_checkpoints_async.py checks which, this measures both,
and the writer processes' CPU seconds (a writer's start is its torch import).

It then saves the cpu profile's base with its Adam state by torch.save on a thread, as zoo did before, and
by the writer, while a Python thread counts: how much of its progress it kept, and the longest it waited.

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

import zoo.train.writer as writer
from zoo.spec import resolve
from zoo.train import Writer, atomic_save, train

REPO = Path(__file__).resolve().parents[1]


def run(every: int, steps: int, out: Path):
    cfg = resolve(REPO / "specs/table3_A.yaml", "A2", "smoke",
                  ["eval.max_sentences=2", "train.checkpoint_minutes=0", f"train.steps={steps}",
                   f"train.checkpoint_every={every}", f"train.eval_every={steps}"])[0]
    return train(cfg, out, Path(os.environ.get("ZOO_DATA_DIR", "../shared/data")))


def beside(save) -> tuple[float, float, float]:
    """A busy Python thread (what a training loop's kernel launches are) while `save()` runs: (seconds
    save took, the thread's progress as a share of its rate alone, the longest it was kept from running)."""
    stop, seen = threading.Event(), {}

    def count():
        n, last, gap = 0, time.perf_counter(), 0.0
        while not stop.is_set():
            now = time.perf_counter()
            n, gap, last = n + 1, max(gap, now - last), now
        seen.update(n=n, gap=gap)

    def rate(work) -> tuple[float, float, float]:
        stop.clear()
        t = threading.Thread(target=count)
        t.start()
        t0 = time.perf_counter()
        work()
        took = time.perf_counter() - t0
        stop.set()
        t.join()
        return took, seen["n"] / took, seen["gap"]
    took, n, gap = rate(save)
    alone = rate(lambda: time.sleep(took))[1]
    return took, n / alone, gap


def stalls(tmp: Path) -> None:
    """The cpu profile's base and its Adam state (three copies of 8.6M weights in 200 tensors)."""
    from zoo.model import build_model
    from zoo.train import make_optimizer
    cfg = resolve(REPO / "specs/base.yaml", None, "cpu")[0]
    model = build_model(cfg.model, 8000)
    opt = make_optimizer(model, 1e-4, (0.9, 0.98), 1e-9)
    for q in model.parameters():
        q.grad = torch.randn_like(q)
    opt.step()
    ck = {"step": 1, "model": model.state_dict(), "optim": opt.state_dict()}
    mb = 3 * sum(q.numel() for q in model.parameters()) * 4 / 1e6
    (tmp / "checkpoints").mkdir()
    w = Writer()
    w.save({"step": 0, "model": {"w": torch.ones(1)}}, tmp, keep=1)  # the writer started and warm
    w.wait()
    for name, save in [("torch.save on a thread of this process (zoo before)", lambda: atomic_save(ck, tmp / "t.pt")),
                       ("the writer process (the copy to it, its write)", lambda: (w.save(ck, tmp, keep=1), w.wait()))]:
        runs = sorted(beside(save) for _ in range(3))
        took, share, gap = runs[1]
        print(f"{mb:.0f} MB in {len(ck['model']) + 3 * len(ck['optim']['state'])} tensors by {name}: "
              f"{took * 1e3:.0f} ms; a busy Python thread meanwhile made {share:.2f}x its progress alone, its "
              f"longest wait {gap * 1e3:.1f} ms", flush=True)
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--every", type=int, default=3)
    a = ap.parse_args()
    share, ratio = {"process": [], "default": []}, {"process": [], "default": []}
    inline = writer.INLINE_BYTES
    with tempfile.TemporaryDirectory() as tmp:
        run(a.every, a.steps, Path(tmp) / "warm")  # the first run in a process pays for data and allocations
        for r in range(a.rounds):
            for how in ("process", "default"):
                writer.INLINE_BYTES = 0 if how == "process" else inline
                often = run(a.every, a.steps, Path(tmp) / f"often-{how}{r}")
                writer.INLINE_BYTES = inline
                last = run(a.steps, a.steps, Path(tmp) / f"last-{how}{r}")
                share[how].append(often.checkpoint_share)
                ratio[how].append((often.tokens_seen / often.train_seconds) / (last.tokens_seen / last.train_seconds))
                print(f"round {r + 1}, writes {how}: waited {100 * often.checkpoint_share:.2f}% of "
                      f"{often.train_seconds:.2f} s on {a.steps // a.every} checkpoints; tokens/s {ratio[how][-1]:.3f}x "
                      "of saving once", flush=True)
    for how in share:
        print(f"writes {how}, median over {a.rounds} rounds ({torch.get_num_threads()} threads): the loop waited "
              f"{100 * statistics.median(share[how]):.2f}% of training time on checkpoints; tokens/s saving every "
              f"{a.every} steps = {statistics.median(ratio[how]):.3f}x of saving once")
    print(f"CPU seconds: this process {time.process_time():.1f}; its writer processes "
          f"{os.times().children_user + os.times().children_system:.1f} (ended ones)")
    writer.end_idle()
    print(f"CPU seconds of its writer processes, all ended: {os.times().children_user + os.times().children_system:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        stalls(Path(tmp))


if __name__ == "__main__":
    main()
