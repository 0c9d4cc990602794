"""The solo step's cost of counter-based dropout masks (zoo.model.dropout) against the generator's 16-bit
masks the eager CPU step drew before, in one process: the same model, batch and weights, the two alternating
step by step so machine noise hits both alike. Prints each one's best and median step and their ratios.

    python bench/bench_dropout.py --profile cpu --steps 5 --threads 1
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from zoo.data import collate, make_batches, pair_lengths
from zoo.model import drawing
from zoo.spec import resolve
from zoo.train.device import autocast_dtype
from zoo.train.prepared import build, prepare
from zoo.train.recipe import make_optimizer
from zoo.train.step import draws_key, train_step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = resolve("specs/base.yaml", None, a.profile, ["model.dropout=0.1"])[0]
    p = prepare(cfg)
    torch.manual_seed(cfg.train.seed)
    model, device = build(cfg, p.sp).train(), torch.device("cpu")
    opt = make_optimizer(model)
    amp = autocast_dtype(cfg.train.precision, device, cfg.model.d_model)
    batches = make_batches(pair_lengths(p.train), cfg.train.batch_tokens, cfg.train.seed, 0)
    stats = torch.zeros(2, dtype=torch.float64)
    took: dict[str, list[float]] = {"generator": [], "counter": []}
    for i in range(a.steps + 1):  # the first pair warms both up, untimed
        b = collate(p.train, batches[i % 4])
        for kind in took:
            t = time.perf_counter()
            with drawing(draws_key(cfg, i + 1) if kind == "counter" else None):
                train_step(cfg, model, opt, device, [(b, 1.0)], b.n_tgt_tokens, stats, amp, 1e-4)
            if i:
                took[kind].append(time.perf_counter() - t)
    best = {k: min(v) for k, v in took.items()}
    median = {k: statistics.median(v) for k, v in took.items()}
    print(f"{a.profile} base, {a.threads} thread(s), {a.steps} steps each, {'bf16' if amp else 'fp32'}: "
          + ", ".join(f"{k} best {best[k] * 1e3:.0f} ms median {median[k] * 1e3:.0f} ms" for k in took)
          + f"; counter / generator: best {best['counter'] / best['generator']:.3f}, "
          f"median {median['counter'] / median['generator']:.3f}")


if __name__ == "__main__":
    main()
