"""The Ray Tune runner, with real Ray on this machine: every Ray here listens on 127.0.0.1 only.

The CLI tests run `zoo run` in a subprocess (its own embedded Ray); the cluster tests build a
loopback `ray.cluster_utils.Cluster` in this process and join it with `--address`. Everything uses
the smoke profile shrunk further with --set, so the whole file takes a few minutes on 2 cores.
"""
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is imported: bind 127.0.0.1 only
os.environ["RAY_AUTH_MODE"] = "disabled"  # the loopback-only test clusters below

import io
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from helpers import run as cli
from zoo.result import RunResult
from zoo.runner import local, sweep
from zoo.runner.store import Store

pytestmark = pytest.mark.slow  # starts Ray and trains (zoo run)

REPO = Path(__file__).resolve().parents[1]
ZOO = [sys.executable, "-m", "zoo.cli"]
SPEC = "specs/table3_A.yaml"
SMALL = ["train.steps=6", "train.eval_every=6", "train.checkpoint_every=3", "eval.max_sentences=4"]


# as zoo's own private Ray (runner.local): no idle workers started ahead of the trials, which start their own
NO_PRESTART = {"prestart_worker_first_driver": False, "enable_worker_prestart": False}


def sets(*extra):
    return [*SMALL, *extra]


# Deadlines: generous, for a busy 2-core machine (other CPU-bound work beside the suite, Ray's workers at
# nice 15). Tests wait on a condition (a checkpoint written, a row finished) up to WAIT, never a fixed time.
WAIT = 600  # seconds a test waits for a condition before it fails saying which
RUN = 1200  # seconds a whole `zoo run` of these small trials may take


def zoo(*args, **kw):
    return subprocess.run([*ZOO, *args], cwd=REPO, capture_output=True, text=True, timeout=RUN, **kw)


@pytest.fixture
def here(monkeypatch, capsys):
    """`zoo ARGS` in this process, from the checkout as the commands above: (exit code, stdout, stderr). For what
    stops before Ray or needs none (a status, a plan, a rerun with nothing to run), sparing a Python and torch start."""
    monkeypatch.chdir(REPO)
    return lambda *args: cli(*args, capsys=capsys)


def wait_for(condition, what: str, proc=None, timeout: float = WAIT):
    """Poll `condition` until it holds; fail naming `what` after `timeout` s, or when `proc` ended first."""
    deadline = time.time() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the driver ended (exit {proc.returncode}) before {what}")
        if time.time() > deadline:
            pytest.fail(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.5)


def row_status(storage: Path, trial: str) -> str | None:
    """A trial's status in the store, None while the store or the row does not exist yet."""
    try:
        found = Store(storage / "zoo.db", readonly=True).trials() if (storage / "zoo.db").exists() else []
    except Exception:  # the driver is creating the store
        return None
    return next((r.status for r in found if r.trial == trial), None)


def flags(values):
    return [x for v in values for x in ("--set", v)]


def rows(storage: Path) -> dict:
    return {r.trial: r for r in Store(storage / "zoo.db").trials()}


# -- the CLI, with its embedded Ray ----------------------------------------------------------------

def _listening(pids: set[int]) -> list[str]:
    """Local addresses of the TCP/UDP sockets the given processes listen on."""
    out = []
    for opts in ("-ltnpH", "-lunpH"):
        for line in subprocess.run(["ss", opts], capture_output=True, text=True).stdout.splitlines():
            if any(f"pid={p}," in line for p in pids):
                out.append(line.split()[3])
    return out


