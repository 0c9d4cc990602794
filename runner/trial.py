"""The Tune trainable: one trial trains, decodes and scores one variant by calling `zoo.train.train`.

A trial's working directory (`out_dir`) is a stable path under the storage, so zoo.train's own
checkpoints resume it after a retry, a Ctrl-C or a killed driver. What it reports are zoo.result's typed
events (Started: where it runs; zoo.train's LogPoints, Resumed, BadCheckpoint, ...; Done: the RunResult with
its provenance), sent to Tune in one place (`_to_ray`) as their wire form under the single key "zoo": one
`wire()` here, one `event()` in the driver's callback (runner.progress), which writes the results store.
Several workers (or several GPUs) per trial run data-parallel as a Ray Train TorchTrainer started
from inside the trial; its rank-0 reports reach Tune through TuneReportCallback.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from fnmatch import fnmatch
from pathlib import Path

import ray
from ray import tune

from pydantic import AliasChoices, BaseModel, Field

from zoo.result import Done, Event, Hardware, LogPoint, Provenance, Started, wire
from zoo.config import Config
from zoo.model import third_party


class Setup(BaseModel):
    """What one trial is given, under Tune's config key "trial" (as a plain dict: Tune's contract)."""
    # the trial's name (the key Tune's grid and the driver's callbacks know it by); an experiment saved before
    # the field was renamed from `variant` (it never held the variant) resumes under the old key
    trial: str = Field(validation_alias=AliasChoices("trial", "variant"))
    config: Config
    out_dir: str  # the trial's stable working folder: zoo.train's checkpoints resume it (`~`: the node's home)
    data_dir: str | None = None
    mirror: str | None = None  # a storage URI the trial's files are copied to and from
    train_storage: str  # Ray Train's folder for a data-parallel trial
    spec_file: str | None = None  # the spec, absolute (a trial runs in Tune's folder): its git commit is provenance
    stack: list["Setup"] = Field(default_factory=list)  # a stacked trial's members, each a trial of its own (runner.stacking)


def _out(setup: Setup) -> Path:
    """The trial's working folder on the node that runs it: with a storage URI a node-local copy, so a
    leading `~` means that node's home, not the driver's."""
    return Path(setup.out_dir).expanduser()


def _setup(config: dict) -> Setup:
    return Setup.model_validate(config["trial"])  # Tune hands the param_space back as a plain dict


def trainable(config: dict) -> None:
    setup = _setup(config)
    _fresh_process_state()
    cfg = setup.config
    n = data_parallel_workers(cfg)
    if n > 1:
        return _fit_data_parallel(setup, cfg, n)
    if setup.stack:
        return _fit_stack(setup)
    _threads(cfg.resources.cpus)
    mirror = Mirror(setup.mirror, _out(setup))
    mirror.pull()
    send = _to_ray(tune.report, mirror.push)
    send(Started(placement=placement() | {"workers": 1}))
    _train(cfg, setup, send, done=lambda: mirror.push(final=True))


def _to_ray(report, push):
    """The one place a trial's events go to Ray (`report`: Tune's, or Ray Train's for a data-parallel trial):
    each as its wire form under "zoo" for the driver; a log point's step and dev perplexity also at the top,
    where a Tune scheduler (ASHA) looks for its time attribute and metric. Then the mirror's `push`."""
    def send(e: Event) -> None:
        m = {"zoo": wire(e)}
        # the last step is not a rung: a trial that got there is scored, not stopped
        if isinstance(e, LogPoint) and e.step < (e.steps or 0):
            m |= {"step": e.step, **({"dev_ppl": e.dev_ppl} if e.dev_ppl is not None else {})}
        report(m)
        push()
    return send


def data_parallel_workers(cfg) -> int:
    """Processes per trial: one device each (the spec refuses gpus > 1 per worker: that is workers)."""
    return cfg.resources.workers


