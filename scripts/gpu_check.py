"""The GPU check (docs/gpu.md, "A first GPU run: the checklist"; issue 44): on one H100 every step below within 8 minutes
start to end, each under its own time limit (a step that runs out is reported, not fatal), a one-line summary as each
step ends (step, exit, seconds, the headline figure), then OUT/report.md (every figure beside its prediction),
OUT/measured.json (the raw numbers), OUT/steps.tsv, OUT/logs/ (each command's output).

  scripts/gpu-check.sh [--out DIR] [--cpu]        (run from anywhere; ZOO_DATA_DIR as for zoo itself)

  1 torch        what torch sees: device, bf16 support, torch version
  2 predict      bench/bench_train.py --predict: the roofline's step times, eager and compiled, base and big
  2 bench-eager, bench-compiled   bench/bench_train.py --device cuda --graph, a few steps of base and big each on
                 news-length batches and Multi30k's, nn.Transformer beside zoo (eager), each also graphed
  3 learn-new, learn-old   the paper's base on the news pool as the CPU reference's runs (results/gpu-recipe-cpu2:
                 1000-token batches, bf16, seed 1), 300 steps each, new schedule (warmup 4000) and old (240)
                 side by side on the GPU; training NLL at equal steps against the CPU reference's curves
  4 trial, trial-other   the cpu profile's base on the GPU, 300 steps: precision auto, then the other precision
                 (skipped on a device without bf16: it would train fp32 again)
  5 shared, shared-status   table3_A's four smoke trials sharing the GPU (0.25 each), only where `import ray` works
  6 no-cuda      a GPU request with CUDA hidden exits 2 saying what torch sees
  8 stacked      the cpu profile's base, K = 1, 4, 16 seeds stacked in one process (zoo.train.stacked): tokens/s summed
  9 concurrent   the same base as 1, 2, 4 processes sharing the device: tokens/s summed, trials a minute; then
                 4 under CUDA MPS (scripts/mps.sh), where the driver offers it
  7 report       report.md and measured.json

--out DIR: where it writes (default: the checkout's results/gpu-check; a relative DIR is from the folder you run it
in). DIR must be a folder it can create or write; the runs go in DIR/work, a folder it marks as its own when it makes
it (work/.gitignore): it refuses a work/ it did not make, and removes nothing but its own runs there. --cpu: a
rehearsal on this machine's CPU: every step's code path on tiny shapes and few steps (the smoke profile's models; the
learning check a handful of steps, its comparison a rehearsal); its figures say nothing about a GPU. A GPU machine
staged with ../shared/gpu/stage.sh: `source .device/setup.sh` first (it puts `zoo` on PATH and sets ZOO_DATA_DIR).
"""
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import gpu_check_report as report

ROOT = Path(__file__).resolve().parents[1]  # the checkout: bench/, specs/, results/
TOTAL, REPORT_S = 480, 25  # seconds, start to end: no step starts past what is left of TOTAL (the report keeps REPORT_S)
# the --cpu rehearsal's budget: it proves each step's code path, not the device's time, and a busy 2-core machine
# (load ~14) spent 480 s before its last three steps
CPU_TOTAL = 900
OWN = "# made by scripts/gpu-check.sh for its runs; it removes its own runs here at its next run\n*\n"


class Refused(Exception):
    """A mistake of the caller's: one line, exit 2."""


@dataclass(frozen=True)
class Mode:
    """The sizes of one kind of run: on a GPU, or the --cpu rehearsal."""
    cpu: bool
    dev: str
    tiny: tuple
    bench_steps: int
    gpus: int
    share: tuple
    trial_profile: str
    trial_steps: int
    learn_profile: str
    learn_steps: int
    learn_log: int
    check_steps: int  # the roofline's self-check on the host CPU (none on a GPU machine: it ran past a minute there)
    sentences: tuple  # the trials' dev sentences: precision auto's, the other precision's


GPU = Mode(False, "cuda", (), 10, 1, ("--set", "resources.gpus=0.25"), "cpu", 300, "paper", 300, 20, 0, (64, 16))
# the rehearsal: each step's code path at the least that exercises it (a checkpoint, a logged step 1, an evaluation)
CPU = Mode(True, "cpu", ("--tiny",), 2, 0, ("--set", "train.steps=10", "--set", "eval.max_sentences=4"), "smoke", 10,
           "smoke", 4, 2, 1, (4, 4))


