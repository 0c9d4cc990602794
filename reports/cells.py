"""What every report table shares: typed rows and the columns that print them, a row's state, a paper
row's run read once (its trial, result and seeds), and the notes on profiles and decoding.

A table is a list of typed rows, one dataclass per table. A field made with `col(...)` is also a
column, in field order: its header, whose figure it is (its group: spec, paper, measured, cost,
run, ...), how a number prints and how it aligns. Rows hold raw values (None where there is nothing);
the markdown and HTML pages, the figures and model-index.yml read the same rows and print a value
through its Column, so one cell says the same thing everywhere.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from zoo.model import SEQ_LEN, train_flops_per_step
from zoo.config import Config, noam_lr
from zoo.errors import UserError
from zoo.result import RunResult, Trial, TrialStatus, differs
from zoo.spec import profile_description, specs_dir


# -- how a number prints --------------------------------------------------------------------------

def plain(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def sci(v: float) -> str:
    """3.28e18 -> '3.3e18': two significant digits, the paper's style."""
    m, e = f"{v:.1e}".split("e")
    return f"{m}e{int(e)}"


def pct(v: float) -> str:
    return f"{100 * v:.2g}%" if v < 0.1 else f"{100 * v:.0f}%"


def p_value(v: float) -> str:
    return "<1e-4" if v < 1e-4 else f"{v:.2g}"


def shown_path(p: str | os.PathLike | None) -> str:
    """A path the store recorded (a spec, a store), as the reader of a page or a command standing in the working
    directory uses it: relative to it where it is below it or at most two folders up, a built-in spec by its name
    (`base`, as `zoo run base` takes it), else as recorded. A relative path is shown as given."""
    if p is None or not os.path.isabs(p):
        return "" if p is None else str(p)
    here = os.getcwd()
    rel = os.path.relpath(p, here)
    if not rel.startswith(".."):
        return rel
    if os.path.dirname(os.path.abspath(p)) == str(specs_dir().resolve()) and str(p).endswith(".yaml"):
        return os.path.basename(str(p))[:-len(".yaml")]
    return rel if rel.split(os.sep).count("..") <= 2 else str(p)


# -- columns and tables ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One column: the row field it shows, its header, and how a value prints."""
    key: str
    header: str
    group: str = ""                               # the header above it: whose figure (paper, measured, ...)
    fmt: str | Callable[[Any], str] = plain       # a number's format string, or a function
    align: str = "num"                            # "num" (right) or "text"
    nan: str = ""                                 # what an undefined number (NaN) prints as
    get: Callable[[Any], Any] | None = None       # how to read it, where not the field `key`

    def value(self, row):
        return self.get(row) if self.get else getattr(row, self.key)

    def text(self, v) -> str:
        """A raw value as its cell says it: '' for nothing, a string as it is, a number formatted."""
        if v is None:
            return ""
        if isinstance(v, float) and math.isnan(v):
            return self.nan
        if isinstance(v, str):
            return v
        return self.fmt(v) if callable(self.fmt) else self.fmt.format(v)


def col(group: str, header: str, fmt: str | Callable = plain, align: str = "num", nan: str = ""):
    """A row field that is also a column of its table."""
    return field(default=None, metadata={"column": dict(header=header, group=group, fmt=fmt, align=align, nan=nan)})


def text_col(group: str, header: str):
    return col(group, header, align="text")


# The run's columns, last on each table of runs: name -> header. A row type takes those it shows (run_columns).
RUN_COLUMNS = {"provenance": "provenance differs", "state": "state", "hardware": "hardware", "profile": "profile",
               "data": "data / split"}


def run_columns(*names: str):
    """A class decorator (under @dataclass): the row type's last fields are these of RUN_COLUMNS, in its order."""
    assert set(names) <= set(RUN_COLUMNS), set(names) - set(RUN_COLUMNS)

    def add(row_type):
        for name, header in RUN_COLUMNS.items():
            if name in names:
                row_type.__annotations__[name] = "State | None" if name == "state" else "str | None"
                setattr(row_type, name, text_col("run", header))
        return row_type
    return add


def run_column(name: str) -> Column:
    """One of RUN_COLUMNS, for a table whose columns are listed rather than a row type's fields."""
    return Column(name, RUN_COLUMNS[name], "run", align="text")


def columns(row_type) -> list[Column]:
    """A row dataclass's columns, in field order."""
    return [Column(f.name, **f.metadata["column"]) for f in dataclasses.fields(row_type) if "column" in f.metadata]


def column(row_type, key: str) -> Column:
    return next(c for c in columns(row_type) if c.key == key)


@dataclass
class Section:
    heading: str
    columns: list[Column]
    rows: list                   # typed rows: each has .name and .group (its group header; None: no groups)
    notes: list[str] = field(default_factory=list)
    index: str = "row"           # the header of the row names' column
    data: list = field(default_factory=list)  # the claims' verdicts behind their rows (`zoo run --until-resolved`)


