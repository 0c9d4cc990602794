"""`zoo run --address` on a real two-node Ray cluster with token authentication (issue 16).

Two network namespaces joined by a veth pair stand for two machines on a network: the head at
192.0.2.1, a worker node at 192.0.2.2 (TEST-NET-1, reserved for documentation and tests). Each
namespace has only `lo` and its end of the veth, no route elsewhere and IPv6 off, so nothing it does
can reach any address but 127.0.0.1 and 192.0.2.x. The nodes start exactly as the manual's "Running on a
cluster" page (docs/cluster.md) says (`COMMANDS` below, with test-only sizing flags); the storage is a folder both
namespaces see through the same filesystem, as an NFS mount would be.

Needs root and iproute2's `ip` and `ss` (CI runs as root; .ci/run installs iproute2): without them the
test fails saying so, it is not skipped. Everything it starts is ended by pid (`ip netns pids`), and
both namespaces are deleted, also when the test fails.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zoo.runner.store import Store

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # this virtualenv's `ray` and `zoo`, the same path on both "machines"
HEAD, NODE = "192.0.2.1", "192.0.2.2"
SPEC = "specs/table3_A.yaml"

# docs/cluster.md's commands, HEAD_IP and NODE_IP filled in; tests add SIZE (one CPU and a small object store
# per node: the machine is shared) and a private --temp-dir per node.
COMMANDS = {
    "token": ["ray", "get-auth-token", "--generate"],
    "head": ["ray", "start", "--head", "--node-ip-address", HEAD, "--port", "6379", "--include-dashboard=false",
             "--disable-usage-stats"],
    "node": ["ray", "start", "--address", f"{HEAD}:6379", "--node-ip-address", NODE],
    "run": ["zoo", "run", SPEC, "--profile", "smoke", "--address", f"{HEAD}:6379"],  # + --storage SHARED
}
SIZE = ["--num-cpus", "1", "--object-store-memory", str(100 * 2**20)]
STEPS = 100
SMALL = [f"train.steps={STEPS}", "train.checkpoint_every=10", f"train.eval_every={STEPS}", "eval.max_sentences=4"]
# Deadlines: generous, for a busy 2-core machine (other CPU-bound work beside the suite, Ray's workers at
# nice 15); the test waits on conditions (a trial finished, sockets open), never a fixed time.
WAIT = 600  # seconds to wait for a condition mid-sweep before failing, saying which
RUN = 1200  # seconds a whole `zoo run` may take
MIN_SOCKETS = 10  # mid-sweep, the Ray services and trial workers of both nodes hold more than this


def sh(*cmd, timeout=300, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)}: {r.stdout}{r.stderr}"
    return r


class Net:
    """Two namespaces (head, node) joined by a veth pair; names carry this process's pid."""

    def __init__(self):
        pid = os.getpid()
        self.ns = {"head": f"zoo-head-{pid}", "node": f"zoo-node-{pid}"}
        self.addr = {"head": HEAD, "node": NODE}
        self.veth = {"head": f"zh{pid}", "node": f"zn{pid}"}

    def up(self) -> None:
        for side in ("head", "node"):
            sh("ip", "netns", "add", self.ns[side])
        sh("ip", "link", "add", self.veth["head"], "type", "veth", "peer", "name", self.veth["node"])
        for side in ("head", "node"):
            ns, dev = self.ns[side], self.veth[side]
            for conf in ("all", "default"):  # IPv4 only: the addresses below are the namespace's only ones
                sh("ip", "netns", "exec", ns, "sh", "-c", f"echo 1 > /proc/sys/net/ipv6/conf/{conf}/disable_ipv6")
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{self.addr[side]}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def pids(self, side: str) -> list[int]:
        r = subprocess.run(["ip", "netns", "pids", self.ns[side]], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()]

    def stop_all(self) -> list[int]:
        """End every process inside the namespaces, by pid: SIGTERM, then SIGKILL (Ray's GCS and
        raylet take their time over SIGTERM). Returns the pids still there after that (none)."""
        pids = self.pids("head") + self.pids("node")
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 60.0)):
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + wait
            while (pids := self.pids("head") + self.pids("node")) and time.time() < deadline:
                time.sleep(0.1)
        return pids

    def down(self) -> None:
        for side in ("head", "node"):  # deleting a namespace deletes its end of the veth, and so the pair
            subprocess.run(["ip", "netns", "del", self.ns[side]], capture_output=True)

    def cmd(self, side: str, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns[side], *cmd]

    def sockets(self, side: str) -> list[tuple[str, str, str, str]]:
        """(state, local address, peer address, process) of every TCP/UDP socket in the namespace."""
        out = sh(*self.cmd(side, "ss", "-tunapH")).stdout
        return [(f[1], f[4], f[5], f[6] if len(f) > 6 else "") for f in (line.split() for line in out.splitlines())]


