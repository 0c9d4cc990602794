"""Every script in scripts/ against hostile arguments, beside canaries (issue 51, item 1): a mistake is one line and exit
2, and a script deletes, rewrites or ends only what it made. Each case runs in a sandbox folder of its own (its cwd and
HOME there, canaries beside and inside the folder named); the scripts run from a copy of scripts/ in the sandbox.

The GPU check's old bug: `--out <a regular file>` made its work folder /work, which it then removed. Those cases run in
a mount namespace where /work is a sandbox folder holding a canary, so even that pattern could reach only the sandbox.
loopback_ray_head.sh's cases run in a PID namespace of their own (its old trap killed every process naming
127.0.0.1:PORT..., anyone's), with a stand-in `.venv/bin/ray` that starts one process naming the head's address.
ZOO_SCRIPTS_UNDER_TEST=DIR runs these cases against another scripts/ folder (an older commit's: `git show
fd0ba20:scripts/X`); give it only the cases that cannot reach a real path there (the old GPU check's `--out` of a
regular file, an empty one or a folder it cannot write removed /work and wrote at /)."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PY = os.path.realpath(sys.executable)  # the interpreter itself: its standard library is all the refusals need
ROOT_USER = os.geteuid() == 0
DROP = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]  # root may write a read-only folder


def can(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


MOUNT_NS = ROOT_USER and Path("/work").is_dir() and can(["unshare", "--mount", "--propagation", "private", "true"])
PID_NS = ROOT_USER and can(["unshare", "--pid", "--fork", "--mount-proc", "true"])


def sandbox() -> Path:
    """A sandbox anyone may read (the nobody cases): scripts/ copied, the caller's folder, HOME, a stand-in /work,
    each holding a canary."""
    root = Path(tempfile.mkdtemp(prefix="zoo-canary-", dir="/tmp"))
    root.chmod(0o755)
    shutil.copytree(os.environ.get("ZOO_SCRIPTS_UNDER_TEST") or REPO / "scripts", root / "ck" / "scripts")
    for d in ("caller", "home", "fakework"):
        (root / d).mkdir()
        (root / d / "precious.txt").write_text(f"{d}'s canary\n")
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
    return root


def remove_sandbox(root: Path):
    for p in root.rglob("*"):  # a folder a case made read-only
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(root)


@pytest.fixture
def sb():
    root = sandbox()
    yield root
    remove_sandbox(root)


def tree(root: Path) -> dict:
    """Every path under root with its bytes (None for a folder): a canary removed, rewritten or added shows."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def run(sb: Path, script: str, *args, nobody=False, env=(), bind_work=True, timeout=120):
    cmd = [str(sb / "ck" / "scripts" / script), *args]
    if nobody:
        cmd = DROP + cmd
    if bind_work and MOUNT_NS:  # /work, where the old bug's rm -rf landed, is the sandbox's canary folder here
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount --bind "$0" /work && exec "$@"',
               str(sb / "fakework"), *cmd]
    e = {"PATH": os.environ["PATH"], "HOME": str(sb / "home"), "PYTHON": PY, "LANG": "C.UTF-8",
         "PYTHONDONTWRITEBYTECODE": "1", **dict(env)}
    r = subprocess.run(cmd, cwd=sb / "caller", env=e, capture_output=True, text=True, timeout=timeout)
    return r.returncode, (r.stdout + r.stderr).strip()


def refused(rc, said):
    assert rc == 2 and len(said.splitlines()) == 1, (rc, said)


# -- the GPU check -----------------------------------------------------------------------------------------------
def bug_reaches_only_the_sandbox():
    if not MOUNT_NS and Path("/work").is_dir() and any(Path("/work").iterdir()):
        pytest.skip("no mount namespace here to put a sandbox at /work, where the old bug's rm -rf landed")


@pytest.mark.parametrize("script", ["gpu-check.sh", "first-gpu-run.sh"])
def test_gpu_check_refuses_a_regular_file_as_out(sb, script):
    bug_reaches_only_the_sandbox()
    (sb / "caller" / "results.txt").write_text("a user's file\n")
    before = tree(sb)
    for out in ("results.txt", str(sb / "caller" / "results.txt"), "results.txt/sub"):
        rc, said = run(sb, script, "--cpu", "--out", out)
        refused(rc, said)
        assert "not a folder" in said or "cannot write" in said, said
        assert tree(sb) == before


