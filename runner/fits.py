"""Whether and how many trials a Ray cluster holds, checked before the first trial starts: a trial no node can
hold is refused (Tune would wait forever), a CPU trial whose training memory no node offers too, and Tune's
concurrency counts a data-parallel trial's workers (its own bundle is a token)."""
from __future__ import annotations

from zoo.errors import UserError

__all__ = ["check_fits", "check_memory", "concurrency"]


def check_fits(cfgs, nodes: list[dict], spec: str) -> None:
    """Ray Tune only warns, then waits forever, when no node can hold a trial: refuse it up front.
    nodes: the live nodes' total resources ({"CPU": 2.0, "GPU": 1.0, ...})."""
    from zoo.runner.trial import data_parallel_workers
    for c in cfgs:
        n = data_parallel_workers(c)
        bundle = {"CPU": c.resources.cpus, "GPU": c.resources.gpus}
        # processes of this shape each node can hold (cpus > 0 always, so the min is never empty)
        room = sum(min(int(nd.get(k, 0) // v) for k, v in bundle.items() if v) for nd in nodes)
        if room < n:
            have = ", ".join(f"{nd.get('CPU', 0):g} CPUs/{nd.get('GPU', 0):g} GPUs" for nd in nodes) or "no nodes"
            what = f"{n} workers of " if n > 1 else ""
            raise UserError(
                f"{spec}: variant {c.variant}: resources: a trial needs {what}{bundle['CPU']:g} CPUs and "
                f"{bundle['GPU']:g} GPUs per process, but this Ray cluster's nodes have {have}, so it "
                f"would wait forever; lower resources.cpus/gpus/workers (for example --set "
                f"resources.cpus=1) or start the cluster with bigger or more nodes")
        check_memory(c, n, bundle["GPU"], nodes, spec)


def concurrency(todo: list, nodes: list[dict], given: int | None) -> int | None:
    """Tune's max_concurrent_trials. A data-parallel trial's own Tune bundle is a token: its workers
    are reserved later by its TorchTrainer, so Tune would start every such trial at once and those
    whose workers find no room wait in the trainer until they time out and retry. Counting each
    trial's workers x (CPUs, GPUs) against the cluster's totals keeps the rest queued in Tune."""
    from zoo.runner.trial import data_parallel_workers
    need = [(data_parallel_workers(c), c.resources) for c in todo]
    if all(n == 1 for n, _ in need):
        return given  # one-process trials: Tune reserves their resources itself
    limit = None
    for key in ("CPU", "GPU"):
        have = sum(nd.get(key, 0) for nd in nodes)
        most = max(n * (r.cpus if key == "CPU" else r.gpus) for n, r in need)
        if most:
            fit = max(1, int(have // most))
            limit = fit if limit is None else min(limit, fit)
    return min(x for x in (given, limit) if x is not None) if (given or limit) else None


def check_memory(c, workers: int, gpus: float, nodes: list[dict], spec: str) -> None:
    """A CPU trial's training memory against the largest node's (Ray's `memory` resource: what it
    lets tasks use). GPU trials train in GPU memory, which Ray does not report: zoo.train checks
    that on the GPU itself."""
    from zoo.model import gib, memory_text, train_memory
    room = [nd["memory"] for nd in nodes if nd.get("memory")]
    est = train_memory(c, workers)
    if gpus or not room or est["total"] <= max(room):
        return
    raise UserError(f"{spec}: variant {c.variant}: a training process needs about {memory_text(est)}, but the "
                    f"largest node of this Ray cluster offers {gib(max(room))} of memory, so it would run out; "
                    "lower model.d_model, model.d_ff or model.N, set train.max_tokens_per_device (gradient "
                    "accumulation keeps the step's batch) or lower data.max_len, or use bigger nodes")
