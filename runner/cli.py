"""`zoo run`, `zoo status` and `zoo merge`. Ray is imported only when a sweep actually starts."""
from __future__ import annotations

import json
import os
from pathlib import Path

from zoo.errors import UserError
from zoo.runner.stacking import STACK_DEFAULT, STACK_MODES
from zoo.result import TrialStatus
from zoo.text import text_table


def cmd_run(args) -> int:
    from zoo.runner import sweep
    if args.max_concurrent is not None and args.max_concurrent < 1:
        raise UserError("--max-concurrent must be 1 or more")
    from zoo.spec import MAX_SEEDS  # the spec language's bound on a `seeds:` list
    if args.seeds is not None and not 1 <= args.seeds <= MAX_SEEDS:
        raise UserError(f"--seeds must be between 1 and {MAX_SEEDS} (got {args.seeds})")
    if args.max_seeds is not None and not args.until_resolved:  # was ignored without a word
        raise UserError("--max-seeds goes with --until-resolved (zoo run SPEC --until-resolved --max-seeds K): "
                        "alone it changes nothing; --seeds N runs every variant with N seeds")
    if args.max_seeds is not None and not 1 <= args.max_seeds <= MAX_SEEDS:
        raise UserError(f"--max-seeds must be between 1 and {MAX_SEEDS} (got {args.max_seeds})")
    seeds = list(range(1, args.seeds + 1)) if args.seeds else None
    if args.power and not args.plan:
        raise UserError("--power goes with --plan (zoo run SPEC --plan --power)")
    if args.pilot and not args.power:
        raise UserError("--pilot goes with --plan --power (the pilot store whose noise sizes the seeds)")
    pilot = Path(args.pilot or ".")
    pilot = pilot / "zoo.db" if pilot.is_dir() else pilot
    from zoo.runner.storefile import locate
    if args.pilot and not locate(pilot).exists():  # was: planned from the stated prior, as if no pilot had been named
        raise UserError(f"--pilot {args.pilot}: no results store at {pilot}; give the pilot run's zoo.db, or the "
                        "--storage folder holding it (without --pilot: the --storage store, or a stated prior)")
    if args.more and args.until_resolved:
        raise UserError(f"--until-resolved takes one spec (got {args.spec}, {', '.join(args.more)}): its rounds add "
                        "seeds to that spec's open claims; run it once per spec")
    from zoo.spec import spec_path
    specs = [args.spec, *map(str, map(spec_path, args.more or ()))]
    if args.plan:  # what it would cost; nothing runs, no Ray starts
        from zoo.runner import plan
        cfgs = _trials_of(args, specs, seeds)
        _plan_note(args, cfgs)  # a bad --analysis plan fails the plan as it would fail the run
        if args.power:
            return _power(args, cfgs)
        order = _seed_order(args, cfgs, seeds) if args.until_resolved else []  # its mistakes before the plan
        gpu = any(c.resources.gpus > 0 for c in cfgs)
        plan.print_plan(plan.plan(cfgs, measure=not args.no_measure and not (gpu and not _cuda())), args.json,
                        unmeasured="" if not gpu else "the trials ask for a GPU and this machine has none: the H100 "
                        "estimate below stands in")
        if gpu and not args.json:  # the minutes on an H100, and each claim's power at these seeds
            from zoo.reports import power
            from zoo.runner import gpu_plan
            print()
            gpu_plan.print_gpu_plan(gpu_plan.gpu_plan(cfgs))
            print()
            power.print_claims_power(cfgs)
        if args.until_resolved:  # the plan is the first round; the rounds after it depend on the verdicts
            import sys
            first, more = order[:len(_named_seeds(cfgs, seeds))], order[len(_named_seeds(cfgs, seeds)):]
            print(f"note: --until-resolved runs these trials first (seeds {', '.join(map(str, first))}), then may "
                  f"add seeds to the rows of open claims, one a round ({', '.join(map(str, more)) or 'none'}), up "
                  f"to --max-seeds {len(order)} per row: later rounds are not in this plan", file=sys.stderr)
        return 0
    if args.json:
        raise UserError("--json goes with --plan (zoo status --json lists the trials of a run)")
    if args.until_resolved:
        return _until_resolved(args, seeds)
    return sweep.run(specs, profile=args.profile, variants=args.variant, sets=args.set, address=args.address,
                     storage=args.storage, rerun=args.rerun, max_concurrent=args.max_concurrent,
                     data_dir=args.data_dir, seeds=seeds, loggers=args.logger,
                     analysis=_analysis(args, _trials_of(args, specs, seeds) if args.analysis else None),
                     stack=args.stack)