@dataclass
class Check:
    out: Path
    mode: Mode
    zoo: list
    py: str = sys.executable
    t0: float = field(default_factory=time.monotonic)

    @property
    def work(self) -> Path:
        return self.out / "work"

    def left(self) -> float:
        return self.total - REPORT_S - (time.monotonic() - self.t0)

    @property
    def total(self) -> int:
        return CPU_TOTAL if self.mode.cpu else TOTAL

    @functools.cached_property
    def ray(self) -> bool:
        return subprocess.run([self.py, "-c", "import ray"], capture_output=True).returncode == 0

    def results(self) -> report.Results:
        return report.Results(self.out, self.mode.cpu, ref=ROOT / report.REF)


@dataclass(frozen=True)
class Step:
    """One command under its own time limit. `made`: what it writes, relative to OUT (its files there, its runs in
    work/): removed before it runs, so a report never reads the last run's; nothing else is ever removed."""
    name: str
    limit: tuple  # seconds: on a GPU, on the --cpu rehearsal (late steps shrink to what is left of TOTAL)
    argv: Callable  # Check -> the command
    made: tuple = ()
    in_work: bool = False  # run from work/ (Ray puts the driver's folder on its workers' path; the checkout's zoo/
    # has no zoo.runner and would shadow the installed package on a staged GPU machine)
    stdout: str = ""  # a file in OUT for the command's output (its log keeps stderr)
    env: tuple = ()
    skip: Callable = lambda c: ""  # Check -> why it does not run here ("" runs it)
    beside_next: bool = False  # runs side by side with the step after it
    then: Callable = lambda c: ""  # Check -> why the whole check stops here (exit 2)


TORCH = """import json, sys, torch
cuda = torch.cuda.is_available()
if cuda:
    bf16, name = torch.cuda.is_bf16_supported(), torch.cuda.get_device_name()
else:
    try:
        from zoo.train import cpu_has_bf16
        bf16 = cpu_has_bf16()
    except Exception:
        bf16 = None
    name = 'cpu'
d = {'cuda': cuda, 'device': name, 'gpus': torch.cuda.device_count(), 'bf16': bf16, 'torch': torch.__version__,
     'cuda_version': torch.version.cuda, 'python': sys.version.split()[0], 'threads': torch.get_num_threads()}
json.dump(d, open(sys.argv[1], 'w'))
print(json.dumps(d))"""


def no_gpu(c):
    seen = report.load(c.out / "torch.json") or {}
    return "" if c.mode.cpu or seen.get("gpus") else \
        "torch sees no GPU here (logs/1-torch.log); --cpu rehearses the steps on the CPU"


def bench(c, *more):
    m = c.mode
    return [c.py, ROOT / "bench" / "bench_train.py", *more, *m.tiny, "--base-steps", m.bench_steps]


def learn(c, warmup, name):
    """The learning check: the CPU reference's runs (results/gpu-recipe-cpu2/commands.sh) on this device, training
    NLL every learn_log steps."""
    m = c.mode
    sets = {"data.dataset": "wmt_news_ende", "data.vocab_size": 16000, "train.batch_tokens": 1000,
            "train.steps": m.learn_steps, "train.precision": "bf16", "train.seed": 1, "train.log_every": m.learn_log,
            "train.eval_every": 300, "eval.max_sentences": 16, "eval.beam_size": 1, "resources.cpus": 1,
            "resources.gpus": m.gpus, "train.schedule.lr_scale": "1.0", "train.schedule.warmup_steps": warmup}
    return [*c.zoo, "train", "specs/base.yaml", "--profile", m.learn_profile,
            *(a for k, v in sets.items() for a in ("--set", f"{k}={v}")), "--out", c.work / name]


def one_precision(c):
    """Why the other precision's trial does not run: a device without bf16 trains fp32 whatever is asked (zoo's
    fallback), so it would repeat the auto trial ("" runs it; an unknown bf16 runs it)."""
    return "no bf16 on this device: the other precision would train fp32 again, as auto did" \
        if (report.load(c.out / "torch.json") or {}).get("bf16") is False else ""


def trial(c, precision, which, name):
    """which: 0 the first trial (precision auto), 1 the other precision's (fewer dev sentences)."""
    m = c.mode
    return [*c.zoo, "train", "base", "--profile", m.trial_profile, "--set", f"resources.gpus={m.gpus}",
            "--set", f"train.steps={m.trial_steps}", "--set", f"train.precision={precision}",
            "--set", f"eval.max_sentences={m.sentences[which]}", "--out", c.work / name]


