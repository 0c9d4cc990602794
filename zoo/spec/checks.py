"""The checks a resolved spec passes beyond its fields' own types (zoo.config): its claims name rows there are,
its corpus and splits exist, its model components are installed, its `compare_to` names a row; and across its
trials: not too many, one seed axis, no two trials (or claimed rows) one model, ASHA able to stop one. Each
raises SpecError at the line written; zoo.spec.resolution runs them on every trial of a spec."""
from __future__ import annotations

import functools
import json
import logging
from collections.abc import Collection, Sequence

from zoo.config import ClaimSpec, Config
from zoo.paper import TABLE2, TABLE3, TABLE4
from zoo.spec.profiles import find_profile
from zoo.spec.specfile import Doc, SpecError, unknown_key
from zoo.spec.sweep_axes import Asha, count
from zoo.text import did_you_mean, shorten

__all__ = ["MAX_TRIALS", "PAPER_ROWS", "check_claims", "check_claims_apart", "check_compare_to", "check_components",
           "check_corpus", "check_grace", "check_one_seed", "check_paper_row", "check_same", "check_seed_axes",
           "check_size", "check_spec_claims", "say_once"]


# Trials one spec may make (variants x sweep points x seeds), checked by arithmetic before any is built.
# Every trial is resolved and validated before anything runs (about 1 ms each) and becomes a row in
# Ray Tune's driver and in the store; the paper's Tables 2-4 hold 41 rows, so 2000 is every row x 10
# seeds x a few sweep points. A larger study is several specs (each its own Tune experiment).
MAX_TRIALS = 2000
PAPER_ROWS = {2: [r[5] for r in TABLE2 if r[5]], 3: [r[0] for r in TABLE3], 4: [r[3] for r in TABLE4 if r[3]]}


def check_claims(doc: Doc, claims: Sequence[ClaimSpec], rows: Collection[str], what: str) -> None:
    """A `claims:` list's ids are unique and its rows are among `rows` (`what` says which those are). The
    paper's claims (specs/claims/paper.yaml) also: the ids `both: true` makes (<id>-bleu, <id>-ppl) are
    unique too, the rows their `needs:` name are among `rows`, and an `addon:` is a profile that exists."""
    rows, seen = sorted(set(rows)), {}
    for i, c in enumerate(claims):
        for made in ([x.id for x in c.expand()] if hasattr(c, "expand") else [c.id]):
            how = lambda j, of: "" if made == of else f" (`both: true` makes '{made}' of claims.{j}'s '{of}')"
            if made in seen:
                raise SpecError(doc.where(("claims", i, "id")), f"claims.{i}.id",
                                f"'{made}'{how(i, c.id)} is already the id of claims.{seen[made][0]}{how(*seen[made])}; "
                                "each claim needs its own")
            seen[made] = (i, c.id)
        _check_needs(doc, i, c, rows)
        for f, row in zip(("tie", "tie") if c.tie else ("better", "than"), c.rows):
            if row not in rows:
                raise SpecError(doc.where(("claims", i, f)), f"claims.{i}.{f}",
                                f"unknown row '{shorten(row)}': a claim compares {what}{did_you_mean(row, rows)}")


def _check_needs(doc: Doc, i: int, c: ClaimSpec, rows: list[str]) -> None:
    """A paper claim's preconditions name rows of the table, and its add-on profile is one zoo has."""
    for j, need in enumerate(getattr(c, "needs", ())):
        for f, row in ({"overfits": need.overfits} if need.overfits is not None else
                       {f"step_ratio.{k}": getattr(need.step_ratio, k) for k in ("longer", "shorter")}).items():
            if row not in rows:
                at = ("claims", i, "needs", j, *f.split("."))
                raise SpecError(doc.where(at), ".".join(map(str, at)),
                                f"unknown row '{shorten(row)}': a precondition names a row of the table{did_you_mean(row, rows)}")
    try:
        find_profile(getattr(c, "addon", "") or "paper")  # "paper": no add-on
    except SpecError as e:
        raise SpecError(doc.where(("claims", i, "addon")), f"claims.{i}.addon", e.message) from None


