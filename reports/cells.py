"""What every report table's rows share: the Table and Section they fill, a row's state, its trial's
figures (over seeds, FLOPs done, data split), the frame, the notes on profiles and decoding.

Frames hold raw values (None where there is nothing), object dtype so integers stay integers;
render.py formats them. Columns are (section, label) pairs; a two-level index is (group, row).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from zoo import costs
from zoo.errors import UserError
from zoo.result import RunResult, Trial, TrialStatus, differs
from zoo.config import Config
from zoo.spec import profile_description
from zoo.config import noam_lr


@dataclass
class Section:
    heading: str
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    data: list = field(default_factory=list)  # typed rows behind the frame (the claims' verdicts)


@dataclass
class ScatterRow:
    """One Table 3 row as its scatters draw it, from the same values as its table row (None: nothing)."""
    row: str
    group: str
    printed: bool                # the paper prints its parameter count (else ours of the paper spec)
    paper_params: float | None
    paper_flops: float | None
    paper_bleu: float | None
    params: float | None
    flops: float | None
    bleu: float | None


@dataclass
class SweepPoint:
    """One point of a sweep as its figures draw it: the swept values, the metric's mean and sd over seeds."""
    values: dict
    mean: float | None
    sd: float | None


@dataclass
class Table:
    name: str                       # file stem: table2, table3, table4
    title: str
    intro: str
    sections: list[Section]
    notes: list[str]
    trials: list[tuple[str, Trial]]  # (row label, trial) shown on the page, for curves and attention
    counts: dict                    # state -> number of paper rows in it, for the index
    # the typed rows its figures read (never the rendered frame): Table 3's scatters and claims, a sweep
    scatter: list[ScatterRow] = field(default_factory=list)
    verdicts: list = field(default_factory=list)  # zoo.claims verdicts
    sweep: tuple[list[str], str, list[SweepPoint]] | None = None  # swept fields, metric label, points


# -- shared cell helpers --------------------------------------------------------------------------

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


def _metrics(t: Trial | None) -> RunResult | None:
    """A finished trial's result; None for the others (a running trial's figures are not final)."""
    return t.result if t and t.finished else None


def _vocab(t: Trial | None, cfg: Config) -> int:
    m = _metrics(t)
    return (m and m.vocab_size_actual) or cfg.data.vocab_size


def over_seeds(trials: list[Trial], key: str) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation (None for one seed) and count of a finished figure over seeds."""
    vals = [v for x in trials if x.result and (v := x.result.figure(key)) is not None]
    if not vals:
        return None, None, 0
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else None
    return mean, sd, len(vals)


def flops_done(t: Trial | None, cfg: Config | None) -> float | None:
    """Analytic training FLOPs of the steps actually done (per step x steps done, so far if running)."""
    if t is None or cfg is None:
        return None
    steps = t.result.steps_done if t.finished and t.result else t.step
    if not steps:
        return None
    return costs.train_flops_per_step(cfg, vocab_size=_vocab(t, cfg)) * steps


def data_split(t: Trial | None, cfg: Config | None) -> str | None:
    """'dataset / eval split' the trial used (from its metrics once finished, else its config)."""
    if t is None or cfg is None:
        return None
    m = _metrics(t)
    return f"{(m and m.dataset) or cfg.data.dataset} / {(m and m.eval_split) or cfg.eval.split}"


def _frame(rows: list[list], index: list, columns: list[tuple], names=("group", "row")) -> pd.DataFrame:
    idx = pd.MultiIndex.from_tuples(index, names=names) if index and isinstance(index[0], tuple) \
        else pd.Index(index, name=names[-1])
    return pd.DataFrame(rows, index=idx, columns=pd.MultiIndex.from_tuples(columns), dtype=object)


def _count(labels: list[State]) -> dict:
    out: dict = {}
    for s in labels:
        out[s.key] = out.get(s.key, 0) + 1
    return out


def _profile_notes(trials: list[Trial]) -> list[str]:
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


def _decoding_note(shown: list[tuple[str, Trial]]) -> str:
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
            f"attention counted dense, sentences of {costs.SEQ_LEN} word-pieces, batch_tokens source and "
            f"target tokens per step, times the number of steps (done, unless a column says planned).")


def paper_metric(seeds: list[Trial], m: RunResult | None):
    """The paper's own BLEU (zoo.metrics.paper_bleu), mean over seeds; 'n/a (older store)' for a
    finished run from before it was kept."""
    if m is None or m.primary is None or m.primary.bleu is None:
        return None
    mean, _, n = over_seeds(seeds, "bleu_paper")
    return mean if n else OLDER


OLDER = "n/a (older store)"
PAPER_METRIC_NOTE = ("BLEU, paper's metric: tokenized BLEU with the compound splitting of tensor2tensor's "
                     "get_ende_bleu.sh (Moses tokenizer, ##AT##-##AT## compounds, multi-bleu), the metric of the "
                     "paper's figures; it reads higher than sacreBLEU (the paper's 25.8 / 28.4 are in it). "
                     "n/a (older store): a run from before it was kept (the store keeps no hypotheses to score again).")


def provenance_flags(trials: list[Trial | None]) -> tuple[list[str | None], str]:
    """Per row, what of its provenance (machine, dtype, zoo version) differs from the most common one
    among the finished rows compared (None: the same, or not recorded), and a note saying what differs
    ("" when every row agrees). A comparison across machines or versions is flagged, not refused."""
    provs = [t.provenance if t and t.finished else None for t in trials]
    known = [p.compared() for p in provs if p]
    if not differs(provs):
        return [None] * len(trials), ""
    usual = {k: max({c[k] for c in known}, key=[c[k] for c in known].count) for k in known[0]}
    flags = [", ".join(f"{k} {v}" for k, v in p.compared().items() if v != usual[k]) or None if p else None
             for p in provs]
    return flags, ("Provenance: the rows compared here did not all run alike (" + "; ".join(differs(provs))
                   + "); the provenance column names what differs from the most common. Differences "
                   "between such rows may come from the machine, the dtype or the code, not the row.")
