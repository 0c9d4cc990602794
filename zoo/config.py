"""The typed config: pydantic models of one fully resolved variant, section by section (`model`,
`data`, `train`, `eval`, `resources`), with the paper's base model as defaults. A `Config` is what a trial
trains; `zoo.spec` makes them from spec files. This module imports neither torch nor ray.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, field_validator, model_validator

from zoo.paths import name_problem


# ----------------------------------------------------------------------------------------------
# The typed config. Defaults are the paper's base model (section 3, 5 and Table 3 row "base").


class Strict(BaseModel):
    # strict: `N: true` or `N: "6"` is a mistake, not 1 or 6 (an int still fills a float field);
    # finite floats only: `lr_scale: .inf` is a mistake, not a run that diverges at step 1
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)


# Upper bounds that keep every int a sane size for loops and SQLite (int64), far above any real run.
MAX_STEPS = 100_000_000  # the paper's longest run is 300k steps
MAX_TOKENS = 100_000_000  # tokens per step or per micro-batch (the paper: 25k)


class CrossFieldError(ValueError):
    """A rule between fields (a Config validator's): `fields` are the dotted fields that could change,
    the likeliest first; the error is reported at the one the user set last (see _blame)."""

    def __init__(self, fields: tuple[str, ...], message: str):
        super().__init__(message)
        self.fields = fields


def _safe(value: str) -> str:
    problem = name_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# ----------------------------------------------------------------------------------------------
# Model components: a spec names one of each kind; their names, costs and contract have one home,
# zoo.model.components, which reads this config (the spec checks the names, the schema lists them).

def param_matched_d_ff(d_ff: int) -> int:
    """A gated FFN's d_ff (3 matrices) that holds about the parameters of an ungated one (2) at d_ff."""
    return round(2 * d_ff / 3)


class ModelSpec(Strict):
    N: int = Field(6, ge=1, le=64, description="layers in each of encoder and decoder")
    d_model: int = Field(512, ge=2, le=16384)
    d_ff: int = Field(2048, ge=1, le=65536)
    h: int = Field(8, ge=1, le=256, description="attention heads")
    d_k: int = Field(64, ge=1, le=4096, description="query/key size per head")
    d_v: int = Field(64, ge=1, le=4096, description="value size per head")
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="P_drop")
    # tensor2tensor's parsing setup also drops attention weights and the FFN's hidden units; off
    # (0) in the paper specs, which state only P_drop
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout on attention weights")
    ff_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout after the FFN's ReLU")
    positional_encoding: str = Field("sinusoidal", max_length=100, description=(
        "sinusoidal (the paper's), learned (Table 3 row E), added to the embeddings; rope (rotary, Su et al. 2021) "
        "or alibi (Press et al. 2022), acting in every self-attention, the encoder's (ALiBi by |i - j|) and the "
        "decoder's, never in encoder-decoder attention (its queries and keys share no position axis); none (only "
        "the decoder's causal mask orders tokens); or a third-party package's (entry-point group zoo.components)"))
    max_len: int = Field(1024, ge=8, le=100000, description="longest position the model embeds")
    share_embeddings: bool = Field(True, description=(
        "one matrix for source, target and pre-softmax; false: three, so the output projection is untied too"))
    # ours, not the paper's (parsing only): tells the decoder which word it is at
    word_pointer: bool = Field(False, description="parsing: add to each decoder input the encoder's state "
                               "of the word the next preterminal covers (target symbols only)")
    # components beyond the paper: the paper's choice is each default
    norm_position: Literal["post", "pre"] = Field("post", description=(
        "post: Norm(x + Dropout(Sublayer(x))), the paper's; pre: x + Dropout(Sublayer(Norm(x))) with a final "
        "norm after each stack (pre-LN, Xiong et al. 2020)"))
    norm: str = Field("layernorm", max_length=100, description=(
        "layernorm (the paper's) or rmsnorm (Zhang & Sennrich 2019: no mean, no bias), or a third-party package's"))
    ffn: str = Field("relu", max_length=100, description=(
        "relu (the paper's: max(0, x W_1 + b_1) W_2 + b_2), gelu (the same with GELU), swiglu or geglu (Shazeer "
        "2020: (act(x W) * x V) W_2, no biases), or a third-party package's. A gated FFN has 3 matrices and d_ff "
        "is the hidden width of each gate (W and V), so at the same d_ff it holds 1.5x the weights: 2/3 of an "
        "ungated d_ff matches its parameters (`zoo show` prints that d_ff)"))
    attention: str = Field("multihead", max_length=100, description=(
        "multihead (the paper's scaled dot-product attention in h heads, with h_kv key/value heads), or a "
        "third-party package's"))
    h_kv: int | None = Field(None, ge=1, le=256, description=(
        "key/value heads, dividing h: null (h, the paper's multi-head attention), 1 (multi-query attention, "
        "Shazeer 2019) or between (grouped-query attention, Ainslie et al. 2023: h / h_kv query heads share one)"))
    residual_stream: Literal["fp32", "bf16"] = Field("fp32", description=(
        "the residual stream's dtype under bf16 autocast (train.precision bf16): fp32 (autocast's default: each "
        "sum of x and a sub-layer's bf16 output is upcast) or bf16 (half the stream's memory traffic; each norm "
        "still computes in fp32 and hands its output back in bf16). Without bf16 autocast the stream is fp32 "
        "either way"))

    @model_validator(mode="after")
    def _even_for_sinusoid(self):
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoidal positions (got {self.d_model})")
        return self

    @model_validator(mode="after")
    def _heads_and_rotations(self):
        # CrossFieldError: reported at whichever of the fields the user set last
        if self.h_kv is not None and self.h % self.h_kv:
            fit = [k for k in range(1, self.h + 1) if self.h % k == 0]
            raise CrossFieldError(("model.h_kv", "model.h"), f"h_kv ({self.h_kv}) must divide h ({self.h}): each "
                                  f"key/value head serves h / h_kv query heads; use one of {fit}")
        if self.positional_encoding == "rope" and self.d_k % 2:
            raise CrossFieldError(("model.d_k", "model.positional_encoding"), f"rope rotates pairs of a query's and "
                                  f"a key's coordinates, so d_k must be even (got {self.d_k})")
        return self

    @property
    def kv_heads(self) -> int:
        return self.h if self.h_kv is None else self.h_kv