@pytest.mark.parametrize("args", [["--out"], ["--cpu", "--out"], ["--out", ""], ["--out="], ["--outt", "x"], ["x"]],
                         ids=["no-value", "no-value-last", "empty", "empty-joined", "misspelt", "stray-word"])
def test_gpu_check_refuses_a_missing_or_empty_out_and_unknown_words(sb, args):
    before = tree(sb)
    rc, said = run(sb, "gpu-check.sh", *args)
    refused(rc, said)
    assert tree(sb) == before  # nothing written in the caller's folder, HOME or the checkout


def test_gpu_check_keeps_a_users_work_folder_and_logs(sb):
    """--out DIR whose work/ is the user's (no marker of the check's): refused, every file kept; the old script
    removed DIR/work and DIR/logs/*.log."""
    out = sb / "caller" / "mine"
    (out / "work").mkdir(parents=True)
    (out / "work" / "precious.txt").write_text("the user's run\n")
    (out / "logs").mkdir()
    (out / "logs" / "notes.log").write_text("the user's log\n")
    before = tree(sb)
    for arg in ("mine", str(out)):  # relative: from the caller's folder, where mine/ is (the checkout has none)
        rc, said = run(sb, "gpu-check.sh", "--out", arg)  # no --cpu: the old script stops after step 1 here
        assert tree(sb) == before
        refused(rc, said)
        assert str(out / "work") in said and "not a folder this check made" in said, said


@pytest.mark.parametrize("link", ["work", "logs"])
def test_gpu_check_keeps_what_a_link_in_out_points_to(sb, link):
    (sb / "caller" / "out").mkdir()
    (sb / "caller" / "out" / link).symlink_to(sb / "home")
    before = tree(sb)
    refused(*run(sb, "gpu-check.sh", "--out", "out", "--cpu"))
    assert tree(sb) == before


def test_gpu_check_refuses_a_folder_it_cannot_write(sb):
    if ROOT_USER and not can([*DROP, PY, "-c", "pass"]):
        pytest.skip(f"user nobody cannot run {PY} here (root writes any folder, so the case needs another user)")
    locked = sb / "caller" / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "precious.txt").write_text("kept\n")
    for d in (locked / "inner", locked):
        d.chmod(0o555)
    before = tree(sb)
    for arg in ("locked", "locked/inner", "locked/new"):  # a folder it cannot write, nor make
        rc, said = run(sb, "gpu-check.sh", "--out", arg, "--cpu", nobody=ROOT_USER)
        refused(rc, said)
        assert "cannot write" in said and str(locked) in said, said  # the caller's folder, not the checkout's
        assert tree(sb) == before


def test_gpu_check_makes_work_its_own_and_removes_only_its_runs(sb):
    """What a run may remove: in the work/ it marked, the runs its steps make; a user's file there, the user's
    files beside it in OUT and its logs stay."""
    sys.path.insert(0, str(sb / "ck" / "scripts"))
    for name in ("gpu_check", "gpu_check_report"):  # this folder's, not one an earlier test imported
        sys.modules.pop(name, None)
    try:
        import gpu_check
    finally:
        sys.path.remove(str(sb / "ck" / "scripts"))
    out = gpu_check.out_folder(str(sb / "caller" / "new" / "gc"))
    assert gpu_check.owned(out / "work") and gpu_check.out_folder(str(out)) == out  # its own the second time
    for s in gpu_check.STEPS:
        for rel in s.made:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text("last run\n") if "." in rel.split("/")[-1] else (out / rel).mkdir(exist_ok=True)
    (out / "work" / "precious.txt").write_text("a user's\n")
    (out / "logs" / "notes.log").write_text("a user's\n")
    (out / "notes.md").write_text("a user's\n")
    c = gpu_check.Check(out, gpu_check.CPU, ["zoo"])
    for s in gpu_check.STEPS:
        gpu_check.remove_made(c, s)
    left = {str(p.relative_to(out)) for p in out.rglob("*")}
    assert left == {"work", "logs", "work/.gitignore", "work/precious.txt", "logs/notes.log", "notes.md"}, left


# -- compact_store.sh --------------------------------------------------------------------------------------------
def store(path: Path):
    import sqlite3
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE t (x)")
    c.execute("INSERT INTO t VALUES (1)")
    c.commit()
    c.close()