def other_precision(c):
    """The precision auto did not choose (its tokens/s beside auto's)."""
    chose = ((report.load(c.work / "trial-auto" / "summary.json") or {}).get("hardware") or {}).get("compute_dtype")
    other = "fp32" if chose == "bf16" else "bf16"
    (c.work / "other-precision").write_text(other + "\n")
    return other


def side_by_side(c, what, out=None):
    out = out or {"stacked": "stacked.json", "shared": "concurrent.json"}[what]
    return [c.py, ROOT / "scripts" / "gpu_side_by_side.py", what, "--json", c.out / out,
            *(["--tiny"] if c.mode.cpu else [])]


def no_ray(c):
    return "" if c.ray else "no Ray here (import ray fails; ../shared/gpu/stage.sh --ray stages it)"


# The steps in order. A new step is one line here (its command, limits and what it makes), a headline and a
# report section in gpu_check_report.py.
STEPS = [
    Step("1-torch", (15, 30), lambda c: [c.py, "-c", TORCH, c.out / "torch.json"], made=("torch.json",), then=no_gpu),
    # the roofline's prediction, then the bench eager and compiled (base and big in one process each: a compiled
    # run that runs out of time still logs the models it finished)
    Step("2-predict", (40, 120), lambda c: [*bench(c, "--predict"), "--check-steps", c.mode.check_steps,
                                            "--json", c.out / "predict.json"], made=("predict.json",)),
    # news-length batches and Multi30k's, nn.Transformer beside zoo (eager), each zoo model also graphed
    # (train.cuda_graph on) and with model.residual_stream bf16 in the same process; compiled without the graph and without nn.Transformer (whose
    # whole-model compile never finished warming up on the H100), to keep the whole check within 8 minutes
    Step("2-bench-eager", (100, 120), lambda c: [*bench(c, "--device", c.mode.dev, "--graph", "--stream"),
                                                 "--json", c.out / "bench-eager.json"], made=("bench-eager.json",)),
    Step("2-bench-compiled", (180, 150), lambda c: [*bench(c, "--device", c.mode.dev, "--no-reference"),
                                                    *(["--one-corpus"] if c.mode.cpu else []),  # the same compile path
                                                    "--set", "train.compile=on", "--json", c.out / "bench-compiled.json"],
         made=("bench-compiled.json",)),
    # both schedules at once (one process each; small batches leave the GPU mostly idle)
    Step("3-learn-new", (50, 100), lambda c: learn(c, 4000, "learn-new"), made=("work/learn-new",), beside_next=True),
    Step("3-learn-old", (50, 100), lambda c: learn(c, 240, "learn-old"), made=("work/learn-old",)),
    # the small trial: the cpu profile's base on the GPU (--cpu: the smoke profile's), precision auto, then the other
    Step("4-trial", (40, 60), lambda c: trial(c, "auto", 0, "trial-auto"), made=("work/trial-auto",)),
    Step("4-trial-other", (35, 50), lambda c: trial(c, other_precision(c), 1, "trial-other"),
         made=("work/trial-other", "work/other-precision"), skip=one_precision),
    # four trials sharing the device, only with Ray
    Step("5-shared", (50, 120), lambda c: [*c.zoo, "run", "table3_A", "--profile", "smoke", *c.mode.share,
                                           "--set", "resources.cpus=1", "--storage", c.work / "runs-shared"],
         made=("work/runs-shared",), in_work=True, skip=no_ray),
    Step("5-shared-status", (15, 20), lambda c: [*c.zoo, "status", "--json", "--runs", c.work / "runs-shared"],
         made=("shared-status.json",), stdout="shared-status.json", skip=no_ray),
    # a GPU request where torch sees no CUDA exits 2 (CUDA hidden from this one command)
    Step("6-no-cuda", (15, 40), lambda c: [*c.zoo, "train", "base", "--profile", "smoke", "--set", "resources.gpus=1",
                                           "--out", c.work / "no-cuda"],
         made=("work/no-cuda",), env=(("CUDA_VISIBLE_DEVICES", ""),)),
    # seeds side by side (issue 52): K = 1, 4, 16 stacked in one process (eager, graphed, graphed and packed), then 1, 2, 4
    # processes sharing the device; each figure beside the roofline's prediction (expected on an H100: about 60 s and
    # 55 s; the first 25 s before the graphed and packed stacks)
    Step("8-stacked", (120, 150), lambda c: side_by_side(c, "stacked"), made=("stacked.json",)),
    Step("9-concurrent", (75, 150), lambda c: [*side_by_side(c, "shared"), "--work", c.work, "--zoo", *c.zoo],
         made=("concurrent.json", *(f"work/shared-{p}-{i}" for p in (1, 2, 4) for i in range(p)))),
    # the four processes again under CUDA MPS (scripts/mps.sh), where the driver offers it (a row says when not)
    Step("9-concurrent-mps", (40, 60), lambda c: [*side_by_side(c, "shared", "concurrent-mps.json"), "--work", c.work,
                                                  "--mps", c.work / "mps", "--zoo", *c.zoo],
         made=("concurrent-mps.json", "work/mps", *(f"work/shared-mps-{p}-{i}" for p in (2, 4) for i in range(p)))),
]