def test_run_smoke_sweep_status_and_cached_rerun(tmp_path, data_root, here):
    """A1-A4 as four trials; only loopback sockets while it runs; `zoo status`; a rerun re-runs nothing."""
    storage = tmp_path / "runs"
    plan = tmp_path / "plan.yaml"  # an analysis plan (issue 34): its hash goes with every trial
    plan.write_text("name: smoke-test\nprimary: ppl\nseeds: {A1: 2}\n")
    cmd = [*ZOO, "run", SPEC, "--profile", "smoke", "--storage", str(storage), *flags(sets("train.steps=40")),
           "--analysis", str(plan)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    while proc.poll() is None:
        info = local.read_pidfile(storage)
        if info:
            pids = {int(p) for p in info["pids"]} | {proc.pid}
            seen += _listening(pids)
        time.sleep(0.5)
    out = proc.stdout.read()
    assert proc.returncode == 0, out
    assert seen, "found no listening socket of the Ray processes to check"
    bad = [a for a in seen if not a.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:"))]
    assert not bad, f"Ray listened outside loopback: {bad}"
    assert "4 finished, 0 failed" in out and "zoo report" in out

    st = json.loads(here("status", "--json", "--runs", storage)[1])
    assert sorted(r["variant"] for r in st) == ["A1", "A2", "A3", "A4"]
    for r in st:
        assert (r["spec"], r["profile"], r["status"], r["error"]) == (SPEC, "smoke", "finished", None)
        m = RunResult.model_validate(r["metrics"])  # `zoo status --json` prints the stored RunResult
        assert m.steps_done == 40 and m.dev_ppl > 1 and m.primary.bleu is not None and m.hardware.threads == 1
        assert r["config_hash"] == m.config_hash and r["placement"]["pid"] > 0
        p = m.provenance  # collected in the trial's own process
        assert p and p.zoo_version and len(p.zoo_commit) == 40 and isinstance(p.zoo_dirty, bool), p
        assert len(p.spec_commit) == 40 and p.spec_dirty is False, p  # the spec file as committed
        assert p.torch and p.ray and p.sacrebleu and p.sentencepiece and p.python and p.cpu, p
        assert p.compute_dtype == m.hardware.compute_dtype and p.gpu_count == 0 and not p.gpu_name, p
        # TensorBoard event files in the trial's folder, read by tensorboard's own reader (issue 15)
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        ea = EventAccumulator(str(storage / "table3_A" / f"{r['variant']}-smoke" / "tensorboard")).Reload()
        assert {"train/loss", "train/lr", "train/dev_ppl", "eval/dev_bleu"} <= set(ea.Tags()["scalars"])
        assert ea.Scalars("train/loss")[-1].step == 40 and ea.Scalars("eval/dev_bleu")[0].value == pytest.approx(m.primary.bleu, abs=1e-3)
    assert "finished" in here("status", "--runs", storage)[1]
    assert not local.read_pidfile(storage), "the pidfile goes with a clean stop"
    from zoo.evidence import analysis
    assert {t.analysis for t in rows(storage).values()} == {analysis.load_plan(plan).hash()}
    curve = Store(storage / "zoo.db").points(SPEC, "A1", "smoke")  # the unsmoothed NLL beside the smoothed loss
    assert curve and all(p.nll is not None and p.nll > 0 for p in curve if p.loss is not None)
    assert any(p.nll != p.loss for p in curve if p.loss is not None)  # eps_ls 0.1: the two differ

    t0 = time.time()
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=RUN)
    assert again.returncode == 0 and "nothing to run" in again.stdout, again.stdout + again.stderr
    assert time.time() - t0 < 120  # no Ray, no training: seconds, even on a busy machine
    assert {v: r.finished_at for v, r in rows(storage).items()} == {r["trial"]: r["finished_at"] for r in st}
    # a finished trial whose config changed starts afresh, and the driver says so before it replaces the result
    changed = subprocess.run([*cmd, "--variant", "A1", "--set", "train.label_smoothing=0.2"], cwd=REPO,
                             capture_output=True, text=True, timeout=RUN)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert "1 finished trials have another config now" in changed.stdout and "replacing their results: A1" in changed.stdout


def test_user_mistakes_exit_2_without_traceback(tmp_path, data_root, here, cluster):
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    free = port.getsockname()[1]
    port.close()
    cases = [
        (["run", "specs/nope.yaml", "--storage", str(tmp_path)], "no such spec"),
        (["run", SPEC, "--variant", "A9", "--storage", str(tmp_path)], "A9"),
        (["run", SPEC, "--profile", "smoke", "--set", "train.stepz=3", "--storage", str(tmp_path)], "stepz"),
        (["run", SPEC, "--profile", "smoke", "--data-dir", str(tmp_path / "empty"), "--storage", str(tmp_path)],
         "zoo data fetch"),
        (["run", SPEC, "--profile", "smoke", "--address", f"127.0.0.1:{free}", "--storage", str(tmp_path)],
         "cannot reach the Ray cluster"),
        (["run", SPEC, "--profile", "smoke", "--address", f"127.0.0.1:{free}"], "--storage"),
        (["status", "--runs", str(tmp_path / "none.db")], "no results store"),
        (["run", SPEC, "--profile", "smoke", "--variant", "A1", "--set", "resources.cpus=64", "--storage",
          str(tmp_path), "--address", cluster[0].address], "would wait forever"),  # Tune would leave it pending
    ]
    for i, (args, needle) in enumerate(cases):
        if i == 0:  # one as a command of its own, whose exit code a shell sees
            r = zoo(*args)
        else:  # in this process (the last one on the module's loopback cluster, not a Ray of its own)
            r = subprocess.CompletedProcess(args, *here(*args))
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_sigkill_driver_then_rerun_keeps_finished_and_resumes_unfinished(tmp_path, data_root):
    storage = tmp_path / "runs"
    cmd = [*ZOO, "run", SPEC, "--profile", "smoke", "--variant", "A1", "--variant", "A2", "--max-concurrent", "1",
           "--storage", str(storage), *flags(sets("train.steps=300", "train.checkpoint_every=10",
                                                   "train.eval_every=300"))]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpts = storage / "table3_A" / "A2-smoke" / "checkpoints"
    try:  # killed once A1 is recorded finished and A2 has a checkpoint (the driver records A1 in its own time)
        wait_for(lambda: list(ckpts.glob("step_*.pt")) and row_status(storage, "A1") == "finished",
                 "A1 finished in the store and a checkpoint of A2", proc)
    finally:
        proc.kill()  # SIGKILL, as `kill -9` would
    proc.wait()
    before = rows(storage)
    assert before["A1"].status == "finished" and before["A2"].status != "finished"
    leftovers = {int(p): t for p, t in local.read_pidfile(storage)["pids"].items()}
    time.sleep(1)
    assert any(local.alive(p, t) for p, t in leftovers.items()), "expected Ray processes outliving the driver"

    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=RUN)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "leftover Ray processes" in again.stdout
    assert not [p for p, t in leftovers.items() if local.alive(p, t)], "leftovers of the killed run survived"
    after = rows(storage)
    assert after["A1"].finished_at == before["A1"].finished_at, "a finished trial ran again"
    assert "A1: started" not in again.stdout
    assert after["A2"].status == "finished" and after["A2"].resumed_from >= 10
    assert "A2: resumed from its checkpoint at step" in again.stdout


