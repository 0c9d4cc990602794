"""The analysis plan: how a reference's claims will be judged, written down before its first trial.

A plan file (YAML, read under the spec rules of zoo.spec.yaml12) names the primary metric and its family,
the secondary metrics (each its own family), the test, the level, the tie margin, the seeds each row gets
and how many looks `--until-resolved` may take. `zoo run --analysis PLAN` stores the plan's hash with every
trial it creates; `zoo report --analysis PLAN` judges with it and calls a claim post hoc when one of its
rows' trials ran under no plan or under another one (a plan edited after the runs is another plan).

The hash is of the plan as validated (canonical JSON), not of its text: a comment or a re-ordered key does
not change the analysis, a changed level or margin does. A field added after plans existed (`ADDED_LATER`)
is left out while it holds its default, so adding it leaves every earlier plan's hash (and its trials'
standing) as it was.

A plan may hold a `trend:` (the scale trend, zoo.evidence.trend): the same comparisons at several widths, one profile
per width, and whether each comparison's effect moves toward the paper's as the model grows.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from zoo.spec import SpecError, read_yaml
from zoo.text import did_you_mean, shorten

__all__ = ["AnalysisPlan", "claim_post_hoc", "load_plan", "post_hoc"]  # what it lends outside its package (the door serves these)

Metric = Literal["ppl", "bleu"]
ADDED_LATER = {"trend": None}  # field -> its default (left out of the hash while it holds it)


class Trend(BaseModel):
    """The scale trend: each comparison's relative difference at each width, and its slope over log2(d_model)."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    profiles: dict[str, int] = Field(description=(
        "profile -> seeds per row, narrowest width first; each profile is one width (its base row's d_model)"))
    comparisons: dict[str, tuple[str, str]] = Field(description=(
        "name -> [better, worse]: two Table 3 rows, the paper's better one first (a tie: either order)"))
    metric: Literal["log-ppl"] = Field(
        "log-ppl", description="the relative difference: log(PPL worse / PPL better) on every held-out sentence "
                               "the trials scored (nats per token; about the relative difference in perplexity)")
    estimate: Literal["ols-log2-width"] = Field(
        "ols-log2-width", description="the slope: least squares of the per-width differences on log2(d_model), "
                                      "equal weight per width (with 3 evenly spaced widths: half the outer difference)")
    direction: Literal["from-centre"] = Field(
        "from-centre", description="toward the paper: the slope's sign is that of the paper's difference minus the "
                                   "fitted line at the widths' centre, and its Holm-adjusted p (over the comparisons) "
                                   "is below alpha; the opposite sign so: away; else: can't tell")

    @field_validator("profiles")
    @classmethod
    def _widths(cls, v):
        if not 2 <= len(v) <= 8:
            raise ValueError("a trend needs 2-8 widths (profiles)")
        if any(not 2 <= n <= 100 for n in v.values()):
            raise ValueError("a width's seed count is 2-100")
        return v

    @field_validator("comparisons")
    @classmethod
    def _rows(cls, v):
        from zoo import paper
        rows = [r[0] for r in paper.TABLE3]
        for name, pair in v.items():
            bad = [r for r in pair if r not in rows]
            if bad or pair[0] == pair[1]:
                raise ValueError(f"comparison {name}: two different Table 3 rows ({', '.join(rows)}), got {list(pair)}")
        return v


class AnalysisPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=100, description="the reference this plan is for")
    primary: Metric = Field("ppl", description="the metric whose family decides: Holm over its claims")
    secondary: tuple[Metric, ...] = Field(("bleu",), description="reported too, each metric its own Holm family")
    test: Literal["bootstrap-t"] = Field(
        "bootstrap-t", description="zoo.evidence.stats: the per-seed differences' t interval, seed variance plus the "
                                   "test-set noise shared by all seeds (a bootstrap over sentences)")
    correction: Literal["holm"] = "holm"
    alpha: float = Field(0.05, gt=0, le=0.5, description="the family-wise level of each family")
    tie_margin: float = Field(0.015, gt=0, lt=1, description="a tie's equivalence margin, relative to the worse row")
    claims: tuple[str, ...] = Field((), description="the claim ids of the family; empty: every claim whose rows ran")
    seeds: dict[str, int] = Field(default_factory=dict, description="seeds per row (row name -> count)")
    max_looks: int = Field(1, ge=1, le=100, description="the looks --until-resolved may take (1: a fixed design)")
    bootstrap_seed: int = Field(2017, ge=0, lt=2**32)
    resamples: int = Field(10_000, ge=100, le=1_000_000)
    trend: Trend | None = Field(None, description="the scale trend (zoo.evidence.trend), when the reference runs "
                                                  "several widths")

    @field_validator("secondary")
    @classmethod
    def _no_repeat(cls, v, info):
        if len(set(v)) != len(v) or info.data.get("primary") in v:
            raise ValueError("each metric once, and not the primary one")
        return v

    @field_validator("seeds")
    @classmethod
    def _counts(cls, v):
        if any(not 2 <= n <= 100 for n in v.values()):
            raise ValueError("a row's seed count is 2-100 (2 is the fewest that can give a verdict)")
        return v

    def hash(self) -> str:
        """The plan's identity: sha256 of its canonical JSON, 16 hex digits."""
        dump = self.model_dump(mode="json")
        for k, default in ADDED_LATER.items():
            if dump[k] == default:
                del dump[k]
        text = json.dumps(dump, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def families(self) -> dict[Metric, str]:
        """Each metric's family, as a report names it."""
        return {self.primary: "primary", **{m: "secondary" for m in self.secondary}}


def load_plan(path: str | Path, rows: Collection[str] | None = None,
              claims: Collection[str] | None = None) -> AnalysisPlan:
    """A plan file, validated; a mistake is a SpecError at file:line naming the field. With `rows` and
    `claims` (the rows and claim ids a run can know), a row in `seeds:` or an id in `claims:` that is none
    of them is refused too: it would be judged as "not run" forever, or the family would silently shrink."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(str(path), "", "no such analysis plan file")
    doc = read_yaml(path)
    try:
        plan = AnalysisPlan.model_validate(doc.data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(str(x) for x in err["loc"])
        where = doc.where(loc)
        allowed = "" if err["type"] != "extra_forbidden" else \
            f" (a plan holds: {', '.join(AnalysisPlan.model_fields)})"
        raise SpecError(where, ".".join(loc), err["msg"] + allowed) from None
    for field, names, known, what in (("seeds", list(plan.seeds), rows, "rows"), ("claims", plan.claims, claims, "claims")):
        for i, name in enumerate(names):
            if known is not None and name not in known:
                at = (field, name) if field == "seeds" else (field, i)
                raise SpecError(doc.where(at), f"{field}.{name if field == 'seeds' else i}",
                                f"no {what[:-1]} '{shorten(name)}': a plan names {what} of the paper's Table 3, of "
                                f"zoo's built-in specs or of the spec it runs with{did_you_mean(name, sorted(known))}")
    return plan


def post_hoc(plan: AnalysisPlan | None, stored: list[str | None]) -> str:
    """Why a claim judged under `plan` is post hoc, given the plan hashes its rows' trials ran under ("" if not)."""
    if plan is None:
        return ""
    if not stored or any(h is None for h in stored):
        return "post hoc: some of its trials ran under no analysis plan"
    if set(stored) != {plan.hash()}:
        return f"post hoc: its trials ran under another plan ({', '.join(sorted(set(stored)))}, not {plan.hash()})"
    return ""


def claim_post_hoc(plan: AnalysisPlan | None, comparison) -> str:
    """Why a measured claim (a zoo.evidence.claims.Comparison) is post hoc under `plan`, from the plan hashes
    its rows' trials ran under ("" if not, or not measured): the paper's claims and a spec's own alike."""
    if plan is None or comparison.estimate is None:
        return ""
    return post_hoc(plan, [x.analysis for r in comparison.claim.rows for x in (comparison.rows or {}).get(r, [])])
