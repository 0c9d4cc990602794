"""The Tune trainable: one trial trains, decodes and scores one variant by calling `zoo.train.train`.

A trial's working directory (`out_dir`) is a stable path under the storage, so zoo.train's own
checkpoints resume it after a retry, a Ctrl-C or a killed driver. Everything it reports goes to Tune
under the single key "zoo" (the driver's callback writes the results store from it):
  {"event": "start", "placement": {...}}   where it runs (node, host, pid, GPU ids, threads)
  {"step": ..., "loss": ..., ...}          zoo.train's log points, every 10 steps and at evaluations
  {"event": "resumed", "step": N}          picked up from a checkpoint
  {"event": "done", **result}              the final zoo.result.RunResult, as JSON
Several workers (or several GPUs) per trial run data-parallel as a Ray Train TorchTrainer started
from inside the trial; its rank-0 reports reach Tune through TuneReportCallback.
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import ray
from ray import tune


def trainable(config: dict) -> None:
    setup = config["trial"]
    from zoo.spec import Config
    cfg = Config.model_validate(setup["config"])
    n = data_parallel_workers(cfg)
    if n > 1:
        return _fit_data_parallel(setup, cfg, n)
    _threads(cfg.resources.cpus)
    mirror = Mirror(setup.get("mirror"), Path(setup["out_dir"]))
    mirror.pull()
    tune.report({"zoo": {"event": "start", "placement": placement() | {"workers": 1}}})
    summary = _train(cfg, setup, lambda m: (tune.report(_for_tune(m)), mirror.push()))
    mirror.push(final=True)
    tune.report({"zoo": {"event": "done", **summary}})


def _for_tune(m: dict) -> dict:
    """Everything under "zoo" for the driver; the step and dev perplexity also at the top, where a
    Tune scheduler (ASHA) looks for its time attribute and metric."""
    if m.get("event") or m.get("step") is None or m["step"] >= (m.get("steps") or 0):
        return {"zoo": m}  # the last step is not a rung: a trial that got there is scored, not stopped
    return {"zoo": m, **{k: m[k] for k in ("step", "dev_ppl") if m.get(k) is not None}}


def data_parallel_workers(cfg) -> int:
    """Processes per trial: one device each (the spec refuses gpus > 1 per worker: that is workers)."""
    return cfg.resources.workers


def resources(config: dict):
    """The trial's reservation: one bundle for a one-process trial; for a data-parallel trial the
    TorchTrainer reserves its workers itself, so the trial's own driver function takes no CPU."""
    from zoo.spec import Config
    cfg = Config.model_validate(config["trial"]["config"])
    if data_parallel_workers(cfg) > 1:
        return tune.PlacementGroupFactory([{"memory": 2**20}])  # a token amount: CPUs go to the workers
    return tune.PlacementGroupFactory([{"CPU": cfg.resources.cpus, "GPU": cfg.resources.gpus}])


def _train(cfg, setup: dict, report, rank: int = 0) -> dict:
    """zoo.train with the trial's report function; its RunResult as JSON (Ray sends plain values),
    also when train returns early."""
    from zoo.train import train
    tb = TensorBoard(Path(setup["out_dir"]) if rank == 0 else None)  # one writer per trial, not per worker

    def rep(m: dict) -> None:
        if m.get("event") == "done":
            return  # rank 0 only, and absent when train returns early: the caller sends it
        tb.point(m)
        report(_plain(m))

    try:
        result = train(cfg, Path(setup["out_dir"]), setup.get("data_dir"), report=rep)
        tb.result(result)
        return result.model_dump(mode="json")
    finally:
        tb.close()


class TensorBoard:
    """Each trial's curves and final scores as TensorBoard event files in its folder
    (`tensorboard --logdir runs/` shows every trial), through tensorboardX, which Ray Tune brings."""

    def __init__(self, out: Path | None):
        from tensorboardX import SummaryWriter
        self.w = SummaryWriter(str(out / "tensorboard")) if out is not None else None

    def point(self, m: dict) -> None:
        from zoo.result import LogPoint
        if self.w is None or m.get("event") or "step" not in m:
            return
        pt = LogPoint.model_validate(m)
        for k in ("loss", "lr", "tokens_per_s", "dev_ppl"):
            if (v := getattr(pt, k)) is not None:
                self.w.add_scalar(f"train/{k}", v, pt.step)

    def result(self, r) -> None:
        if self.w is None:
            return
        for name, s in r.splits.items():
            if s.score:
                self.w.add_scalar(f"eval/{name}_{s.score[0]}", s.score[1], r.steps_done)

    def close(self) -> None:
        if self.w is not None:
            self.w.close()