# -- a loopback cluster in this process --------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    args = {"num_cpus": 1, "object_store_memory": 100 * 2**20, "include_dashboard": False}
    c = Cluster(initialize_head=True, head_node_args={**args, "_system_config": NO_PRESTART})
    c.add_node(**args)
    c.wait_for_nodes()
    started = {}
    yield c, started
    for node in c.list_all_nodes():
        started |= local._descendants([i.process.pid for infos in node.all_processes.values() for i in infos])
    c.shutdown()
    local._end(started)  # by pid: what the cluster's own shutdown left


def _run(cl, tmp_path, name, variants, extra=(), **kw):
    out = io.StringIO()
    rc = sweep.run(SPEC, "smoke", variants, sets(*extra), address=cl.address, storage=str(tmp_path / name),
                   stream=out, **kw)
    return rc, out.getvalue(), rows(tmp_path / name)


def test_cluster_two_nodes_and_a_failing_trial(cluster, tmp_path, data_root):
    """Three trials over two one-CPU nodes; the one whose folder is broken fails, the others finish.
    The fault is injected from here, as a user could cause it: A2's checkpoints folder is a file."""
    cl, _ = cluster
    blocked = tmp_path / "two" / Path(SPEC).stem / "A2-smoke" / "checkpoints"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a folder")
    rc, out, r = _run(cl, tmp_path, "two", ["A1", "A2", "A3"], ["train.steps=30"])
    assert rc == 1, out
    # refused before its first step, in words (round 5), where it once failed with FileExistsError
    assert r["A2"].status == "failed" and "checkpoints is a file, not a folder" in r["A2"].error, r["A2"].error
    assert r["A1"].status == r["A3"].status == "finished"
    nodes = {v: x.placement.node_id for v, x in r.items() if x.placement}
    assert len(set(nodes.values())) == 2, nodes
    assert "A2 failed: " in out and "checkpoints is a file, not a folder" in out, out