# -- where it writes: only a folder it can write, and in work/ only what it made ------------------------------
def out_folder(arg: str) -> Path:
    """OUT from --out (relative: from the caller's folder), made if need be, with work/ marked as the check's own."""
    if not arg:
        raise Refused("--out needs a folder (--out DIR)")
    out = Path(os.path.abspath(arg))
    if out.exists() and not out.is_dir():
        raise Refused(f"--out {arg}: {out} is not a folder; give a folder it may create or write")
    work = out / "work"
    if (out / "logs").is_symlink():
        raise Refused(f"--out {arg}: {out / 'logs'} is a link; its logs go in a folder of its own there")
    if work.is_symlink() or (work.exists() and not (work.is_dir() and owned(work))):
        raise Refused(f"--out {arg}: {work} is not a folder this check made (no {work / '.gitignore'} of its own); "
                      "move it or give another --out")
    try:
        for d in (out, out / "logs", work):
            d.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=d).close()  # writable, by whoever runs it
    except OSError as e:
        raise Refused(f"--out {arg}: cannot write in {e.filename or out} ({e.strerror or e})")
    if not owned(work):
        (work / ".gitignore").write_text(OWN)  # the runs themselves (checkpoints): never committed
    return out


def owned(work: Path) -> bool:
    try:
        return (work / ".gitignore").read_text() == OWN
    except OSError:
        return False


def remove_made(c: Check, step: Step):
    for rel in step.made:
        p = c.out / rel
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir() and rel.startswith("work/"):  # a run of its own, in the folder it marked
            shutil.rmtree(p)


def fresh(p: Path):
    """A file of its own opened to write: a link there is replaced, never the file it points to."""
    if p.is_symlink():
        p.unlink()
    return open(p, "w")


def log_file(c: Check, name: str):
    return fresh(c.out / "logs" / name)


# -- running the steps ---------------------------------------------------------------------------------------------
def record(c: Check, name, status, seconds, limit):
    with open(c.out / "steps.tsv", "a") as f:  # step, exit status (or skipped: why), seconds, limit: the report reads it
        f.write(f"{name}\t{status}\t{seconds}\t{limit}\n")


@dataclass
class Running:
    step: Step
    proc: subprocess.Popen
    limit: int
    files: list
    t0: float = field(default_factory=time.monotonic)
    killed: str = ""  # "TERM" once its time is up, "KILL" 5 s later


def start(c: Check, s: Step):
    remove_made(c, s)  # run or skipped, the report never reads the last run's
    with log_file(c, f"{s.name}.log") as log:
        why = s.skip(c)
        limit = min(s.limit[c.mode.cpu], int(c.left()))
        if not why and limit < 5:
            why = f"out of the {c.total}-second budget"
        if why:
            log.write(f"skipped: {why}\n")
            record(c, s.name, f"skipped: {why}", 0, 0)
            print(f"[{s.name}] skipped: {why}", flush=True)
            return None
    argv = [str(a) for a in s.argv(c)]
    with open(c.out / "logs" / "all.log", "a") as f:
        f.write(f"== {s.name} (limit {limit} s): {' '.join(argv)}\n")
    log = log_file(c, f"{s.name}.log")
    files = [log] + ([fresh(c.out / s.stdout)] if s.stdout else [])
    proc = subprocess.Popen(argv, cwd=c.work if s.in_work else ROOT, env={**os.environ, **dict(s.env)},
                            stdin=subprocess.DEVNULL, stdout=files[-1], stderr=log, start_new_session=True)
    return Running(s, proc, limit, files)


def signal_group(r: Running, sig):
    try:
        os.killpg(r.proc.pid, sig)  # the step's own process group (start_new_session), as `timeout` does
    except ProcessLookupError:
        pass