def resources(config: dict):
    """The trial's reservation: one bundle for a one-process trial; for a data-parallel trial the
    TorchTrainer reserves its workers itself, so the trial's own driver function takes no CPU."""
    cfg = _setup(config).config
    if data_parallel_workers(cfg) > 1:
        return tune.PlacementGroupFactory([{"memory": 2**20}])  # a token amount: CPUs go to the workers
    return tune.PlacementGroupFactory([{"CPU": cfg.resources.cpus, "GPU": cfg.resources.gpus}])


def _train(cfg, setup: Setup, send, rank: int = 0, done=lambda: None) -> None:
    """zoo.train, its events to `send` (`_to_ray`'s). Its Done is held back until `done()` has run (the
    mirror's final push), then sent with the run's provenance; a train() that returns early (a finished
    run found on disk) sends none, so its returned result goes instead."""
    from zoo.train import train
    tb = TensorBoard(_out(setup) if rank == 0 else None)  # one writer per trial, not per worker
    held: list[Done] = []

    def rep(e: Event) -> None:
        if isinstance(e, Done):
            held.append(e)
            return
        if isinstance(e, LogPoint):
            tb.point(e)
        send(e)

    try:
        result = train(cfg, _out(setup), setup.data_dir, report=rep)
        tb.result(result)
    finally:
        tb.close()
    done()
    # Done(result=...) keeps the RunResult as it is: pydantic does not validate a model instance again
    final = held[-1] if held and held[-1].result else Done(result=result if rank == 0 else None)
    if final.result is not None and final.result.provenance is None:
        final.result.provenance = provenance(final.result.hardware, setup.spec_file or "", cfg.model)
    send(final)


def _fit_stack(setup: Setup) -> None:
    """A stacked trial: its members trained side by side in this process (zoo.train.stacked), each with its own
    folder, mirror, TensorBoard, events and Done (with its provenance) as its solo trial has them. Each message
    goes under "seats", by member: the error that ends a member alone (a diverged seed, one not learning) as it
    happens, while the others go on; the last message every other member's end (its Done, or its error)."""
    import traceback
    from zoo.train import train_stacked
    members = setup.stack
    names = [m.trial for m in members]
    _threads(setup.config.resources.cpus)
    mirrors = [Mirror(m.mirror, _out(m)) for m in members]
    for mirror in mirrors:
        mirror.pull()
    boards = [TensorBoard(_out(m)) for m in members]
    held: dict[int, Done] = {}

    def failed(e: Exception) -> dict:  # a member's end by error, as the driver reads it
        return {"failed": "".join(traceback.format_exception(e))}

    ended: set[int] = set()  # members whose error was sent as it happened

    def send(k: int, e: Event | Exception) -> None:
        if isinstance(e, Exception):  # a member ended alone: its row says so now, the others train on
            ended.add(k)
            tune.report({"seats": {names[k]: failed(e)}})
            mirrors[k].push(final=True)
            return
        if isinstance(e, Done):
            held[k] = e  # sent once the mirror has the member's final files
            return
        if isinstance(e, LogPoint):
            boards[k].point(e)
        tune.report({"seats": {names[k]: wire(e)}})
        mirrors[k].push()

    where = placement() | {"workers": 1}
    for k in range(len(members)):
        send(k, Started(placement=where))
    try:
        results = train_stacked([m.config for m in members], [_out(m) for m in members], setup.data_dir, send)
        for b, r in zip(boards, results):
            if not isinstance(r, Exception):
                b.result(r)
    finally:
        for b in boards:
            b.close()
    ends = {}
    for k, (m, r) in enumerate(zip(members, results)):
        if isinstance(r, Exception):
            if k not in ended:
                ends[m.trial] = failed(r)
            continue
        mirrors[k].push(final=True)
        r = held[k].result if k in held else r  # a member finished before returns its result unsent
        if r.provenance is None:
            r.provenance = provenance(r.hardware, m.spec_file or "", m.config.model)
        r.provenance.stacked_with = [n for n in names if n != m.trial]
        ends[m.trial] = wire(Done(result=r))
    tune.report({"seats": ends})