def test_data_parallel_two_workers_match_one(cluster, tmp_path, data_root):
    """Two gloo workers (one per node) vs one worker, same tokens per step, dropout 0: same run."""
    cl, _ = cluster
    same = ["model.dropout=0", "train.steps=5", "train.eval_every=1", "train.log_every=1", "train.checkpoint_every=5"]
    rc2, out2, two = _run(cl, tmp_path, "dp2", ["A1"], [*same, "resources.workers=2"])
    rc1, out1, one = _run(cl, tmp_path, "dp1", ["A1"], same)
    assert rc1 == rc2 == 0, out1 + out2
    assert two["A1"].placement.workers == 2 and two["A1"].result.hardware.workers == 2
    assert one["A1"].result.hardware.workers == 1
    p2 = Store(tmp_path / "dp2" / "zoo.db").points(SPEC, "A1", "smoke")
    p1 = Store(tmp_path / "dp1" / "zoo.db").points(SPEC, "A1", "smoke")
    assert [p.step for p in p1] == [p.step for p in p2] == [1, 2, 3, 4, 5]
    for a, b in zip(p1, p2):
        assert abs(a.dev_ppl - b.dev_ppl) / a.dev_ppl < 1e-4  # after every step's update
        assert abs(a.loss - b.loss) < 1e-4  # the training loss of every step
    w1 = torch.load(one["A1"].checkpoint, weights_only=True)["model"]
    w2 = torch.load(two["A1"].checkpoint, weights_only=True)["model"]
    assert max((w1[k] - w2[k]).abs().max().item() for k in w1) < 1e-4


def test_fake_gpus_two_trials_side_by_side(cluster, tmp_path, data_root):
    """Ray's fake GPUs: each trial is given one, and refuses to train without CUDA unless the spec
    opts into the CPU (resources.allow_cpu_fallback)."""
    cl, _ = cluster
    cl.add_node(num_cpus=2, num_gpus=2, object_store_memory=100 * 2**20)
    cl.wait_for_nodes()
    rc, out, r = _run(cl, tmp_path, "nogpu", ["A1"], ["resources.gpus=1"])
    assert rc == 1 and "NoGPU" in r["A1"].error and "allow_cpu_fallback" in r["A1"].error, out
    assert r["A1"].step in (None, 0)  # refused before training
    rc, out, r = _run(cl, tmp_path, "gpu", ["A1", "A2"], ["resources.gpus=1", "train.steps=60",
                                                         "resources.allow_cpu_fallback=true"])
    assert rc == 0, out
    ids = {v: x.placement.gpu_ids for v, x in r.items()}
    assert sorted(sum(ids.values(), [])) == ["0", "1"], ids
    assert all("GPU" in x.hardware_text for x in r.values())
    assert max(x.started_at for x in r.values()) < min(x.finished_at for x in r.values()), "not concurrent"


def test_four_quarter_gpu_trials_share_one_gpu_at_once(tmp_path, data_root):
    """resources.gpus 0.25: Ray packs four trials on a one-GPU node, all running at the same time."""
    from ray.cluster_utils import Cluster
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 1, "include_dashboard": False,
                                                      "_system_config": NO_PRESTART,
                                                      "object_store_memory": 100 * 2**20})
    try:
        rc, out, r = _run(c, tmp_path, "quarters", ["A1", "A2", "A3", "A4"],
                          ["resources.gpus=0.25", "resources.cpus=0.25", "resources.allow_cpu_fallback=true",
                           "train.steps=60"])
    finally:
        pids = [i.process.pid for n in c.list_all_nodes() for infos in n.all_processes.values() for i in infos]
        started = local._descendants(pids)
        c.shutdown()
        local._end(started)
    assert rc == 0, out
    assert {v: x.placement.gpu_ids for v, x in r.items()} == {v: ["0"] for v in ("A1", "A2", "A3", "A4")}
    assert max(x.started_at for x in r.values()) < min(x.finished_at for x in r.values()), "not all at once"