def _host(addr: str) -> str:
    host = addr.rpartition(":")[0].strip("[]")
    return host.removeprefix("::ffff:").split("%")[0]


def check_sockets(net: Net) -> int:
    """Every socket in both namespaces is on 127.0.0.1 or 192.0.2.x; listeners may be on the wildcard,
    which there means exactly those addresses (checked: the namespace has no others). Returns the count."""
    n = 0
    for side in ("head", "node"):
        addrs = sh("ip", "-n", net.ns[side], "-o", "addr", "show").stdout
        have = {line.split()[3] for line in addrs.splitlines()}
        assert have == {"127.0.0.1/8", f"{net.addr[side]}/24"}, f"{side} namespace addresses: {have}"
        for state, mine, peer, proc in net.sockets(side):
            n += 1
            ok = ("127.0.0.1", "192.0.2.1", "192.0.2.2")
            assert _host(mine) in ok + (("*", "0.0.0.0", "::") if state == "LISTEN" else ()), (side, mine, proc)
            assert _host(peer) in ok + ("*", "0.0.0.0", "::"), (side, mine, peer, proc)
            assert _host(peer) in ok or state in ("LISTEN", "UNCONN"), (side, state, mine, peer, proc)
    return n


@pytest.fixture
def cluster(tmp_path, data_root):
    """A head and a worker node in two namespaces, token auth on; everything ended and deleted after."""
    if os.geteuid() != 0:
        pytest.fail("this test makes network namespaces and needs root (CI runs as root)")
    missing = [t for t in ("ip", "ss") if not shutil.which(t)]
    if missing:
        pytest.fail(f"this test needs {' and '.join(missing)} (Debian: apt-get install iproute2)")
    net = Net()
    # Ray's unix sockets live under --temp-dir and their paths have a length limit: keep it short.
    ray_tmp = Path(tempfile.mkdtemp(prefix="zoo-ray-", dir="/tmp"))
    homes = {side: tmp_path / f"home-{side}" for side in ("head", "node", "stranger")}
    for h in homes.values():
        h.mkdir()
    shared = tmp_path / "shared"  # both namespaces see it: one filesystem, as an NFS mount would be
    base = {"PATH": f"{BIN}:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    env = {side: base | {"HOME": str(h)} for side, h in homes.items()}
    try:
        net.up()
        # docs/cluster.md: create a token on the head, copy it to every node; start every node with RAY_AUTH_MODE=token.
        sh(*net.cmd("head", *COMMANDS["token"]), env=env["head"])
        token = homes["head"] / ".ray" / "auth_token"
        (homes["node"] / ".ray").mkdir()
        shutil.copy(token, homes["node"] / ".ray" / "auth_token")
        sh(*net.cmd("head", *COMMANDS["head"], *SIZE, "--temp-dir", str(ray_tmp / "h")),
           env=env["head"] | {"RAY_AUTH_MODE": "token"})
        sh(*net.cmd("node", *COMMANDS["node"], *SIZE, "--temp-dir", str(ray_tmp / "n")),
           env=env["node"] | {"RAY_AUTH_MODE": "token"})
        # The driver's environment: the head's HOME (its token) and the data directory. The nodes'
        # own environments have no ZOO_DATA_DIR: the trials get it from `zoo run`.
        env["head"]["ZOO_DATA_DIR"] = str(data_root)
        yield net, env, shared
    finally:
        left = net.stop_all()
        net.down()
        shutil.rmtree(ray_tmp, ignore_errors=True)
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert not left, f"processes left in the namespaces: {left}"
        assert not any(ns in listed for ns in net.ns.values()), listed


def _rows(shared: Path) -> dict:
    try:
        return {r.trial: r for r in Store(shared / "zoo.db").trials()}
    except Exception:  # not created yet
        return {}


def _last_checkpoint(shared: Path, variant: str) -> int:
    """The step of the trial's newest checkpoint, 0 for none (zoo.train names them step_00000010.pt)."""
    ckpts = sorted((shared / "table3_A" / f"{variant}-smoke" / "checkpoints").glob("step_*.pt"))
    return int(ckpts[-1].stem.removeprefix("step_")) if ckpts else 0


def test_zoo_run_on_a_two_node_cluster_with_token_auth(cluster, tmp_path, data_root):
    net, env, shared = cluster
    t0 = time.time()
    run = [*COMMANDS["run"], "--storage", str(shared), *(x for s in SMALL for x in ("--set", s))]

    # A client without the token (on the other "machine", no ~/.ray/auth_token) tries the same command
    # while the sweep below runs (Ray retries for 20 s before it gives up).
    # (its own --storage: the run lock lets one `zoo run` at a time use a storage)
    theirs = [*COMMANDS["run"], "--storage", str(tmp_path / "stranger"), *(x for s in SMALL for x in ("--set", s))]
    stranger = subprocess.Popen(net.cmd("node", *theirs), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env["stranger"] | {"ZOO_DATA_DIR": str(data_root)})

    # The sweep: A1-A4 on two one-CPU nodes. Kill the driver once a trial finished and another one is
    # part-way (a checkpoint, under half its steps); the cluster lives on.
    log = tmp_path / "driver-1.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(net.cmd("head", *run), cwd=REPO, env=env["head"], stdout=f, stderr=subprocess.STDOUT)
    # Wait for the moment to kill it: a trial finished, another part-way, and the sockets of the Ray services
    # and the trial workers open (counted again each poll, as they open in their own time).
    sockets, deadline = 0, time.time() + WAIT
    while proc.poll() is None and time.time() < deadline:
        r = _rows(shared)
        part_way = {v: _last_checkpoint(shared, v) for v, x in r.items() if x.status == "running"}
        if any(x.status == "finished" for x in r.values()) and any(0 < s <= STEPS // 2 for s in part_way.values()):
            sockets = check_sockets(net)  # every socket there is checked, however many
            if sockets > MIN_SOCKETS:
                break
        time.sleep(0.5)
    ended = proc.poll()
    proc.kill()  # SIGKILL
    proc.wait()
    assert ended is None, f"the driver ended before it could be killed mid-sweep:\n{log.read_text()}"
    assert sockets > MIN_SOCKETS, (f"waited {WAIT} s for a finished trial, one part-way and more than {MIN_SOCKETS} "
                                   f"sockets (last count {sockets}):\n{log.read_text()}")
    before = _rows(shared)
    finished = {v for v, x in before.items() if x.status == "finished"}
    part_way = {v: _last_checkpoint(shared, v) for v in set(before) - finished}
    assert finished and any(part_way.values()), (before, part_way)

    # The same command again: finished trials kept, the others resume from their checkpoints.
    again = subprocess.run(net.cmd("head", *run), cwd=REPO, env=env["head"], capture_output=True, text=True,
                           timeout=RUN)
    assert again.returncode == 0, again.stdout + again.stderr
    after = _rows(shared)
    assert all(x.status == "finished" and x.error is None for x in after.values()), after
    for v in finished:
        assert after[v].finished_at == before[v].finished_at, f"{v} finished and ran again"
        assert f"{v}: started" not in again.stdout
    for v, step in part_way.items():
        if step:
            assert after[v].resumed_from >= step, (v, step, after[v].resumed_from, again.stdout)
            assert f"{v}: resumed from its checkpoint at step" in again.stdout, again.stdout

    # The client without the token was refused, with a one-paragraph reason: exit 2, no traceback.
    out, err = stranger.communicate(timeout=WAIT)
    assert stranger.returncode == 2, out + err
    assert "No Ray token found" in err and "Traceback" not in err, err

    # Results landed in the store, from trials on both nodes (their ZOO_DATA_DIR came from `zoo run`).
    for x in after.values():
        assert x.result.steps_done == STEPS and x.result.dev_ppl > 1 and x.result.primary.bleu is not None
    ips = {v: x.placement.node_ip for v, x in after.items()}
    assert set(ips.values()) == {HEAD, NODE}, ips
    status = subprocess.run([sys.executable, "-m", "zoo.cli", "status", "--json", "--runs", str(shared)],
                            cwd=REPO, capture_output=True, text=True, timeout=WAIT)
    assert sorted(r["variant"] for r in json.loads(status.stdout)) == ["A1", "A2", "A3", "A4"]
    print(f"cluster test: {time.time() - t0:.0f} s after the cluster was up, {sockets} sockets checked")

