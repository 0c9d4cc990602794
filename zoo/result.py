"""What a run produces, typed: the mirror of `Config` on the way out.

`zoo.train.train()` returns a `RunResult`; `summary.json` is one; the results store keeps one per
finished trial inside a `Trial` record (with its curve as `Point`s); the runner, the CLI and every
report read their attributes. A trial's progress reaches its consumers (the driver, `zoo train`'s
printer) as events, each defined once here (`Event`, read from the wire by `event()`).

Old summaries (flat dicts, before `hardware` and `splits` existed) still load: `RunResult`
rebuilds the missing parts from the flat keys they had.
"""
from __future__ import annotations

import enum
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zoo.config import Config


class _Record(BaseModel):
    # fields that a later version dropped are ignored, so an older store still loads
    model_config = ConfigDict(extra="ignore")


class Placement(_Record):
    """Where a trial ran: the structured facts, never a display string parsed back."""
    node_id: str = ""
    node_ip: str = ""
    hostname: str = ""
    pid: int = 0
    gpu_ids: list[str] = Field(default_factory=list)
    threads: int = 1
    workers: int = 1
    ranks: list["Placement"] = Field(default_factory=list)  # data-parallel: every worker's placement


class LogPoint(_Record):
    """One point of a training curve (metrics.jsonl, the store's points, the live table)."""
    step: int
    steps: int | None = None
    loss: float | None = None
    nll: float | None = None
    lr: float | None = None
    tokens_per_s: float | None = None
    elapsed_s: float | None = None
    epoch: int | None = None
    padding_fraction: float | None = None
    tokens_seen: int | None = None
    dev_ppl: float | None = None


class Point(_Record):
    """One stored point of a trial's curve (the store's `points` table)."""
    step: int
    loss: float | None = None  # the training objective: label-smoothed cross-entropy per target token
    nll: float | None = None   # the unsmoothed training NLL per target token (nats): a likelihood, comparable across eps_ls
    lr: float | None = None
    tokens_per_s: float | None = None
    dev_ppl: float | None = None
    elapsed_s: float | None = None


class Hardware(_Record):
    """What trained the model: the torch device, its model name, threads per process, processes,
    and the dtype its matmuls ran in (train.precision as resolved on that device)."""
    device: str = "cpu"
    device_name: str = "cpu"
    compute_dtype: str = "fp32"
    threads: int = 1
    workers: int = 1


class Provenance(_Record):
    """What produced a result, beyond the config: zoo's code, the libraries that score and train, and
    the machine. Two rows compared in a report should agree on these (`differs` says where not)."""
    zoo_version: str = ""
    zoo_commit: str = ""          # git HEAD of zoo's checkout ("" when not a git checkout)
    zoo_dirty: bool | None = None  # uncommitted changes in that checkout
    spec_commit: str = ""          # git HEAD of the repository holding the spec file ("" when none)
    spec_dirty: bool | None = None  # the spec file differs from that commit
    python: str = ""
    torch: str = ""
    ray: str = ""
    sacrebleu: str = ""
    sentencepiece: str = ""
    cpu: str = ""
    cpu_flags: list[str] = Field(default_factory=list)  # of avx2, avx512_bf16, amx_bf16, amx_tile
    gpu_name: str = ""
    gpu_count: int = 0
    compute_dtype: str = ""
    components: dict[str, str] = Field(default_factory=dict)  # "kind.name" -> the package that supplied it
    stacked_with: list[str] = Field(default_factory=list)  # the trials trained beside it as one stacked model

    @property
    def machine(self) -> str:
        return f"{self.gpu_count} x {self.gpu_name}" if self.gpu_count else self.cpu or "unknown machine"

    def compared(self) -> dict[str, str]:
        """The facts a comparison across rows must hold fixed, by the words a report uses for them."""
        return {"machine": self.machine, "dtype": self.compute_dtype, "zoo version":
                f"{self.zoo_version} {self.zoo_commit[:10]}{'+dirty' if self.zoo_dirty else ''}".strip()}


def differs(provs: list["Provenance | None"]) -> list[str]:
    """What differs among the provenances of rows compared together, in words ("machine: a, b");
    rows without a provenance (older stores) are left out, not counted as different."""
    known = [p.compared() for p in provs if p is not None]
    out = []
    for key in known[0] if known else ():
        seen = sorted({k[key] for k in known})
        if len(seen) > 1:
            out.append(f"{key}: {', '.join(seen)}")
    return out