def test_compact_store_writes_only_its_own_files(sb):
    import lzma
    c = sb / "caller"
    store(c / "my?store#1.db")  # a '?' or '#' in a name is no URI query
    (c / "out.xz.part").write_text("a user's file where the old script put its partial copy\n")
    before = tree(sb)
    rc, said = run(sb, "compact_store.sh", "my?store#1.db", "out.xz")
    assert rc == 0, said
    after = tree(sb)
    assert lzma.decompress(after.pop("caller/out.xz")).startswith(b"SQLite format 3")
    assert after == before


def test_compact_store_refuses_in_one_line(sb):
    c = sb / "caller"
    store(c / "zoo.db")
    store(c / "store.xz")
    (c / "notes.db").write_text("not a store\n")
    (c / "dest.xz").mkdir()
    (c / "dest.xz" / "precious.txt").write_text("kept\n")
    before = tree(sb)
    for args in ([], ["zoo.db"], ["zoo.db", "out"], ["nosuch.db", "out.xz"], ["zoo.db", "a.xz", "b.xz"],
                 ["notes.db", "out.xz"], ["zoo.db", "dest.xz"], ["store.xz", "store.xz"], ["zoo.db", "notes.db/x.xz"]):
        refused(*run(sb, "compact_store.sh", *args))
        assert tree(sb) == before, args


# -- system-deps.sh ----------------------------------------------------------------------------------------------
def test_system_deps_refuses_arguments_before_installing_anything(sb):
    """With chromium and iproute2 missing from PATH, an unknown argument installs nothing (a stand-in apt-get
    records being called); --help says what it does."""
    bin_ = sb / "bin"
    bin_.mkdir()
    for tool in ("apt-get", "sudo"):
        (bin_ / tool).write_text(f'#!/bin/sh\necho "$0 $*" >> "{sb}/installed"\n')
        (bin_ / tool).chmod(0o755)
    (bin_ / "id").symlink_to(shutil.which("id"))
    for args in (["--bogus"], [""], ["-y", "--help"]):
        rc, said = run(sb, "system-deps.sh", *args, env={"PATH": str(bin_)}, bind_work=False)
        refused(rc, said)
        assert not (sb / "installed").exists(), args
    rc, said = run(sb, "system-deps.sh", "--help", env={"PATH": str(bin_)}, bind_work=False)
    assert rc == 0 and "usage" in said and not (sb / "installed").exists()


# -- loopback_ray_head.sh ----------------------------------------------------------------------------------------
FAKE_RAY = """#!/bin/sh
# stands in for `ray start --head --port=P`: one process that names the head's address, as Ray's do
for a; do case $a in --port=*) p=${a#--port=} ;; esac; done
[ -n "$RAY_FAILS" ] && { echo "port $p is taken" >&2; exit 1; }
setsid python3 -c 'import time; time.sleep(60)' ray::head "127.0.0.1:$p" >/dev/null 2>&1 < /dev/null &
echo $! > head.pid
"""


def fake_ray(sb: Path):
    if not PID_NS:
        pytest.skip("needs a PID namespace (root, unshare): the old script's trap could end anyone's processes")
    (sb / "ck" / ".venv" / "bin").mkdir(parents=True)
    ray = sb / "ck" / ".venv" / "bin" / "ray"
    ray.write_text(FAKE_RAY)
    ray.chmod(0o755)


def in_pid_namespace(sb: Path, body: str) -> str:
    """`body` in a PID namespace of its own, beside a canary process naming 127.0.0.1:45678 (another head's
    client); after it, is the canary alive?"""
    outer = f"""python3 -c 'import time; time.sleep(60)' 127.0.0.1:45678 & canary=$!
sleep 0.5
{body}
sleep 4
echo "== after the wait"
kill -0 $canary 2>/dev/null && echo canary=alive
kill $canary 2>/dev/null; true"""
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", outer], cwd=sb / "ck",
                       env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