def test_ray_address_and_gpu_settings_reach_the_trials(tmp_path, monkeypatch):
    """RAY_ADDRESS names the cluster when --address is not given (as for `ray` itself); NCCL_*,
    PYTORCH_* and CUDA_* reach remote trials with ZOO_*, but never the driver's CUDA_VISIBLE_DEVICES."""
    from zoo.errors import UserError
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free}")
    with pytest.raises(UserError, match="--storage"):  # a cluster: it must be told where to write
        sweep.run(SPEC, "smoke", ["A1"], sets(), storage=None)
    for k, v in {"NCCL_SOCKET_IFNAME": "eth0", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                 "CUDA_LAUNCH_BLOCKING": "1", "CUDA_VISIBLE_DEVICES": "3", "ZOO_DOWNLOAD": "0"}.items():
        monkeypatch.setenv(k, v)
    env = local._job_env()["env_vars"]
    assert {"NCCL_SOCKET_IFNAME", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_LAUNCH_BLOCKING", "ZOO_DOWNLOAD"} <= set(env)
    assert "CUDA_VISIBLE_DEVICES" not in env and "HOME" not in env


def test_tune_concurrency_counts_data_parallel_workers():
    """A data-parallel trial's workers are reserved by its trainer, not by Tune: Tune runs only as many
    at once as the cluster holds (workers x GPUs, workers x CPUs), so none waits in its trainer."""
    from zoo.runner import fits
    from zoo.spec import resolve
    dp = resolve(REPO / SPEC, "A1", "smoke", ["resources.workers=2", "resources.gpus=1", "resources.cpus=2"])
    one = resolve(REPO / SPEC, "A1", "smoke", ["resources.gpus=0.5"])
    nodes = [{"CPU": 16, "GPU": 4}, {"CPU": 16, "GPU": 4}]
    assert fits.concurrency(dp * 6, nodes, None) == 4  # 8 GPUs / (2 workers x 1 GPU)
    assert fits.concurrency(dp * 6, nodes, 3) == 3  # the user's limit when lower
    assert fits.concurrency(one * 20, nodes, None) is None  # one-process trials: Tune reserves them itself


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_cleanly_and_the_rerun_resumes(tmp_path, data_root, sig, code):
    """Ctrl-C, or SIGTERM (a scheduler, `kill`: once ray.init had put Ray's own handler there, which
    printed a stack and died without zoo's message), stops cleanly and the rerun resumes."""
    storage = tmp_path / "runs"
    cmd = [*ZOO, "run", SPEC, "--profile", "smoke", "--variant", "A3", "--storage", str(storage),
           *flags(sets("train.steps=300", "train.checkpoint_every=10", "train.eval_every=300"))]
    log = tmp_path / "driver.log"  # a file, not a pipe: a long wait never fills a pipe and blocks the driver
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, text=True)
    ckpts = storage / "table3_A" / "A3-smoke" / "checkpoints"
    try:
        wait_for(lambda: list(ckpts.glob("step_*.pt")), "a checkpoint of A3", proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    proc.send_signal(sig)
    proc.wait(timeout=WAIT)
    out = log.read_text()
    assert proc.returncode == code and "run the same command again to resume" in out, out
    assert "Traceback" not in out and "SIGTERM received" not in out
    assert rows(storage)["A3"].status == "pending" and not local.read_pidfile(storage)
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=RUN)
    assert again.returncode == 0 and "A3: resumed from its checkpoint at step" in again.stdout, again.stdout
    assert rows(storage)["A3"].status == "finished"


def test_mirror_round_trip_through_a_storage_uri(tmp_path):
    """Trial folders reach object storage and come back on another node (a file:// URI stands in)."""
    from zoo.runner.trial import Mirror
    a = tmp_path / "node_a"
    (a / "checkpoints").mkdir(parents=True)
    for step in (10, 20):
        (a / "checkpoints" / f"step_{step:08d}.pt").write_bytes(b"x" * step)
    (a / "config.json").write_text("{}")
    up = Mirror(f"file://{tmp_path}/bucket/A1-smoke", a)
    up.push()  # on the upload thread: the trial goes on
    up.wait()
    b = tmp_path / "node_b"
    Mirror(f"file://{tmp_path}/bucket/A1-smoke", b).pull()
    assert sorted(p.name for p in (b / "checkpoints").iterdir()) == ["step_00000020.pt"]
    assert (b / "config.json").read_text() == "{}"


