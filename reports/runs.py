"""What the report knows about runs: the results store's trials, one chosen per paper row, and the
paper specs' own configs for rows that have not run.

A trial is keyed by (spec, variant, profile); several profiles can sit in one store. Per paper row
the report shows the most recent finished trial (optionally of one profile); with none finished, the
most recently updated one, so a running or failed row says so instead of vanishing.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from zoo.errors import UserError
from zoo.result import Point, Trial
from zoo.runner.store import Store, open_store
from zoo.runner.storefile import locate
from zoo.config import Config
from zoo.spec import specs_dir

SPECS = specs_dir()
BUILTIN = frozenset(p.stem for p in SPECS.glob("*.yaml"))


@functools.cache
def table_specs(table: int) -> tuple[str, ...]:
    """The built-in specs of one paper table: each spec says so itself (`paper: {table: N}`, maybe
    inherited through extends), so a new spec file joins its table without a code change."""
    from zoo.spec import load_file
    return tuple(p.stem for p in sorted(SPECS.glob("*.yaml"))
                 if ((load_file(p).data.get("paper") or {}).get("table")) == table)


CSV_SCORES = ("bleu", "bleu_tokenized", "f1", "f1_len40", "eval_sentences")  # per scored split


@dataclass
class Runs:
    path: Path
    store: Store | None = None
    trials: list[Trial] = field(default_factory=list)
    profile: str | None = None
    note: str = ""          # why the store is empty, when it is
    addons: tuple[str, ...] = ()  # profiles read for the claims only (a longer budget for some rows)

    @property
    def profiles(self) -> tuple[str | None, ...]:
        """The main profile (None: any), then the add-ons, in the order given."""
        return (self.profile, *self.addons)

    def pick(self, table: int, row: str, group: str | None = None, profile: str | None = None) -> Trial | None:
        """The trial shown for one paper row: of the paper's own specs only (a user's row never stands in
        its place), most recent finished, else most recently updated; of `profile`, else of the main
        profile when add-ons are loaded (tables show the main profile)."""
        return _latest(self.claimants(table, row, group, profile))

    def claimants(self, table: int, row: str, group: str | None = None, profile: str | None = None) -> list[Trial]:
        """The paper-row trials that could stand for one paper row (of any spec that is the paper's)."""
        want = profile or (self.profile if self.addons else None)
        return [t for t in self.trials if t.paper_table == table and (t.paper_row or t.variant) == row
                and is_paper(t) and (group is None or t.paper_group == group) and (want is None or t.profile == want)]

    def user_rows(self, table: int, profile: str | None = None) -> list[Trial]:
        """The user's rows in a paper table: one trial per (spec, variant) of a spec that is not the paper's
        (most recent finished, else most recently updated), in the order they were first created."""
        want = profile or self.profile
        by_row: dict[tuple, list[Trial]] = {}
        for t in self.trials:
            if t.paper_table == table and not is_paper(t) and (want is None or t.profile == want):
                by_row.setdefault((t.spec, t.variant, t.profile), []).append(t)
        rows = [(min(x.created_at or 0 for x in ts), _latest(ts)) for ts in by_row.values()]
        return [t for _, t in sorted(rows, key=lambda r: (r[0], r[1].spec, r[1].variant))]

    def row_of(self, spec: str, variant: str, profile: str | None = None) -> Trial | None:
        """One user row's trial: `variant` of `spec`, of `profile` (default: any)."""
        return _latest([t for t in self.trials if t.spec == spec and t.variant == variant
                        and (profile is None or t.profile == profile)])

    def seeds(self, t: Trial | None) -> list[Trial]:
        """The finished trials that differ from `t` only in their seed (a seeds axis), `t` included."""
        if not t or not t.finished:
            return []
        by_seed: dict = {}  # one per seed: the most recent (a run before the seeds axis may repeat seed 1)
        for x in self._recipes.get(self._recipe(t), []):
            if x.seed not in by_seed or (x.finished_at or 0) > (by_seed[x.seed].finished_at or 0):
                by_seed[x.seed] = x
        return list(by_seed.values())

    @staticmethod
    def _recipe(x: Trial) -> tuple:
        """What a trial is apart from its seed: spec, profile and config without trial name and seed."""
        # the spec's claims are a label: editing one does not make its seeds another recipe
        c = x.config.model_dump(mode="json", exclude={"trial": True, "claims": True, "train": {"seed"}}) \
            if x.config else {}
        if c:
            c["overrides"].pop("train.seed", None)  # a seeds axis records the seed there too
        return x.spec, x.profile, json.dumps(c, sort_keys=True)

    @functools.cached_property
    def _recipes(self) -> dict[tuple, list[Trial]]:
        """The finished trials grouped by recipe, each config dumped once (not once per row asked)."""
        out: dict[tuple, list[Trial]] = {}
        for x in self.trials:
            if x.finished:
                out.setdefault(self._recipe(x), []).append(x)
        return out

    def csv(self) -> str:
        """Every trial as one CSV row, sorted and rounded so two reports diff line by line (as timm
        keeps its results tables): what ran, how far, and each scored split's headline figures."""
        rows = []
        for t in sorted(self.trials, key=lambda t: (Path(t.spec).stem, t.trial, t.profile)):
            m = t.result
            # "variant" holds the trial's name, as this file's column always has (two reports diff)
            row = {"spec": Path(t.spec).stem, "variant": t.trial, "profile": t.profile, "seed": t.seed,
                   "status": t.status.value, "steps_done": m.steps_done if m else t.step, "steps": t.steps,
                   "dev_ppl": m and m.dev_ppl, "tokens_seen": t.tokens_seen,
                   "train_seconds": t.train_seconds, "config_hash": t.config_hash}
            for split, scores in sorted((m.splits if m else {}).items()):
                row |= {f"{split}_{k}": v for k in CSV_SCORES if (v := getattr(scores, k)) is not None}
            rows.append(row)
        header = list(dict.fromkeys(k for r in rows for k in r))
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(header)
        for k in header:  # a column whose numbers are all whole prints them as integers, the others to 3 places
            nums = [v for r in rows if isinstance(v := r.get(k), float) and not math.isnan(v)]
            whole = all(v.is_integer() for v in nums)
            for r in rows:
                v = r.get(k)
                r[k] = "" if v is None or (isinstance(v, float) and math.isnan(v)) else \
                    (str(int(v)) if whole else repr(round(float(v), 3))) if isinstance(v, (int, float)) else v
        w.writerows([r[k] for k in header] for r in rows)
        return out.getvalue()

    def points(self, t: Trial) -> list[Point]:
        return self.store.points(*t.key) if self.store else []


def _latest(ts: list[Trial]) -> Trial | None:
    """Most recent finished, else most recently updated."""
    done = [t for t in ts if t.finished]
    if done:
        return max(done, key=lambda t: t.finished_at or t.updated_at or 0)
    return max(ts, key=lambda t: t.updated_at or 0, default=None)


def is_paper(t: Trial) -> bool:
    """Whether a trial's row is the paper's own (its built-in spec, or a spec that says `paper_row: true`),
    not a user's row that names a paper group. Trials recorded before zoo told them apart: by their spec
    file, a built-in spec's name in a `specs/` folder."""
    recorded = t.config.paper.paper_row if t.config else None
    if recorded is not None:
        return recorded
    spec = Path(t.spec)
    return spec.parent.name == "specs" and spec.stem in BUILTIN


def whose(t: Trial) -> str:
    """Whose a row is that is not the paper's: zoo's own (a built-in spec beyond the paper) or the user's."""
    spec = Path(t.spec)
    return "beyond the paper" if spec.parent.name == "specs" and spec.stem in BUILTIN else "yours"


def load(path: str | Path, profile: str | None = None, addons: tuple[str, ...] = ()) -> Runs:
    """Read the store; a missing or empty file is an empty store, a non-SQLite file a UserError.
    `addons`: profiles whose runs the claims may read too (they need a main `profile`)."""
    path = Path(path)
    addons = tuple(dict.fromkeys(a for a in addons if a != profile))
    if addons and not profile:
        raise UserError("--addon needs --profile: the add-ons lengthen the budget of the main profile's rows")
    if not locate(path).exists():  # path as given (pages name it), its compressed form read as it
        return Runs(path, profile=profile, note=f"no results store at {path}: nothing has run yet", addons=addons)
    if path.is_file() and path.stat().st_size == 0:
        return Runs(path, profile=profile, note=f"{path} is empty: nothing has run yet", addons=addons)
    store = open_store(path)  # raises UserError for a file that is not a zoo store (/dev/null, another tool's)
    trials = [t for p in (profile, *addons) for t in store.trials(profile=p)] if profile else store.trials()
    note = "" if trials else f"{path} holds no trials" + (f" of profile {profile}" if profile else "")
    return Runs(path, store, trials, profile, note, addons)


def paper_configs(stems: tuple[str, ...]) -> dict[tuple, Config]:
    """The paper specs resolved as written, keyed by (group, row): what a row means before it runs."""
    out = {}
    from zoo.spec import resolve  # here: at the top it would take the whole spec language into the chain
    for stem in stems:
        path = SPECS / f"{stem}.yaml"
        if path.exists():
            for c in resolve(path, profile="paper"):
                out[(c.paper.group, c.paper.row)] = c
    return out