def _trials_of(args, specs: list[str], seeds) -> list:
    """Every trial of the run: each spec's, with the --variant names it has."""
    from zoo.runner import sweep
    from zoo.spec import auto_profile, variants_of
    return [c for spec, variants in variants_of(specs, args.variant).items()
            for c in sweep.resolve_trials(spec, variants, auto_profile(args.profile), args.set, seeds, args.data_dir)]


def _cuda() -> bool:
    import torch
    return torch.cuda.is_available()


def _plan(args, cfgs):
    """--analysis PLAN, validated (a bad plan: exit 2 before anything starts), or None. The rows and claims it
    names must be the paper's Table 3's, the built-in specs' or this run's (`cfgs`: its trials)."""
    if not args.analysis:
        return None
    from zoo import evidence as E
    from zoo.paper import TABLE3
    from zoo.spec import builtin_specs, spec_path, variant_names
    rows = {r[0] for r in TABLE3} | {v for s in builtin_specs() for v in variant_names(spec_path(s))}
    rows |= {c.variant for c in cfgs} | {c.paper.row for c in cfgs if c.paper and c.paper.row}
    claims = {c.id for c in E.CLAIMS} | {c.id for cfg in cfgs for c in cfg.claims}  # every spec's own claims
    return E.load_plan(args.analysis, rows, claims)


def _plan_note(args, cfgs) -> None:
    """`--plan --analysis PLAN`: the plan validated against the rows and claims it can name, and named."""
    if not args.analysis:
        return
    import sys
    plan = _plan(args, cfgs)
    print(f"analysis plan: {args.analysis} ({plan.name}, {plan.hash()}): stored with each trial; level "
          f"{plan.alpha:g}, primary {plan.primary}, at most {plan.max_looks} look(s)", file=sys.stderr)


def _analysis(args, cfgs) -> str | None:
    """The plan's hash, stored with every trial this run creates."""
    plan = _plan(args, cfgs)
    return plan.hash() if plan else None


def _power(args, cfgs) -> int:
    """`--plan --power`: seeds per claim touching the spec's rows, from a pilot store's noise."""
    from zoo import evidence as E
    from zoo.reports import power, runs as runs_mod
    from zoo.runner.store import default_path, warn_damaged
    pilot = Path(args.pilot) if args.pilot else default_path(args.storage)
    if pilot.is_dir():
        pilot = pilot / "zoo.db"
    mine = {c.paper.row for c in cfgs if c.paper and c.paper.row}
    claims = [c for c in E.CLAIMS if set(c.rows) & mine] + _yours(args, cfgs)
    if not claims:
        raise UserError(f"{args.spec}: no Table 3 claim rests on its rows ({', '.join(sorted(mine)) or 'none'}) "
                        "and the spec states none of its own (`claims:`)")
    runs = runs_mod.load(pilot, cfgs[0].profile)
    warn_damaged(runs.store)  # the plan is sized from the sound rows
    print(f"pilot: {pilot} ({len(runs.trials)} trials of profile {cfgs[0].profile}"
          + (f"; {runs.note}: the stated prior is used" if runs.note else "") + ")")
    sized = power.plan(runs, claims)
    power.print_plan(sized)
    if args.until_resolved:  # the rounds it would run, against what each claim needs
        cap = args.max_seeds or MAX_SEEDS_DEFAULT
        over = sorted(n.claim.id for n in sized.needs if n.seeds is None or n.seeds > cap)
        print(f"--until-resolved: adds a seed at a time to the rows of open claims, up to --max-seeds {cap} per "
              "row; " + (f"these need more and would stay open: {', '.join(over)}" if over else
                         "every claim above is reachable within it"))
    return 0


def _yours(args, cfgs) -> list:
    """The spec's own claims (its `claims:`), named by the spec as the store names it."""
    from zoo import evidence as E
    from zoo.runner.sweep import spec_in_store
    if not cfgs or not cfgs[0].claims:
        return []
    return E.from_specs(cfgs[0].claims, cfgs[0].paper.group or "", spec_in_store(args.spec))


