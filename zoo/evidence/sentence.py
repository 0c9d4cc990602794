"""A judged claim, or a comparison of two rows, as one sentence ready to paste into a paper or a chat:

    C5 beats C4 by 12.54 PPL [10.97, 14.10], paired over 6 seeds, Holm-adjusted p 4.52e-05.
    C1 beats C3 by 14.58 PPL [9.37, 19.78], paired over 3 seeds, Holm-adjusted p 0.0341: flipped (the paper has C3 ahead).

The effect is named from the side the runs favour (the row ahead "beats" the other only where the verdict
found a difference, else it "leads"), in the metric's units (perplexity: lower is better), with its 95%
interval, the seeds (or Welch's unpaired test, said so), the correction, and the verdict unless it held;
a verdict that decides nothing says "no verdict" in words.
"""
from __future__ import annotations

from zoo.evidence.claims import UNTESTABLE

__all__ = ["say", "say_versus"]  # what it lends outside its package (the door serves these)

UNIT = {"ppl": "PPL", "bleu": "BLEU"}
FOUND = ("held", "flipped", "different")  # the verdicts that find a difference between the rows
DECIDED = FOUND + ("equivalent",)  # any other (within noise, inconclusive, one added later) decides nothing


def effect(e, metric: str, first: str, second: str, found: bool) -> str:
    """"A beats B by 2.36 PPL [1.79, 2.94]": `e` is first minus second in goodness (positive: first is
    better), turned so the row ahead speaks and the interval reads in the same direction."""
    sign = 1 if e.delta >= 0 else -1
    ahead, behind = (first, second) if sign > 0 else (second, first)
    lo, hi = sorted((sign * e.lo, sign * e.hi))
    verb = "beats" if found else "leads"
    return f"{ahead} {verb} {behind} by {sign * e.delta:.2f} {UNIT[metric]} [{lo:.2f}, {hi:.2f}]"


def seeds(e) -> str:
    """"paired over 3 seeds", or the unpaired test with each row's seed count."""
    a, b = e.seeds
    return f"paired over {a} seeds" if e.paired else f"Welch's unpaired test over {a} and {b} seeds"


def say(v, note: str = "") -> str:
    """One sentence for a judged claim (zoo.evidence.claims.Verdict); `note` (e.g. "post hoc") is added in
    brackets before the verdict."""
    c, e = v.claim, v.estimate
    extra = f" ({note})" if note else ""
    if e is None:  # not run, cut short, too few seeds: nothing measured
        return f"{c.better} against {c.worse} on {UNIT[c.metric]}{extra}: no verdict ({v.verdict})."
    head = f"{effect(e, c.metric, c.better, c.worse, v.verdict in FOUND)}, {seeds(e)}"
    if c.tie and v.comparison.margin is not None:  # a tie is judged against its margin: say it
        head += f", margin ±{v.comparison.margin:.2f} ({100 * c.margin:g}% of {c.worse})"
    if v.verdict == UNTESTABLE:
        why = v.reason.split("; ")[0]
        return f"{head}, in no Holm family{extra}: {UNTESTABLE} ({why}), no verdict."
    tail = (f", Holm-adjusted p {v.p_holm:.3g}" if v.p_holm is not None else "") + extra
    if v.verdict == "held":
        return f"{head}{tail}."
    if v.verdict == "flipped":
        return f"{head}{tail}: flipped (the paper has {c.better} ahead)."
    if v.verdict in DECIDED:  # a tie's equivalent or different
        return f"{head}{tail}: {v.verdict}."
    return f"{head}{tail}: {v.verdict}, no verdict."


def say_versus(a: str, b: str, metric: str, e, alpha: float = 0.05, untestable: str = "") -> str:
    """One sentence for `zoo compare A B`: one comparison, no claim and no family (p unadjusted); `e` is
    A minus B in goodness (zoo.reports.verdicts.versus); `untestable`: why no verdict can be given at all."""
    found = e.p < alpha and not untestable
    verdict = f": {UNTESTABLE} ({untestable}), no verdict" if untestable else "" if found else ": within noise, no verdict"
    return f"{effect(e, metric, a, b, found)}, {seeds(e)}, p {e.p:.3g} (one comparison, unadjusted){verdict}."