@dataclass
class Table:
    name: str                       # file stem: table2, table3, table4
    title: str
    intro: str
    sections: list[Section]
    notes: list[str]
    trials: list[tuple[str, Trial]]  # (row label, trial) shown on the page, for curves and attention
    counts: dict                    # state -> number of paper rows in it, for the index
    verdicts: list = field(default_factory=list)  # zoo.evidence.claims verdicts (Table 3's forest plot)
    sweep: tuple | None = None  # a spec's page: its swept fields, its metric label and its rows against their reference
    warnings: list[str] = field(default_factory=list)  # said above the tables, where a reader cannot miss them
    show_runs: bool = True                        # the page ends with its runs' cards (a trend page has none)

    @property
    def rows(self) -> list:
        """The main table's typed rows (what the figures draw)."""
        return self.sections[0].rows


# -- a row's state --------------------------------------------------------------------------------

class State(str):
    """A row's state as shown ("done", "failed: ...") that also carries its one-word key (for CSS
    classes and counts), so nothing parses the display text back."""
    key: str

    def __new__(cls, key: str, text: str | None = None):
        self = super().__new__(cls, text or key)
        self.key = key
        return self


CITED = State("cited", "cited, not re-run")


def state(t: Trial | None) -> State:
    if t is None:
        return State("not-run", "not run")
    s = t.status
    if s is TrialStatus.running:
        return State("running", f"running: step {t.step or 0} of {t.steps or '?'}")
    if s is TrialStatus.failed:
        reason = (t.error or "no reason recorded").strip().splitlines()
        reason = reason[-1] if reason else "no reason recorded"  # a traceback's last line is the error
        return State("failed", "failed: " + (reason if len(reason) <= 120 else reason[:117] + "..."))
    if s is TrialStatus.finished:
        if truncated(t):  # a wall-clock cap cut it short: shown, but kept out of every comparison
            done, planned = t.result.steps_done, t.steps
            limit = t.config and t.config.train.time_limit_minutes
            return State("truncated", f"truncated: step {done} of {planned}" + (f", {limit:g}-minute limit" if limit else ""))
        return State("done")
    if s is TrialStatus.stopped:  # ended early by a sweep's scheduler (ASHA): its figures are not final
        return State("stopped", f"stopped early at step {t.step or 0} of {t.steps or '?'}")
    return State(s.value)  # pending


def truncated(t: Trial | None) -> bool:
    """A finished run that stopped before its planned steps (a time limit): not comparable to its group."""
    if not t or not t.finished:
        return False
    done, planned = t.result and t.result.steps_done, t.steps
    return bool(done and planned and done < planned)


def count(states: list[State]) -> dict:
    """How many rows are in each state, for the index page."""
    out: dict = {}
    for s in states:
        out[s.key] = out.get(s.key, 0) + 1
    return out


# -- a paper row's run, read once -----------------------------------------------------------------

class Spread(NamedTuple):
    """A figure over the seeds that finished: mean, sample sd (None for one seed), how many."""
    mean: float | None
    sd: float | None
    n: int


def over_seeds(trials: list[Trial], key: str, split: str | None = None) -> Spread:
    """`key` ('dev_ppl', or a score of `split`: 'bleu', 'bleu_paper', 'f1', ...; default split: each
    trial's own eval split) over the finished trials given."""
    def figure(m: RunResult):
        if key == "dev_ppl":
            return m.dev_ppl
        s = m.split(split) if split else m.primary
        return getattr(s, key) if s else None
    vals = [v for x in trials if x.result and (v := figure(x.result)) is not None]
    if not vals:
        return Spread(None, None, 0)
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else None
    return Spread(mean, sd, len(vals))


@dataclass
class Run:
    """What a paper row knows of its run, read from the store once and passed on: the trial shown
    (None: not run), the config it ran with (else the paper spec's), its result once finished (a
    running trial's figures are not final) and the finished trials that differ from it only in seed."""
    trial: Trial | None
    config: Config | None
    result: RunResult | None
    seeds: list[Trial]

    @classmethod
    def of(cls, trial: Trial | None, spec: Config | None, seeds: list[Trial]) -> "Run":
        return cls(trial, (trial and trial.config) or spec,
                   trial.result if trial and trial.finished else None, seeds)

    @property
    def state(self) -> State:
        return state(self.trial)

    @property
    def profile(self) -> str | None:
        return self.trial.profile if self.trial else None

    @property
    def vocab(self) -> int:
        """The vocabulary the run built (the config's before it finished)."""
        return (self.result and self.result.vocab_size_actual) or self.config.data.vocab_size

    def over_seeds(self, key: str, split: str | None = None) -> Spread:
        return over_seeds(self.seeds, key, split)

    def flops_done(self) -> float | None:
        """Analytic training FLOPs of the steps actually done (per step x steps done, so far if running)."""
        t = self.trial
        if t is None or self.config is None:
            return None
        steps = self.result.steps_done if self.result else t.step
        if not steps:
            return None
        return train_flops_per_step(self.config, vocab_size=self.vocab) * steps

    def data_split(self) -> str | None:
        """'dataset / eval split' the trial used (from its result once finished, else its config)."""
        if self.trial is None or self.config is None:
            return None
        m = self.result
        return f"{(m and m.dataset) or self.config.data.dataset} / {(m and m.eval_split) or self.config.eval.split}"


