"""`zoo run`: one Ray Tune experiment for the spec, one trial per variant, every result in the store. Several specs
are one experiment too, their trials side by side as the resources allow (one after another only where a spec
stops trials early with a scheduler, or two specs name a trial alike: `together`).

Order of work: check what the user gave (spec, variants, storage, data) before starting anything;
skip the variants whose resolved config already finished (unless --rerun); start an embedded
loopback Ray or join a cluster; restore the spec's interrupted experiment or start a new one; run it
with the live table; say where the results are.

Resume works at two levels. Tune's experiment state (restored with `Tuner.restore`) knows which
trials ended; each trial's directory `STORAGE/<spec folder>/<trial>-<profile>/` holds zoo.train's
checkpoints, so an unfinished trial continues from its last checkpoint whoever restarts it. The spec
folder is named by what the spec is, not by its file name alone (`spec_folder`), and no trial takes a
folder that holds another trial's work (`trial_folders`).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import SIGTERMS, Interrupted, UserError
from zoo.paths import inside, inside_uri
from zoo.result import TrialStatus
from zoo.runner.fits import check_fits, concurrency
from zoo.runner.folders import FRESH, spec_folder, stale, trial_folders, wipe
from zoo.runner.local import check_shared
from zoo.runner.stacking import STACK_DEFAULT, STACK_MODES, stacked, stacks
from zoo.runner.store import DEFAULT_STORAGE, Store, default_path
from zoo.runner.storefile import refuse_target
from zoo.runner.trackers import logger_callbacks
from zoo.spec import auto_profile, scheduler, variants_of


class Storage:
    """Where trials write (a filesystem path or a URI) and where the results store lives."""

    def __init__(self, storage: str | None):
        self.given = storage
        self.uri = storage if storage and "://" in storage and not storage.startswith("file://") else None
        if self.uri:
            self.root = self.uri.rstrip("/")
            self.local = DEFAULT_STORAGE.resolve()  # the store and trial scratch stay on this machine
        else:
            path = storage.removeprefix("file://") if storage else DEFAULT_STORAGE
            self.local = Path(path).expanduser().resolve()
            self.root = str(self.local)
        self.store_path = default_path(self.local)
        # where trials write on the node that runs them: the storage itself, or for a URI a local copy
        self.scratch_root = Path.home() / ".cache" / "zoo" / "runs" if self.uri else self.local

    def make(self) -> None:
        """Create the local folder; a path that cannot be one is a user error, not a traceback."""
        try:
            self.local.mkdir(parents=True, exist_ok=True)
            if not os.access(self.local, os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
        except OSError as e:
            raise UserError(f"--storage {self.given or 'runs'}: cannot use {self.local} as the folder for trials "
                            f"and results ({e.strerror or e}); give --storage a writable folder (it is "
                            "created if missing)") from None

    # Names were checked at validation (zoo.paths.SAFE_NAME); these checks make sure anyway that a run
    # folder lies inside the storage before anything writes or deletes there.
    # `tag`: a trial whose own folder holds another trial's work takes `<trial>-<profile>-<tag>` (trial_folders)
    def run_dir(self, stem: str, variant: str, profile: str, tag: str = "") -> str:
        leaf = f"{variant}-{profile}" + (f"-{tag}" if tag else "")
        if self.uri:
            return inside_uri(self.root, stem, leaf)
        return str(inside(self.local, stem, leaf))

    def scratch_dir(self, stem: str, variant: str, profile: str, tag: str = "") -> str:
        """The trial's working directory on the node that runs it."""
        if self.uri:  # a node-local copy, mirrored to the URI (runner.trial.Mirror)
            return str(inside(self.scratch_root, stem, f"{variant}-{profile}" + (f"-{tag}" if tag else "")))
        return self.run_dir(stem, variant, profile, tag)


