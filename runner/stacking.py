"""Seeds side by side in `zoo run`: which of a sweep's trials train as one stacked model (zoo.train.stacked)
in one Ray process. Each keeps its own folder, checkpoints, resume, events and store row (runner.trial's
stacked trial sends them as its solo trial would); its provenance names the trials beside it (`stacked_with`).

The switch, `zoo run --stack`: `auto` (the default) stacks GPU trials, where one vmapped step serves K seeds
with one kernel per op instead of K small trials waiting on the host. It leaves CPU trials alone: a stacked
seed equals its solo run to float tolerance, not bit for bit (its sums run in other orders, its attention
in SDPA's math backend), and on a CPU one op for K seeds saves little (the cores are busy either way), so a CPU
sweep's rows stay exactly what solo trials write. `on` stacks CPU trials too (tests, rehearsals of a GPU sweep); `off` never stacks.

A stack: trials whose configs differ only in shape-keeping values (zoo.train.stacked.stack_problem: the seed,
label smoothing, the learning rate schedule, P_drop), at most K of them, K = stack_size from the memory of the device
one trial gets. Never under a scheduler (ASHA stops trials one by one, a stack is one Tune trial). One
stacked trial takes one trial's resources (its resources.cpus and gpus), not K times.
"""
from __future__ import annotations

import math

from zoo.config import Config

STACK_MODES = ("auto", "on", "off")
STACK_DEFAULT = "auto"
UNSEEN_GPU_BYTES = 16 * 2**30  # a cluster's GPU this driver cannot see: sized as a small card, K errs low


def stacks(todo: list[Config], mode: str, nodes: list[dict], scheduled: bool = False) -> list[list[Config]]:
    """The trials of `todo` in stacks (a list of one: a solo trial), in the order given."""
    if mode == "off" or scheduled or (mode == "auto" and not any(c.resources.gpus > 0 for c in todo)):
        return [[c] for c in todo]  # nothing may stack: the driver imports no torch (3 s on 2 cores)
    from zoo.train import stack_problem, stack_size
    entries: list[list[Config]] = []  # in todo's order: a solo trial, or the trials that may stack together
    groups: list[list[Config]] = []
    for c in todo:
        if not (mode == "on" or c.resources.gpus > 0) or stack_problem([c]) is not None:
            entries.append([c])
        elif home := next((g for g in groups if stack_problem([g[0], c]) is None), None):
            home.append(c)
        else:
            groups.append([c])
            entries.append(groups[-1])
    out = []
    for g in entries:
        if len(g) == 1:
            out.append(g)
            continue
        n = math.ceil(len(g) / stack_size(g[0], len(g), device_bytes(g[0], nodes)))  # stacks, as even as K allows
        out += [g[i * len(g) // n:(i + 1) * len(g) // n] for i in range(n)]
    return out


def device_bytes(cfg: Config, nodes: list[dict]) -> int:
    """The memory of the device one trial of `cfg` trains on: its share (resources.gpus) of this machine's
    first GPU (or UNSEEN_GPU_BYTES), or on the CPU its share (resources.cpus of a node's CPUs) of the largest
    node's memory as Ray offers it."""
    if cfg.resources.gpus > 0:
        return int(gpu_bytes() * min(cfg.resources.gpus, 1.0))
    return int(max((nd.get("memory", 0) * min(1.0, cfg.resources.cpus / max(nd.get("CPU", 1), 1)) for nd in nodes),
                   default=0))


def gpu_bytes() -> int:
    """The first GPU's memory, from nvidia-smi: the driver never opens a CUDA context (it would hold memory the
    trials need); UNSEEN_GPU_BYTES where it cannot tell (no GPU here: a cluster's)."""
    import subprocess
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.split()
        return int(float(out[0]) * 2**20)  # MiB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return UNSEEN_GPU_BYTES


def stacked(members: list):
    """The Tune trial of a stack of runner.trial.Setups: named for its first member and how many more
    (`A1-seed1+3`), with the first's resources; a stack of one is that trial itself."""
    if len(members) == 1:
        return members[0]
    first = members[0]
    return first.model_copy(update={"trial": f"{first.trial}+{len(members) - 1}", "stack": members})