def test_uploads_run_beside_training_and_the_last_one_before_done(tmp_path, monkeypatch):
    """A report's upload runs on the upload thread and is never queued behind one in flight; the final push
    waits for it, then sends the summary from the trial's own thread."""
    import threading
    import pyarrow.fs as pafs
    from zoo.runner.trial import Mirror
    a = tmp_path / "node_a"
    (a / "checkpoints").mkdir(parents=True)
    (a / "checkpoints" / "step_00000010.pt").write_bytes(b"x")
    (a / "config.json").write_text("{}")
    (a / "summary.json").write_text("{}")
    copy, gate, seen = pafs.copy_files, threading.Event(), []

    def slow(src, dst, **kw):
        seen.append((threading.current_thread().name, Path(src).name))
        if threading.current_thread().name.startswith("zoo-upload"):
            gate.wait(30)
        copy(src, dst, **kw)
    monkeypatch.setattr(pafs, "copy_files", slow)
    up = Mirror(f"file://{tmp_path}/bucket/A1-smoke", a)
    up.push()  # returns with the upload held at the gate
    while not seen:
        time.sleep(0.01)
    (a / "checkpoints" / "step_00000020.pt").write_bytes(b"y")
    up.push()  # one in flight: not queued
    assert not up._pending.done() and {n for n, _ in seen} <= {"zoo-upload_0"}
    gate.set()
    up.push(final=True)
    names = [f for _, f in seen]
    assert names.count("step_00000010.pt") == 1 and "step_00000020.pt" in names and "summary.json" in names
    assert seen[-1][0] == threading.current_thread().name  # the final files from the trial's thread


def test_short_error_picks_the_trial_exception():
    from zoo.runner.progress import short_error
    tb = ("Failure # 1\nray.exceptions.RayTaskError(NonFiniteLoss): ray::ImplicitFunc.train() (pid=1)\n"
          "  File \"zoo/train/loop.py\", line 230, in train\n"
          "zoo.train.NonFiniteLoss: non-finite loss at step 3 (lr 1e+05); lower train.schedule.lr_scale\n")
    assert short_error(tb).startswith("zoo.train.NonFiniteLoss: non-finite loss at step 3")
    assert short_error("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
                       "memory.").startswith("ray.exceptions.OutOfMemoryError")


def test_a_local_folder_is_refused_for_a_cluster_on_other_hosts(tmp_path, monkeypatch):
    import ray.util
    from zoo.errors import UserError
    from zoo.runner import local
    monkeypatch.setattr(local, "node_hosts", lambda: {"127.0.0.1", "10.1.2.3"})
    monkeypatch.setattr(ray.util, "get_node_ip_address", lambda: "127.0.0.1")
    monkeypatch.setattr(local, "blind_nodes", lambda folder: {"10.1.2.3"})  # the probe file was not there
    with pytest.raises(UserError, match="cannot be read on 10.1.2.3"):
        local.check_shared(tmp_path, None, str(tmp_path), "auto")
    monkeypatch.setattr(local, "blind_nodes", lambda folder: set())  # every node read it: shared
    local.check_shared(tmp_path, None, str(tmp_path), "auto")
    local.check_shared(tmp_path, "s3://bucket/zoo-runs", "s3://bucket/zoo-runs", "auto")  # a cloud URI is shared


def test_seeds_axis_runs_each_variant_once_per_seed_and_skips_finished(cluster, tmp_path, data_root, here):
    cl, _ = cluster
    rc, out, r = _run(cl, tmp_path, "seeds", ["A1"], seeds=[1, 2])
    assert rc == 0, out
    assert sorted(r) == ["A1-seed1", "A1-seed2"]
    assert {x.seed for x in r.values()} == {1, 2}
    assert {x.paper_row for x in r.values()} == {"A1"} and len({x.config_hash for x in r.values()}) == 2
    rc, out, r2 = _run(cl, tmp_path, "seeds", ["A1"], seeds=[1, 2, 3])  # one more seed: only it runs
    assert rc == 0 and "1 of 3 trials to run (A1-seed3)" in out, out
    assert r2["A1-seed1"].finished_at == r["A1-seed1"].finished_at
    st = json.loads(here("status", "--json", "--runs", tmp_path / "seeds")[1])
    assert sorted(x["seed"] for x in st) == [1, 2, 3]


