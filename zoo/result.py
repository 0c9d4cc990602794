"""What a run produces, typed: the mirror of `Config` on the way out.

`zoo.train.train()` returns a `RunResult`; `summary.json` is one; the results store keeps one per
finished trial; the runner, the CLI and every report read its attributes. A trial's progress
reaches the driver as events (`Placement`, `LogPoint`, then the result), each a model here too.

Old summaries (flat dicts, before `hardware` and `splits` existed) still load: `RunResult`
rebuilds the missing parts from the flat keys they had.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


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


class Hardware(_Record):
    """What trained the model: the torch device, its model name, threads per process, processes,
    and the dtype its matmuls ran in (train.precision as resolved on that device)."""
    device: str = "cpu"
    device_name: str = "cpu"
    compute_dtype: str = "fp32"
    threads: int = 1
    workers: int = 1


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
    bleu_paper: float | None = None  # the paper's own BLEU (zoo.metrics.paper_bleu), labelled
    bleu_paper_label: str = ""
    bleu_paper_stats: list[list[int]] | None = None  # its per-sentence statistics
    bleu_final_weights: float | None = None  # averaged runs: the final weights at the same step
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


class RunResult(_Record):
    """A finished run: what it trained, on what, for how long, and each eval split's scores."""
    config_hash: str = ""
    variant: str
    profile: str
    steps_done: int
    tokens_seen: int = 0
    train_seconds: float = 0.0
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

    def stored(self) -> dict:
        """The JSON the store keeps (the attention map has its own column)."""
        return self.model_dump(mode="json", exclude={"attention"})
