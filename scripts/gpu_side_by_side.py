"""The GPU check's side-by-side steps (scripts/gpu_check.py 8-stacked, 9-concurrent): the cpu profile's base trained
as K seeds stacked in one process (zoo.train.stacked), and as P processes sharing the device; each figure beside the
roofline's prediction (zoo.runner.gpu_plan: an H100's, from its measured solo speed; on --tiny a CPU rehearsal, whose
figures say nothing about a GPU).

  python scripts/gpu_side_by_side.py stacked --json FILE [--tiny]
  python scripts/gpu_side_by_side.py shared --json FILE --work DIR --zoo ZOO... [--tiny]

stacked: K = 1, 4, 16 (--tiny: the smoke profile's base, K = 1, 2), each eager, with train.cuda_graph on
(zoo.train.graphed.GraphedStack: one CUDA graph per bucket of shapes) and with train.pack on besides (several
sentences a row): the timed batches once as warm-up (a graph
is recorded at its bucket's first batch), then the same batches again, timed, through zoo.train.stacked.stacked_step
(a long run meets its few dozen buckets early and replays them after): summed target tokens/s and trials a minute
(training only, at the profile's steps).
shared: P = 1, 2, 4 processes (--tiny: 2) each `zoo train base` for a few hundred steps at once: summed tokens/s
(each run's own) and trials finished a minute (P over the wall from the first start to the last end). With --mps DIR:
P = 4 (--tiny: 2) under CUDA MPS (scripts/mps.sh: a daemon of its own in DIR, stopped at the end), whose processes'
kernels run on the SMs at once instead of taking turns; where the driver offers no MPS, one row that says so.

  python scripts/gpu_side_by_side.py shared --json FILE --work DIR --mps DIR --zoo ZOO... [--tiny]
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GPU = {"profile": "cpu", "K": (1, 4, 16), "timed": 20, "P": (1, 2, 4), "steps": 200}
TINY = {"profile": "smoke", "K": (1, 2), "timed": 2, "P": (2,), "steps": 5}  # the code path, in seconds
STEPS = [(False, False), (True, False), (True, True)]  # (train.cuda_graph, train.pack) of each K: eager, graphed, both


def config(size: dict, cuda: bool, seed: int = 1, graph: bool = False, pack: bool = False):
    from zoo.spec import resolve
    on = lambda x: "on" if x else "off"
    sets = [f"resources.gpus={int(cuda)}", f"train.seed={seed}", f"train.cuda_graph={on(graph)}",
            f"train.pack={on(pack)}"] + (["train.precision=fp32"] if cuda else [])
    return resolve("base", profile=size["profile"], sets=sets)[0]


def predictions(cfg, K: int, P: int = 1) -> dict | None:
    """The H100's predicted step (ms: best, mid, worst) of K stacked seeds, and summed tokens/s of P processes."""
    try:
        from zoo.runner import gpu_plan
        return gpu_plan.side_by_side(cfg, K, P)
    except Exception as e:  # no checkout here (bench/roofline.py): the measured figures still count
        return {"error": f"{type(e).__name__}: {e}"}


def save(rows: list, path: Path) -> None:
    """Whole or not at all, after each K or P: a step ended at its limit keeps what it measured."""
    part = path.with_name(f".{path.name}.part")
    part.write_text(json.dumps(rows, indent=2))
    os.replace(part, path)


def stacked(size: dict, path: Path) -> list:
    import torch
    from zoo.data import pair_lengths
    from zoo.train.device import autocast_dtype, train_device
    from zoo.train.prepared import prepare
    cuda = torch.cuda.is_available()
    cfg0 = config(size, cuda)
    device = train_device(cfg0)
    amp = autocast_dtype(cfg0.train.precision, device, cfg0.model.d_model)
    p = prepare(cfg0)
    lengths = pair_lengths(p.train)
    rows = []
    for K, graph, packed in [(K, *v) for K in size["K"] for v in STEPS]:
        try:
            rows.append(one_stack(size, cfg0, p, lengths, device, amp, K, graph, packed))
        except Exception as e:  # this configuration's failure (a graph's capture, say) is its figure; the others run
            rows.append({"K": K, "graph": graph, "pack": packed, "error": f"{type(e).__name__}: {e}"[:500],
                         "predicted": predictions(config(size, cuda, 1, graph, packed), K)})
            print(f"K {K}{' graphed' if graph else ''}{' packed' if packed else ''}: FAILED {rows[-1]['error']}",
                  flush=True)
        save(rows, path)
        gc.collect()  # a GraphedStack and its Stack point at each other: freed by the collector, not by `del`
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()  # each configuration's own peak
    return rows