def run(spec: str | list[str], profile: str = "auto", variants: list[str] | None = None,
        sets: list[str] | None = None, address: str | None = None, storage: str | None = None, rerun: bool = False,
        max_concurrent: int | None = None, data_dir: str | None = None, seeds: list[int] | None = None,
        loggers: list[str] | None = None, analysis: str | None = None, stack: str = STACK_DEFAULT,
        stream=sys.stdout) -> int:
    """Run the spec's variants (several specs: each one's in turn, one Ray for all); return the exit code (0 all
    finished, 1 some failed, 130 interrupted, 143 by SIGTERM). `stack`: whether trials that differ only in
    shape-keeping values train side by side (runner.stacking)."""
    from zoo.runner.store import open_store
    specs = [spec] if isinstance(spec, str) else list(spec)
    if stack not in STACK_MODES:
        raise UserError(f"stack: {stack!r} is not one of {', '.join(STACK_MODES)} (runner.stacking)")
    address = address or os.environ.get("RAY_ADDRESS") or None  # as `ray` itself: the variable names the cluster
    # Trials run in their own folders, maybe on other nodes: hand them absolute data paths.
    data_dir = os.path.abspath(os.path.expanduser(data_dir)) if data_dir else None
    if os.environ.get("ZOO_DATA_DIR"):
        os.environ["ZOO_DATA_DIR"] = os.path.abspath(os.path.expanduser(os.environ["ZOO_DATA_DIR"]))
    if len({spec_in_store(s) for s in specs}) < len(specs):  # one spec twice would train its trials twice
        raise UserError(f"a spec is named twice ({', '.join(specs)}): name each spec once")
    chosen = variants_of(specs, variants)  # several specs: each runs the --variant names it has
    specs = list(chosen)
    for s in specs:  # every spec's mistakes first
        resolve_trials(s, chosen[s], "paper" if profile == "auto" else profile, sets, seeds, data_dir)
    callbacks = logger_callbacks(loggers)  # a logger that is not installed: said before anything starts
    asha = [scheduler(s) for s in specs]  # early stopping, validated before anything starts
    if address is not None and storage is None:
        raise UserError("--address joins a cluster whose nodes all write results, so --storage must say where: "
                        "a path that every node mounts at the same place (NFS, Lustre, ...) or a cloud URI "
                        "such as s3://bucket/zoo-runs")
    st = Storage(storage)
    refuse_target(st.store_path, "--storage")  # a compressed store, a store's path: refused before the lock
    st.make()
    from zoo.runner.local import RunLock
    lock = RunLock(st.local).acquire()  # one run per storage, for the whole run
    store = open_store(st.store_path, write=True)
    try:
        sweeps = [Sweep(s, spec_in_store(s), st, store, rerun, max_concurrent, data_dir, stream, callbacks, a,
                        analysis, stack, chosen[s]) for s, a in zip(specs, asha)]
        return _run(sweeps, profile, sets, seeds, address)
    except Exception as e:  # Tune wraps what its callbacks raise (the store's writes) in a TuneError
        if not is_disk_full(e):
            raise
        why = f"no space left on device under {st.local}"
        for s in specs:
            _fail_unfinished(store, spec_in_store(s), why)
        raise UserError(f"{why}: the run stopped and its unfinished trials are marked failed. Free some "
                        "space (old checkpoints under the trial folders, or another --storage) and run the "
                        "same command again: it resumes from the last checkpoints.") from None
    finally:
        lock.release()


@dataclass
class Sweep:
    """One `zoo run`'s fixed context, handed down instead of a dozen loose parameters."""
    spec: str  # the spec file as given
    spec_key: str  # its key in the store
    st: Storage
    store: Store
    rerun: bool
    max_concurrent: int | None
    data_dir: str | None
    stream: object
    loggers: list = field(default_factory=list)  # Ray Tune logger callbacks (W&B, MLflow) the user named
    asha: object = None  # zoo.spec.Asha: stop trials that trail at the same step
    analysis: str | None = None  # the hash of the analysis plan the trials run under (zoo.evidence.analysis), if any
    stack: str = STACK_DEFAULT  # --stack: auto, on or off (runner.stacking)
    variants: list[str] | None = None  # the --variant names this spec has (None: all its variants)
    groups: list = field(default_factory=list)  # the trials to run, in stacks (one trial: a stack of one)

    def plan(self, profile: str, sets, seeds) -> tuple[list, list]:
        """(every resolved trial config, those not finished yet with this config)."""
        cfgs = resolve_trials(self.spec, self.variants, profile, sets, seeds, self.data_dir)
        return cfgs, _todo(self.store, self.spec_key, cfgs, self.rerun)