class DataSpec(Strict):
    dataset: str = Field("wmt14_en_de", description="corpus name from `zoo data list`")
    vocab_size: int = Field(37000, ge=16, le=1_000_000, description="shared source/target BPE size")
    max_len: int = Field(256, ge=4, le=100000, description="drop training pairs longer than this (word-pieces)")
    max_train_pairs: int | None = Field(None, ge=1, le=10**12, description="use only the first K pairs")
    target_vocab: Literal["shared", "symbols"] = Field(
        "shared", description="shared: one BPE for both sides (translation, the paper); symbols: the "
        "tree side has its own whole-symbol vocabulary and vocab_size is the source-only BPE (parsing)")
    preterminals: Literal["XX", "tags"] = Field(
        "XX", description="symbols only: every preterminal as the placeholder XX (Vinyals, Kaiser et al. 2014) "
        "or as its POS tag, so the model also predicts the tags (the F1 puts the gold tags back either way)")

    @field_validator("dataset")
    @classmethod
    def _dataset_is_a_name(cls, v):  # it names cache folders (checked against the registry in resolve)
        return _safe(v)


class OptimizerSpec(Strict):
    name: Literal["adam"] = "adam"
    betas: tuple[StrictFloat, StrictFloat] = Field((0.9, 0.98), strict=False)  # a YAML list is fine
    eps: float = Field(1e-9, gt=0, le=1)

    @field_validator("betas")  # a field's rule, so an error names train.optimizer.betas, not its section
    @classmethod
    def _betas_range(cls, v):
        if not all(0 <= b < 1 for b in v):
            raise ValueError("each of the two betas must lie in [0, 1)")  # the value is quoted where it was set
        return v