def _named_seeds(cfgs, seeds) -> list[int]:
    """The seeds the first round runs: --seeds N's 1..N, else the seeds axis of the spec or profile (as the
    trials resolved: VARIANT-seedN), else 1 and 2, the fewest that can give a verdict."""
    axis = [c.train.seed for c in cfgs if c.trial.endswith(f"-seed{c.train.seed}")]
    return list(seeds or dict.fromkeys(axis) or (1, 2))


def _seed_order(args, cfgs, seeds) -> list[int]:
    """`--until-resolved`'s seeds, round by round (zoo.evidence.sequential.seed_order), or a UserError: fewer
    --max-seeds than the first round's seeds, or a profile too small for any claim (its `untestable:`)."""
    from zoo import evidence as E
    if cfgs and cfgs[0].untestable:
        raise UserError(f"--until-resolved under profile {cfgs[0].profile}: {cfgs[0].untestable}; every claim on its "
                        "rows is untestable at this budget, so no seed would resolve one: use a profile that can "
                        "test claims (quick, ablation, ...)")
    try:
        return E.seed_order(_named_seeds(cfgs, seeds), MAX_SEEDS_DEFAULT if args.max_seeds is None else args.max_seeds)
    except ValueError as e:
        raise UserError(str(e)) from None


OPEN = ("within noise", "inconclusive", "at the boundary", "needs 2+ seeds")  # verdicts another seed could change
MAX_SEEDS_DEFAULT = 10  # --until-resolved's --max-seeds when not given


def _until_resolved(args, seeds) -> int:
    """`--until-resolved`: run, judge the claims resting on the spec's rows, and add one seed to the
    rows of the claims still open, until none is or the rows reach --max-seeds.

    A group-sequential test (zoo.evidence.sequential): the looks it may take are fixed before the run (one per
    seed count from the first round's to --max-seeds), each look judges the claims still open at its
    own level, and the levels sum to 5%, so the chance of any false verdict over all the looks stays
    at most 5%. A claim decided at a look keeps that verdict (and the level it was reached at)."""
    from zoo import evidence as E
    from zoo.reports import runs as runs_mod, tables
    from zoo.runner import sweep
    from zoo.runner.store import default_path
    from zoo.spec import auto_profile
    cfgs = sweep.resolve_trials(args.spec, args.variant, auto_profile(args.profile), args.set, seeds, args.data_dir)
    order = _seed_order(args, cfgs, seeds)  # the spec's seeds first, then new ones
    k, args.max_seeds = len(_named_seeds(cfgs, seeds)), len(order)
    variant_of = {c.paper.row: c.variant for c in cfgs if c.paper and c.paper.row}
    variant_of |= {c.variant: c.variant for c in cfgs}  # a claim of the spec's own names its variants
    yours = _yours(args, cfgs)
    claims = {(c.id, "") for c in E.CLAIMS if set(c.rows) & set(variant_of)} | {(c.id, c.source) for c in yours}
    if not claims:
        raise UserError(f"{args.spec}: no Table 3 claim rests on its rows and it states none of its own "
                        "(`claims:`), so there is nothing to resolve")
    plan = _plan(args, cfgs)  # an analysis plan fixes the level and the most looks before the first trial
    alpha = plan.alpha if plan else E.ALPHA
    if plan and E.looks(k, args.max_seeds) > plan.max_looks:
        raise UserError(f"--max-seeds {args.max_seeds} allows {E.looks(k, args.max_seeds)} looks, but the "
                        f"analysis plan {args.analysis} fixed at most {plan.max_looks} (max_looks): lower --max-seeds "
                        "or write a new plan before the runs")
    first, levels = k, E.levels(k, args.max_seeds, alpha)
    print("sequential test: " + E.describe_boundary(k, args.max_seeds, alpha))
    settled: dict[str, tuple] = {}  # claim id -> (its verdict, the seeds and level of the look that settled it)
    variants = args.variant
    while True:
        rc = sweep.run(args.spec, profile=args.profile, variants=variants, sets=args.set, address=args.address,
                       storage=args.storage, rerun=False, max_concurrent=args.max_concurrent,
                       data_dir=args.data_dir, seeds=order[:k], loggers=args.logger,
                       analysis=plan.hash() if plan else None, stack=args.stack)
        if rc:
            return rc
        runs = runs_mod.load(default_path(args.storage), cfgs[0].profile)
        level = levels[k - first]
        # the report's comparisons (tables.claims_section), judged again here: only the claims still open,
        # one Holm family at this look's level
        comparisons = [v.comparison for v in tables.claims_section(runs).data
                       if (v.claim.id, v.claim.source) in claims and v.claim.id not in settled]
        verdicts = E.judge(comparisons, alpha=level)
        still = [v for v in verdicts if v.verdict in OPEN]
        settled |= {v.claim.id: (v.verdict, k, level) for v in verdicts if v.verdict not in OPEN}
        print(f"after {k} seeds: look {k - first + 1} of {len(levels)}, at level {level:.2g}: "
              + "; ".join(f"{v.claim.id} {v.verdict}" for v in verdicts)
              + "".join(f"; {c} {w} (at {s} seeds, level {a:.2g})" for c, (w, s, a) in sorted(settled.items())
                        if s < k))
        rows = sorted({r for v in still for r in v.claim.rows if r in variant_of})
        if not rows:
            outside = sorted({r for v in still for r in v.claim.rows if r not in variant_of})
            print("resolved: no claim left open" if not still else
                  f"open claims rest on rows outside {args.spec} ({', '.join(outside)}): run their specs too")
            return 0
        if k >= args.max_seeds:
            print(f"stopped at --max-seeds {args.max_seeds}: still open: {', '.join(v.claim.id for v in still)}")
            return 0
        k += 1
        variants = [variant_of[r] for r in rows]
        print(f"adding seed {order[k - 1]} to {', '.join(rows)}")