def wait(c: Check, running: list):
    """Waits for the steps side by side, ending each that runs past its limit (TERM, then KILL 5 s later)."""
    try:
        while running:
            for r in list(running):
                age = time.monotonic() - r.t0
                if r.proc.poll() is not None:
                    running.remove(r)
                    finish(c, r)
                elif age > r.limit + 5 and r.killed == "TERM":
                    r.killed = "KILL"
                    signal_group(r, signal.SIGKILL)
                elif age > r.limit and not r.killed:
                    r.killed = "TERM"
                    signal_group(r, signal.SIGTERM)
            time.sleep(0.1)
    finally:  # interrupted: end what it started, nothing else
        for r in running:
            signal_group(r, signal.SIGKILL)


def run_steps(c: Check, steps: list) -> str:
    """Runs the steps in order (side by side where one says so); returns why the check stops early, or ""."""
    group = []
    for s in steps:
        r = start(c, s)
        group += [r] if r else []
        if s.beside_next:
            continue
        wait(c, group)
        group = []
        if why := s.then(c):
            return why
    return ""


def finish(c: Check, r: Running):
    for f in r.files:
        f.close()
    rc = {"TERM": 124, "KILL": 137}.get(r.killed, r.proc.returncode)  # as `timeout` reports it
    secs = round(time.monotonic() - r.t0)
    how = f"TIMED OUT (exit {rc})" if r.killed else f"exit {rc}"
    record(c, r.step.name, rc, secs, r.limit)  # the headline reads its row
    print(f"[{r.step.name}] {how}, {secs} s (limit {r.limit} s): {report.headline(c.results(), r.step.name)}", flush=True)


def run_report(c: Check) -> int:
    """Step 7, in this process: report.md and measured.json, its output in logs/7-report.log."""
    t0 = time.monotonic()
    try:
        lines, rc = report.write(c.results()), 0
    except Exception:
        lines, rc = traceback.format_exc().splitlines(), 1
    with log_file(c, "7-report.log") as f:
        f.write("\n".join(lines) + "\n")
    secs = round(time.monotonic() - t0)
    record(c, "7-report", rc, secs, REPORT_S)
    print(f"[7-report] exit {rc}, {secs} s: {lines[-1] if lines else ''}", flush=True)
    return rc


def zoo_command(py: str) -> list:
    """The venv's zoo in a checkout; on a staged GPU machine the one setup.sh puts on PATH (`python3 -m zoo.cli`
    from the checkout would import its zoo/, which lacks zoo.runner: ../shared/gpu/README.md)."""
    venv = ROOT / ".venv" / "bin" / "zoo"
    if not os.environ.get("PYTHON") and os.access(venv, os.X_OK):
        return [str(venv)]
    found = shutil.which("zoo")
    return [os.path.abspath(found)] if found else [py, "-m", "zoo.cli"]  # absolute: step 5 runs from work/


def parse(argv: list) -> tuple:
    """(OUT as given, --cpu); OUT None for --help; a mistake raises Refused."""
    out, cpu, args = str(ROOT / "results" / "gpu-check"), False, list(argv)
    while args:
        a = args.pop(0)
        if a == "--out":
            if not args:
                raise Refused("--out needs a folder (--out DIR)")
            out = args.pop(0)
        elif a.startswith("--out="):
            out = a[len("--out="):]
        elif a == "--cpu":
            cpu = True
        elif a in ("-h", "--help"):
            return None, cpu
        else:
            raise Refused(f"unknown argument {a!r} (--out DIR, --cpu, --help)")
    return out, cpu


def main(argv=None) -> int:
    try:
        arg, cpu = parse(sys.argv[1:] if argv is None else argv)
        if arg is None:
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--help | head` ends quietly
            print(__doc__.strip())
            return 0
        out = out_folder(arg)
    except Refused as e:
        print(f"gpu-check: {e}", file=sys.stderr)
        return 2
    data = os.environ.get("ZOO_DATA_DIR") or str(ROOT.parent / "shared" / "data")
    os.environ.update(ZOO_DATA_DIR=os.path.abspath(data), PYTHONUNBUFFERED="1")  # as for zoo: from the caller's folder
    c = Check(out, CPU if cpu else GPU, zoo_command(sys.executable))
    for f in (fresh(out / "steps.tsv"), log_file(c, "all.log")):
        f.close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ended: its steps' processes go with it (wait's finally)
    print(f"gpu-check: {'CPU rehearsal' if cpu else 'GPU check'} into {out}, {c.total} s at most; zoo: {' '.join(c.zoo)}",
          flush=True)
    if why := run_steps(c, STEPS):
        print(f"gpu-check: {why}", file=sys.stderr)
        return 2
    rc = run_report(c)
    print(f"gpu-check: {round(time.monotonic() - c.t0)} s in all; {out / 'report.md'}")
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
