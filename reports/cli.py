"""`zoo report`: rebuild Tables 2-4 (markdown, HTML, PNG figures) from the results store.

Reads the store, zoo.paper and zoo.model.costs only; never trains, never imports Ray. Seconds to run.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from zoo.reports import pages
from zoo.runner.store import default_path, warn_damaged

DEFAULT_OUT = Path("reports") / "out"
DEFAULT_RUNS = default_path()


def build(runs_path: Path, out: Path, tables: list[int], formats: list[str], profile: str | None = None,
          bootstrap_seed: int | None = None, addons: tuple[str, ...] = (), plan=None) -> list[Path]:
    """Write the chosen tables (and, for all of them, the index); return the files written."""
    from zoo.reports import plots, render, runs as runs_mod
    from zoo.paths import atomic_write_text
    runs = runs_mod.load(runs_path, profile, addons)
    warn_damaged(runs.store)  # stderr; the report shows the sound rows
    img = out / "img"
    meta = render.meta(runs_path, profile, len(runs.trials), runs.note)
    request = pages.Request(runs, runs_path, tuple(tables), plan, bootstrap_seed)
    # the nav links the index only where there is one: written now, or by an earlier whole report here
    meta["index"] = request.whole or (out / f"{pages.INDEX}.html").exists()
    built = pages.build(request)
    nav = pages.nav(built, out)
    written, index_figures = [], []
    draw = any(f != pages.LATEX for f in formats)  # LaTeX pages are tables only: no figure a .tex would not use
    for t in built:
        page = pages.page_of(t.name)
        figures = page.draw(t, img) if draw else []
        if page.on_index:
            index_figures = figures[:1]
        cards = []
        for label, trial in t.trials if draw else ():
            files = {"curves": plots.curves(trial, runs.points(trial), img)}
            if trial.finished:
                files["attention"] = plots.attention(trial, img)
            cards.append(render.trial_view(label, trial, files))
            written += [img / f for f in files.values() if f]
        written += [img / f for _, f in figures]
        written += render.write_table(t, out, formats, meta, figures, cards, nav)
    if request.whole:
        written += render.write_index(built, out, formats, meta, index_figures, nav)
        if runs.trials:  # every trial one CSV row; the measured rows as a model index, to share
            written.append(atomic_write_text(out / "results.csv", runs.csv()))
            from zoo.reports import share
            written.append(atomic_write_text(out / "model-index.yml", share.model_index(runs)))
    return written


def build_sweep(runs_path: Path, out: Path, spec: str, formats: list[str], profile: str | None = None) -> list[Path]:
    """The page of one spec (`zoo report --spec SPEC`, or --sweep): every point over its seeds, each row against
    its reference row, its claims' verdicts, a figure per swept field."""
    from zoo.reports import plots, render, runs as runs_mod, sweep
    runs = runs_mod.load(runs_path, profile)
    warn_damaged(runs.store)
    table = sweep.sweep_table(runs, spec)
    img = out / "img"
    draw = any(f != pages.LATEX for f in formats)  # LaTeX pages are tables only: no figure a .tex would not use
    figures = pages.page_of(table.name).draw(table, img) if draw else []
    meta = render.meta(runs_path, profile, len(runs.trials), runs.note)
    meta["index"] = (out / f"{pages.INDEX}.html").exists()  # a spec page alone writes no index
    cards, written = [], [img / f for _, f in figures]
    for label, trial in table.trials if draw else ():
        files = {"curves": plots.curves(trial, runs.points(trial), img)}
        cards.append(render.trial_view(label, trial, files))
        written += [img / f for f in files.values() if f]
    return written + render.write_table(table, out, formats, meta, figures, cards, [])


def _committed(out: Path) -> list[str]:
    """The report files in --out that git tracks (a committed reference report), [] outside a checkout."""
    import subprocess
    try:
        r = subprocess.run(["git", "-C", str(out), "ls-files", "-z", "--", *pages.report_files()],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):  # no git here: nothing can be committed
        return []
    # the pages first, then the figures
    return sorted((f for f in r.stdout.split("\0") if f), key=lambda f: (f.startswith("img/"), f)) \
        if r.returncode == 0 else []