def dotted(d: dict, prefix: str = "") -> dict:
    """{"model": {"h": 1}} -> {"model.h": 1}: a config's fields as `--set` names them."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out |= dotted(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


PAPER_WARMUP = 4000  # section 5.3
# A post-LN model at the paper's depth needs the warmup (Xiong et al. 2020): on an H100 the base collapsed at
# 68x (and 17x) the paper's rate at step 240, BLEU 0.00. The built-in profiles keep such models within 2x.
MAX_TIMES_PAPER = 2.0


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Equation (3): linear warmup for `warmup` steps, then inverse square root decay (its peak at
    step = warmup). Here, beside its spec, so the report reads it without importing torch."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


class ScheduleSpec(Strict):
    # lr = lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)   (eq. 3)
    name: Literal["noam"] = "noam"
    warmup_steps: int = Field(4000, ge=1, le=MAX_STEPS)
    lr_scale: float = Field(1.0, gt=0, le=1000, description="multiplies the paper's formula (1.0 = paper)")
    cooldown: float = Field(0.0, ge=0.0, lt=1.0, description=(
        "not the paper's: over this last share of the steps the learning rate falls linearly from eq. 3's "
        "value to 0, so a short run ends annealed rather than at a large step size (0 = eq. 3 throughout)"))

    def lr(self, step: int, d_model: int, steps: int) -> float:
        """The learning rate of optimizer step `step` (1-based) of a `steps`-step run."""
        start = steps - round(self.cooldown * steps)  # the last step at eq. 3's own value
        lr = noam_lr(min(step, start), d_model, self.warmup_steps, self.lr_scale)
        return lr if step <= start else lr * (steps - step + 1) / (steps - start + 1)

    def times_paper(self, d_model: int, steps: int) -> float:
        """The most this schedule's rate exceeds the paper's (eq. 3, warmup 4000, scale 1) at the same step,
        over a `steps`-step run. Both are linear in warmup and fall as step^-0.5 after it, so the ratio only
        changes at the warmups' ends: the largest is at one of those steps, the first or the last."""
        at = {1, min(self.warmup_steps, steps), min(PAPER_WARMUP, steps), steps}
        return max(self.lr(s, d_model, steps) / noam_lr(s, d_model, PAPER_WARMUP) for s in at)