def _run(sweeps: list[Sweep], profile: str, sets, seeds, address: str | None) -> int:
    if address is None:
        profile = auto_profile(profile)
    plans: list = [None] * len(sweeps)  # each spec's (every trial, those to run), once the profile is known
    if profile != "auto":  # known before Ray starts: nothing to do means no Ray at all
        plans = [sw.plan(profile, sets, seeds) for sw in sweeps]
        if not any(todo for _, todo in plans):
            return max(_nothing_to_do(cfgs, sw.st, sw.stream) for sw, (cfgs, _) in zip(sweeps, plans))
        if address is None:
            for cfgs, _ in plans:
                _check_data(cfgs, sweeps[0].data_dir)

    from zoo.runner import local
    local_ray = None
    try:
        if address is None:
            local_ray = local.LocalRay(sweeps[0].st.local)
            local_ray.start()
        else:
            local.connect(address)
            check_shared(sweeps[0].st.local, sweeps[0].st.uri, sweeps[0].st.given or "runs", address)
        if profile == "auto":  # a cluster's: gpu when its nodes have GPUs
            profile = auto_profile(profile, gpus=local.cluster_gpus())
            plans = [sw.plan(profile, sets, seeds) for sw in sweeps]
        nodes = local.node_resources()
        given = sweeps[0].max_concurrent  # --max-concurrent, the run's
        for sw, (_, todo) in zip(sweeps, plans):  # every spec checked before the first trial
            check_fits(todo, nodes, sw.spec)
            sw.max_concurrent = concurrency(todo, nodes, given)
            sw.groups = stacks(todo, sw.stack, nodes, scheduled=sw.asha is not None)
        parts = [(sw, cfgs, todo) for sw, (cfgs, todo) in zip(sweeps, plans) if todo]
        codes = [_nothing_to_do(cfgs, sw.st, sw.stream) for sw, (cfgs, todo) in zip(sweeps, plans) if not todo]
        why = apart(parts)
        if why and len(parts) > 1:
            print(f"the {len(parts)} specs run one after another: {why}", file=sweeps[0].stream, flush=True)
        for group in ([[p] for p in parts] if why else [parts]):
            every = [c for _, _, todo in group for c in todo]
            codes.append(_sweep(group, local_ray, concurrency(every, nodes, given) if len(group) > 1
                                else group[0][0].max_concurrent))
            if codes[-1] in (130, 143):  # interrupted: the specs after it wait for the same command again
                return codes[-1]
        return max(codes)
    finally:
        if local_ray:
            local_ray.stop()
        else:
            import ray
            ray.shutdown()


def apart(parts: list) -> str:
    """Why the specs of a run cannot be one experiment ("" when they can): a scheduler (ASHA) compares the
    trials of its own spec, and the live table and Tune name a trial by its name alone."""
    if len(parts) < 2:
        return ""
    if any(sw.asha is not None for sw, _, _ in parts):
        return "a spec stops trials early with a scheduler (sweep.scheduler), which compares its own trials"
    names = [c.trial for _, _, todo in parts for c in todo]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        return f"two specs name a trial alike ({', '.join(twice[:3])})"
    return ""