def check_spec_claims(doc: Doc, variants: Collection[str], cfgs: list[Config]) -> None:
    """A spec's claims name its variants, or rows of its paper table."""
    tables = sorted({c.paper.table for c in cfgs if c.paper.table in PAPER_ROWS})
    what = "this spec's variants" + "".join(f" and the paper's Table {t} rows" for t in tables)
    check_claims(doc, cfgs[0].claims, [*variants, *(r for t in tables for r in PAPER_ROWS[t])], what)


def check_corpus(doc: Doc, cfg: Config) -> None:
    """The corpus and splits exist in the registry (zoo.data.corpora: no torch there), so a typo fails here,
    not when the run starts."""
    from zoo.data import CORPORA
    name = cfg.data.dataset
    if name not in CORPORA:
        raise SpecError(doc.where(("data", "dataset")), "data.dataset",
                        unknown_key("corpus", name, CORPORA) + " (see `zoo data list`)")
    if CORPORA[name].tgt != "tree":  # parsing-only options on a translation corpus would fail or mislead later
        for field, value, set_ in (("data.target_vocab", cfg.data.target_vocab, "symbols"), ("eval.metric", cfg.eval.metric, "f1"),
                                   ("eval.tree_constraint", cfg.eval.tree_constraint, True),
                                   ("model.word_pointer", cfg.model.word_pointer, True)):
            if value == set_:
                raise SpecError(doc.where(tuple(field.split("."))), field,
                                f"{shorten(repr(value))} is for parsing (a corpus of trees, such as wsj_sample), but "
                                f"{name} is a translation corpus ({CORPORA[name].src}-{CORPORA[name].tgt}); remove it "
                                "or choose a parsing corpus")
    splits = CORPORA[name].split_choices()
    for field, split in ([("split", cfg.eval.split)] + [("extra_splits", x) for x in cfg.eval.extra_splits]
                         + [("ppl_splits", x) for x in cfg.eval.ppl_splits]):
        if split not in splits:
            raise SpecError(doc.where(("eval", field)), f"eval.{field}",
                            f"corpus {name} has no split '{split}'{did_you_mean(split, splits)}")


def check_components(doc: Doc, cfg: Config) -> None:
    """Each model component the config names is zoo's or an installed package's (zoo.config reads the
    packages' metadata: nothing is imported), so a misspelt one fails here with the names there are."""
    from zoo.model import FIELDS, component_names, component_problem  # the components' names (no torch)
    for kind, field in FIELDS.items():
        name, names = getattr(cfg.model, field), component_names(kind)
        if problem := component_problem(kind, name):
            raise SpecError(doc.where(("model", field)), f"model.{field}", problem)
        if name not in names:
            alike = "" if name.isascii() else " (it holds non-ASCII characters: a look-alike letter?)"
            raise SpecError(doc.where(("model", field)), f"model.{field}",
                            f"no {kind} component '{shorten(name)}'{alike}{did_you_mean(name, names)} (a package "
                            "adds one through the entry-point group zoo.components)")


def check_packing(doc: Doc, cfg: Config) -> None:
    """train.pack on needs positions added to the embeddings: the built-in rope and alibi act inside attention at
    the row's positions, the word pointer reorders the memory (a package's own positions: zoo.model.packing's
    why_not_packed, when the model is built)."""
    if cfg.train.pack != "on":
        return
    m = cfg.model
    if m.word_pointer:
        why = "model.word_pointer cannot take (it points at source positions of the whole row): set train.pack to off"
    elif m.positional_encoding in ("rope", "alibi"):
        why = (f"model.positional_encoding {m.positional_encoding} cannot take (it acts on the row's positions, not "
               "each sentence's): set train.pack to off, or use sinusoidal or learned positions")
    else:
        return
    raise SpecError(doc.where(("train", "pack")), "train.pack", f"on lays several sentences to a row, which {why}")