class SplitScore(_Record):
    """One eval split decoded and scored: sacreBLEU for translation, EVALB for parsing."""
    eval_split: str
    eval_sentences: int = 0
    eval_weights: str = ""  # "final weights" or "average of the last k checkpoints"
    decode_seconds: float | None = None
    bleu: float | None = None
    bleu_signature: str | None = None
    bleu_tokenized: float | None = None
    bleu_tokenized_label: str = ""
    bleu_stats: list[list[int]] | None = None  # sacreBLEU's per-sentence statistics, for bootstraps
    bleu_paper: float | None = None  # the paper's own BLEU (zoo.evidence.metrics.paper_bleu), labelled
    bleu_paper_label: str = ""
    bleu_paper_stats: list[list[int]] | None = None  # its per-sentence statistics
    bleu_final_weights: float | None = None  # averaged runs: the final weights at the same step
    ppl: float | None = None  # per word-piece perplexity of the final weights (no label smoothing)
    nll_stats: list[list[float]] | None = None  # per sentence [NLL, target tokens], for bootstraps
    f1: float | None = None
    f1_len40: float | None = None
    precision: float | None = None
    recall: float | None = None
    complete_match: float | None = None
    evalb_errors: int | None = None
    malformed: int | None = None
    malformed_rate: float | None = None
    f1_flat: float | None = None
    f1_right_branching: float | None = None
    f1_label: str = ""

    @property
    def score(self) -> tuple[str, float] | None:
        """The headline figure: ('bleu', x) or ('f1', x)."""
        return ("bleu", self.bleu) if self.bleu is not None else ("f1", self.f1) if self.f1 is not None else None


class Attention(_Record):
    """Each head of one layer on one short eval sentence, for the report's heat map."""
    layer: str
    sentence: str
    tokens: list[str]
    weights: list[list[list[float]]]


# The per-sentence statistics a run keeps for the claims' bootstraps: for the report, not for reading (a store's
# `zoo status --json` leaves them out: they were 99% of its bytes, 66 MB for results/trend-cpu2)
PER_SENTENCE = {"bleu_stats", "bleu_paper_stats", "nll_stats"}  # of each split
PER_SENTENCE_RUN = {"dev_nll_stats"}  # of the run


class RunResult(_Record):
    """A finished run: what it trained, on what, for how long, and each eval split's scores."""
    config_hash: str = ""
    variant: str
    profile: str
    steps_done: int
    # train.time_limit_minutes stopped it before its planned steps (a zoo run trial's row: steps_done < steps)
    time_limited: bool = False
    tokens_seen: int = 0
    train_seconds: float = 0.0
    # of train_seconds, the time the training loop waited on checkpoints (its host copy of the state, and a
    # write still in flight); the writes themselves run beside training (0 in summaries from before)
    checkpoint_seconds: float = 0.0
    total_seconds: float | None = None
    dev_ppl: float | None = None
    # per dev sentence [NLL in nats, target tokens] at the final step, in the split's order: claims
    # resample perplexity over sentences with it (None for stores from before it was kept)
    dev_nll_stats: list[list[float]] | None = None
    vocab_size_actual: int | None = None
    tgt_vocab_size: int | None = None
    bpe_model: str = ""
    dataset: str = ""
    train_pairs: int = 0
    hardware: Hardware = Field(default_factory=Hardware)
    eval_split: str = ""  # the spec's own split (Table 3: dev; Table 2: test)
    splits: dict[str, SplitScore] = Field(default_factory=dict)
    attention: Attention | None = None
    provenance: Provenance | None = None  # filled around train() by the trial process (None: older stores)

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, d):
        """A summary from before `hardware` and `splits`: device fields and the spec's own split's
        scores sat at the top level."""
        if not isinstance(d, dict):
            return d
        d = dict(d)
        if "hardware" not in d:
            d["hardware"] = {k: d[k] for k in Hardware.model_fields if d.get(k) is not None}
        if not d.get("splits") and d.get("eval_split"):
            d["splits"] = {d["eval_split"]: {k: d[k] for k in SplitScore.model_fields if k in d}}
        return d

    @property
    def primary(self) -> SplitScore | None:
        """The spec's own eval split (None for a run that scored nothing)."""
        return self.splits.get(self.eval_split)

    def split(self, name: str) -> SplitScore | None:
        return self.splits.get(name)

    def figure(self, name: str) -> float | None:
        """A headline figure by the name reports and claims use: 'dev_ppl', or the spec's own split's
        'bleu', 'bleu_paper' or 'f1'."""
        if name == "dev_ppl":
            return self.dev_ppl
        if name not in ("bleu", "bleu_paper", "f1"):
            raise ValueError(f"no figure named {name!r} (dev_ppl, bleu, bleu_paper, f1)")
        return None if self.primary is None else getattr(self.primary, name)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_seen / max(self.train_seconds, 1e-9)

    @property
    def checkpoint_share(self) -> float:
        """The share of the training time spent waiting on checkpoints."""
        return self.checkpoint_seconds / max(self.train_seconds, 1e-9)

    def stored(self) -> dict:
        """The JSON the store keeps (the attention map has its own column)."""
        return self.model_dump(mode="json", exclude={"attention"})


# -- train events: what train() reports, one definition each -----------------------------------

class Started(_Record):
    """The trial is placed (sent by the runner's trial process, not by train())."""
    event: Literal["start"] = "start"
    placement: Placement


