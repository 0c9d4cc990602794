"""The group-sequential boundary of `zoo run --until-resolved`: the level each look tests at.

`--until-resolved` judges the claims after every round and adds a seed to the rows of those still
open, so a claim may be tested at every seed count from the first round's to --max-seeds. Testing
each of those looks at 5% lets a null difference cross by chance at one of them far more often than
5% (seeds 2 to 10 at 5% each: about 19% with seed noise alone, tests/test_sequential.py). So the
number of looks is fixed before the run (looks = max_seeds - first_seeds + 1) and the 5% is spent
over them: look j tests at

    level_j = spent(t_j) - spent(t_{j-1}),    t_j = seeds at look j / max_seeds,    spent(0) = 0

where `spent` is a Lan-DeMets alpha-spending function (O'Brien-Fleming-type by default). The levels
sum to alpha, and the chance of any false verdict over all the looks is at most their sum (the union
bound), whatever the dependence between looks.

Why the union bound rather than the classical boundaries (which solve for the correlation of the
looks and so give each look a little more): those are computed for z statistics with independent
increments, and what a look tests is none of that: a t statistic on 1 to 9 degrees of freedom from
a bootstrap standard error with a sentence part, inside a Holm family of claims, on rows whose seeds
were added because some claim resting on them was still open. The union bound needs none of it: a
false verdict at look j is a false finding of that look's Holm family at level_j on the seeds up to
that look, and that test, taken on its own, errs with probability at most level_j, whether or not the
earlier looks let the run get there. In simulation (paired seeds 2..10, a null
difference) it gives about 2.6% false verdicts where exactly calibrated boundaries would give 5%.

Why O'Brien-Fleming-type spending: with 2 or 3 seeds a t statistic has 1 or 2 degrees of freedom,
and its critical value at any small level is so large (df 1 at 0.5%: t > 127) that a look there
decides only enormous differences; alpha spent there is mostly wasted. O'Brien-Fleming-type spending
keeps nearly all of it for the later looks, where it buys power: with seeds 2..10 and a paired effect
of 1 seed standard deviation it decides 58% of claims, against 48% for Bonferroni's equal split and
40% for Pocock-type spending, for the same expected seeds.
"""
from __future__ import annotations

import itertools
import math
from statistics import NormalDist
from typing import Callable, Sequence

__all__ = ["describe_boundary", "levels", "looks", "seed_order"]  # what it lends outside its package (the door serves these)

ALPHA = 0.05
_N = NormalDist()

Spending = Callable[[float, float], float]  # (information fraction t in [0, 1], alpha) -> alpha spent by t


def obrien_fleming(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: 2 - 2 Phi(z_{alpha/2} / sqrt(t)); little early, most late."""
    if t <= 0:
        return 0.0
    return min(alpha, 2 * (1 - _N.cdf(_N.inv_cdf(1 - alpha / 2) / math.sqrt(min(t, 1.0)))))


def pocock(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets Pocock-type spending: alpha ln(1 + (e - 1) t); more early."""
    return alpha * math.log(1 + (math.e - 1) * min(max(t, 0.0), 1.0))


def linear(t: float, alpha: float = ALPHA) -> float:
    """Linear spending, alpha t: the first look spends its share of the seeds, each later one alpha / max_seeds
    (close to Bonferroni's equal split over the looks)."""
    return alpha * min(max(t, 0.0), 1.0)


SPENDING: dict[str, Spending] = {"obrien-fleming": obrien_fleming, "pocock": pocock, "linear": linear}
DEFAULT = "obrien-fleming"


def looks(first_seeds: int, max_seeds: int) -> int:
    """How many looks a run from `first_seeds` seeds, one more per round, up to `max_seeds` may take."""
    if not 1 <= first_seeds <= max_seeds:
        raise ValueError(f"needs 1 <= first_seeds ({first_seeds}) <= max_seeds ({max_seeds})")
    return max_seeds - first_seeds + 1


def seed_order(named: Sequence[int], max_seeds: int) -> list[int]:
    """The seeds of `--until-resolved`'s rounds, in order (round k runs the first k): the seeds the spec names
    (its `seeds:`, the profile's, or --seeds), then new ones past the largest, up to `max_seeds` in all. The
    named seeds are the first look, so `max_seeds` below their number is refused: a look at fewer would
    silently drop some."""
    named = list(dict.fromkeys(named))
    if not named:
        raise ValueError("a first round needs at least one seed")
    if max_seeds < len(named):
        raise ValueError(f"--max-seeds {max_seeds} is below the {len(named)} seeds the first round runs "
                         f"({', '.join(map(str, named))}): give --max-seeds {len(named)} or more, or name fewer seeds")
    top = max(named)  # past the largest; below it only when that reaches a seed's bound, 2^32
    fresh = (s for s in itertools.chain(range(top + 1, 2**32), range(top)) if s not in named)
    return named + list(itertools.islice(fresh, max_seeds - len(named)))


def levels(first_seeds: int, max_seeds: int, alpha: float = ALPHA, spending: str | Spending = DEFAULT
           ) -> tuple[float, ...]:
    """The level each look tests at, in order (the look at first_seeds + j seeds is index j): the alpha
    spent between it and the look before. They sum to alpha; a single look tests at alpha."""
    spend = SPENDING[spending] if isinstance(spending, str) else spending
    n = looks(first_seeds, max_seeds)
    spent = [0.0] + [spend((first_seeds + j) / max_seeds, alpha) for j in range(n)]
    spent[-1] = alpha  # t = 1 spends it all (exactly, not up to rounding)
    return tuple(max(b - a, 0.0) for a, b in zip(spent, spent[1:]))


def level(seeds: int, first_seeds: int, max_seeds: int, alpha: float = ALPHA,
          spending: str | Spending = DEFAULT) -> float:
    """The level of the look at `seeds` seeds."""
    if not first_seeds <= seeds <= max_seeds:
        raise ValueError(f"no look at {seeds} seeds (looks run from {first_seeds} to {max_seeds} seeds)")
    return levels(first_seeds, max_seeds, alpha, spending)[seeds - first_seeds]


def describe_boundary(first_seeds: int, max_seeds: int, alpha: float = ALPHA, spending: str = DEFAULT) -> str:
    """One line for the terminal: the boundary, before the run starts."""
    n = looks(first_seeds, max_seeds)
    ls = levels(first_seeds, max_seeds, alpha, spending)
    return (f"{n} look{'s' * (n != 1)} ({first_seeds} to {max_seeds} seeds), {alpha:g} spent over them "
            f"({spending} spending): levels " + ", ".join(f"{x:.2g}" for x in ls))