def cmd_merge(args) -> int:
    from zoo.runner.store import default_path, open_store, warn_damaged
    from zoo.runner.storefile import locate
    path = lambda x: locate(default_path(x) if Path(x).is_dir() else Path(x))
    sources = []
    for src in args.sources:  # every source checked before INTO is created or written
        if not path(src).exists():
            raise UserError(f"{src}: no results store there (a zoo.db, or the --storage folder holding it)")
        if path(src).resolve() == path(args.into).resolve():
            raise UserError(f"{src}: that is the store being merged into")
        sources.append((src, open_store(path(src))))
    into = open_store(path(args.into), write=True)
    for src, store in sources:
        copied, kept = into.merge(store)
        print(f"{src}: {copied} trials copied, {kept} kept (newer in {args.into})"
              + (f", {len(store.damaged)} damaged not copied" if store.damaged else ""))
        warn_damaged(store, "not copied")
    mine = open_store(path(args.into))  # INTO's own damaged rows, kept as they are, named too
    mine.trials()
    warn_damaged(mine, "kept unchanged")
    # a source row left out: the merged store lacks a trial, so a script must not go on as if it were whole
    return 2 if any(store.damaged for _, store in sources) else 0


def cmd_status(args) -> int:
    from zoo.runner.store import default_path, open_store, warn_damaged
    from zoo.runner.storefile import locate
    path = Path(args.runs) if args.runs else default_path()
    path = locate(default_path(path) if path.is_dir() else path)
    if not path.exists() and not args.runs:  # nothing has run here yet: an empty list, not an error
        print("[]" if args.json else f"no trials yet ({path} does not exist): start with `zoo run SPEC`")
        return 0
    if not path.exists():
        raise UserError(f"no results store at {path}: run `zoo run SPEC` first, or point --runs at the "
                        "zoo.db inside the --storage folder a run used")
    store = open_store(path)
    trials = store.trials()
    warn_damaged(store)  # stderr: the sound rows are still listed (exit 0)
    if args.name:
        trials = _of_spec(trials, args.name, path)
    gone, leftovers = _dead_driver(path.parent)
    gone = gone if any(t.status is TrialStatus.running for t in trials) else None
    # killed: the next `zoo run` resumes its running trials
    note = {t.key: f"driver pid {gone} is gone" for t in trials if gone and t.status is TrialStatus.running}
    if args.json:  # per-sentence statistics are for the report's bootstrap, not for reading
        from zoo.result import PER_SENTENCE, PER_SENTENCE_RUN
        per_sentence = {**dict.fromkeys(PER_SENTENCE_RUN, True), "splits": {"__all__": PER_SENTENCE}}
        rows = [t.model_dump(mode="json", exclude={"attention": True, "result": per_sentence})
                | {"seed": t.seed, "metrics": None, "note": note.get(t.key)} for t in trials]
        for row, t in zip(rows, trials):
            row["metrics"] = row.pop("result")  # the names `zoo status --json` has always used
            row["hardware"] = row.pop("hardware_text")
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not trials:
        print(f"no trials{f' of {args.name}' if args.name else ''} in {path}")
        return 0
    cols = ("spec", "trial", "profile", "status", "progress", "dev_ppl", "score", "hardware / error")
    table = [cols]
    for t in trials:
        m = t.result
        sc = m.primary.score if m and m.primary else None
        score = f"{sc[0]} {sc[1]:.2f}" if sc else "-"
        ppl = (m and m.dev_ppl) or t.best.dev_ppl
        state = f"{t.status.value} ({note[t.key]})" if t.key in note else t.status.value
        table.append((Path(t.spec).stem, t.trial, t.profile, state, f"{t.step or 0}/{t.steps or '?'}",
                      f"{ppl:.2f}" if ppl else "-", score,
                      (t.error or "") if t.status is TrialStatus.failed else (t.hardware_text or "")))
    print(text_table(table, last_free=True))
    print(f"\n{len(trials)} trials in {path}")
    for t in trials:
        if t.warning:  # worked around, e.g. an unloadable checkpoint set aside
            print(f"{Path(t.spec).stem} {t.trial}: {t.warning}")
    if gone:
        print(f"the `zoo run` that last used {path.parent} (pid {gone}) was killed: its running trials are not "
              f"running; the same `zoo run` command resumes them from their last checkpoints")
    if leftovers:
        print(f"{len(leftovers)} Ray processes it left are still alive (pids {', '.join(map(str, leftovers))}); "
              "the next `zoo run` on this storage ends them")
    return 0