def _plain(m: dict) -> dict:
    """JSON-safe values only (Ray refuses tensors; numpy floats would be fine but keep it plain)."""
    import json
    return json.loads(json.dumps(m, default=str))


def _threads(cpus: float) -> None:
    import torch
    n = max(1, int(cpus))
    torch.set_num_threads(n)  # a 1-CPU trial gets one torch thread, not one per core
    os.environ["OMP_NUM_THREADS"] = str(n)


def placement() -> dict:
    ctx = ray.get_runtime_context()
    import torch
    # node_ip tells nodes apart where hostnames do not (containers, network namespaces)
    return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(), "pid": os.getpid(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()], "threads": torch.get_num_threads()}


# -- data parallel through Ray Train ------------------------------------------------------------

def _fit_data_parallel(setup: dict, cfg, n: int) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback
    gpu = cfg.resources.gpus > 0
    per_worker = {"CPU": cfg.resources.cpus} | ({"GPU": cfg.resources.gpus} if gpu else {})  # 1: the spec says so
    trainer = TorchTrainer(
        _worker_loop, train_loop_config=setup,
        scaling_config=ScalingConfig(num_workers=n, use_gpu=gpu, resources_per_worker=per_worker),
        torch_config=TorchConfig(backend="nccl" if gpu else "gloo"),
        run_config=RunConfig(name=f"{cfg.trial}-{tune.get_context().get_trial_id()}-{int(time.time())}",
                             storage_path=setup["train_storage"], callbacks=[TuneReportCallback()]))
    trainer.fit()  # raises when a worker fails: Tune records the trial as errored


def _worker_loop(setup: dict) -> None:
    """One data-parallel worker. Ray Train's report is collective: every rank reports every point."""
    import torch.distributed as dist
    from ray import train as rt
    from zoo.spec import Config
    cfg = Config.model_validate(setup["config"])
    _threads(cfg.resources.cpus)
    rank = rt.get_context().get_world_rank()
    mirror = Mirror(setup.get("mirror") if rank == 0 else None, Path(setup["out_dir"]))
    mirror.pull()
    where = [None] * dist.get_world_size()
    dist.all_gather_object(where, placement())
    rt.report({"zoo": {"event": "start", "placement": where[0] | {"workers": len(where), "ranks": where}}})
    summary = _train(cfg, setup, lambda m: (rt.report(_for_tune(m)), mirror.push()), rank)
    mirror.push(final=True)
    rt.report({"zoo": {"event": "done", **summary} if rank == 0 else {"event": "done"}})


# -- storage that is not a filesystem (s3://, gs://, ...) ----------------------------------------

class Mirror:
    """Copies a trial's checkpoints and summary to a storage URI and back, so a trial resumes on any
    node. With a filesystem path (local or shared) the trial's directory is already there: no-op."""

    def __init__(self, uri: str | None, out: Path):
        self.out, self.sent = out, set()
        self.fs = None
        if uri:
            import pyarrow.fs as pafs
            self.fs, self.root = pafs.FileSystem.from_uri(uri)

    def pull(self) -> None:
        if not self.fs:
            return
        import pyarrow.fs as pafs
        infos = self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True, allow_not_found=True))
        names = {Path(i.path).relative_to(self.root).as_posix() for i in infos if i.type == pafs.FileType.File}
        ckpts = sorted(n for n in names if n.startswith("checkpoints/step_"))
        for rel in [*ckpts[-1:], *(n for n in ("config.json", "summary.json") if n in names)]:
            dest = self.out / rel
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                pafs.copy_files(f"{self.root}/{rel}", str(dest), source_filesystem=self.fs,
                                destination_filesystem=pafs.LocalFileSystem())
            self.sent.add(rel)

    def push(self, final: bool = False) -> None:
        if not self.fs:
            return
        import pyarrow.fs as pafs
        from zoo.train import checkpoints
        files = [*checkpoints(self.out)[-1:], self.out / "config.json"]
        if final:
            files += [self.out / "summary.json", *self.out.glob("hyps.*.txt"), self.out / "metrics.jsonl"]
        for f in files:
            rel = f.relative_to(self.out).as_posix()
            if f.exists() and (final or rel not in self.sent):
                self.fs.create_dir(os.path.dirname(f"{self.root}/{rel}"), recursive=True)
                pafs.copy_files(str(f), f"{self.root}/{rel}", source_filesystem=pafs.LocalFileSystem(),
                                destination_filesystem=self.fs)
                self.sent.add(rel)
