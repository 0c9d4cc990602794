"""`zoo compare A B`: two rows of the store compared in the terminal, as the report compares them.

A row is a spec's variant over its seeds: `two_heads` (a user's variant, when one spec has it), `base` (the
paper's row), or, where a name is ambiguous, `SPEC:VARIANT` (the spec as the store names it, or its file
name) and `paper:ROW`. Both rows come from one profile. The difference, its interval and p are the report's
(zoo.reports.verdicts.versus with the same resampler), so the two agree to the printed digit.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from zoo.errors import UserError

if TYPE_CHECKING:  # the store and the statistics load when the command runs, not at every `zoo` start-up
    from zoo.reports.runs import Runs

METRICS = {"dev_ppl": "ppl", "bleu": "bleu"}
UNITS = {"ppl": "dev perplexity", "bleu": "BLEU"}


@dataclass(frozen=True)
class Result:
    """What `zoo compare` prints (and --json writes)."""
    a: str
    b: str
    a_spec: str
    b_spec: str
    profile: str
    metric: str
    seeds: tuple[int, int]
    delta: float | None          # how much better a is than b, in the metric's units, as the pages and claims sign it:
    lo: float | None             # positive when a is better (lower perplexity, higher BLEU); None: not measured
    hi: float | None
    p: float | None
    verdict: str
    sentences: str
    missing: str = ""
    more_seeds: int | None = None    # seeds per row at which the measured difference is found 80% of the time
    command: str = ""                # the command that adds them
    a_seeds: tuple[int, ...] = ()    # the seeds behind each row's figures, as compared
    b_seeds: tuple[int, ...] = ()
    paired: bool | None = None       # compared seed by seed (they share 2+ seeds); None: not measured
    damaged: tuple[str, ...] = ()    # the store's damaged rows of these rows' specs: unreadable, left out
    sentence: str = ""               # all of it in one sentence, to paste (zoo.evidence.sentence)


def _name(t) -> str:
    return f"{t.spec}:{t.variant}"


def find(runs: Runs, name: str, profile: str | None):
    """The trial standing for row `name` (see the module note); a UserError names the choices."""
    from zoo.reports.runs import is_paper
    kind, _, rest = name.rpartition(":")
    pool = [t for t in runs.trials if profile is None or t.profile == profile]
    if kind == "paper":
        hits = [t for t in pool if is_paper(t) and (t.paper_row or t.variant) == rest]
    elif kind:
        hits = [t for t in pool if t.variant == rest and kind in (t.spec, Path(t.spec).name, Path(t.spec).stem)]
    else:
        yours = [t for t in pool if not is_paper(t) and t.variant == name]
        hits = yours or [t for t in pool if is_paper(t) and (t.paper_row or t.variant) == name]
        mixed = {_name(t) for t in yours} | ({f"paper:{name}"} if yours and any(
            is_paper(t) and (t.paper_row or t.variant) == name for t in pool) else set())
        if len({t.spec for t in yours}) > 1 or len(mixed) > 1:
            raise UserError(f"row '{name}' is ambiguous: {', '.join(sorted(mixed))}; name one of them")
    if not hits:
        known = sorted({t.variant for t in pool})
        from zoo.text import did_you_mean
        where = f"no row '{name}' in {runs.path}" + (f" (profile {profile})" if profile else "")
        hint = did_you_mean(rest or name, known) if known else " It holds no rows yet."
        raise UserError(where + (hint if hint.startswith(";") else "." + hint))  # each row named once
    profiles = sorted({t.profile for t in hits})
    if len(profiles) > 1:
        raise UserError(f"row '{name}' ran under several profiles ({', '.join(profiles)}): give --profile")
    done = [t for t in hits if t.finished] or hits
    return max(done, key=lambda t: t.finished_at or t.updated_at or 0)


def compare(runs: Runs, a_name: str, b_name: str, metric: str = "dev_ppl", profile: str | None = None,
            resamples: int | None = None, bootstrap_seed: int | None = None, alpha: float = 0.05,
            storage: str | None = None) -> Result:
    """Row A against row B on one metric: the report's paired difference, interval, p and verdict."""
    from zoo.reports.verdicts import shared_resampler, versus
    a = find(runs, a_name, profile)
    b = find(runs, b_name, profile or a.profile)
    m = METRICS[metric]
    comp = versus(runs, a, b, m, shared_resampler(resamples, bootstrap_seed))
    e = comp.estimate
    damaged = tuple(d for d in (runs.store.damaged if runs.store else ()) if d.startswith((f"{a.spec} ", f"{b.spec} ")))
    base = dict(a=a_name, b=b_name, a_spec=a.spec, b_spec=b.spec, profile=a.profile, metric=metric, damaged=damaged)
    if e is None:  # not measured; a row cut short by its time limit: no verdict (no winner between unequal training)
        seeds = [tuple(sorted(x.seed for x in runs.seeds(t))) for t in (a, b)]
        return Result(**base, seeds=tuple(map(len, seeds)), delta=None, lo=None, hi=None, p=None,
                      verdict="no verdict" if comp.missing.startswith("cut short") else "not measured", sentences="",
                      missing=comp.missing, a_seeds=seeds[0], b_seeds=seeds[1],
                      sentence=f"{a_name} against {b_name} on {UNITS[m]}: no verdict ({comp.missing}).")
    delta, lo, hi = e.delta, e.lo, e.hi  # how much better A is: the claims' and the pages' sign, one sign everywhere
    from zoo import evidence as E
    found = e.p < alpha and not comp.untestable  # a row at a profile too small for any claim: no verdict
    verdict = (f"{E.UNTESTABLE}: {comp.untestable}" if comp.untestable else
               f"{a_name if e.delta > 0 else b_name} is better (p < {alpha:g})" if found else
               f"within noise (p >= {alpha:g}): no difference found at these seeds")
    more = command = None
    if not found and e.delta != 0 and not comp.untestable:  # more seeds at that budget would not help
        from zoo.reports.power import seeds_needed
        more = seeds_needed(abs(e.delta), e.seed_se * math.sqrt(min(e.seeds)), e.sentence_se, alpha)
        if more:
            where = f" --storage {storage}" if storage else ""
            from zoo.reports.cells import shown_path  # a command to paste where the user stands
            command = " && ".join(f"zoo run {shown_path(t.spec)} --variant {t.variant} --seeds {more} --profile "
                                  f"{t.profile}{where}" for t in (a, b))
    return Result(**base, seeds=e.seeds, delta=delta, lo=lo, hi=hi, p=e.p, verdict=verdict,
                  sentence=E.say_versus(a_name, b_name, m, e, alpha, comp.untestable),
                  sentences=comp.sentences, more_seeds=more, command=command or "", a_seeds=comp.seed_sets[0],
                  b_seeds=comp.seed_sets[1], paired=e.paired)