def _sweep(parts: list, local_ray, max_concurrent: int | None) -> int:
    """Register the trials to run in the store, then run them as one Tune experiment (restored when an earlier
    driver was killed), with the live table; return the exit code. parts: (Sweep, every trial, those to run) of
    each spec in it: one, or several whose trials run side by side."""
    from zoo.runner import progress
    sw = parts[0][0]  # what the specs share: the storage, the store, the stream, --rerun, the data, the loggers
    st = sw.st
    profile = parts[0][1][0].profile  # the profile's name (a profile file's stem), as it names folders
    folders, plans = {}, []
    for p, cfgs, todo in parts:
        mine = trial_folders(p, cfgs, profile)  # trial: (its folder in the storage, its working folder)
        plans.append([[c.trial, c.config_hash(), c.resources.model_dump(), mine[c.trial][1]] for c in cfgs]
                     + [p.data_dir] + [[c.trial for c in g] for g in p.groups if len(g) > 1])  # stacks: a grid of their own
        folders[p.spec] = {c.trial: mine[c.trial] for c in todo}
    stem = Path(sw.spec).stem + (f"-and-{len(parts) - 1}-more" if len(parts) > 1 else "")
    plan = json.dumps(plans[0] if len(parts) == 1 else plans, sort_keys=True)
    name = f"{stem}-{profile}-{hashlib.sha256(plan.encode()).hexdigest()[:8]}"
    exp_path = f"{st.root}/tune/{name}"
    run_dirs, spec_of = {}, {}
    for p, cfgs, todo in parts:
        mine = {v: run_dir for v, (run_dir, _) in folders[p.spec].items()}
        run_dirs |= mine
        spec_of |= dict.fromkeys(mine, p.spec_key)
        print(f"zoo run {p.spec}: {len(todo)} of {len(cfgs)} trials to run ({', '.join(mine)})\n"
              f"profile {profile}: {cfgs[0].profile_description or 'the spec exactly as written'}\n"  # a file's too
              f"results {st.store_path}  trials {st.root}/{spec_folder(p.spec)}/", file=sw.stream, flush=True)
        if stacks_ := [g for g in p.groups if len(g) > 1]:
            print(f"side by side (--stack {p.stack}): {sum(map(len, stacks_))} trials as {len(stacks_)} stacked "
                  f"trials, K = {', '.join(str(len(g)) for g in stacks_)}", file=sw.stream, flush=True)
        changed = [c.trial for c in todo if (row := p.store.get(p.spec_key, c.trial, profile)) and row.finished
                   and row.config_hash != c.config_hash()]
        if changed:  # their finished results are about to be replaced: say so before it happens
            print(f"{len(changed)} finished trials have another config now (the spec, profile or --set changed) and "
                  f"start afresh, replacing their results: {', '.join(changed)}", file=sw.stream, flush=True)
        _register(p, todo, profile, folders[p.spec], exp_path)
    if len(parts) > 1:
        print(f"the {len(parts)} specs' {len(run_dirs)} trials run side by side in one experiment, as the "
              "resources allow", file=sw.stream, flush=True)
    tuner = _tuner(parts, profile, name, exp_path, folders, max_concurrent)
    live = progress.Live(sw.store, spec_of, profile, run_dirs, exp_path,
                         on_tick=local_ray.refresh if local_ray else None, stream=sw.stream)
    live.scheduled = sw.asha is not None
    progress.LIVE = live
    interrupted = False
    try:
        for result in tuner.fit():
            live.reconcile(result)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (zoo.errors.on_sigterm records it in SIGTERMS)
        interrupted = True
    finally:
        progress.LIVE = None
    if live.tty:
        live.draw()
    code = _summary(live, sw.store, profile, st, sw.stream)
    if (code == 130 or interrupted) and not SIGTERMS:  # Ctrl-C: the trials are resumable now; the caller stops too (Ray, the lock:
        raise Interrupted             # released on the way out), as pytest or a notebook expects of Ctrl-C
    return 143 if code == 130 else code  # Ray Tune may re-raise the interrupt bare


def _register(sw: Sweep, todo: list, profile: str, folders: dict, exp_path: str) -> None:
    """Each trial's store row, pending; a stale or --rerun trial's folder and row start afresh.
    folders: trial -> (its folder in the storage, its working folder), as `trial_folders` chose them."""
    st = sw.st
    run_dirs = {v: run_dir for v, (run_dir, _) in folders.items()}
    for c in todo:
        scratch = folders[c.trial][1]
        if sw.rerun or stale(sw.store.get(sw.spec_key, c.trial, profile), scratch, c):
            wipe(scratch, st.scratch_root, run_dirs[c.trial] if st.uri else None, st.root)
            sw.store.clear_points(sw.spec_key, c.trial, profile)
            sw.store.upsert(sw.spec_key, c.trial, profile, **dict.fromkeys(FRESH))
        sw.store.upsert(sw.spec_key, c.trial, profile, variant=c.variant, config_hash=c.config_hash(),
                        config=c.model_dump(mode="json"),
                        paper_table=c.paper.table, paper_group=c.paper.group, paper_row=c.paper.row,
                        status="pending", steps=c.train.steps, run_dir=run_dirs[c.trial], experiment=exp_path,
                        error=None, resumed_from=None, analysis=sw.analysis)