class TrainSpec(Strict):
    steps: int = Field(100_000, ge=1, le=MAX_STEPS)
    batch_tokens: int = Field(25_000, ge=1, le=MAX_TOKENS, description="source and target tokens per optimizer step")
    max_tokens_per_device: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="memory cap per micro-batch; gradient accumulation is derived from it")
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0, description="eps_ls")
    optimizer: OptimizerSpec = OptimizerSpec()
    schedule: ScheduleSpec = ScheduleSpec()
    checkpoint_every: int = Field(1000, ge=1, le=MAX_STEPS, description=(
        "steps between checkpoints: every one inside the averaging window (eval.average_checkpoints), "
        "elsewhere at most one per checkpoint_minutes"))
    checkpoint_minutes: float = Field(10, ge=0, le=10**7, description=(
        "minutes of training between checkpoints for resuming (taken at the next multiple of checkpoint_every; "
        "0: every checkpoint_every steps); when or how often a run saves changes none of its results, so it is "
        "not part of the config hash"))
    keep_checkpoints: int = Field(5, ge=1, le=1000, description="keep the last k checkpoints")
    eval_every: int = Field(1000, ge=1, le=MAX_STEPS, description="steps between dev-perplexity evaluations")
    log_every: int = Field(10, ge=1, le=MAX_STEPS, description="steps between training-metric reports")
    time_limit_minutes: float | None = Field(
        None, gt=0, le=10**7, description="stop early after this wall time (the run records the steps done)")
    seed: int = Field(1, ge=0, le=2**32 - 1)
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="training's matmuls: bf16 autocast (weights, Adam and the loss stay fp32) or fp32; "
        "auto: on a GPU bf16 from d_model 512 on, TF32 below it (faster there), fp32 on a CPU; bf16 on a CPU needs its bf16 instructions (AVX512-BF16 or AMX), "
        "else training runs in fp32 and says so")
    compile: Literal["off", "on"] = Field("off", description="torch.compile the model regionally: one graph for "
        "the encoder layer and one for the decoder layer, each serving all N layers of its stack and every batch "
        "shape (dynamic shapes); the same arithmetic, so it is not part of the config hash")
    fused_loss: Literal["off", "on"] = Field("off", description="on: the pre-softmax map and the label-smoothed "
        "loss in one, chunk by chunk, so the (tokens x vocabulary) logits are never held whole "
        "(zoo.train.fused_loss); the same loss and gradients to float rounding, so it is not part of the config hash")
    pack: Literal["off", "on"] = Field("off", description="on: several sentence pairs a row of at most 64 tokens "
        "(zoo.data.packing), kept apart by masks, so attention's tiles are not spent on one short sentence each; "
        "the same loss without dropout, other dropout draws with it (part of the config hash); not with rope or alibi")
    cuda_graph: Literal["off", "on"] = Field("off", description="on: on a GPU, the whole training step (forward, "
        "backward, Adam; a stack of seeds' too) replayed as one CUDA graph, one recorded per bucket of padded shapes "
        "(zoo.train.graphed); the same loss to float rounding, so not in the config hash; a CPU runs the bucketed step")
    stop_if_not_learning: bool = Field(
        True, description="after warm-up (2 x warmup_steps), stop with exit 2 when the training NLL is not clearly "
        "below the target pieces' unigram level or is above the uniform one (zoo.train.learning); false: go on "
        "anyway. A run it lets finish is the same run, so it is not part of the config hash")


class EvalSpec(Strict):
    split: str = Field("dev", max_length=64, description="dev (Table 3) or test (Table 2)")
    beam_size: int = Field(4, ge=1, le=256)
    length_penalty: float = Field(0.6, ge=0.0, le=100, description="GNMT alpha")
    max_len_offset: int = Field(50, ge=0, le=100000, description="max output length = input length + offset")
    average_checkpoints: int = Field(0, ge=0, le=1000, description="average the last k checkpoints (0 = off)")
    max_sentences: int | None = Field(None, ge=1, le=10**9, description="score only the first K sentences")
    metric: Literal["bleu", "f1"] = "bleu"
    extra_splits: list[str] = Field(default_factory=list, max_length=16, description="also score these splits (e.g. test)")
    ppl_splits: list[str] = Field(default_factory=list, max_length=16, description=(
        "also measure these splits' perplexity, sentence by sentence, without decoding them (the eval split "
        "and the extra splits get theirs too)"))
    min_len: int = Field(1, ge=0, le=100000, description="no eos before this many output tokens (1: never an "
                         "empty output for a non-empty source, as fairseq; an under-trained model's p(eos|bos) "
                         "is tiny, but at alpha 0.6 the empty hypothesis can outscore real ones)")
    min_len_per_word: float = Field(0.0, ge=0.0, le=100, description="no eos before this many tokens per source word")
    tree_constraint: bool = Field(False, description="parsing: beam search only emits well-formed trees, "
                                  "one preterminal per word (needs data.target_vocab: symbols)")

    @field_validator("split")
    @classmethod
    def _split_is_a_name(cls, v):  # it names the hyps.<split>.txt file
        return _safe(v)

    @field_validator("extra_splits", "ppl_splits")
    @classmethod
    def _splits_are_names(cls, v):
        return [_safe(x) for x in v]


