"""Where the trials run: an embedded loopback-only Ray on this machine, or an existing cluster.

The embedded Ray binds 127.0.0.1 only (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read by Ray when it picks
the node address), keeps the dashboard off and prints nothing. Its process ids go to a pidfile beside
the results, refreshed while the sweep runs, so that a driver killed with SIGKILL leaves nothing the
next `zoo run` cannot find: leftovers are ended by process id (checked against their start time),
never by name.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from zoo.errors import UserError, reclaim_sigterm

PIDFILE = ".ray-local.json"
LOCKFILE = ".zoo-run.lock"  # held (flock) by the one `zoo run` using a storage; holds its pid
QUIET_ENV = {
    "RAY_AIR_NEW_OUTPUT": "0",                  # Tune's legacy reporter, which verbose=0 silences fully
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no CSV/JSON/TensorBoard files: the store has the results
    "RAY_DEDUP_LOGS": "0",
    "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
    "TUNE_PRINT_ALL_TRIAL_ERRORS": "0",         # the live table and the store carry each trial's error
}
# env vars every trial process sees: zoo's own (the data dir), and the GPU stack's settings a user
# tunes on the driver (NCCL_SOCKET_IFNAME, NCCL_DEBUG, PYTORCH_CUDA_ALLOC_CONF, CUDA_LAUNCH_BLOCKING,
# TORCH_NCCL_ASYNC_ERROR_HANDLING, TORCH_DISTRIBUTED_DEBUG, TORCH_LOGS, TORCHINDUCTOR_CACHE_DIR)
FORWARD_PREFIXES = ("ZOO_", "NCCL_", "PYTORCH_", "CUDA_", "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_")
NOT_FORWARDED = {"CUDA_VISIBLE_DEVICES"}  # Ray sets it per worker, to the GPUs it assigned


def loopback_env() -> None:
    """Keep Ray on 127.0.0.1: the Ray started from this process listens there, and a loopback address
    stays loopback (Ray otherwise swaps 127.0.0.1 for the machine's network address)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    if "ray._private.ray_constants" in sys.modules:  # Ray read the variable at import: tell it again
        sys.modules["ray._private.ray_constants"].ENABLE_RAY_CLUSTER = False


def quiet() -> None:
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    for name in ("ray", "ray.tune", "ray.train", "ray.air", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _job_env() -> dict:
    return {"env_vars": {k: v for k, v in os.environ.items()
                         if k.startswith(FORWARD_PREFIXES) and k not in NOT_FORWARDED}}


# -- one run per storage ------------------------------------------------------------------------------

class RunLock:
    """An exclusive OS lock (flock) on STORAGE/.zoo-run.lock for the whole of one `zoo run`.

    The kernel releases it when the process ends, however it ends, so a killed run never blocks the
    next one; two runs started at the same moment cannot both get it (a pidfile check can race)."""

    def __init__(self, storage: Path):
        self.path = Path(storage) / LOCKFILE
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        import fcntl
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").split()
            os.close(fd)
            who = f"pid {holder[0]}" if holder else "another process"
            raise UserError(f"another `zoo run` ({who}) is using {self.path.parent}; wait for it, stop it "
                            "with Ctrl-C, or give this run a different --storage") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the lock; the file stays (it is harmless)
            self.fd = None


def run_driver(storage: Path) -> tuple[int | None, bool]:
    """(pid of the last `zoo run` on storage, whether it still holds the lock), read-only."""
    import fcntl
    path = Path(storage) / LOCKFILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None, False
    try:
        text = os.pread(fd, 64, 0).decode(errors="replace").split()
        pid = int(text[0]) if text and text[0].isdigit() else None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # only a probe: let go at once
            fcntl.flock(fd, fcntl.LOCK_UN)
            return pid, False
        except BlockingIOError:
            return pid, True
    finally:
        os.close(fd)


# -- the pidfile ----------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time in clock ticks since boot) from /proc, None when gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = data[data.rindex(")") + 2:].split()  # after "pid (comm) "; comm may hold spaces
    return rest[0], int(rest[1]), int(rest[19])


def alive(pid: int, started: int | None = None) -> bool:
    """pid runs (not a zombie) and, given `started`, is the process we recorded, not a reused pid."""
    st = _stat(pid)
    return bool(st) and st[0] != "Z" and (started is None or st[2] == started)


def _descendants(roots: list[int]) -> dict[int, int]:
    """roots and all their live descendants: pid -> start time."""
    parent: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))):
            parent.setdefault(st[1], []).append(int(d.name))
    found, todo = {}, list(roots)
    while todo:
        pid = todo.pop()
        st = _stat(pid)
        if st and st[0] != "Z" and pid not in found:
            found[pid] = st[2]
            todo += parent.get(pid, [])
    return found