def _tuner(parts: list, profile: str, name: str, exp_path: str, folders: dict, max_concurrent: int | None):
    """The Tune experiment: restored when a killed driver left one (what finished stays finished),
    else a new one with one grid point per trial (or stack), every spec's of `parts`."""
    from ray import tune
    from zoo.runner import progress, trial
    sw, todo = parts[0][0], [c for _, _, t in parts for c in t]  # what the specs share (see _sweep)
    st = sw.st
    trainable = tune.with_resources(trial.trainable, trial.resources)
    if not sw.rerun and tune.Tuner.can_restore(exp_path):
        try:
            tuner = tune.Tuner.restore(exp_path, trainable, resume_unfinished=True, resume_errored=True)
            print(f"resuming the experiment {exp_path} (what finished stays finished)", file=sw.stream, flush=True)
            return tuner
        except Exception as e:  # a damaged experiment state: the trials' own checkpoints still resume them
            print(f"cannot restore {exp_path} ({type(e).__name__}: {e}); starting it afresh", file=sw.stream)
    if not st.uri and Path(exp_path).exists():
        shutil.rmtree(inside(st.local, "tune", name))  # a finished or --rerun experiment: Tune bookkeeping only
    # Tune's param_space takes plain values: each trial's Setup as a dict (runner.trial reads it back)
    trials = []
    for p, _, mine in parts:
        setups = {c.trial: trial.Setup(trial=c.trial, config=c.model_dump(mode="json"), data_dir=p.data_dir,
                                       spec_file=os.path.abspath(p.spec), out_dir=folders[p.spec][c.trial][1],
                                       mirror=folders[p.spec][c.trial][0] if st.uri else None,
                                       train_storage=f"{st.root}/tune/{name}-train") for c in mine}
        trials += [stacked([setups[c.trial] for c in g]).model_dump(mode="json") for g in p.groups or [[c] for c in mine]]
    _no_callback_census()
    # reuse_actors: a trial slot's process trains its next trial too (same resources), rather than a new Ray worker
    # importing torch, Ray Tune and sacreBLEU's tokenizers again (and on a GPU making the device's context). A trial
    # starts from its own seed whatever ran in the process before it (runner.trial.trainable forgets compiled
    # graphs); results are bit-identical.
    return tune.Tuner(
        trainable, param_space={"trial": tune.grid_search(trials)},
        tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent, reuse_actors=sw.asha is None,  # ASHA stops threads mid-run: a reset can fail
                                    scheduler=_scheduler(sw, todo),
                                    trial_name_creator=progress.trial_name,
                                    trial_dirname_creator=progress.trial_name),
        run_config=tune.RunConfig(
            name=name, storage_path=f"{st.root}/tune", verbose=0, callbacks=[progress.Forward(), *sw.loggers],
            failure_config=tune.FailureConfig(max_failures=max(c.resources.max_retries for c in todo))))


def _no_callback_census() -> None:
    """Ray Tune's usage telemetry counts the callbacks a run is given (tune.run: air_usage.tag_callbacks) by
    importing the MLflow, W&B, Comet and Aim integrations, mlflow and wandb themselves: 2-4 s of every `zoo run`
    on 2 cores, whether or not a tracker is used or usage stats are on. The count feeds only that telemetry, so
    it is skipped: what Tune runs and logs is unchanged."""
    from ray.air._internal import usage
    usage.tag_callbacks = lambda callbacks: False


def _scheduler(sw: Sweep, todo: list):
    """Ray Tune's ASHA from the spec's `sweep.scheduler.asha`, on the steps each trial reports."""
    if sw.asha is None:
        return None
    from ray.tune.schedulers import ASHAScheduler
    # only evaluation steps carry dev_ppl; ASHA decides on those and lets the others pass
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"
    a = sw.asha
    return ASHAScheduler(time_attr="step", metric=a.metric, mode=a.mode, grace_period=a.grace_steps,
                         reduction_factor=a.reduction_factor, max_t=max(c.train.steps for c in todo))


def is_disk_full(e: BaseException) -> bool:
    """Whether `e` says the disk is full (zoo.errors.disk_full builds the error to raise): ENOSPC
    from the OS, or SQLite's word for it, also inside the TuneError that wraps a callback's."""
    text = str(e)
    return getattr(e, "errno", None) == errno.ENOSPC or "database or disk is full" in text \
        or "No space left on device" in text


def _fail_unfinished(store, spec_key: str, why: str) -> None:
    """The driver cannot go on: no row of this spec may stay 'running' behind it (best effort: the
    store may sit on the full disk too)."""
    try:
        for t in store.trials(spec=spec_key):
            if t.status in (TrialStatus.running, TrialStatus.pending):
                store.upsert(spec_key, t.trial, t.profile, status="failed", error=why,
                             finished_at=time.time())
    except (OSError, sqlite3.Error):
        pass