def sourcing(port_line: str, fails: bool, name: str = "inner.sh") -> str:
    """Shell lines: a script sourcing loopback_ray_head.sh under `port_line`; once it exits, is the canary alive
    (at once: a refusal starts nothing that could end it later), and the stand-in head (if it started) ended?"""
    return f"""cat > {name} <<'ZOO_EOF'
{port_line}
source scripts/loopback_ray_head.sh
echo sourced=$?
ZOO_EOF
RAY_FAILS={"1" if fails else ""} bash {name} 2>&1
kill -0 $canary 2>/dev/null && echo canary=alive
[ -f head.pid ] && {{ kill -0 $(cat head.pid) 2>/dev/null && echo head=alive || echo head=ended; }}"""


def source_head(sb: Path, port_line: str, fails=False):
    """One script sourcing loopback_ray_head.sh in a PID namespace: what it said, and the canary's and head's fate."""
    fake_ray(sb)
    return in_pid_namespace(sb, sourcing(port_line, fails))


REFUSED_PORTS = ["unset PORT", "PORT=", "PORT='4567 --block'", "PORT=abc"]


@pytest.fixture(scope="module")
def refusals() -> dict:
    """The refusals of loopback_ray_head.sh (each PORT that is no number, and a head that did not start), one after
    another in one PID namespace beside one canary (a namespace and its 4.5 s of waits per case cost 23 s): each
    case's words, with the canary checked right after it and once more after the namespace's final wait."""
    root = sandbox()
    try:
        fake_ray(root)
        cases = [(p, False) for p in REFUSED_PORTS] + [("PORT=45678", True)]  # someone else's head holds the port
        body = "\n".join(f"echo '== {i}'\n" + sourcing(p, fails, f"inner{i}.sh") for i, (p, fails) in
                         enumerate(cases))
        said = in_pid_namespace(root, body)
    finally:
        remove_sandbox(root)
    *parts, after = said.split("== ")[1:]  # each case's words, then the canary after the wait
    assert len(parts) == len(cases) and after.startswith("after the wait"), said
    return {case: part + after for case, part in zip(cases, parts)}


@pytest.mark.parametrize("port_line", REFUSED_PORTS)
def test_ray_head_refuses_a_port_that_is_not_a_number(refusals, port_line):
    said = refusals[(port_line, False)]
    assert said.count("canary=alive") == 2 and "sourced=2" in said and "PORT must be a port number" in said, said
    assert "head=" not in said, said  # no head started


@pytest.mark.slow  # over 5 s on a quiet 2-core machine: out of the fast lane
def test_ray_head_ends_its_own_head_and_not_a_port_that_shares_its_digits(sb):
    said = source_head(sb, "PORT=4567")  # 127.0.0.1:45678 is another head's
    assert "canary=alive" in said and "head=ended" in said and "sourced=0" in said, said


def test_ray_head_that_did_not_start_ends_nothing(refusals):
    said = refusals[("PORT=45678", True)]
    assert said.count("canary=alive") == 2 and "sourced=2" in said and "did not start" in said, said


# -- mps.sh --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [[], ["start"], ["start", ""], ["begin", "d"], ["start", "d", "more"]],
                         ids=["none", "no-dir", "empty-dir", "unknown-verb", "extra-word"])
def test_mps_refuses_a_mistake_in_one_line(sb, args):
    before = tree(sb)
    refused(*run(sb, "mps.sh", *args))
    assert tree(sb) == before


@pytest.mark.parametrize("verb", ["start", "env", "stop"])
def test_mps_keeps_a_folder_it_did_not_make(sb, verb):
    """A user's folder, a file, or a link to a folder: refused for every verb, nothing made, nothing removed."""
    (sb / "caller" / "mine").mkdir()
    (sb / "caller" / "mine" / "notes.txt").write_text("a user's\n")
    (sb / "caller" / "file").write_text("a user's\n")
    (sb / "caller" / "link").symlink_to(sb / "home")
    before = tree(sb)
    for d in ("mine", "file", "link", str(sb / "home")):
        rc, said = run(sb, "mps.sh", verb, d)
        refused(rc, said)
        assert "not a folder this script made" in said, said
        assert tree(sb) == before


def test_mps_without_the_driver_says_so_and_makes_nothing(sb):
    """No nvidia-cuda-mps-control (this machine, a driver without MPS): exit 3, one line, so a caller goes on without
    MPS; nothing made."""
    before = tree(sb)
    rc, said = run(sb, "mps.sh", "start", "new")
    assert rc == 3 and said == "mps.sh: no nvidia-cuda-mps-control on PATH: no MPS here", (rc, said)
    assert tree(sb) == before