def _seeds(xs) -> str:
    return ", ".join(map(str, xs)) or "none"


def pairing(r: Result) -> str:
    """The seeds behind the figures, in words: "paired over seeds 1, 2", or why the rows are not paired."""
    if r.paired:
        return f"paired over seeds {_seeds(r.a_seeds)} (the per-seed differences)"
    shared = sorted(set(r.a_seeds) & set(r.b_seeds))
    share = f"share only seed {shared[0]}" if len(shared) == 1 else "share no seed"
    return (f"unpaired: {r.a} on seeds {_seeds(r.a_seeds)} and {r.b} on seeds {_seeds(r.b_seeds)} {share}, too few "
            "to pair by seed (2 or more needed): each row's seeds are taken as independent samples (Welch's t)")


def text(r: Result) -> str:
    unit = UNITS[METRICS[r.metric]]
    from zoo.reports.cells import shown_path
    better = "lower" if METRICS[r.metric] == "ppl" else "higher"
    head = (f"{r.a} ({shown_path(r.a_spec)}) against {r.b} ({shown_path(r.b_spec)}), profile {r.profile}, {unit}; seeds "
            f"{r.seeds[0]} / {r.seeds[1]}; Δ positive when {r.a} is better ({better} {unit}), as the pages sign it")
    left = ([f"  left out: {len(r.damaged)} damaged row{'s' * (len(r.damaged) != 1)} of these specs (unreadable): "
             + "; ".join(r.damaged)] if r.damaged else [])
    if r.delta is None:
        return "\n".join([head, f"  {r.verdict}: {r.missing}", *left, f"  in a sentence: {r.sentence}"])
    lines = [head,
             f"  Δ {r.delta:+.2f} (how much better {r.a} is than {r.b}), 95% interval [{r.lo:+.2f}, {r.hi:+.2f}], p {r.p:.3g}",
             f"  seeds: {pairing(r)}", *left,
             f"  resampled: {r.sentences}",
             f"  verdict: {r.verdict}",
             f"  in a sentence: {r.sentence}"]
    if r.more_seeds:
        lines.append(f"  {r.more_seeds} seeds per row would find a difference this large 80% of the time "
                     f"(the measured one: an optimistic guide): {r.command}")
    elif r.more_seeds is None and r.delta is not None and "within noise" in r.verdict:
        from zoo.spec import MAX_SEEDS
        lines.append(f"  no seed count up to {MAX_SEEDS} finds a difference this small 80% of the time")
    return "\n".join(lines)