def check_compare_to(doc: Doc, cfg: Config, variants) -> None:
    """`paper: {compare_to: ROW}` names a variant of this spec or a row of the paper's table: a misspelt one
    would leave the row's comparison "not run" in every report."""
    name, table = cfg.paper.compare_to, cfg.paper.table or 3
    rows = [*variants, *PAPER_ROWS.get(table, [])]
    if name is not None and name not in rows:
        raise SpecError(doc.where(("paper", "compare_to")), "paper.compare_to",
                        f"no row '{shorten(name)}': a variant of this spec or a row of the paper's Table {table}"
                        f"{did_you_mean(name, rows)}")  # its "Allowed:" lists them all, once


# ----------------------------------------------------------------------------------------------
# Checks across a spec's trials: how many, their seeds, two that would train one model


def check_size(doc: Doc, variants: int, points: int, seeds: int) -> None:
    """Refuse a spec that makes more than MAX_TRIALS trials, from the counts alone (nothing built)."""
    n = variants * points * seeds
    if n <= MAX_TRIALS:
        return
    raw = doc.variants_from
    key = next((k for k in ("sweep", "seeds", "variants") if k in doc.data or k in raw.data), "variants")
    where = doc.where((key,)) if key in doc.data else raw.where((key,))
    many = lambda k, what: f"{count(k)} {what}" + ("" if k == 1 else "s")
    raise SpecError(where, key, f"makes {count(n)} trials ({many(variants, 'variant')} x {many(points, 'sweep point')} "
                    f"x {many(seeds, 'seed')}); at most {MAX_TRIALS:,} per spec: split the study into several specs, or sweep "
                    "fewer values")


def check_seed_axes(doc: Doc, axis: list[int] | None, cli: list[int] | None) -> None:
    """`train.seed` swept in `sweep:` and a seeds axis as well: the axis would overwrite every swept seed."""
    sw = doc.data.get("sweep")
    if axis is None or not isinstance(sw, dict):
        return
    for sec in ("grid", "random"):
        if isinstance(sw.get(sec), dict) and "train.seed" in sw[sec]:
            other = "--seeds" if cli is not None else "`seeds:`"
            raise SpecError(doc.where(("sweep", sec, "train.seed")), f"sweep.{sec}.train.seed",
                            f"the seed is swept here and also by {other}, which would overwrite every "
                            "swept value; keep one of the two")


def check_one_seed(doc: Doc, variants: dict, set_locs: dict, axis_at: str) -> None:
    """A variant's own `train.seed`, or `--set train.seed`, beside a seeds axis: the axis would overwrite it."""
    axis = "--seeds" if axis_at == "--seeds" else f"`seeds:` ({axis_at})"
    if ("train", "seed") in set_locs:
        raise SpecError(set_locs[("train", "seed")], "train.seed", f"the seed is set here and also by {axis}, "
                        "which would overwrite it; keep one of the two")
    for name, over in variants.items():
        if isinstance(over.get("train"), dict) and "seed" in over["train"]:
            raise SpecError(doc.variants_from.where(("variants", name, "train", "seed")), f"variants.{name}.train.seed",
                            f"the seed is set here and also by {axis}, which would overwrite it; keep one of the two")