class ResourcesSpec(Strict):
    gpus: float = Field(0, ge=0, le=1024, description=(
        "GPUs per worker: 1, or a share of one (0.25: four trials on one GPU); several GPUs are several workers"))
    cpus: float = Field(1, gt=0, le=4096, description="CPUs per worker")
    workers: int = Field(1, ge=1, le=4096, description="data-parallel workers per trial")
    max_retries: int = Field(0, ge=0, le=100, description="re-runs of a failed trial")
    allow_cpu_fallback: bool = Field(False, description=(
        "train on the CPU when gpus > 0 but torch sees no CUDA device (else the trial stops before training)"))

    @field_validator("gpus", "cpus")
    @classmethod
    def _ray_precision(cls, v):
        # Ray keeps resources in steps of 0.0001 and would round a finer share (5e-324 CPUs to 0)
        steps = round(v * 10_000)
        if abs(v * 10_000 - steps) > 1e-6 or (v > 0 and steps == 0):
            raise ValueError("must come in steps of 0.0001, Ray's precision")
        return v

    @model_validator(mode="after")
    def _one_device_per_worker(self):
        # zoo.train drives one device per process: more GPUs are more workers, and a share of a GPU
        # cannot be split across processes that all-reduce every step (CrossFieldError: reported at
        # the field the user set last)
        if self.gpus > 1:
            raise CrossFieldError(("resources.gpus",), f"gpus is per worker and at most 1 (got {self.gpus:g}); for "
                                  f"{self.gpus:g} GPUs set workers: {math.ceil(self.gpus)} and gpus: 1")
        if 0 < self.gpus < 1 and self.workers > 1:
            raise CrossFieldError(("resources.gpus", "resources.workers"), f"a share of a GPU (gpus: {self.gpus:g}) "
                                  f"is for one-worker trials; with workers: {self.workers} set gpus: 1 (a whole GPU "
                                  "per worker)")
        return self


class PaperRef(Strict):
    table: int | None = Field(None, ge=2, le=4)
    group: str | None = Field(None, max_length=200)
    row: str | None = Field(None, max_length=200)
    paper_row: bool | None = Field(None, description=(
        "this row stands for the paper's own in its table: set by zoo for the built-in specs, or deliberately "
        "in a spec; any other spec's rows are the user's, shown after the paper's rows of their group and "
        "never in their place (None: a trial recorded before zoo told them apart)"))
    compare_to: str | None = Field(None, max_length=200, description=(
        "the row a user's row is compared with in its group (a paper row of its table or a variant of its "
        "spec; default: base)"))


class ClaimSpec(Strict):
    """A spec's claim about its rows, tested as the paper's claims are (zoo.evidence.claims): one row better than
    another on a metric, or two rows tied within a margin."""
    id: str = Field(max_length=64, description="the claim's name, unique in its spec")
    better: str | None = Field(None, max_length=200, description="the row claimed better (with `than`)")
    than: str | None = Field(None, max_length=200, description="the row it beats")
    tie: list[str] | None = Field(None, min_length=2, max_length=2,
                                  description="two rows claimed equal within `margin` (instead of better/than)")
    metric: Literal["dev_ppl", "bleu"] = Field(description="dev_ppl (lower is better) or bleu")
    margin: float | None = Field(None, gt=0, lt=1, description=(
        "a tie's equivalence margin, relative to the second row's figure: 0.015 or '1.5%' (default 1.5%)"))
    text: str = Field("", max_length=2000, description="what the claim says, in words")

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, v):
        return _safe(v)

    @field_validator("margin", mode="before")
    @classmethod
    def _percent(cls, v):  # "1.5%" is 0.015
        if isinstance(v, str) and v.strip().endswith("%"):
            try:
                return float(v.strip()[:-1]) / 100
            except ValueError:
                raise ValueError(f"a margin is a fraction (0.015) or a percentage ('1.5%'), got {v!r}") from None
        return v

    @model_validator(mode="after")
    def _one_form(self):
        pair = self.better is not None or self.than is not None
        if pair == (self.tie is not None) or (pair and (self.better is None or self.than is None)):
            raise CrossFieldError(("better", "than", "tie"), "a claim is either `better: ROW` with `than: ROW`, "
                                  "or `tie: [ROW, ROW]` (with an optional margin)")
        if self.margin is not None and self.tie is None:
            raise CrossFieldError(("margin",), "a margin belongs to a tie (`tie: [ROW, ROW]`)")
        rows = self.rows
        if rows[0] == rows[1]:
            raise CrossFieldError(("tie",) if self.tie else ("than",), f"a claim compares two different rows "
                                  f"(got {rows[0]} twice)")
        return self

    @property
    def rows(self) -> tuple[str, str]:
        """(better, worse), or a tie's two rows."""
        return tuple(self.tie) if self.tie is not None else (self.better, self.than)