def one_stack(size: dict, cfg0, p, lengths, device, amp, K: int, graph: bool, packed: bool) -> dict:
    """One configuration's figures: K seeds stacked, eager or graphed, packed or not."""
    import copy
    import torch
    from zoo.data import BatchOrder
    from zoo.train.checkpointing import State
    from zoo.train.prepared import build
    from zoo.train.recipe import make_optimizer
    from zoo.train.stacked import Seat, Stack, stacked_step
    cuda = device.type == "cuda"
    order = lambda seed: BatchOrder(lengths, cfg0.train.batch_tokens, seed)
    seats = []
    for seed in range(1, K + 1):
        cfg = config(size, cuda, seed, graph, packed)
        torch.manual_seed(seed)
        model = build(cfg, p.sp, p.tgt_vocab).to(device).train()
        opt = make_optimizer(model, 0.0, tuple(cfg.train.optimizer.betas), cfg.train.optimizer.eps)
        seats.append(Seat(cfg, Path("."), model, opt, State(), order(seed), p.train,
                          torch.zeros(2, dtype=torch.float64, device=device)))
    stack = Stack(seats, copy.deepcopy(seats[0].model).train(), device, amp)
    for _ in range(size["timed"]):  # warm-up: these batches' buckets recorded (graph), the allocator warm
        stacked_step(stack)
    for s in seats:  # the same batches again
        s.batches = order(s.cfg.train.seed)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    tokens0, t0 = sum(s.st.tokens_seen for s in seats), time.perf_counter()
    for _ in range(size["timed"]):
        stacked_step(stack)
    sync()
    secs = time.perf_counter() - t0
    tokens = sum(s.st.tokens_seen for s in seats) - tokens0
    step = secs / size["timed"]
    row = {"K": K, "graph": graph, "pack": packed, "step_ms": 1e3 * step, "summed_tokens_per_s": tokens / secs,
           "trials_per_min": 60 * K / (step * cfg0.train.steps), "profile_steps": cfg0.train.steps,
           "buckets": len(stack.graphed.buckets) if graph else None,
           "eager_steps": stack.graphed.eager_steps if graph else None,
           "peak_gib": torch.cuda.max_memory_allocated() / 2 ** 30 if cuda else None,
           "predicted": predictions(config(size, cuda, 1, graph, packed), K)}
    print(f"K {K}{' graphed' if graph else ''}{' packed' if packed else ''}: {row['step_ms']:.1f} ms a step, "
          f"{row['summed_tokens_per_s']:.0f} tok/s summed, {row['trials_per_min']:.2f} trials a minute "
          f"(training only, {cfg0.train.steps} steps)", flush=True)
    return row


def shared(size: dict, work: Path, zoo: list, path: Path, mps: Path | None = None) -> list:
    import torch
    cuda = torch.cuda.is_available()
    rows, env = [], None
    if mps is not None:  # the same runs under MPS: its daemon's pipe folder in each process's environment
        script = Path(__file__).resolve().parent / "mps.sh"
        r = subprocess.run(["bash", str(script), "start", str(mps)], capture_output=True, text=True)
        if r.returncode != 0:
            rows.append({"mps": False, "why": (r.stderr or r.stdout).strip()[:300]})
            print(f"no MPS: {rows[-1]['why']}", flush=True)
            save(rows, path)
            return rows
        env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(mps / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(mps / "log")}
        try:
            return _shared(size, work, zoo, path, env, (size["P"][-1],), "shared-mps", rows, cuda)
        finally:
            subprocess.run(["bash", str(script), "stop", str(mps)], capture_output=True)
    return _shared(size, work, zoo, path, env, size["P"], "shared", rows, cuda)


def _shared(size, work, zoo, path, env, counts, stem, rows, cuda) -> list:
    for P in counts:
        outs = [work / f"{stem}-{P}-{i}" for i in range(P)]
        argv = lambda o: [*zoo, "train", "base", "--profile", size["profile"], "--set", f"resources.gpus={int(cuda)}",
                          "--set", f"train.steps={size['steps']}", "--set", "eval.max_sentences=8",
                          "--set", "resources.cpus=1", *(["--set", "train.precision=fp32"] if cuda else []),
                          "--out", o]
        t0 = time.monotonic()
        procs = [subprocess.Popen([str(a) for a in argv(o)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL, env=env) for o in outs]
        codes = [p.wait() for p in procs]
        wall = time.monotonic() - t0
        runs = [json.loads((o / "summary.json").read_text()) for o in outs if (o / "summary.json").exists()]
        tps = sum(r["tokens_seen"] / max(r["train_seconds"], 1e-9) for r in runs)
        rows.append({"P": P, "finished": len(runs), "exits": codes, "wall_s": wall, "summed_tokens_per_s": tps,
                     "trials_per_min": 60 * len(runs) / wall, "steps": size["steps"], "mps": env is not None,
                     "predicted": predictions(config(size, cuda), 1, P)})
        print(f"P {P}{' under MPS' if env else ''}: {len(runs)} of {P} finished in {wall:.0f} s, {tps:.0f} tok/s summed, "
              f"{rows[-1]['trials_per_min']:.1f} trials a minute ({size['steps']}-step trials)", flush=True)
        save(rows, path)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["stacked", "shared"])
    ap.add_argument("--json", required=True, type=Path)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--work", type=Path, help="shared: where its runs go")
    ap.add_argument("--mps", type=Path, help="shared: run under CUDA MPS, its daemon's folder (scripts/mps.sh)")
    ap.add_argument("--zoo", nargs="+", default=["zoo"], help="shared: the zoo command")
    args = ap.parse_args(argv)
    if not args.json.name or args.json.is_dir():  # before minutes of measuring: it writes this file, nothing else
        print(f"gpu_side_by_side.py: --json {str(args.json)!r}: give the path of a file to write, not a folder",
              file=sys.stderr)
        return 2
    size = TINY if args.tiny else GPU
    if args.what == "stacked":
        stacked(size, args.json)
    else:
        shared(size, args.work, args.zoo, args.json, args.mps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