def _summary(live, store, profile, st: Storage, stream) -> int:
    rows = {v: store.get(live.spec_of[v], v, profile) for v in live.rows}
    states = {v: rows[v].status.value for v in live.rows}
    unfinished = [v for v, s in states.items() if s in ("pending", "running")]
    for v in unfinished:  # stopped by Ctrl-C (or never started): resumable, not running
        store.upsert(live.spec_of[v], v, profile, status="pending")
    if unfinished:  # Ctrl-C or SIGTERM: one line, no table of counts
        print(_interrupted(states, unfinished), file=stream, flush=True)
        return 130
    failed = [v for v, s in states.items() if s == "failed"]
    done = [v for v, s in states.items() if s == "finished"]
    short = [v for v in done if (t := rows[v]).result and t.steps and t.result.steps_done < t.steps]  # a time limit
    done = [v for v in done if v not in short]
    stopped = [v for v, s in states.items() if s == "stopped"]
    early = f", {len(stopped)} stopped early" if stopped else ""
    cut = f", {len(short)} cut short by train.time_limit_minutes (no Δ, no verdict)" if short else ""
    print(f"\n{len(done)} finished{cut}, {len(failed)} failed, {len(unfinished)} not finished{early} "
          f"(of {len(states)} run now)", file=stream)
    for v in short:
        print(f"  {v} cut short: step {rows[v].result.steps_done} of {rows[v].steps}", file=stream)
    for v in failed:
        print(f"  {v} failed: {rows[v].error}", file=stream)
    runs = "" if st.store_path == default_path().resolve() else f" --runs {st.store_path}"
    print(f"results: {st.store_path} (trial folders under {st.root}/)\n"
          f"see them: zoo status{runs}   tables: zoo report{runs}", file=stream)
    return 1 if failed else 0


def _interrupted(states: dict, unfinished: list) -> str:
    """The one line an interrupted `zoo run` ends with: what finished, what resumes, the command that resumes it."""
    def some(vs):
        return f" ({', '.join(vs[:6])}{f', and {len(vs) - 6} more' if len(vs) > 6 else ''})" if vs else ""
    said = [f"{len(vs)} {what}{some(vs)}" for what, s in (("finished", "finished"), ("failed", "failed"),
                                                          ("stopped early", "stopped"))
            if (vs := [v for v, x in states.items() if x == s]) or s == "finished"]
    said.append(f"{len(unfinished)} to resume from their last checkpoints{some(unfinished)}")
    args = sys.argv[1:]  # the command line, when this is the zoo command (not Python calling run())
    again = f": {shlex.join(['zoo', *args])}" \
        if args[:1] == ["run"] and Path(sys.argv[0]).name in ("zoo", "cli.py", "__main__.py") else ""
    how = " by SIGTERM" if SIGTERMS else ""
    return f"\nzoo run interrupted{how}: {', '.join(said)}; run the same command again to resume{again}"


def _nothing_to_do(cfgs, st: Storage, stream) -> int:
    runs = "" if st.store_path == default_path().resolve() else f" --runs {st.store_path}"
    print(f"nothing to run: all {len(cfgs)} trials ({', '.join(c.trial for c in cfgs)}) already finished "
          f"with this config (--rerun runs them again)\nresults: {st.store_path}\n"
          f"see them: zoo status{runs}   tables: zoo report{runs}", file=stream)
    return 0


# -- checks before anything starts ----------------------------------------------------------------

def resolve_trials(spec, variants, profile, sets, seeds, data_dir=None):
    from zoo.spec import resolve
    # data_dir: a profile's `prefer:` looks there; an unknown variant is the spec module's error, with a did-you-mean
    return resolve(spec, list(variants) if variants else None, profile, sets, seeds, data_dir)


def spec_in_store(spec: str) -> str:
    """The spec as the store names it: relative to the working folder when inside it, else absolute,
    so `specs/x.yaml`, `./specs/x.yaml` and its absolute path are one spec."""
    path = os.path.abspath(spec)
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _todo(store, spec_key, cfgs, rerun):
    if rerun:
        return cfgs
    out = []
    for c in cfgs:
        row = store.get(spec_key, c.trial, c.profile)
        # stopped early by a scheduler is an outcome too: a rerun does not train it on
        if not (row and row.status in (TrialStatus.finished, TrialStatus.stopped) and row.config_hash == c.config_hash()):
            out.append(c)
    return out


def _check_data(cfgs, data_dir) -> None:
    """Missing corpora are a user error here, not four failed trials later (this machine's data only)."""
    from zoo import data as zdata
    for name, splits in {c.data.dataset: {"train", "dev", c.eval.split, *c.eval.extra_splits, *c.eval.ppl_splits} for c in cfgs}.items():
        for split in sorted(splits):
            if split == "train":
                _check_train(name, data_dir)
            else:
                zdata.load_pairs(name, split, data_dir)


def _check_train(name, data_dir) -> None:
    from zoo import data as zdata
    row = next((r for r in zdata.list_corpora(data_dir) if r["name"] == name), None)
    if row is None:
        zdata.corpus(name)  # raises: unknown corpus
    elif row["status"] == "missing":
        zdata.load_pairs(name, "train", data_dir)  # raises the data module's message: what, where, how