def cmd_compare(args) -> int:
    from zoo.reports import runs as runs_mod
    from zoo.reports.cli import DEFAULT_RUNS
    from zoo.runner.storefile import locate
    path = Path(args.runs or DEFAULT_RUNS)
    if path.is_dir():
        path = path / "zoo.db"
    if not locate(path).exists():
        raise UserError(f"--runs {args.runs or path}: no results store at {path}: run `zoo run SPEC` first")
    if args.bootstrap_seed is not None and not 0 <= args.bootstrap_seed < 2**32:
        raise UserError(f"--bootstrap-seed must be between 0 and {2**32 - 1} (got {args.bootstrap_seed})")
    runs = runs_mod.load(path)
    r = compare(runs, args.a, args.b, args.metric, args.profile, bootstrap_seed=args.bootstrap_seed,
                storage=str(path.parent) if args.runs else None)
    from zoo.runner.store import warn_damaged
    warn_damaged(runs.store)  # every damaged row of the store (stderr); the output names those of these specs
    print(json.dumps(asdict(r), indent=2) if args.json else text(r))
    return 0


def register(sub) -> None:
    # help is %-formatted (%% for %), the description printed as written
    s = sub.add_parser("compare", help="two rows compared: Δ, 95%% interval, p and verdict, paired by seed where they share 2+ seeds",
                       description="Compare two rows of the results store (a row: a spec's variant over its "
                                   "seeds) on one metric, with the statistics of the report's claims: the "
                                   "difference, its 95% interval (paired by seed where the rows share 2 or more "
                                   "seeds, else unpaired, plus the test-set noise the seeds share), p, a verdict, "
                                   "and the seeds that would settle it. A row cut short by its time limit gets no "
                                   "verdict.")
    s.add_argument("a", metavar="A", help="a row: VARIANT, SPEC:VARIANT or paper:ROW")
    s.add_argument("b", metavar="B", help="the row it is compared with (same forms)")
    s.add_argument("--runs", help="results store, or the --storage folder holding it (default ./runs)")
    s.add_argument("--metric", choices=sorted(METRICS), default="dev_ppl", help="dev_ppl (default) or bleu")
    s.add_argument("--profile", help="the profile both rows ran under (needed when a row ran under several)")
    s.add_argument("--bootstrap-seed", type=int, metavar="N", help="seed of the bootstrap resamples (default: the report's)")
    s.add_argument("--json", action="store_true", help="one JSON object instead of text")
    s.set_defaults(fn=cmd_compare)
