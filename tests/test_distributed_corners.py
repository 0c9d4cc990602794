"""Data-parallel corners (issue 37): the ranks stop on one clock, resume from the checkpoint rank 0 chose and
report the same events, pull a storage URI's checkpoints on every node, see the driver's TORCH_* settings, and
broadcast no buffers (the position tables are the same on every rank). Two gloo ranks in spawned processes, and
one two-node loopback Ray cluster."""
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is imported: bind 127.0.0.1 only
os.environ["RAY_AUTH_MODE"] = "disabled"  # the loopback-only test cluster below

import json
import socket
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from zoo.config import Config
from zoo.spec import resolve
from zoo.train import checkpoints, train

SPEC = "specs/table3_A.yaml"


def _cfg(repo, *sets) -> Config:
    return resolve(repo / SPEC, "A1", "smoke", ["eval.max_sentences=2", "train.checkpoint_minutes=0", *sets])[0]


# -- two gloo ranks, each in its own process ------------------------------------------------------

def _rank_main(rank: int, world: int, port: int, job, kwargs: dict, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        Path(f"{out}.{rank}").write_text(json.dumps(job(rank, **kwargs)))
    finally:
        dist.destroy_process_group()


def _two_ranks(tmp_path, job, timeout: float = 600, **kwargs) -> list[dict]:
    """job(rank, **kwargs) on 2 gloo ranks; their JSON results. A rank that hangs fails the test."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "rank")
    ctx = mp.start_processes(_rank_main, args=(2, port, job, kwargs, out), nprocs=2, join=False, start_method="spawn")
    deadline = time.time() + timeout
    try:
        while not ctx.join(timeout=1):
            if time.time() > deadline:
                pytest.fail(f"the ranks did not end within {timeout:.0f} s (one waits for the other?)")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    return [json.loads(Path(f"{out}.{r}").read_text()) for r in range(2)]


def _fast_clock_job(rank: int, cfg: str, out: str, data_root: str) -> dict:
    if rank == 1:  # this rank's clock runs 600 times fast: its minute passes in a tenth of a second
        real, t0 = time.time, time.time()
        time.time = lambda: t0 + (real() - t0) * 600
    seen = []
    try:
        r = train(Config.model_validate_json(cfg), Path(out), Path(data_root), report=seen.append)
    finally:
        if rank == 1:
            time.time = real
    return {"steps_done": r.steps_done, "logged": [m.step for m in seen if getattr(m, "loss", None) is not None]}


def _resume_job(rank: int, cfg: str, out: str, data_root: str) -> dict:
    from zoo.model.transformer import build_model
    from zoo.result import Done, LogPoint, wire
    from zoo.train import data_parallel
    c = Config.model_validate_json(cfg)
    events = []
    r = train(c, Path(out), Path(data_root), report=events.append)
    ddp = data_parallel(build_model(c.model, 64), torch.device("cpu"))
    return {"steps_done": r.steps_done, "events": [wire(e) for e in events if not isinstance(e, (LogPoint, Done))],
            "broadcast_buffers": ddp.broadcast_buffers}


def _both_jobs(rank: int, clock: dict, resume: dict) -> dict:
    """The two corners below on the same two ranks, one after the other (two processes started, not four)."""
    return {"clock": _fast_clock_job(rank, **clock), "resume": _resume_job(rank, **resume)}


@pytest.mark.slow  # two ranks train (Ray, gloo)
def test_ranks_stop_on_one_clock_and_resume_from_rank_0s_checkpoint_with_its_events(repo, data_root, tmp_path):
    """One run on two gloo ranks for each corner:
    - a time limit: one rank's clock says the minute is up long before the other's; both stop at the same step
      (the slowest clock is everyone's), where each decided alone a rank would wait forever in an all-reduce;
    - a resume from a truncated newest checkpoint: rank 0 sets it aside and falls back to the one before; every
      rank loads that one and reports the same events (Ray Train's report is collective: as many on every rank)."""
    clock = _cfg(repo, "train.steps=200", "train.log_every=5", "train.eval_every=200", "train.time_limit_minutes=1")
    run = tmp_path / "run"
    train(_cfg(repo, "train.steps=6", "train.checkpoint_every=3"), run, data_root)
    (run / "summary.json").unlink()
    newest = run / "checkpoints" / "step_00000006.pt"
    newest.write_bytes(newest.read_bytes()[:1000])
    cfg = _cfg(repo, "train.steps=9", "train.checkpoint_every=3")
    both = _two_ranks(tmp_path, _both_jobs,
                      clock={"cfg": clock.model_dump_json(), "out": str(tmp_path / "clock"), "data_root": str(data_root)},
                      resume={"cfg": cfg.model_dump_json(), "out": str(run), "data_root": str(data_root)})

    ranks = [b["clock"] for b in both]
    assert ranks[0] == ranks[1], ranks
    assert ranks[0]["steps_done"] < 200 and ranks[0]["logged"][-1] == ranks[0]["steps_done"]
    assert int(checkpoints(tmp_path / "clock")[-1].stem[5:]) == ranks[0]["steps_done"]  # saved where it stopped

    ranks = [b["resume"] for b in both]
    assert ranks[0]["events"] == ranks[1]["events"], ranks
    assert [e["event"] for e in ranks[0]["events"]] == ["bad_checkpoint", "no_optimizer_state", "config_changed",
                                                        "resumed"]  # rank 0's reading of the changed steps
    assert ranks[0]["events"][2]["changes"] == ["train.steps: 6 -> 9"]
    assert ranks[0]["events"][-1]["step"] == 3 and ranks[0]["steps_done"] == ranks[1]["steps_done"] == 9
    assert [r["broadcast_buffers"] for r in ranks] == [False, False]  # position tables: alike on every rank, never trained


def test_torch_settings_reach_the_trials(monkeypatch):
    from zoo.runner import local
    for k, v in {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
                 "TORCHINDUCTOR_CACHE_DIR": "/tmp/inductor", "TORCH_LOGS": "recompiles"}.items():
        monkeypatch.setenv(k, v)
    env = local._job_env()["env_vars"]
    assert {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_DISTRIBUTED_DEBUG", "TORCHINDUCTOR_CACHE_DIR", "TORCH_LOGS"} <= set(env)


# -- two Ray nodes that do not share their scratch folders -------------------------------------------

@pytest.mark.slow  # two ranks train (Ray, gloo)
def test_every_rank_pulls_a_storage_uris_checkpoints(repo, data_root, tmp_path):
    """A data-parallel trial resumed from a storage URI (a file:// URI stands in for object storage) on two
    nodes whose scratch folders differ (each node its own home): every rank pulls the checkpoint it
    resumes from, not rank 0 alone, so both resume at step 6 and the trial ends at its planned step."""
    import ray
    from ray.cluster_utils import Cluster
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer
    from zoo.runner import local
    from zoo.runner.trial import Mirror, Setup, _worker_loop

    first = tmp_path / "first"
    train(_cfg(repo, "train.steps=6", "train.checkpoint_every=3"), first, data_root)
    bucket = f"file://{tmp_path}/bucket/table3_A/A1-smoke"
    up = Mirror(bucket, first)
    up.push()  # the newest checkpoint and the config: a run stopped at step 6
    up.wait()
    cfg = _cfg(repo, "train.steps=9", "train.checkpoint_every=3", "resources.workers=2")
    setup = Setup(trial="A1", config=cfg, out_dir="~/scratch/A1-smoke", mirror=bucket, data_dir=str(data_root),
                  train_storage=str(tmp_path / "train"))

    args = {"num_cpus": 1, "object_store_memory": 100 * 2**20, "include_dashboard": False}
    homes = [tmp_path / "home_a", tmp_path / "home_b"]
    c = Cluster(initialize_head=True, head_node_args={**args, "env_vars": {"HOME": str(homes[0])}})
    c.add_node(**args, env_vars={"HOME": str(homes[1])})
    c.wait_for_nodes()
    try:
        ray.init(address=c.address, log_to_driver=False)
        TorchTrainer(_worker_loop, train_loop_config=setup.model_dump(mode="json"),
                     scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
                     torch_config=TorchConfig(backend="gloo"),
                     run_config=RunConfig(name="dp", storage_path=str(tmp_path / "train"))).fit()
    finally:
        started = {}
        for node in c.list_all_nodes():
            started |= local._descendants([i.process.pid for infos in node.all_processes.values() for i in infos])
        ray.shutdown()
        c.shutdown()
        local._end(started)
    for home in homes:  # one rank on each node, each with its own pulled copy, Adam's state with it
        ckpts = home / "scratch" / "A1-smoke" / "checkpoints"
        newest = 9 if (ckpts / "step_00000009.pt").exists() else 6  # rank 0's node: its own last save
        assert (ckpts / "step_00000006.pt").exists() and (ckpts / f"optim_{newest:08d}.pt").exists(), home
    stored = Path(f"{tmp_path}/bucket/table3_A/A1-smoke")
    assert json.loads((stored / "summary.json").read_text())["steps_done"] == 9
    assert [json.loads(line)["step"] for line in (stored / "metrics.jsonl").read_text().splitlines()] == [9]