def check_same(doc: Doc, cfg: Config, sized: dict, seen: dict) -> None:
    """Two trials of one variant and seed that train the same model: sweep values that differ as written
    but read the same (0, 0.0 and -0.0, or 1 and 1.0, in a float field). Compared as the fields read
    them, with -0.0 as 0.0 (equal, though it prints and hashes apart). Sizes a profile scales to one
    value (model.N 2 and 4 at depth 0.1) stay apart: the spec's own sweep, shrunk to a budget."""
    def plain(x):
        return {k: plain(v) for k, v in x.items()} if isinstance(x, dict) else [plain(v) for v in x] \
            if isinstance(x, list) else x + 0.0 if isinstance(x, float) else x  # -0.0 + 0.0 is 0.0
    body = cfg.model_dump(mode="json", include={"model", "data", "train", "eval", "resources"})
    first = seen.setdefault((cfg.variant, json.dumps([plain(body), plain(sized)], sort_keys=True)), cfg)
    if first is cfg:
        return
    field = next((k for k in cfg.overrides if repr(cfg.overrides[k]) != repr(first.overrides.get(k))), "sweep")
    value = functools.reduce(lambda o, p: getattr(o, p, None), field.split("."), cfg)
    at = next((("sweep", sec, field) for sec in ("grid", "random") if ("sweep", sec, field) in doc.locs), ("sweep",))
    raise SpecError(doc.where(at), ".".join(at), f"the trials {first.trial} and {cfg.trial} would train the same model: "
                    f"{shorten(repr(first.overrides.get(field)))} and {shorten(repr(cfg.overrides.get(field)))} "
                    f"both read as {shorten(repr(value))} in {field}; list each value once")


def check_claims_apart(doc: Doc, cfgs: list[Config], profile: str) -> None:
    """A claim between two variants the profile makes one model (model.N 2 and 4 both 1 layer at depth 0.1):
    a warning at the claim's line (smoke checks the path; the built-in specs' depth pairs merge there)."""
    first = {c.variant: c for c in reversed(cfgs)}  # each variant's first trial
    body = lambda c: json.dumps(c.model_dump(mode="json", include={"model", "data", "train", "eval"}), sort_keys=True)
    for i, claim in enumerate(cfgs[0].claims):
        a, b = (first.get(r) for r in claim.rows)
        if a is None or b is None or a is b or body(a) != body(b):
            continue
        written = sorted(k for k in {*a.overrides, *b.overrides} if a.overrides.get(k) != b.overrides.get(k))
        differ = "; ".join(f"{k} {shorten(repr(a.overrides.get(k)))} and {shorten(repr(b.overrides.get(k)))}" for k in written)
        say_once(f"{doc.where(('claims', i))}: claims.{i}: under profile {profile}, {a.variant} and {b.variant} train "
                 f"the same model ({differ or 'nothing differs'} as written, equal once the profile has scaled them), so "
                 f"the claim {claim.id} compares a model with itself here and its verdict means nothing; judge it under a "
                 "profile that keeps the rows apart (e.g. ablation)")


def check_paper_row(doc: Doc, paper: dict, ours: bool) -> None:
    """`paper_row: true` stands a row in for the paper's own: only a row the paper's table has."""
    rows = PAPER_ROWS.get(paper["table"], []) if isinstance(paper["table"], int) else []
    if paper.get("paper_row") is True and not ours and rows and paper.get("row") not in rows:
        raise SpecError(doc.where(("paper", "paper_row")), "paper.paper_row", f"true stands the row "
                        f"'{shorten(str(paper.get('row')))}' in for the paper's own, but the paper's Table "
                        f"{paper['table']} has no such row ({', '.join(rows)}); remove it (your row is then "
                        "shown as yours, after the paper's rows of its group) or name one of those rows")


def check_grace(doc: Doc, asha: Asha | None, cfgs: list[Config], profile: str) -> None:
    """ASHA's grace period below the trials' steps: else it would never stop a trial."""
    if asha is None or not cfgs or asha.grace_steps < max(c.train.steps for c in cfgs):
        return
    steps = max(c.train.steps for c in cfgs)
    raise SpecError(doc.where(("sweep", "scheduler", "asha", "grace_steps")), "sweep.scheduler.asha.grace_steps",
                    f"{asha.grace_steps} is not below the trials' {steps} steps (profile {profile}), "
                    f"so ASHA would never stop a trial; set it below {steps} (e.g. {max(1, steps // 8)}) or "
                    "remove the scheduler")


@functools.lru_cache(maxsize=None)
def say_once(note: str) -> None:
    """A warning said once per process (a profile's corpus choice, two rows one model)."""
    logging.getLogger(__name__).warning("profile: %s", note)