OLDER = "n/a (older store)"


def paper_metric(run: Run, bleu: float | None, split: str | None = None):
    """The paper's own BLEU (zoo.evidence.metrics.paper_bleu) over seeds, where sacreBLEU was measured;
    'n/a (older store)' for a run from before it was kept."""
    if bleu is None:
        return None
    s = run.over_seeds("bleu_paper", split)
    return s.mean if s.n else OLDER


PAPER_METRIC_NOTE = ("BLEU, paper's metric: tokenized BLEU with the compound splitting of tensor2tensor's "
                     "get_ende_bleu.sh (Moses tokenizer, ##AT##-##AT## compounds, multi-bleu), the metric of the "
                     "paper's figures; it reads higher than sacreBLEU (the paper's 25.8 / 28.4 are in it). "
                     "n/a (older store): a run from before it was kept (the store keeps no hypotheses to score again).")


# -- notes ----------------------------------------------------------------------------------------

def profile_notes(trials: list[Trial]) -> list[str]:
    """Say what each profile in use means, and its schedule (warmup, peak learning rate)."""
    notes = []
    for prof in sorted({t.profile for t in trials if t}):
        cfg = next((t.config for t in trials if t and t.profile == prof and t.config), None)
        if cfg is not None and cfg.profile_description:  # what the profile said when the run started
            text = f"{prof}: {cfg.profile_description}"
        else:  # a run from before descriptions were kept: today's profile file, if it is still there
            try:
                text = profile_description(prof)
            except (UserError, OSError):
                text = f"{prof}: (profile description not found)"
        if cfg is not None:
            s = cfg.train.schedule
            lr = noam_lr(s.warmup_steps, cfg.model.d_model, s.warmup_steps, s.lr_scale)  # its peak
            text += (f" Schedule: linear warmup over {s.warmup_steps} steps, then inverse square root decay; "
                     f"lr_scale {s.lr_scale:g}, peak learning rate {lr:.2g} at d_model {cfg.model.d_model}"
                     + (f"; then (not the paper's) a linear cooldown to 0 over the last {s.cooldown:.0%} of "
                        "the steps." if s.cooldown else "."))
        if prof != "paper":
            text += (f" Numbers from the {prof} profile are not comparable in absolute terms to the paper's "
                     "(another model scale, data set or training budget, as described): compare the rank "
                     "order of rows, not the values.")
        notes.append("Profile " + text)
    return notes


def decoding_note(shown: list[tuple[str, Trial]]) -> str:
    """How the finished rows decoded (the paper: beam 4, alpha 0.6, input + 50); profiles may differ."""
    ways: dict[str, list[str]] = {}
    for label, t in shown:
        if (cfg := t.config) and t.finished:
            e = cfg.eval
            way = (f"beam {e.beam_size}, alpha {e.length_penalty:g}, max length input + {e.max_len_offset}"
                   + (f", first {e.max_sentences} sentences" if e.max_sentences else ""))
            ways.setdefault(way, []).append(label)
    if len(ways) <= 1:
        return f"Decoding: {next(iter(ways))}." if ways else ""
    return "Decoding: " + "; ".join(f"{w} ({', '.join(rows)})" for w, rows in ways.items()) + "."


COUNTING = (f"Counting rules. Parameters: numel of the compiled model, each tensor once (the shared "
            f"embedding / pre-softmax matrix counts once), with the vocabulary the run actually built. "
            f"FLOPs: analytic, 2 per multiply-add of every matrix product, training = 3 x forward, "
            f"attention counted dense, sentences of {SEQ_LEN} word-pieces, batch_tokens source and "
            f"target tokens per step, times the number of steps (done, unless a column says planned).")


def provenance_flags(trials: list[Trial | None]) -> tuple[list[str | None], str]:
    """Per row, what of its provenance (machine, dtype, zoo version) differs from the most common one
    among the finished rows compared (None: the same, or not recorded), and a note saying what differs
    ("" when every row agrees). A comparison across machines or versions is flagged, not refused."""
    provs = [t.provenance if t and t.finished else None for t in trials]
    known = [p.compared() for p in provs if p]
    if not differs(provs):
        return [None] * len(trials), ""
    # the most common; a tie goes to the first in sorted order (a set's order moves with the hash seed)
    usual = {k: max(sorted({c[k] for c in known}), key=[c[k] for c in known].count) for k in known[0]}
    flags = [", ".join(f"{k} {v}" for k, v in p.compared().items() if v != usual[k]) or None if p else None
             for p in provs]
    return flags, ("Provenance: the rows compared here did not all run alike (" + "; ".join(differs(provs))
                   + "); the provenance column names what differs from the most common. Differences "
                   "between such rows may come from the machine, the dtype or the code, not the row.")