def test_random_search_with_asha_stops_some_trials_early(tmp_path, data_root, here):
    """Issue 15: `random:` draws learning rates far apart; ASHA stops the trials that trail at its rungs,
    and they are recorded as `stopped` with their step; a rerun trains none of them on."""
    spec = tmp_path / "asha.yaml"
    spec.write_text(f"extends: {REPO / 'specs/base.yaml'}\n"
                    "sweep:\n  random:\n    samples: 6\n    train.schedule.lr_scale: {loguniform: [0.003, 3.0]}\n"
                    "  scheduler: {asha: {grace_steps: 10, reduction_factor: 2}}\n")
    storage = tmp_path / "runs"
    args = ["run", str(spec), "--profile", "smoke", "--storage", str(storage),
            *flags(["train.steps=40", "train.eval_every=10", "train.checkpoint_every=10", "eval.max_sentences=4"])]
    r = zoo(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = Store(storage / "zoo.db").trials()
    stopped = [t for t in rows if t.status == "stopped"]
    finished = [t for t in rows if t.status == "finished"]
    assert len(rows) == 6 and stopped and finished, [(t.trial, t.status, t.step) for t in rows]
    assert all(10 <= t.step < 40 for t in stopped) and all(t.result is None for t in stopped)
    assert "stopped early" in r.stdout
    again = zoo(*args)  # a command (the sweep prints to the stdout it was imported with, not capsys's)
    assert again.returncode == 0 and "nothing to run" in again.stdout, again.stdout + again.stderr


def test_a_grid_times_seeds_runs_once_each_and_reports_as_a_sweep(tmp_path, data_root, here):
    """Issue 15's first check: a 2 x 2 grid and 2 seeds are 8 trials; the same command again runs
    nothing; `zoo report --sweep` shows every one."""
    spec = tmp_path / "grid.yaml"
    spec.write_text(f"extends: {REPO / 'specs/base.yaml'}\nseeds: [1, 2]\n"
                    "sweep:\n  grid: {model.h: [1, 4], model.dropout: [0.0, 0.1]}\n")
    storage = tmp_path / "runs"
    args = ["run", str(spec), "--profile", "smoke", "--storage", str(storage),
            *flags(sets())]
    plan = json.loads(here(*args, "--plan", "--json", "--no-measure")[1])
    r = zoo(*args)
    assert r.returncode == 0 and "8 finished, 0 failed" in r.stdout, r.stdout + r.stderr
    done = {t.trial for t in Store(storage / "zoo.db").trials() if t.status == "finished"}
    assert done == {x["trial"] for x in plan} and len(done) == 8
    # Tune reused the two slots' processes (reuse_actors); a trial that ran after others in its process equals the
    # same config trained in this one (another history: seeds, dynamo, a writer already running) to the bit
    by_pid = {}
    for t in sorted(Store(storage / "zoo.db").trials(), key=lambda t: t.started_at):
        by_pid.setdefault(t.placement.pid, []).append(t)
    assert len(by_pid) < 8, {p: [t.trial for t in ts] for p, ts in by_pid.items()}
    later = max(by_pid.values(), key=len)[-1]
    from zoo.train import train
    fresh = train(later.config, tmp_path / "fresh", str(data_root))
    assert (fresh.dev_ppl, fresh.primary.bleu) == (later.result.dev_ppl, later.result.primary.bleu), later.trial
    again = zoo(*args)  # a command (the sweep prints to the stdout it was imported with, not capsys's)
    assert "nothing to run: all 8 trials" in again.stdout, again.stdout + again.stderr
    out = tmp_path / "out"
    code, _, err = here("report", "--sweep", spec, "--runs", storage, "--out", out, "--format", "md")
    assert code == 0, err
    md = (out / "sweep-grid.md").read_text()
    assert sum(l.startswith("| grid-") and "| 2 |" in l for l in md.splitlines()) == 4  # 4 points, 2 seeds each
    assert all(name in md for name in done)  # each trial's card