# Fields added after stores existed, with the value that means "off": left out of the config hash
# when off (a new field must be added here, or every finished trial in every store reruns).
ADDED_LATER = {("train", "schedule", "cooldown"): 0.0, ("eval", "ppl_splits"): [], ("data", "preterminals"): "XX",
               ("model", "norm_position"): "post", ("model", "norm"): "layernorm", ("model", "ffn"): "relu",
               ("model", "attention"): "multihead", ("model", "h_kv"): None,
               ("model", "residual_stream"): "fp32", ("train", "pack"): "off"}


class Config(Strict):
    """One fully resolved variant: what a trial trains."""
    variant: str
    trial: str = Field("", description="the trial's unique name: the variant, plus -seedN on a seeds axis")
    spec: str = ""
    profile: str = "paper"
    profile_description: str = Field("", max_length=10_000, description="what the profile meant when this ran")
    untestable: str | None = Field(None, max_length=1000, description=(
        "why no claim can be tested on this trial: its profile's `untestable:` when it ran (a label: not hashed; "
        "\"\": claims can be; None: run before profiles said, so its profile's file is read)"))
    overrides: dict[str, Any] = Field(default_factory=dict, description=(
        "what this trial changes from its spec: the variant's fields as the spec writes them (before a "
        "profile scales them) and the seed, as dotted names (a label: not hashed)"))
    description: str = Field("", max_length=10_000)
    paper: PaperRef = PaperRef()
    claims: list[ClaimSpec] = Field(default_factory=list, max_length=100, description=(
        "the spec's claims about its rows (a label: not hashed; kept with every trial, so a claim edited "
        "after its runs is known)"))
    model: ModelSpec = ModelSpec()
    data: DataSpec = DataSpec()
    train: TrainSpec = TrainSpec()
    eval: EvalSpec = EvalSpec()
    resources: ResourcesSpec = ResourcesSpec()

    @model_validator(mode="before")
    @classmethod
    def _trial_defaults_to_variant(cls, data):
        if isinstance(data, dict) and not data.get("trial"):
            data = {**data, "trial": data.get("variant")}
        return data

    @field_validator("variant", "trial", "profile")
    @classmethod
    def _path_safe(cls, v):  # STORAGE/<spec stem>/<trial>-<profile>/ is a folder
        return _safe(v)

    @model_validator(mode="after")
    def _bf16_stream_needs_bf16(self):
        if self.model.residual_stream == "bf16" and self.train.precision == "fp32":
            raise CrossFieldError(("model.residual_stream", "train.precision"),
                                  "model.residual_stream bf16 keeps the residual stream in bf16 under bf16 autocast, "
                                  "which train.precision fp32 never turns on: set train.precision to bf16 (or auto: "
                                  "bf16 on a GPU from d_model 512), or model.residual_stream to fp32")
        return self

    @model_validator(mode="after")
    def _averaging_needs_checkpoints(self):
        if self.eval.average_checkpoints > self.train.keep_checkpoints:
            raise CrossFieldError(("eval.average_checkpoints", "train.keep_checkpoints"),
                                  f"averaging the last {self.eval.average_checkpoints} checkpoints needs "
                                  f"train.keep_checkpoints >= {self.eval.average_checkpoints} (got "
                                  f"{self.train.keep_checkpoints}); lower eval.average_checkpoints or raise "
                                  "train.keep_checkpoints")
        return self

    @model_validator(mode="after")
    def _constraint_needs_symbols(self):
        if self.eval.tree_constraint and self.data.target_vocab != "symbols":
            raise CrossFieldError(("eval.tree_constraint", "data.target_vocab"),
                                  "eval.tree_constraint needs data.target_vocab: symbols (the search must "
                                  "know which token opens, closes or stands for a word)")
        return self

    @model_validator(mode="after")
    def _pointer_needs_symbols(self):
        if self.data.preterminals != "XX" and self.data.target_vocab != "symbols":
            raise CrossFieldError(("data.preterminals", "data.target_vocab"),
                                  "data.preterminals: tags needs data.target_vocab: symbols (only the tree "
                                  "side's own vocabulary has preterminal symbols)")
        if self.model.word_pointer and self.data.target_vocab != "symbols":
            raise CrossFieldError(("model.word_pointer", "data.target_vocab"),
                                  "model.word_pointer needs data.target_vocab: symbols (it counts the "
                                  "preterminals of a tree target to know which word comes next)")
        return self

    @model_validator(mode="after")
    def _positions_hold_the_data(self):
        need = self.data.max_len + 2  # a training sentence of data.max_len word-pieces plus bos/eos
        if self.model.max_len < need:
            raise CrossFieldError(("model.max_len", "data.max_len"),
                                  f"model.max_len ({self.model.max_len}) must be at least data.max_len + 2 "
                                  f"= {need}: the model embeds one position per token, and training "
                                  f"sentences of up to {self.data.max_len} word-pieces get bos and eos; raise "
                                  "model.max_len or lower data.max_len")
        return self

    @model_validator(mode="after")
    def _min_len_reachable(self):
        # an output holds at most min(source length + max_len_offset, model.max_len) tokens, eos included:
        # min_len tokens and then eos must fit in model.max_len, or no output of any source can end
        e = self.eval
        if e.min_len >= self.model.max_len:
            raise CrossFieldError(("eval.min_len", "model.max_len"),
                                  f"eval.min_len ({e.min_len}) can never be reached: no output holds more than "
                                  f"model.max_len = {self.model.max_len} tokens, eos included; use min_len <= "
                                  f"{self.model.max_len - 1}")
        return self

    def config_hash(self) -> str:
        """Hash of everything that changes the result (not where it runs, not its labels)."""
        body = self.model_dump(mode="json", include={"model", "data", "train", "eval"},
                               # how it runs, like resources: compiled or eager, the same arithmetic; a
                               # save reads the state and changes nothing (the averaged checkpoints'
                               # steps follow checkpoint_every, which stays in)
                               exclude={"train": {"compile", "fused_loss", "cuda_graph", "checkpoint_minutes",
                                                  "stop_if_not_learning"}})
        # fields added later leave the hash of a config that does not use them as it was, so finished
        # trials of a store stay finished (the field off changes no result)
        for *path, name in ADDED_LATER:
            part = functools.reduce(dict.get, path, body)
            if part.get(name) == ADDED_LATER[(*path, name)]:
                del part[name]
        # a third-party component is its package's code: its version changes the result as a field does
        from zoo.model import FIELDS, component_package
        packages = {kind: p for kind, field in FIELDS.items()
                    if (p := component_package(kind, getattr(self.model, field)))}
        if packages:
            body["model"]["component_packages"] = packages
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