class Resumed(_Record):
    event: Literal["resumed"] = "resumed"
    step: int


class BadCheckpoint(_Record):
    event: Literal["bad_checkpoint"] = "bad_checkpoint"
    path: str
    moved_to: str
    error: str


class NoOptimizerState(_Record):
    event: Literal["no_optimizer_state"] = "no_optimizer_state"
    path: str
    step: int


class ConfigChanged(_Record):
    """The run resumes checkpoints written under another config (`zoo train` with a changed spec or --set
    on the same --out: more steps, say); `changes` are the fields that differ, as "field: old -> new"."""
    event: Literal["config_changed"] = "config_changed"
    changes: list[str]


class Done(_Record):
    """The run finished; `result` is None from a data-parallel worker other than rank 0."""
    event: Literal["done"] = "done"
    result: RunResult | None = None


Event = Union[Started, Resumed, BadCheckpoint, NoOptimizerState, ConfigChanged, Done, LogPoint]
_EVENTS = {cls.model_fields["event"].default: cls
           for cls in (Started, Resumed, BadCheckpoint, NoOptimizerState, ConfigChanged)}


def event(m: dict) -> Event | None:
    """An event from its wire form (a plain dict: Ray sends plain values). A log point carries no
    "event" key; "done" carries the RunResult's fields beside it. None for anything else."""
    name = m.get("event")
    if name == "done":
        rest = {k: v for k, v in m.items() if k != "event"}
        return Done(result=RunResult.model_validate(rest) if rest else None)
    if name in _EVENTS:
        return _EVENTS[name].model_validate(m)
    return LogPoint.model_validate(m) if name is None and "step" in m else None


def wire(e: Event) -> dict:
    """The plain dict an event travels as (the inverse of `event`)."""
    if isinstance(e, Done):
        return {"event": "done", **(e.result.model_dump(mode="json") if e.result else {})}
    return e.model_dump(mode="json", exclude_none=isinstance(e, LogPoint))


# -- the store's records ----------------------------------------------------------------------

class TrialStatus(str, enum.Enum):
    pending = "pending"
    running = "running"
    finished = "finished"
    failed = "failed"
    stopped = "stopped"  # ended early by a sweep's scheduler (ASHA)


class Best(_Record):
    """The lowest training loss and dev perplexity a trial has logged, and their steps."""
    loss: float | None = None
    loss_step: int | None = None
    dev_ppl: float | None = None
    dev_ppl_step: int | None = None

    def update(self, name: str, value: float | None, step: int) -> None:
        """Keep `value` of the figure `name` ("loss" or "dev_ppl") if it is the lowest yet."""
        if value is not None and (getattr(self, name) is None or value < getattr(self, name)):
            setattr(self, name, value)
            setattr(self, f"{name}_step", step)


class Trial(_Record):
    """One trial's row of the results store: what it is, how far it got, and its result once finished."""
    spec: str                       # the spec path as given
    variant: str                    # the paper's row name, e.g. A1
    trial: str                      # the trial's unique name: the variant, plus -seedN on a seeds axis
    profile: str
    status: TrialStatus = TrialStatus.pending
    config_hash: str = ""
    config: Config | None = None
    paper_table: int | None = None
    paper_group: str | None = None
    paper_row: str | None = None
    step: int | None = 0
    steps: int | None = None
    result: RunResult | None = None  # None until it finished
    best: Best = Field(default_factory=Best)
    attention: Attention | None = None
    tokens_seen: int | None = None
    train_seconds: float | None = None
    # a display line for `zoo status` (store column `hardware`); what ran it, typed, is result.hardware and placement
    hardware_text: str | None = None
    placement: Placement | None = None
    run_dir: str | None = None
    checkpoint: str | None = None
    error: str | None = None
    warning: str | None = None
    experiment: str | None = None
    resumed_from: int | None = None
    analysis: str | None = None     # the hash of the analysis plan it ran under (zoo.evidence.analysis); None: none
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, d):
        """A store row: its `metrics` column is the result, which names the trial's variant and profile
        where an older summary did not; "{}" a config not yet known; NULL best an empty one."""
        if not isinstance(d, dict) or "metrics" not in d:
            return d
        d = dict(d)
        m = d.pop("metrics")
        d["result"] = m and {"variant": d.get("variant"), "profile": d.get("profile"), **m}
        d["config"], d["best"] = d.get("config") or None, d.get("best") or {}
        d["hardware_text"] = d.pop("hardware", None)
        return d

    @property
    def seed(self) -> int | None:
        return self.config.train.seed if self.config else None

    @property
    def finished(self) -> bool:
        return self.status is TrialStatus.finished

    @property
    def provenance(self) -> Provenance | None:
        return self.result.provenance if self.result else None

    @property
    def key(self) -> tuple[str, str, str]:
        """The store's key of this trial."""
        return self.spec, self.trial, self.profile