def _ray_pids() -> dict[int, int]:
    """Every process of the embedded Ray: its services and all their descendants (trial workers)."""
    import ray
    node = ray._private.worker._global_node
    if node is None:
        return {}
    return _descendants([i.process.pid for infos in node.all_processes.values() for i in infos])


def read_pidfile(storage: Path) -> dict:
    try:
        return json.loads((Path(storage) / PIDFILE).read_text())
    except (OSError, ValueError):
        return {}


class LocalRay:
    """The embedded Ray of one `zoo run`, with its pidfile in `storage`."""

    def __init__(self, storage: Path):
        self.pidfile = Path(storage) / PIDFILE
        self.known: dict[int, int] = {}
        self.owner = False  # whether the pidfile is ours (not another live run's)

    def start(self, num_cpus: int | None = None, num_gpus: int | None = None) -> None:
        ended = cleanup_leftovers(self.pidfile.parent)
        if ended:
            print(f"ended {len(ended)} leftover Ray processes of an earlier run (pids {', '.join(map(str, ended))})")
        self.owner = True
        self.refresh()  # claims the storage for this run before Ray starts
        loopback_env()
        os.environ["RAY_AUTH_MODE"] = "disabled"  # only for this loopback-only Ray; clusters keep their auth
        quiet()
        import ray
        ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", object_store_memory=256 * 2**20, log_to_driver=False,
                 logging_level=logging.ERROR, runtime_env=_job_env(),
                 # no idle workers started ahead (one per CPU): Tune's trials start workers of their own, and the
                 # idle ones cost ~1 s of CPU each (a one-trial smoke `zoo run`: 22.5 -> 20.9 s of CPU)
                 _system_config={"prestart_worker_first_driver": False, "enable_worker_prestart": False})
        reclaim_sigterm()
        self.refresh()

    def refresh(self) -> None:
        """Record the Ray processes now alive (trial workers come and go during a sweep)."""
        self.known |= _ray_pids()
        self.known = {pid: t for pid, t in self.known.items() if alive(pid, t)}
        body = {"driver": os.getpid(), "driver_started": _stat(os.getpid())[2],
                "pids": {str(k): v for k, v in self.known.items()}}
        self.pidfile.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.pidfile.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(body))
        os.replace(tmp, self.pidfile)

    def stop(self) -> None:
        if not self.owner:
            return
        import ray
        self.known |= _ray_pids()
        ray.shutdown()
        _end({pid: t for pid, t in self.known.items()})  # what shutdown left behind (agents)
        self.pidfile.unlink(missing_ok=True)


def cleanup_leftovers(storage: Path) -> list[int]:
    """End the Ray processes a killed `zoo run` left behind (from its pidfile); return their pids.

    Refuses when the run that wrote the pidfile is still alive: that Ray is in use."""
    info = read_pidfile(storage)
    if not info:
        return []
    if info["driver"] != os.getpid() and alive(info["driver"], info.get("driver_started")):
        raise UserError(f"another `zoo run` (pid {info['driver']}) is using {storage}; wait for it, "
                        "stop it with Ctrl-C, or give this run a different --storage")
    ended = _end({int(k): v for k, v in info.get("pids", {}).items()})
    (Path(storage) / PIDFILE).unlink(missing_ok=True)
    return ended