def _check_out(out: Path, force: bool = False) -> None:
    """--out must be a folder this user can create and write (not a file, not under /proc or /sys), and not
    one whose report pages git tracks unless --force says to replace them."""
    from zoo.errors import UserError
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: that is a file, not a folder; the report writes several pages and an "
                        "img/ folder into --out: give a folder (created if missing)")
    if out.is_dir() and not force and (tracked := _committed(out)):
        shown = ", ".join(tracked[:4]) + (f" and {len(tracked) - 4} more" if len(tracked) > 4 else "")
        raise UserError(f"--out {out}: it holds report files committed to git ({shown}); the report would replace "
                        "them: give --force to rebuild them there (git diff then shows what changed), or another "
                        "--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".zoo-write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UserError(f"--out {out}: cannot write a report there ({e.strerror or e}); give a folder you can "
                        "write (created if missing)") from None


def cmd_report(args) -> int:
    t0 = time.time()
    tables = [args.table] if args.table else list(pages.paper_tables())
    formats = list(pages.FORMATS) if args.format == "all" else [pages.LATEX if args.format == "latex" else args.format]
    out = Path(args.out)
    if args.bootstrap_seed is not None and not 0 <= args.bootstrap_seed < 2**32:  # numpy's seed range
        from zoo.errors import UserError
        raise UserError(f"--bootstrap-seed must be between 0 and {2**32 - 1} (got {args.bootstrap_seed})")
    runs = Path(args.runs or DEFAULT_RUNS)
    if runs.is_dir():
        runs = runs / "zoo.db"
    from zoo.runner.store import open_store
    from zoo.runner.storefile import locate, refuse_shadowing
    refuse_shadowing(out, "--out")  # an --out at a store's path would hide it (zoo.db/ beside zoo.db.xz)
    if args.runs and not locate(runs).exists():  # a store named but absent is a mistake, as for `zoo status`
        from zoo.errors import UserError
        raise UserError(f"--runs {args.runs}: no results store at {runs}: run `zoo run SPEC` first, or point "
                        "--runs at the zoo.db inside the --storage folder a run used")
    plan = None
    if args.analysis:  # validated before --out is touched
        from zoo import evidence as E
        plan = E.load_plan(args.analysis)
    if args.sweep is not None and not args.sweep.strip():  # `--spec ''` is a mistake, not the whole report
        from zoo.errors import UserError
        raise UserError("--spec needs a spec: a file (specs/mine.yaml) or the name of a spec in the store")
    # not a zoo store, or one with no trials: refused before --out is created (pages of "not run" say nothing)
    if not locate(runs).exists() or not open_store(runs).holds_trials():
        from zoo.errors import UserError
        where = "no results store" if not locate(runs).exists() else "a results store with no trials"
        raise UserError(f"--runs {runs}: {where}, so nothing to report: run `zoo run SPEC --storage DIR` first "
                        "(then `zoo report --runs DIR`), or point --runs at a store that holds runs")
    made = [p for p in (out, *out.parents) if not p.exists()]  # the folders --out creates, deepest first
    _check_out(out, args.force)
    try:
        written = build_sweep(runs, out, args.sweep, formats, args.profile) if args.sweep else \
            build(runs, out, tables, formats, args.profile, args.bootstrap_seed, tuple(args.addon or ()), plan)
    except BaseException:  # refused (an unknown --spec, ...) or interrupted: the empty folders it made go
        for folder in made:
            try:
                folder.rmdir()  # only an empty one: a page written meanwhile stays, with its folder
            except OSError:
                break
        raise
    docs = [p for p in written if p.suffix != ".png"]
    print(f"report written to {out} ({len(docs)} pages, {len(written) - len(docs)} figures in "
          f"{out / 'img'}, {time.time() - t0:.1f} s)")
    for p in docs:
        print(f"  {p}")
    return 0


def register(sub) -> None:
    s = sub.add_parser("report", help="rebuild Tables 2-4 (markdown, HTML, plots) from the results store",
                       description="Rebuild the paper's Tables 2, 3 and 4 beside the measured runs, as markdown "
                                   "and a static HTML site with plots. Reads the results store; never trains.")
    s.add_argument("--table", type=int, choices=list(pages.paper_tables()),
                   help="only this table (default: all three and the index)")
    s.add_argument("--format", choices=[*pages.FORMATS, "latex", "all"], default="all",
                   help="output format: md, html (all: both, the default), or latex (each table as booktabs "
                        "tables in NAME.tex, for a paper)")
    s.add_argument("--out", default=str(DEFAULT_OUT), help=f"output folder (default {DEFAULT_OUT})")
    s.add_argument("--runs", help=f"results store, or the --storage folder holding it (default {DEFAULT_RUNS})")
    s.add_argument("--spec", "--sweep", dest="sweep", metavar="SPEC", help="instead of the paper's tables: one page "
                   "for this spec (yours or a sweep): every variant and grid point over its seeds, each row against "
                   "its reference row (Δ and interval), the verdicts of its claims, a figure per swept field "
                   "(--sweep is the older name)")
    s.add_argument("--profile", help="only runs of this profile (default: the most recent finished run per row)")
    s.add_argument("--addon", action="append", metavar="PROFILE", help="also read this profile's runs for the "
                   "claims its longer budget can test (the dropout claim needs over-fitting, big 3x base's steps); "
                   "tables show the --profile's rows; repeatable")
    s.add_argument("--analysis", metavar="PLAN", help="judge the claims under this analysis plan "
                   "(zoo/evidence/analysis.py: level, primary metric, resamples); a claim whose trials ran under another plan or none "
                   "(zoo run --analysis) is marked post hoc")
    s.add_argument("--bootstrap-seed", type=int, metavar="N", help="seed of the claims' bootstrap resamples "
                   "(default fixed, so a report rebuilds identically; verdicts should not move with it)")
    s.add_argument("--force", action="store_true", help="write into an --out whose report files are committed to "
                   "git (a reference report, results/...), replacing them; refused without it")
    s.set_defaults(fn=cmd_report)