def _of_spec(trials: list, name: str, path: Path) -> list:
    """The trials of spec `name`, named as `zoo status` prints it (its file's stem), as stored, or by its file.
    A name that is no spec in the store nor a spec at all is a mistake: exit 2 with the store's specs."""
    stem = Path(name).stem
    if "/" in name or Path(name).is_file():  # a spec file: its own rows, not those of another file of its name
        mine = [t for t in trials if os.path.abspath(t.spec) == os.path.abspath(name)]
    else:
        mine = [t for t in trials if name == t.spec or Path(t.spec).stem == stem]
    if mine or not trials:
        return mine
    from zoo.spec import builtin_specs
    if Path(name).is_file() or name in builtin_specs():  # a spec that has not run here yet
        return []
    from zoo.text import did_you_mean, shorten
    raise UserError(f"no spec '{shorten(name)}' in {path}{did_you_mean(stem, {Path(t.spec).stem for t in trials})}")


def _dead_driver(storage: Path) -> tuple[int | None, list[int]]:
    """The pid of a `zoo run` on storage that died without cleaning up (None when it ended cleanly or
    still runs), and the Ray processes it left alive. Read-only: reads the lock and pidfile."""
    from zoo.runner import local
    pid, holding = local.run_driver(storage)
    info = local.read_pidfile(storage)
    if info and not holding and (pid is None or pid == info.get("driver")):
        if local.alive(info["driver"], info.get("driver_started")):
            return None, []  # a run from before the lock: alive, so really running
        pid = info["driver"]
    if holding or pid is None:
        return None, []
    left = sorted(p for p, t in info.get("pids", {}).items() if local.alive(int(p), t)) if info else []
    return pid, [int(p) for p in left]