def _end(pids: dict[int, int], grace: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL after `grace` seconds, each pid still alive with its recorded start time."""
    procs = {pid: t for pid, t in pids.items() if pid != os.getpid() and alive(pid, t)}
    for pid in procs:
        _signal(pid, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline and any(alive(p, t) for p, t in procs.items()):
        time.sleep(0.1)
    for pid, t in procs.items():
        if alive(pid, t):
            _signal(pid, signal.SIGKILL)
    return sorted(procs)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# -- joining a cluster ------------------------------------------------------------------------------

def connect(address: str) -> None:
    """Join an existing cluster (`auto`, `host:port` or `ray://host:port`); a bad address is a user error."""
    quiet()
    token = _token_auth()
    import ray
    from ray._private import services
    hint = ("Start one with `ray start --head` on the head node (and `ray start --address HEAD:6379` on the "
            "others), then pass --address auto on a node of that cluster, or ray://HEAD:10001 from outside "
            "it; leave --address out to run on this machine alone.")
    try:
        target = services.get_ray_address_from_environment("auto", None) if address == "auto" else address
    except ConnectionError:
        raise UserError(f"--address auto: no running Ray cluster found on this machine. {hint}") from None
    host, _, port = target.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--address {address}: expected auto, HOST:PORT or ray://HOST:PORT. {hint}")
    if services.is_localhost(host.strip("[]")):
        loopback_env()  # a cluster on this machine: keep talking to it over loopback
    try:  # a quick probe: Ray itself retries an unreachable address for minutes
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise UserError(f"cannot reach the Ray cluster at --address {address} ({host}:{port}: "
                        f"{e.strerror or e}). {hint}") from None
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR, runtime_env=_job_env())
        reclaim_sigterm()
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        auth = (f"Ray refused or ignored the token from {token}: check that it is the cluster's token "
                "(`ray get-auth-token` on the head node prints it). " if token else
                f"No Ray token found here (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or {TOKEN_FILE}): a cluster "
                "started with RAY_AUTH_MODE=token refuses clients without its token; copy the head node's "
                f"{TOKEN_FILE} here or export RAY_AUTH_TOKEN. ")
        raise UserError(f"cannot join the Ray cluster at --address {address}: {first}. {auth}{hint}") from None


TOKEN_FILE = "~/.ray/auth_token"


def _token_auth() -> str | None:
    """Where this client's Ray token comes from, if it has one; with one, send it.

    `ray.init(address=...)` sends a token only under RAY_AUTH_MODE=token, even when the token sits in
    ~/.ray/auth_token, so a user following `ray start`'s token setup would be refused: a token here
    turns token mode on (an explicit RAY_AUTH_MODE is left as the user set it)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        where = "RAY_AUTH_TOKEN"
    elif os.environ.get("RAY_AUTH_TOKEN_PATH"):
        where = os.environ["RAY_AUTH_TOKEN_PATH"]
    elif Path(TOKEN_FILE).expanduser().is_file():
        where = TOKEN_FILE
    else:
        return None
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    return where


def cluster_gpus() -> float:
    import ray
    return ray.cluster_resources().get("GPU", 0)


def node_hosts() -> set[str]:
    """Addresses of the cluster's live nodes."""
    import ray
    return {n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")}


def node_resources() -> list[dict]:
    """Total resources of each live node."""
    import ray
    return [n["Resources"] for n in ray.nodes() if n.get("Alive")]


def check_shared(local: Path, uri: str | None, shown: str, address: str) -> None:
    """With a cluster, every node must see the storage: a URI, or a path every node reads the same files
    at. A filesystem's type cannot tell (a local disk may be bind-mounted into containers, an NFS
    mount may exist on this machine only), so a file written here must be readable on every node."""
    if uri:
        return
    import ray
    here = ray.util.get_node_ip_address()
    others = {h for h in node_hosts() if h not in (here, "127.0.0.1")}
    if not address.startswith("ray://") and not others:
        return  # every node runs on this machine: any local path is shared
    blind = blind_nodes(local)
    if not blind:
        return
    raise UserError(f"--storage {shown} ({local}, filesystem {_fs_type(local)}) is not shared "
                    f"with every node of the cluster at {address}: a file written there on this machine cannot "
                    f"be read on {', '.join(sorted(blind))}, so their checkpoints and results would be lost. "
                    "Pass --storage a path that every node mounts at the same place (NFS, Lustre, ...) or a "
                    "cloud URI such as s3://bucket/zoo-runs.")


def blind_nodes(folder: Path) -> set[str]:
    """Addresses of the live nodes that do not read back a file just written in `folder`."""
    import secrets
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    folder.mkdir(parents=True, exist_ok=True)
    probe, word = folder / f".zoo-probe-{secrets.token_hex(8)}", secrets.token_hex(16)
    probe.write_text(word)
    try:
        read = ray.remote(num_cpus=0, max_retries=0)(_read_text)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        refs = [read.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(str(probe)) for n in nodes]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=120)  # a node that never answers is blind
        return {n["NodeManagerAddress"] for n, ref in zip(nodes, refs) if ref not in ready or ray.get(ref) != word}
    finally:
        probe.unlink(missing_ok=True)


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _fs_type(path: Path) -> str:
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            _, mnt, fstype, *_ = line.split()
            if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) > len(best):
                best, kind = mnt, fstype
    except OSError:
        pass
    return kind
