"""Seeds a claim needs: from a pilot store's seed and sentence noise (or a stated prior), the number
of seeds per row at which the claim's test finds the paper's effect with 80% power, and its cost.

The paper's effect is carried over as a share of the row's figure (0.9 BLEU of 25.8 is 3.5%; applied
to our row's BLEU), since a scaled-down profile lives at another level of BLEU and perplexity. The
test is the one the report runs (zoo.evidence.stats): a paired t-test with S - 1 degrees of freedom on a
standard error sqrt(seed variance / S + shared test-set variance), at the level Holm gives the first
claim of the claim's own family (alpha / the claims on its metric), the strictest one. The shared part
does not shrink with seeds (each seed's own sentence noise is in the seed variance, and does): a claim
whose effect is smaller than the test set's shared noise is not reachable by seeds alone.

The test set's part comes from a finite bootstrap, so the count has a Monte Carlo error, stated as the
claims state theirs (zoo.evidence.claims: the test-set variance moved MC_RANGE Monte Carlo errors down and
up): the counts at both ends. Where they span more than MC_SPREAD of the count, the claim is sized again
with REFINE's times the resamples (the first ones kept), so the counts of two bootstrap seeds agree to
within MC_SPREAD; a range still wider is printed beside the count.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as st

from zoo import evidence as E
from zoo import paper
from zoo.reports.runs import Runs
from zoo.spec import MAX_SEEDS  # a spec may ask no more: advice beyond it could not be run
from zoo.reports.verdicts import claim_rows, comparison, user_comparison, user_rows_of
from zoo.text import text_table

POWER = 0.8
# A stated prior where no pilot has run: per-seed sd of a row difference and the sentence se, in the
# units of the ablation reference (2000 steps, 1014 dev sentences): BLEU sd 1.5, PPL sd 2.5.
PRIOR = {"bleu": (1.5, 0.3), "ppl": (2.5, 0.1)}
RESAMPLES = 2000   # the first try; a claim whose count moves with the bootstrap seed gets REFINE's times more
# the CPU reference whose seed and test-set noise sizes a GPU profile's claims until a GPU run measures its own
REFERENCE = (Path("results/ablation2-cpu2/zoo.db.xz"), "ablation")
MC_SPREAD = 0.1    # the share of a count its Monte Carlo range may span before it is sized again


@dataclass(frozen=True)
class Need:
    claim: E.Claim
    effect: float                 # the paper's effect at our level (a tie: its equivalence margin)
    seed_sd: float                # sd of one seed's difference
    sentence_se: float            # the test set's part of the standard error
    source: str                   # "pilot: 3 seeds" or "prior"
    seeds: int | None             # seeds per row for 80% power (None: not reachable by seeds)
    have: int = 0
    note: str = ""                # untestable, or why there is no figure
    mc: tuple = (None, None)      # the counts at the test-set variance MC_RANGE Monte Carlo errors down, up
    resamples: int = 0            # the bootstrap resamples behind sentence_se (0: none, seeds only or prior)
    sent_mc: tuple = ()           # sentence_se at the test-set variance MC_RANGE Monte Carlo errors down, up
    alpha: float = 0.0            # the level it is sized at (Holm's first step in its family)
    tie_margin: float = 0.0

    def power_at(self, seeds: int) -> tuple[float, float, float]:
        """Its power at `seeds` seeds per row: (at sentence_se, at the Monte Carlo ends' lower, higher)."""
        at = lambda se: power(self.effect, self.seed_sd, se, seeds, self.alpha, self.tie_margin)
        ends = sorted(at(se) for se in self.sent_mc) if self.sent_mc else [at(self.sentence_se)] * 2
        return at(self.sentence_se), ends[0], ends[-1]


def power(effect: float, seed_sd: float, sentence_se: float, seeds: int, alpha: float, tie_margin: float = 0.0) -> float:
    """Power of the report's test at `seeds` seeds per row (paired)."""
    se = math.sqrt(seed_sd ** 2 / seeds + sentence_se ** 2)
    if se == 0:  # no noise left (the shared test-set term can estimate to 0): any effect is found
        return 1.0
    df = seeds - 1
    q = st.t.ppf(1 - alpha / 2, df)
    if tie_margin:  # TOST at a true difference of 0: both one-sided tests must reject (normal approximation)
        return max(0.0, 2 * st.norm.cdf(tie_margin / se - st.t.ppf(1 - alpha, df)) - 1)
    ncp = abs(effect) / se
    got = float(st.nct.sf(q, df, ncp) + st.nct.cdf(-q, df, ncp))
    return got if math.isfinite(got) else _power_by_integral(q, df, ncp)


def _power_by_integral(q: float, df: int, ncp: float) -> float:
    """P(|T| > q) for T noncentral t, as the normal tail averaged over the chi-square of the variance:
    scipy's nct returns NaN for some (df, ncp) far in the tail, which read as 'no power'."""
    from scipy.integrate import quad
    from scipy.special import gammaln, ndtr, xlogy
    # st.norm.sf, st.norm.cdf and st.chi2.pdf by scipy's own formulas: the same values, without the argument
    # checks that cost ~0.1 ms at each of quad's hundreds of points
    f = lambda v: (ndtr(-(q * math.sqrt(v / df) - ncp)) + ndtr(-q * math.sqrt(v / df) - ncp)) \
        * np.exp(xlogy(df / 2. - 1, v) - v / 2. - gammaln(df / 2.) - (np.log(2) * df) / 2.)
    return min(1.0, max(0.0, quad(f, 0, math.inf, limit=200)[0]))


def family_size(metric: str, claims=None, source: str = "") -> int:
    """The claims in a metric's Holm family (zoo.evidence.claims.judge: one family per metric): the paper's, or a
    user spec's own claims (`source`, among `claims`)."""
    return sum(c.metric == metric and c.source == source for c in (claims if source else E.CLAIMS))


def seeds_needed(effect, seed_sd, sentence_se, alpha, tie_margin=0.0, cap=MAX_SEEDS) -> int | None:
    """The fewest seeds (2..cap) with 80% power; power rises with the seeds, so a bisection finds it."""
    ok = lambda n: power(effect, seed_sd, sentence_se, n, alpha, tie_margin) >= POWER
    if not ok(cap):
        return None
    lo, hi = 1, cap  # not ok(lo) (1 seed has no test), ok(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _spread(mc: tuple, n: int | None) -> bool:
    """Do the counts at both Monte Carlo ends span more than MC_SPREAD of the count (one end unreachable,
    the other not: yes)?"""
    lo, hi = mc
    if lo is None or hi is None:
        return (lo is None) != (hi is None)
    return hi - lo > MC_SPREAD * (n or hi)


@dataclass(frozen=True)
class Plan:
    needs: list[Need]
    have: dict[str, int]            # seeds each row has in the pilot
    hours: dict[str, float]         # mean hours per trial of each row in the pilot


def plan(runs: Runs, claims: list[E.Claim] | None = None, resamples: int = 2000, seed: int = E.BOOTSTRAP_SEED,
         refine: bool = True) -> Plan:
    """Seeds needed per claim, from the store's runs where two rows have 2+ seeds, else the prior. refine
    False: sized at `resamples` only (a power at a given seed count, with its Monte Carlo range, needs no more)."""
    claims = claims or E.CLAIMS
    rows = claim_rows(runs)
    hours = {}
    for row in rows:
        t = runs.pick(3, row)
        secs = [x.result.total_seconds or x.result.train_seconds for x in runs.seeds(t)]
        hours[row] = sum(secs) / len(secs) / 3600 if secs else 0.0
    resamplers: dict[tuple[int, int], E.Resampler] = {}  # drawn once per (sentences, resamples)

    def resampler(b: int):
        def get(n: int) -> E.Resampler:
            if (n, b) not in resamplers:
                resamplers[n, b] = E.Resampler(n, b, seed)
            return resamplers[n, b]
        return get

    def compare(c, b: int):
        if c.source:  # a user's claim: its rows by name in its spec (zoo.reports.verdicts.user_comparison)
            return user_comparison(runs, c, runs.profile, resampler(b))
        return comparison(runs, {runs.profile: rows}, c, resampler(b))

    out = []
    for c in claims:
        comp = compare(c, resamples)
        if c.source:
            rows.update({r: v for r, v in (comp.rows or {}).items() if r not in rows})
            for r, t in user_rows_of(runs, c, runs.profile).items():
                secs = [x.result.total_seconds or x.result.train_seconds for x in runs.seeds(t)] if t else []
                hours.setdefault(r, sum(secs) / len(secs) / 3600 if secs else 0.0)
        e, have = comp.estimate, min((len(rows.get(r) or []) for r in c.rows), default=0)
        if e is not None:
            seed_sd, source = e.seed_se * math.sqrt(min(e.seeds)), \
                f"pilot: {min(e.seeds)} seeds" + ("" if e.sentences else ", no sentence part")
            level = comp.level
        else:
            (seed_sd, sent_se), source, level = PRIOR[c.metric], "prior", None
        alpha = E.ALPHA / family_size(c.metric, claims if c.source else None, c.source)  # Holm's first step
        if c.source:  # no paper effect to carry over: the pilot's own difference (an optimistic guide)
            if e is None:
                out.append(Need(c, math.nan, seed_sd, sent_se, source, None, have, "a claim of yours is sized from "
                                "its pilot's difference: run 2+ seeds of both its rows first"))
                continue
            effect, margin = abs(e.delta), c.margin * abs(level) if c.tie else 0.0
        else:
            paper_level = paper.table3_row(c.worse)["bleu" if c.metric == "bleu" else "ppl"]
            # the paper's effect as a share of its row, at our row's level (the paper's own where we have none)
            effect = abs(c.paper_delta) / paper_level * abs(level if level else paper_level)
            margin = c.margin * abs(level if level else paper_level) if c.tie else 0.0
        mc, b, sent_mc = (None, None), 0, ()
        if e is not None:
            for factor in (1, *E.REFINE) if refine else (1,):  # sized again with more resamples while the bootstrap seed moves it
                if factor > 1:
                    e = compare(c, resamples * factor).estimate
                sent_se, b = e.sentence_se, e.resamples if e.sentences else 0
                n = seeds_needed(effect, seed_sd, sent_se, alpha, margin)
                sent_mc = tuple(e.moved(k).sentence_se for k in (-E.MC_RANGE, E.MC_RANGE)) if b else ()
                mc = tuple(seeds_needed(effect, seed_sd, x, alpha, margin) for x in sent_mc or (sent_se, sent_se))
                if not b or not _spread(mc, n):
                    break
        else:
            n = seeds_needed(effect, seed_sd, sent_se, alpha, margin)
        note = f"{E.UNTESTABLE}: {comp.untestable}" if comp.untestable else ""
        if n is None:  # the sentence part alone, at any number of seeds
            never = power(effect, 0.0, sent_se, 10 ** 6, alpha, margin) < POWER
            note = "; ".join(x for x in (note, f"not reachable in {MAX_SEEDS} seeds" + (
                ": the test set's own noise is too large for this effect" if never else "")) if x)
        out.append(Need(c, margin if c.tie else effect, seed_sd, sent_se, source, n, have, note, mc, b, sent_mc,
                        alpha, margin))
    return Plan(out, {r: len(v) for r, v in rows.items()}, hours)


def print_plan(p: Plan, stream=None) -> None:
    """One line per claim, then the cost: the extra trials per row (the most any of its claims needs)."""
    import sys
    stream, rows = stream or sys.stdout, p.needs
    print(f"Seeds per row for {POWER:.0%} power to find the paper's effect (as a share of the row's figure; "
          "for a claim of yours, the pilot's own difference, an optimistic guide) "
          f"at Holm's strictest level in the claim's family (alpha {E.ALPHA:g} / the claims on its metric: "
          + ", ".join(f"{m} {family_size(m)}" for m in ("ppl", "bleu")) + "):", file=stream)
    table = [("claim", "effect", "seed sd", "sent se", "source", "have", "need", "MC range", "resamples", "")]
    per_row: dict[str, int] = {}
    for r in rows:
        table.append((r.claim.id, f"{r.effect:.2f}", f"{r.seed_sd:.2f}", f"{r.sentence_se:.2f}", r.source, r.have,
                      "-" if r.seeds is None else r.seeds, _range(r.mc) if r.resamples else "",
                      f"{r.resamples:,}" if r.resamples else "", f"({r.note})" if r.note else ""))
        if r.seeds and not r.note:
            for row in r.claim.rows:
                per_row[row] = max(per_row.get(row, 0), r.seeds)
    print(text_table(table, right=(1, 2, 3, 4, 5, 6, 7, 8), last_free=True), file=stream)
    print(f"(MC range: the seeds needed at the test-set variance {E.MC_RANGE:g} Monte Carlo errors down and up, the "
          f"counts another bootstrap seed could give; a claim whose range spans more than {MC_SPREAD:.0%} of its count "
          f"at {RESAMPLES:,} resamples is sized again with {' then '.join(f'{RESAMPLES * f:,}' for f in E.REFINE)}.)",
          file=stream)
    extra = {row: max(n - p.have.get(row, 0), 0) for row, n in per_row.items()}
    trials = sum(extra.values())
    known = [h for h in p.hours.values() if h]
    mean = sum(known) / len(known) if known else 0.0
    hours = sum(n * (p.hours.get(row) or mean) for row, n in extra.items())
    print(f"Cost: {trials} more trials over {len(extra)} rows ("
          + ", ".join(f"{row} +{n}" for row, n in sorted(extra.items()) if n) + f"), about {hours:.1f} hours of "
          "trial time at the pilot's mean per-trial time (claims untestable at this budget and ones no seed count "
          "reaches left out).", file=stream)


def print_power_at(p: Plan, seeds: int, reference: str, stream=None) -> None:
    """Each claim's power at `seeds` seeds per row, with its Monte Carlo range, from a reference's noise."""
    import sys
    stream = stream or sys.stdout
    table = [("claim", "effect", "seed sd", "sent se", "noise from", f"power at {seeds}", "MC range", "")]
    for n in p.needs:
        if n.effect != n.effect:  # NaN: a claim of yours with no pilot difference
            table.append((n.claim.id, "-", "-", "-", n.source, "-", "", f"({n.note})"))
            continue
        mid, lo, hi = n.power_at(seeds)
        # the untestable reason only: a count's "not reachable" is the 80%-power sizing's, not this column's
        note = n.note.split("; not reachable")[0] if n.note.startswith(E.UNTESTABLE) else ""
        table.append((n.claim.id, f"{n.effect:.2f}", f"{n.seed_sd:.2f}", f"{n.sentence_se:.2f}", n.source,
                      f"{mid:.2f}", f"{lo:.2f}-{hi:.2f}" if n.resamples else "", f"({note})" if note else ""))
    print(f"Each claim's power at {seeds} seeds per row: the chance the report's test finds the paper's effect (as a "
          f"share of the row's figure) at Holm's strictest level in its family, with the seed and test-set noise of "
          f"{reference} (a CPU reference at its own proxy, until a GPU run measures its own; MC range: at the "
          f"test-set variance {E.MC_RANGE:g} Monte Carlo errors down and up):", file=stream)
    print(text_table(table, right=(1, 2, 3, 5, 6), last_free=True), file=stream)


def print_claims_power(cfgs: list, stream=None) -> None:
    """The power of each claim whose rows are all planned, at the plan's seeds, from REFERENCE's noise (a CPU
    reference at profile ablation's proxy, until a GPU run measures its own)."""
    import sys
    from zoo.reports import runs as runs_mod
    from zoo.runner.gpu_plan import ROOT
    store, profile = ROOT / REFERENCE[0], REFERENCE[1]
    rows = {c.paper.row for c in cfgs if c.paper and c.paper.row}
    claims = [c for c in E.CLAIMS if set(c.rows) <= rows]
    left = sorted({c.id for c in E.CLAIMS if set(c.rows) & rows} - {c.id for c in claims})
    if not claims:
        return
    seeds = min(sum(1 for c in cfgs if c.variant == v) for v in {c.variant for c in cfgs})
    sized = plan(runs_mod.load(store, profile), claims, refine=False)
    print_power_at(sized, seeds, f"{REFERENCE[0]} (profile {profile})", stream)
    if left:
        print(f"(not planned here, a row of theirs is not in this plan: {', '.join(left)})", file=stream or sys.stdout)


def _range(mc: tuple) -> str:
    lo, hi = ("-" if x is None else str(x) for x in mc)
    return lo if lo == hi else f"{lo}-{hi}"


def trend_slopes(runs: Runs, plan) -> list:
    """The slopes of a plan's `trend:` as the report fits them from the store (zoo.evidence.fit_trend)."""
    from zoo.reports.trend import d_models
    tr = plan.trend
    widths = d_models(runs, tr.profiles)
    rows = {p: {r: [E.Seeded(x.seed, x.nll_stats) for x in xs if x.nll_stats is not None]
                for r, xs in claim_rows(runs, p).items()} for p in tr.profiles if widths[p] is not None}
    return E.fit_trend(rows, widths, tr.comparisons, plan.alpha, plan.tie_margin, plan.resamples,
                       plan.bootstrap_seed)


def slope_power(slope, per_doubling: float, alpha: float) -> float | None:
    """A trend's power at the store's own noise: the chance the report's slope test (a t test on the slope's
    standard error with its Welch-Satterthwaite df, zoo.evidence.trend) finds a slope of `per_doubling` nats
    a doubling, with the se and df this store measured for `slope`; None where it has none."""
    if slope.se is None or not slope.se:
        return None
    q, ncp = st.t.ppf(1 - alpha / 2, slope.df), per_doubling / slope.se
    got = float(st.nct.sf(q, slope.df, ncp) + st.nct.cdf(-q, slope.df, ncp))
    return got if math.isfinite(got) else _power_by_integral(q, slope.df, ncp)


def main(argv=None) -> int:
    """python -m zoo.reports.power --runs STORE --analysis PLAN --per-doubling X [X ...]: a trend's power per
    comparison at the store's own seed and sentence noise (claims' seeds: `zoo run SPEC --plan --power`)."""
    import argparse
    import sys
    from zoo.reports.runs import load
    ap = argparse.ArgumentParser(prog="python -m zoo.reports.power", description=main.__doc__)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--analysis", required=True, help="the plan with the `trend:` the store ran under")
    ap.add_argument("--per-doubling", type=float, nargs="+", default=[0.03, 0.05])
    args = ap.parse_args(argv)
    from zoo.errors import UserError
    from zoo.runner.storefile import locate
    try:
        if not locate(args.runs).exists():
            raise UserError(f"--runs {args.runs}: no store there (nor {args.runs}.xz beside it)")
        plan = E.load_plan(args.analysis)
        if plan.trend is None:
            raise UserError(f"{args.analysis} has no trend: (its power per claim: zoo run SPEC --plan --power)")
        print(power_table(trend_slopes(load(args.runs), plan), plan, args.per_doubling))
    except UserError as e:  # one paragraph, exit 2, as every zoo command
        print(f"python -m zoo.reports.power: {e}", file=sys.stderr)
        return 2
    return 0


def power_table(slopes, plan, per_doubling) -> str:
    """Per comparison: its slope's se and df in the store, and the power at each slope of `per_doubling`
    at Holm's strictest level over the slopes (alpha / their number: the first step, the strictest)."""
    alpha = plan.alpha / len(plan.trend.comparisons)
    table = [("comparison", "slope se", "df", *(f"power at {x:g}" for x in per_doubling))]
    for s in slopes:
        got = [slope_power(s, x, alpha) for x in per_doubling]
        table.append((s.name, "-" if s.se is None else f"{s.se:.4f}", "-" if s.df is None else f"{s.df:.1f}",
                      *("-" if g is None else f"{g:.2f}" for g in got)))
    return text_table(table, right=tuple(range(1, len(per_doubling) + 3))) + (
        f"\n(a t test at Holm's strictest level over the {len(plan.trend.comparisons)} slopes, alpha "
        f"{plan.alpha:g} / {len(plan.trend.comparisons)}, on each slope's own standard error and degrees of "
        "freedom in the store)")


if __name__ == "__main__":
    raise SystemExit(main())