def register(sub) -> None:
    s = sub.add_parser("run", help="run a spec's variants as Ray Tune trials (resumable)",
                       description="Run every variant of SPEC as a Ray Tune trial, on this machine (an embedded, "
                       "loopback-only Ray) or on a Ray cluster (--address). Results go to the results store "
                       "STORAGE/zoo.db; running the same command again resumes and skips finished variants.")
    s.add_argument("spec", help="spec file, e.g. specs/table3_A.yaml")
    s.add_argument("more", nargs="*", metavar="SPEC", help="more specs, their trials side by side in one experiment as the "
                   "resources allow (zoo run table3_A base), or with --plan planned together (zoo run base table3_A "
                   "table3_B --plan)")
    s.add_argument("--profile", default="auto",
                   help="smoke, quick, cpu, gpu, paper or a profile file (default auto: gpu if the cluster has GPUs, else cpu)")
    s.add_argument("--variant", action="append", metavar="V",
                   help="only this variant; repeat for several (several specs: each runs the names it has)")
    s.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override, e.g. train.steps=100")
    s.add_argument("--address", help="join a Ray cluster: auto, HOST:PORT or ray://HOST:10001 "
                   "(default: start a private Ray on this machine)")
    s.add_argument("--storage", help="trial folders and results: a path (shared by all nodes when --address) "
                   "or a cloud URI (default ./runs)")
    s.add_argument("--rerun", action="store_true", help="run finished variants again, from scratch")
    s.add_argument("--seeds", type=int, metavar="N", help="run each variant once per seed 1..N, as separate trials "
                   "named VARIANT-seedK (overrides the spec's or profile's `seeds:`)")
    s.add_argument("--max-concurrent", type=int, metavar="K", help="at most K trials at once (default: as many "
                   "as the resources allow)")
    s.add_argument("--stack", choices=STACK_MODES, default=STACK_DEFAULT, help="train the seeds of a row (and rows "
                   "that differ only in the seed, label smoothing or learning rate) side by side as one stacked model "
                   "in one process, each as it would train alone, with its own checkpoints and row: auto (default) "
                   "on GPU trials, where it fills the card; on also on the CPU (equal to a solo run to float "
                   "tolerance, not bit for bit, and no faster there); off never")
    s.add_argument("--data-dir", help="data directory (default $ZOO_DATA_DIR or the user cache)")
    s.add_argument("--no-download", action="store_true",
                   help="never fetch a missing corpus on first use (also: ZOO_DOWNLOAD=0)")
    s.add_argument("--logger", action="append", choices=["wandb", "mlflow"], help="also log to W&B or MLflow "
                   "through Ray Tune's callbacks (needs that package; TensorBoard files are always written)")
    s.add_argument("--plan", action="store_true", help="list the trials and what they will cost (parameters, "
                   "training FLOPs, peak memory, checkpoint disk, wall time from a throughput measured here); "
                   "run nothing")
    s.add_argument("--json", action="store_true", help="with --plan: a JSON array, one object per trial")
    s.add_argument("--power", action="store_true", help="with --plan: for each claim resting on the spec's rows, "
                   "the seeds needed for 80%% power to find the paper's effect, from a pilot store's seed and "
                   "sentence noise (or a stated prior), and the cost in trials and hours")
    s.add_argument("--until-resolved", action="store_true", help="after the run, judge the claims resting on "
                   "the spec's rows and add one seed at a time to the rows of claims still open (within noise, "
                   "inconclusive), re-checking after each round. A group-sequential test: one look per seed "
                   "count from the first round's to --max-seeds, each at its own level (O'Brien-Fleming-type "
                   "alpha spending, zoo.evidence.sequential), so the chance of any false verdict over all the looks is "
                   "at most 5%%; a claim decided at a look keeps that verdict")
    s.add_argument("--max-seeds", type=int, metavar="K", help="with --until-resolved: at most K (1 to 100) "
                   f"seeds per row (default {MAX_SEEDS_DEFAULT}); fixed before the run, it sets the number of looks the "
                   "5%% is spent over (K - first round's seeds + 1): a larger K makes each look stricter")
    s.add_argument("--analysis", metavar="PLAN", help="the analysis plan (YAML, see zoo/evidence/analysis.py) the "
                   "trials run under, written before the first trial: its hash is stored with each; zoo report --analysis "
                   "PLAN calls a claim post hoc when its trials ran under another plan or none")
    s.add_argument("--pilot", metavar="STORE", help="with --power: the pilot store (default: the --storage store)")
    s.add_argument("--no-measure", action="store_true", help="with --plan: skip the throughput measurement")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("merge", help="copy the trials of other results stores into one",
                       description="Copy the trials and curves of other results stores (runs on several "
                       "machines, or two `zoo run`s with their own --storage) into one, so `zoo report` reads "
                       "them together. Where both hold a trial, the one updated last wins.")
    s.add_argument("into", metavar="STORE", help="the store to copy into (created when missing)")
    s.add_argument("sources", nargs="+", metavar="SOURCE", help="stores to copy from (read only)")
    s.set_defaults(fn=cmd_merge)

    s = sub.add_parser("status", help="trials in the results store: state, progress, metrics, errors",
                       description="List the trials in the results store with their state, progress, metrics "
                       "and errors.")
    # not `spec`: zoo.cli would read it as a spec file, and a store's spec need not be one here (`modern_c`)
    s.add_argument("name", metavar="spec", nargs="?", help="only this spec's trials, named as `zoo status` prints it")
    s.add_argument("--runs", metavar="STORE",
                   help="the results store, or the --storage folder holding it (default ./runs/zoo.db)")
    s.add_argument("--json", action="store_true", help="print a JSON array")
    s.set_defaults(fn=cmd_status)
