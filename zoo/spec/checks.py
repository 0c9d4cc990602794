"""The checks a resolved spec passes beyond its fields' own types (zoo.config): its claims name rows there are,
its corpus and splits exist, its model components are installed, its `compare_to` names a row. Each raises
SpecError at the line written; zoo.spec.resolution runs them on every trial of a spec."""
from __future__ import annotations

from collections.abc import Collection, Sequence

from zoo.config import ClaimSpec, Config
from zoo.paper import TABLE2, TABLE3, TABLE4
from zoo.spec.profiles import find_profile
from zoo.spec.specfile import Doc, SpecError, unknown_key
from zoo.text import did_you_mean, shorten

__all__ = ["PAPER_ROWS", "check_claims", "check_compare_to", "check_components", "check_corpus", "check_spec_claims"]


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


def check_compare_to(doc: Doc, cfg: Config, variants) -> None:
    """`paper: {compare_to: ROW}` names a variant of this spec or a row of the paper's table: a misspelt one
    would leave the row's comparison "not run" in every report."""
    name, table = cfg.paper.compare_to, cfg.paper.table or 3
    rows = [*variants, *PAPER_ROWS.get(table, [])]
    if name is not None and name not in rows:
        raise SpecError(doc.where(("paper", "compare_to")), "paper.compare_to",
                        f"no row '{shorten(name)}': a variant of this spec or a row of the paper's Table {table}"
                        f"{did_you_mean(name, rows)}")  # its "Allowed:" lists them all, once