class TensorBoard:
    """Each trial's curves and final scores as TensorBoard event files in its folder
    (`tensorboard --logdir runs/` shows every trial), through tensorboardX, which Ray Tune brings."""

    def __init__(self, out: Path | None):
        from tensorboardX import SummaryWriter
        self.w = SummaryWriter(str(out / "tensorboard")) if out is not None else None

    def point(self, pt: LogPoint) -> None:
        if self.w is None:
            return
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


def _fresh_process_state() -> None:
    """What a trial before this one in the same process (Tune reuses a slot's worker) left behind that could change
    this one: dynamo's compiled graphs, whose per-function recompile limit would otherwise be spent across trials
    and leave a later trial's model eager. Seeds and threads are each run's own (zoo.train.loop, `_threads`)."""
    if "torch._dynamo" in sys.modules:  # imported by an earlier trial that compiled: nothing to forget before
        sys.modules["torch._dynamo"].reset()


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


# the instruction sets that decide a CPU's bf16 speed, as /proc/cpuinfo names them
CPU_FLAGS = ("avx2", "avx512_bf16", "amx_bf16", "amx_tile")


def provenance(hw: Hardware, spec: str = "", model=None) -> Provenance:
    """What produced this result, collected in the trial's own process (where it trained); `model`: the
    trial's ModelSpec, whose third-party components (zoo.components) are recorded with their package."""
    import platform
    import subprocess
    import sys
    from importlib import metadata
    import torch

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return ""

    def git(*args: str, where: Path = Path(__file__).resolve().parents[1]) -> str:
        try:
            return subprocess.run(["git", "-C", str(where), *args], timeout=10,
                                  capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""  # not a git checkout (an installed wheel), or no git

    spec_file = Path(spec).resolve() if spec else None
    spec_commit = git("rev-parse", "HEAD", where=spec_file.parent) if spec_file and spec_file.parent.is_dir() else ""
    spec_dirty = bool(git("status", "--porcelain", "--", spec_file.name, where=spec_file.parent)) if spec_commit else None

    cpu, flags = platform.processor(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                cpu = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
            if cpu and flags:
                break
    except OSError:
        pass  # not Linux: the model name from platform, no flags
    commit = git("rev-parse", "HEAD")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return Provenance(
        zoo_version=version("aiayn-zoo"), zoo_commit=commit,
        zoo_dirty=bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None,
        spec_commit=spec_commit, spec_dirty=spec_dirty,
        python=platform.python_version() or sys.version.split()[0], torch=torch.__version__,
        ray=ray.__version__, sacrebleu=version("sacrebleu"), sentencepiece=version("sentencepiece"),
        cpu=cpu, cpu_flags=[f for f in CPU_FLAGS if f in flags],
        gpu_name=hw.device_name if hw.device.startswith("cuda") else (torch.cuda.get_device_name(0) if gpus else ""),
        gpu_count=max(hw.workers, 1) if hw.device.startswith("cuda") else 0, compute_dtype=hw.compute_dtype,
        components=third_party(model) if model is not None else {})


# -- data parallel through Ray Train ------------------------------------------------------------

def _fit_data_parallel(setup: Setup, cfg, n: int) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback
    gpu = cfg.resources.gpus > 0
    per_worker = {"CPU": cfg.resources.cpus} | ({"GPU": cfg.resources.gpus} if gpu else {})  # 1: the spec says so
    trainer = TorchTrainer(
        _worker_loop, train_loop_config=setup.model_dump(mode="json"),  # Ray Train sends plain values
        scaling_config=ScalingConfig(num_workers=n, use_gpu=gpu, resources_per_worker=per_worker),
        torch_config=TorchConfig(backend="nccl" if gpu else "gloo"),
        run_config=RunConfig(name=f"{cfg.trial}-{tune.get_context().get_trial_id()}-{int(time.time())}",
                             storage_path=setup.train_storage, callbacks=[TuneReportCallback()]))
    trainer.fit()  # raises when a worker fails: Tune records the trial as errored


def _worker_loop(plain: dict) -> None:
    """One data-parallel worker. Ray Train's report is collective: every rank reports every point."""
    import torch.distributed as dist
    from ray import train as rt
    setup = Setup.model_validate(plain)
    cfg = setup.config
    _threads(cfg.resources.cpus)
    rank = rt.get_context().get_world_rank()
    mirror = Mirror(setup.mirror, _out(setup))
    mirror.pull()  # every rank: each resumes from its own node's copy (zoo.train loads the one rank 0 chose)
    push = mirror.push if rank == 0 else lambda final=False: None  # one rank writes the storage
    where = [None] * dist.get_world_size()
    dist.all_gather_object(where, placement())
    send = _to_ray(rt.report, push)
    send(Started(placement=where[0] | {"workers": len(where), "ranks": where}))
    _train(cfg, setup, send, rank, done=lambda: push(final=True))


# -- storage that is not a filesystem (s3://, gs://, ...) ----------------------------------------

class Mirror:
    """Copies a trial's checkpoints and summary to a storage URI and back, so a trial resumes on any
    node. With a filesystem path (local or shared) the trial's directory is already there: no-op."""

    def __init__(self, uri: str | None, out: Path):
        self.out, self.sent = out, set()
        self.fs, self._pool, self._pending = None, None, None
        if uri:
            import pyarrow.fs as pafs
            self.fs, self.root = pafs.FileSystem.from_uri(uri)

    def pull(self) -> None:
        if not self.fs:
            return
        import pyarrow.fs as pafs
        from zoo.paths import CHECKPOINTS
        from zoo.train import optim_file
        infos = self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True, allow_not_found=True))
        names = {Path(i.path).relative_to(self.root).as_posix() for i in infos if i.type == pafs.FileType.File}
        ckpts = sorted(n for n in names if fnmatch(n, CHECKPOINTS))
        optim = [o for n in ckpts[-1:] if (o := optim_file(Path(n)).as_posix()) in names]  # sent before it
        for rel in [*optim, *ckpts[-1:], *(n for n in ("config.json", "summary.json") if n in names)]:
            dest = self.out / rel
            if not dest.exists():  # through a temporary name: ranks on one node pull into one folder
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
                pafs.copy_files(f"{self.root}/{rel}", str(tmp), source_filesystem=self.fs,
                                destination_filesystem=pafs.LocalFileSystem())
                os.replace(tmp, dest)
            self.sent.add(rel)

    def push(self, final: bool = False) -> None:
        """The newest checkpoint (and the config) to the storage, on a thread of its own: the training step
        never waits on the network. An upload still in flight is not queued behind (the next report sends
        the newest then); its error is raised here, at the next push. `final`: the summary, hypotheses and
        metrics too, after any upload in flight, before the trial reports itself done."""
        if not self.fs:
            return
        if self._pending is not None:
            if not (final or self._pending.done()):
                return
            self.wait()
        if final:
            self._upload(final=True)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="zoo-upload")
        self._pending = self._pool.submit(self._upload)

    def wait(self) -> None:
        """The upload in flight, finished (its error raised)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _upload(self, final: bool = False) -> None:
        import pyarrow.fs as pafs
        from zoo.train import checkpoints, optim_file
        newest = checkpoints(self.out)[-1:]
        files = [*map(optim_file, newest), *newest, self.out / "config.json"]  # the optimizer's state first
        if final:
            files += [self.out / "summary.json", *self.out.glob("hyps.*.txt"), self.out / "metrics.jsonl"]
        for f in files:
            rel = f.relative_to(self.out).as_posix()
            if f.exists() and (final or rel not in self.sent):
                self.fs.create_dir(os.path.dirname(f"{self.root}/{rel}"), recursive=True)
                pafs.copy_files(str(f), f"{self.root}/{rel}", source_filesystem=pafs.LocalFileSystem(),
                                destination_filesystem=self.fs)
                self.sent.add(rel)
